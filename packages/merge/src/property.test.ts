/**
 * Item 7: a property test of apply and update tracking. A seeded generator
 * builds schemas (nested structs, granular and atomic maps, set lists, map
 * lists with one or two keys, atomic lists, unstructured fields, defaults)
 * and runs random sequences of apply, force apply and update from three
 * managers, checking after every step that:
 *   (a) every leaf field of the object is owned by a manager, or holds its
 *       schema default, or is a key field of a list item someone owns part of;
 *   (b) no field owned by a manager changed unless that manager or a forcing
 *       applier changed it (or an update, which never conflicts, took it);
 *   (c) serialize∘parse of managedFields is the identity;
 *   (d) applying the same configuration twice changes nothing.
 */
import { apply, trackUpdate } from './field-manager';
import { MergeError } from './errors';
import { FieldSet } from './field-set';
import { cloneJson, isJsonObject, jsonEqual, JsonObject, JsonValue } from './json';
import { decodeManagedFields, encodeManagedFields, ManagedFieldsEntry, managerId, UNOWNED_FIELDS } from './managed-fields';
import type { Schema } from '@svc/apimachinery';
import { childOfMap, fieldDefault, ListNode, nodeFor, resolve, rootSchema } from './topology';
import { fieldSetOfValue, LENIENT, listElements } from './typed';

// PROPERTY_SEEDS=n and PROPERTY_STEPS=n explore further than the default run.
const SEEDS = Array.from({ length: Number(process.env.PROPERTY_SEEDS ?? 12) }, (_, i) => i + 1);
const STEPS = Number(process.env.PROPERTY_STEPS ?? 300);
const MANAGERS = ['alice', 'bob', 'carol'];

/** mulberry32: small, fast, and good enough to explore. */
class Rng {
  private state: number;
  constructor(seed: number) {
    this.state = seed >>> 0;
  }
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
  chance(p: number): boolean {
    return this.next() < p;
  }
  pick<T>(items: readonly T[]): T {
    return items[this.int(items.length)] as T;
  }
}

// ------------------------------------------------------------ schemas

const STRINGS = ['x', 'y', 'z'];

function genStruct(g: Rng, depth: number): Schema {
  const properties: Record<string, Schema> = {};
  const n = 3 + g.int(4);
  for (let i = 0; i < n; i++) properties[`f${i}`] = genField(g, depth);
  return { type: 'object', properties };
}

function genScalar(g: Rng): Schema {
  const kind = g.int(3);
  const s: Schema = kind === 0 ? { type: 'string' } : kind === 1 ? { type: 'integer' } : { type: 'boolean' };
  if (g.chance(0.2)) s.default = kind === 0 ? 'x' : kind === 1 ? 1 : false;
  return s;
}

function genItem(g: Rng, keys: string[]): Schema {
  const properties: Record<string, Schema> = {};
  for (const k of keys) properties[k] = k === 'port' ? { type: 'integer' } : { type: 'string' };
  const extra = 1 + g.int(3);
  for (let i = 0; i < extra; i++) properties[`v${i}`] = g.chance(0.2) ? { type: 'array', 'x-svc-list-type': 'set', items: { type: 'string' } } : genScalar(g);
  return { type: 'object', properties };
}

function genField(g: Rng, depth: number): Schema {
  const r = g.int(depth < 2 ? 11 : 8);
  switch (r) {
    case 0:
    case 1:
      return genScalar(g);
    case 2:
      return { type: 'object', additionalProperties: { type: 'string' } };
    case 3:
      return { type: 'array', 'x-svc-list-type': 'set', items: { type: 'string' } };
    case 4:
      return { type: 'array', 'x-svc-patch-strategy': 'merge', items: { type: 'string' } };
    case 5: {
      const keys = g.chance(0.5) ? ['name'] : ['name', 'port'];
      return { type: 'array', 'x-svc-list-type': 'map', 'x-svc-list-map-keys': keys, items: genItem(g, keys) };
    }
    case 6:
      return { type: 'array', 'x-svc-patch-strategy': 'merge', 'x-svc-patch-merge-key': 'name', items: genItem(g, ['name']) };
    case 7:
      return g.chance(0.5)
        ? { type: 'array', items: { type: 'string' } }
        : { type: 'object', 'x-svc-map-type': 'atomic', properties: { a: { type: 'string' }, b: { type: 'integer' } } };
    case 8:
    case 9:
      return genStruct(g, depth + 1);
    default:
      return { type: 'object', 'x-svc-preserve-unknown-fields': true, properties: { known: { type: 'string' } } };
  }
}

function genSchema(g: Rng): Schema {
  return {
    type: 'object',
    properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' }, spec: genStruct(g, 0) },
  };
}

// ------------------------------------------------------------ values

function genScalarValue(g: Rng, schema: Schema): JsonValue {
  if (schema.type === 'integer') return 1 + g.int(3);
  if (schema.type === 'boolean') return g.chance(0.5);
  return g.pick(STRINGS);
}

function genKeyed(g: Rng, list: ListNode): JsonObject[] {
  const items: JsonObject[] = [];
  const seen = new Set<string>();
  const n = g.int(4);
  for (let i = 0; i < n; i++) {
    const item = genValue(g, list.items, 0) as JsonObject;
    for (const k of list.keys) item[k] = k === 'port' ? 1 + g.int(2) : g.pick(['n1', 'n2', 'n3']);
    const id = list.keys.map((k) => JSON.stringify(item[k])).join();
    if (seen.has(id)) continue;
    seen.add(id);
    items.push(item);
  }
  return items;
}

function genValue(g: Rng, schema: Schema | undefined, depth: number): JsonValue {
  const node = resolve(schema);
  switch (node.kind) {
    case 'scalar':
      return genScalarValue(g, schema as Schema);
    case 'map': {
      const out: JsonObject = {};
      if (node.fields) {
        for (const [k, s] of Object.entries(node.fields)) if (g.chance(0.5)) out[k] = genValue(g, s, depth + 1);
      }
      if (node.elements) {
        for (const k of ['k1', 'k2', 'k3', 'k4']) if (g.chance(0.35)) out[k] = genValue(g, node.elements, depth + 1);
      } else if (!node.fields || (schema as Schema)['x-svc-preserve-unknown-fields']) {
        if (g.chance(0.5)) out.extra = genDeduced(g, depth);
      }
      return out;
    }
    case 'list': {
      if (node.mode === 'map') return genKeyed(g, node);
      const values = ['a', 'b', 'c', 'd'].filter(() => g.chance(0.4));
      return node.mode === 'set' ? values : values.slice(0, 2);
    }
    default:
      return genDeduced(g, depth);
  }
}

function genDeduced(g: Rng, depth: number): JsonValue {
  const r = g.int(depth > 3 ? 2 : 3);
  if (r === 0) return g.pick(STRINGS);
  if (r === 1) return [g.pick(STRINGS)];
  const out: JsonObject = {};
  for (const k of ['p', 'q']) if (g.chance(0.6)) out[k] = genDeduced(g, depth + 1);
  return out;
}

/** A changed copy of `value`: fields dropped, regenerated, added; list items added, removed, changed. */
function mutate(g: Rng, value: JsonValue | undefined, schema: Schema | undefined, depth: number): JsonValue {
  if (value === undefined || g.chance(0.08)) return genValue(g, schema, depth);
  const node = nodeFor(schema, value);
  if (node.kind === 'map' && !node.atomic && isJsonObject(value)) {
    const out: JsonObject = { ...value };
    const candidates = new Set(Object.keys(out));
    if (node.fields) for (const k of Object.keys(node.fields)) candidates.add(k);
    if (node.elements) for (const k of ['k1', 'k2', 'k3', 'k4']) candidates.add(k);
    for (const k of candidates) {
      const r = g.next();
      const child = childOfMap(node, k).schema;
      if (k in out && r < 0.12) delete out[k];
      else if (r < 0.4) out[k] = mutate(g, out[k], child, depth + 1);
    }
    return out;
  }
  if (node.kind === 'list' && node.mode === 'map' && Array.isArray(value)) {
    let out = value.filter(() => !g.chance(0.2)).map((item) => (g.chance(0.3) ? mutateItem(g, item as JsonObject, node) : item));
    if (g.chance(0.4)) {
      const seen = new Set(out.map((item) => node.keys.map((k) => JSON.stringify((item as JsonObject)[k])).join()));
      for (const item of genKeyed(g, node)) {
        const id = node.keys.map((k) => JSON.stringify(item[k])).join();
        if (!seen.has(id)) {
          seen.add(id);
          out = [...out, item];
        }
      }
    }
    return out;
  }
  if (node.kind === 'list' && node.mode === 'set' && Array.isArray(value)) {
    let out = value.filter(() => !g.chance(0.25));
    for (const v of ['a', 'b', 'c', 'd']) if (g.chance(0.2) && !out.includes(v)) out = [...out, v];
    return out;
  }
  return g.chance(0.5) ? genValue(g, schema, depth) : value;
}

function mutateItem(g: Rng, item: JsonObject, list: ListNode): JsonObject {
  const changed = mutate(g, item, list.items, 3) as JsonObject;
  for (const k of list.keys) changed[k] = item[k] as JsonValue;
  return changed;
}

// ------------------------------------------------------------ checks

interface Located {
  value: JsonValue;
  schema: Schema | undefined;
  /** The item this path is a key field of, when it is one. */
  keyField: boolean;
  isDefault: boolean;
}

/** Finds the value at a FieldsV1 path. */
function locate(root: JsonValue, schema: Schema | undefined, path: readonly string[]): Located | undefined {
  let value: JsonValue = root;
  let s = schema;
  let keyField = false;
  let isDefault = false;
  let itemKeys: readonly string[] = [];
  for (const pe of path) {
    const node = nodeFor(s, value);
    if (node.kind === 'map' && isJsonObject(value) && pe.startsWith('f:')) {
      const name = pe.slice(2);
      if (!Object.prototype.hasOwnProperty.call(value, name)) return undefined;
      const d = fieldDefault(node, name);
      value = value[name] as JsonValue;
      isDefault = d !== undefined && jsonEqual(d, value);
      keyField = itemKeys.includes(name);
      s = childOfMap(node, name).schema;
      itemKeys = [];
    } else if (node.kind === 'list' && node.mode !== 'atomic' && Array.isArray(value)) {
      const pes = listElements(node, value, [], LENIENT);
      const i = pes ? pes.indexOf(pe) : -1;
      if (i < 0) return undefined;
      value = value[i] as JsonValue;
      s = node.items;
      keyField = false;
      isDefault = false;
      itemKeys = node.mode === 'map' ? node.keys : [];
    } else return undefined;
  }
  return { value, schema: s, keyField, isDefault };
}

function isLeaf(value: JsonValue, schema: Schema | undefined): boolean {
  const node = nodeFor(schema, value);
  if (node.kind === 'map') return node.atomic || !isJsonObject(value);
  if (node.kind === 'list') return node.mode === 'atomic' || !Array.isArray(value);
  return true;
}

function managedOf(obj: JsonObject): ManagedFieldsEntry[] {
  return ((obj.metadata as JsonObject | undefined)?.managedFields ?? []) as unknown as ManagedFieldsEntry[];
}

function ownersById(obj: JsonObject): Map<string, FieldSet> {
  const out = new Map<string, FieldSet>();
  for (const [id, r] of decodeManagedFields(managedOf(obj))) out.set(id, r.fields);
  return out;
}

function withoutManaged(obj: JsonObject): JsonObject {
  const meta = { ...(obj.metadata as JsonObject) };
  delete meta.managedFields;
  return { ...obj, metadata: meta };
}

/** (a): every leaf is owned, or a default, or a key field of a kept item. */
function checkEveryLeafOwned(obj: JsonObject, schema: Schema, where: string): void {
  const root = rootSchema(schema);
  const all = fieldSetOfValue(withoutManaged(obj), root, LENIENT).difference(UNOWNED_FIELDS);
  let owned = FieldSet.empty();
  for (const set of ownersById(obj).values()) owned = owned.union(set);
  for (const path of all.serializedPaths()) {
    if (path[0] === 'f:metadata' && path.length === 2 && UNOWNED_FIELDS.at([{ field: 'metadata' }]).members.has(path[1] as string)) continue;
    if (path.length === 1 && (path[0] === 'f:apiVersion' || path[0] === 'f:kind' || path[0] === 'f:metadata')) continue;
    const at = locate(obj, root, path);
    if (!at || !isLeaf(at.value, at.schema)) continue;
    if (owned.hasSerialized(path) || at.isDefault || at.keyField) continue;
    throw new Error(`${where}: (a) field ${path.join(' ')} = ${JSON.stringify(at.value)} is owned by nobody`);
  }
}

/** (b): an apply changes no field another manager owns, except what a forcing applier applied (and what that replaces). */
function checkOwnedFieldsKept(before: JsonObject, after: JsonObject, schema: Schema, actorId: string, forced: FieldSet | undefined, where: string): void {
  const root = rootSchema(schema);
  for (const [id, set] of ownersById(before)) {
    if (id === actorId) continue;
    for (const path of set.serializedPaths()) {
      if (forced && path.some((_, i) => forced.hasSerialized(path.slice(0, i + 1)))) continue;
      const was = locate(before, root, path);
      if (!was) continue;
      const now = locate(after, root, path);
      const leaf = isLeaf(was.value, was.schema);
      const same = leaf ? now !== undefined && jsonEqual(was.value, now.value) : now !== undefined;
      if (!same) {
        throw new Error(`${where}: (b) ${path.join(' ')} owned by ${id} changed from ${JSON.stringify(was.value)} to ${JSON.stringify(now?.value)}`);
      }
    }
  }
}

/** (c): each fieldsV1 and the whole managedFields list survive parse then serialize unchanged. */
function checkRoundTrip(obj: JsonObject, where: string): void {
  const entries = managedOf(obj);
  for (const e of entries) {
    const again = FieldSet.fromFieldsV1(e.fieldsV1).toFieldsV1();
    if (JSON.stringify(again) !== JSON.stringify(e.fieldsV1)) throw new Error(`${where}: (c) fieldsV1 of ${e.manager} does not round-trip`);
  }
  const reencoded = encodeManagedFields(decodeManagedFields(entries));
  if (JSON.stringify(reencoded) !== JSON.stringify(entries)) throw new Error(`${where}: (c) managedFields do not round-trip`);
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null && !Object.isFrozen(v)) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

// ------------------------------------------------------------ the run

interface Stats {
  applies: number;
  forced: number;
  updates: number;
  conflicts: number;
  maxFields: number;
}

function run(seed: number, steps: number): Stats {
  const g = new Rng(seed);
  const schema = genSchema(g);
  const specSchema = schema.properties?.spec as Schema;
  const configs = new Map<string, JsonObject>();
  let clock = Date.UTC(2024, 0, 1);
  const tick = (): Date => new Date((clock += 1000));
  let live: JsonObject | undefined;
  const stats: Stats = { applies: 0, forced: 0, updates: 0, conflicts: 0, maxFields: 0 };

  for (let step = 0; step < steps; step++) {
    const manager = g.pick(MANAGERS);
    const where = `seed ${seed} step ${step} (${manager})`;
    const before = live ? deepFreeze(live) : undefined;
    const r = g.next();
    if (before === undefined || r < 0.62) {
      const force = r > 0.47 && before !== undefined;
      const previous = configs.get(manager);
      const spec = previous && g.chance(0.7) ? mutate(g, previous.spec, specSchema, 0) : genValue(g, specSchema, 0);
      const labels: JsonObject = {};
      for (const k of ['team', 'tier']) if (g.chance(0.3)) labels[k] = g.pick(STRINGS);
      const config = deepFreeze<JsonObject>({ apiVersion: 'v1', kind: 'Prop', metadata: { name: 'obj', labels }, spec: spec as JsonValue });
      let result;
      try {
        result = apply({ live: before, applied: config, manager, force, apiVersion: 'v1', now: tick(), schema });
      } catch (err) {
        if (err instanceof MergeError && err.reason === 'Conflict' && !force) {
          stats.conflicts++;
          continue;
        }
        throw new Error(`${where}: apply threw ${(err as Error).stack}`);
      }
      stats.applies++;
      if (force) stats.forced++;
      configs.set(manager, config);
      // (d) the same configuration again changes nothing, even later.
      const again = apply({ live: deepFreeze(result.object), applied: config, manager, force, apiVersion: 'v1', now: tick(), schema });
      if (again.changed || !jsonEqual(again.object, result.object)) {
        throw new Error(`${where}: (d) applying the same configuration twice changed ${JSON.stringify(result.object)} into ${JSON.stringify(again.object)}`);
      }
      if (before) {
        // A forcing applier may change what it applied, and nothing else.
        const forced = force ? fieldSetOfValue(config, rootSchema(schema), LENIENT) : undefined;
        const context = process.env.PROPERTY_DEBUG ? ` before=${JSON.stringify(before)} config=${JSON.stringify(config)} after=${JSON.stringify(result.object)}` : '';
        checkOwnedFieldsKept(before, result.object, schema, managerId(manager, 'Apply', 'v1', undefined), forced, where + context);
      }
      live = result.object;
    } else {
      const next = cloneJson(before) as JsonObject;
      next.spec = mutate(g, before.spec, specSchema, 0);
      if (g.chance(0.2)) (next.metadata as JsonObject).labels = { team: g.pick(STRINGS) };
      if (g.chance(0.1)) delete (next.metadata as JsonObject).managedFields;
      const result = trackUpdate({ old: before, new: deepFreeze(next), manager, apiVersion: 'v1', now: tick(), schema });
      stats.updates++;
      live = result.object;
    }
    checkEveryLeafOwned(live, schema, where);
    checkRoundTrip(live, where);
    stats.maxFields = Math.max(stats.maxFields, fieldSetOfValue(live, rootSchema(schema), LENIENT).size);
  }
  return stats;
}

describe('item 7: property test of apply and update tracking', () => {
  test.each(SEEDS)(`item 7: seed %i, ${STEPS} random steps from three managers keep (a)-(d)`, (seed) => {
    const stats = run(seed, STEPS);
    // The run must have exercised every kind of step.
    expect(stats.applies).toBeGreaterThan(50);
    expect(stats.forced).toBeGreaterThan(10);
    expect(stats.updates).toBeGreaterThan(50);
    expect(stats.conflicts).toBeGreaterThan(0);
  });
});
