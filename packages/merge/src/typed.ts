/**
 * Schema-driven walks over JSON values: the field set a value sets, the merge
 * of an applied configuration into a live object, the comparison of two
 * objects (added, removed, modified fields), pruning of released fields, and
 * the reconciliation of recorded field sets with atomic types.
 *
 * Paths are stacks of FieldsV1 path elements. A strict walk collects every
 * problem it finds (missing or duplicate list keys, and type mismatches when
 * asked) as a cause; a lenient walk (stored objects) treats a node it cannot
 * index or type as one opaque leaf instead.
 */
import { MergeErrorCause } from './errors';
import { FieldSet, insertPath, insertSubtree } from './field-set';
import { cloneJson, goJson, isJsonObject, isNonEmptyObject, getKey, jsonEqual, JsonObject, JsonValue, setKey, typeName } from './json';
import { serializedPathToString } from './path';
import type { Schema } from '@svc/apimachinery';
import {
  childOfMap,
  fieldDefault,
  ListNode,
  MapNode,
  nodeFor,
  resolve,
  SCALAR_BOOLEAN,
  SCALAR_NUMBER,
  SCALAR_STRING,
  ScalarNode,
} from './topology';

const MAX_CAUSES = 50;

export class WalkContext {
  readonly causes: MergeErrorCause[] = [];
  /**
   * @param strict report list items that cannot be identified (missing or duplicate keys)
   * @param checkTypes report values whose type does not fit the schema
   */
  constructor(
    readonly strict: boolean,
    readonly checkTypes: boolean = strict,
  ) {}

  report(path: readonly string[], message: string, reason = 'FieldValueInvalid'): void {
    if (this.causes.length < MAX_CAUSES) this.causes.push({ field: serializedPathToString(path) || '.', message, reason });
  }
}

export const LENIENT = new WalkContext(false);

function scalarTypeName(accepts: number): string {
  const names: string[] = [];
  if (accepts & SCALAR_STRING) names.push('string');
  if (accepts & SCALAR_NUMBER) names.push('number');
  if (accepts & SCALAR_BOOLEAN) names.push('boolean');
  return names.join(' or ');
}

function checkScalar(node: ScalarNode, value: JsonValue, path: string[], ctx: WalkContext): void {
  if (!ctx.checkTypes || value === null) return;
  const t = typeof value;
  const bit = t === 'string' ? SCALAR_STRING : t === 'number' ? SCALAR_NUMBER : t === 'boolean' ? SCALAR_BOOLEAN : 0;
  if ((node.accepts & bit) === 0) ctx.report(path, `expected ${scalarTypeName(node.accepts)}, got ${typeName(value)}`);
}

/**
 * The FieldsV1 path elements of a granular list's items, or `null` when the
 * list cannot be indexed (an item without its key, a duplicate).
 */
export function listElements(node: ListNode, list: JsonValue[], path: string[], ctx: WalkContext): string[] | null {
  // Lists are never modified once built (inputs are private copies), so an
  // indexing that succeeded holds for the rest of the call that made it.
  const cached = indexed.get(list);
  if (cached !== undefined && cached.node === node) return cached.pes;
  const pes = computeElements(node, list, path, ctx);
  if (pes !== null) indexed.set(list, { node, pes });
  return pes;
}

const indexed = new WeakMap<JsonValue[], { node: ListNode; pes: string[] }>();

function computeElements(node: ListNode, list: JsonValue[], path: string[], ctx: WalkContext): string[] | null {
  const pes = new Array<string>(list.length);
  const seen = new Set<string>();
  for (let i = 0; i < list.length; i++) {
    const item = list[i] as JsonValue;
    let pe: string | null;
    if (node.mode === 'set') {
      pe = `v:${goJson(item)}`;
    } else {
      pe = keyElement(node, item, path, i, ctx);
      if (pe === null) return null;
    }
    if (seen.has(pe)) {
      if (ctx.strict) {
        const what = node.mode === 'set' ? `value ${goJson(item)}` : `key ${serializedPathToString([pe])}`;
        ctx.report(path, `duplicate entries for ${what}`, 'FieldValueDuplicate');
      }
      return null;
    }
    seen.add(pe);
    pes[i] = pe;
  }
  return pes;
}

function keyElement(node: ListNode, item: JsonValue, path: string[], index: number, ctx: WalkContext): string | null {
  if (!isJsonObject(item)) {
    if (ctx.strict) ctx.report([...path, `i:${index}`], `expected map, got ${typeName(item)}`);
    return null;
  }
  let out = 'k:{';
  for (let i = 0; i < node.keys.length; i++) {
    const name = node.keys[i] as string;
    let v: JsonValue | undefined = item[name];
    if (v === undefined || v === null) v = node.keyDefaults.get(name);
    if (v === undefined || v === null) {
      if (ctx.strict) {
        ctx.report([...path, `i:${index}`], `associative list with keys has an element that omits key field ${JSON.stringify(name)} (and doesn't have default value)`, 'FieldValueRequired');
      }
      return null;
    }
    if (typeof v === 'object') {
      if (ctx.strict) ctx.report([...path, `i:${index}`, `f:${name}`], `key field must be a scalar, got ${typeName(v)}`);
      return null;
    }
    if (i > 0) out += ',';
    out += `${goJson(name)}:${goJson(v)}`;
  }
  return `${out}}`;
}

// ---------------------------------------------------------------- field sets

/** The set of fields a value sets, as upstream's ToFieldSet computes it. */
export function fieldSetOfValue(value: JsonValue, schema: Schema | undefined, ctx: WalkContext): FieldSet {
  const out = new FieldSet();
  collect(value, schema, [], out, ctx);
  return out;
}

/** Adds the fields below `value` to `out`; returns true when the value is itself a leaf. */
function collect(value: JsonValue, schema: Schema | undefined, path: string[], out: FieldSet, ctx: WalkContext): boolean {
  const node = nodeFor(schema, value);
  switch (node.kind) {
    case 'scalar':
      if (typeof value === 'object' && value !== null) {
        if (ctx.checkTypes) ctx.report(path, `expected ${scalarTypeName(node.accepts)}, got ${typeName(value)}`);
      } else checkScalar(node, value, path, ctx);
      return true;
    case 'map': {
      if (value === null) return true;
      if (!isJsonObject(value)) {
        if (ctx.checkTypes) ctx.report(path, `expected map, got ${typeName(value)}`);
        return true;
      }
      if (node.atomic) {
        if (ctx.checkTypes) validateBelow(value, node, path, ctx);
        return true;
      }
      for (const k in value) {
        const v = value[k] as JsonValue;
        const child = childOfMap(node, k);
        path.push(`f:${k}`);
        const leaf = collect(v, child.schema, path, out, ctx);
        if (leaf || v === null || !child.structField || isEmptyContainer(v)) insertPath(out, path);
        path.pop();
      }
      return false;
    }
    case 'list': {
      if (value === null) return true;
      if (!Array.isArray(value)) {
        if (ctx.checkTypes) ctx.report(path, `expected list, got ${typeName(value)}`);
        return true;
      }
      if (node.mode === 'atomic') {
        if (ctx.checkTypes) validateBelow(value, node, path, ctx);
        return true;
      }
      const pes = listElements(node, value, path, ctx);
      if (pes === null) return true;
      for (let i = 0; i < value.length; i++) {
        path.push(pes[i] as string);
        collect(value[i] as JsonValue, node.items, path, out, ctx);
        insertPath(out, path);
        path.pop();
      }
      return false;
    }
    default:
      return true;
  }
}

/**
 * An empty map or list set in a struct field is itself a field set by whoever
 * wrote it. (Upstream claims empty maps but not empty lists, so re-applying
 * a configuration holding an empty list could change the object; claiming
 * both keeps apply idempotent.)
 */
function isEmptyContainer(v: JsonValue): boolean {
  return (Array.isArray(v) && v.length === 0) || (isJsonObject(v) && !isNonEmptyObject(v));
}

/** Type-checks the inside of an atomic value (its fields are not tracked, but must still fit the schema). */
function validateBelow(value: JsonValue, node: MapNode | ListNode, path: string[], ctx: WalkContext): void {
  if (node.kind === 'map') {
    for (const k in value as JsonObject) {
      const child = childOfMap(node, k);
      path.push(`f:${k}`);
      collect((value as JsonObject)[k] as JsonValue, child.schema, path, new FieldSet(), ctx);
      path.pop();
    }
  } else {
    const list = value as JsonValue[];
    for (let i = 0; i < list.length; i++) {
      path.push(`i:${i}`);
      collect(list[i] as JsonValue, node.items, path, new FieldSet(), ctx);
      path.pop();
    }
  }
}

// ---------------------------------------------------------------- merge

/**
 * Merges an applied configuration into a live value: granular maps and lists
 * merge by field and key, everything else is replaced by the configuration.
 * The configuration must already be validated; values are shared, not copied.
 */
export function mergeValues(lhs: JsonValue | undefined, rhs: JsonValue | undefined, schema: Schema | undefined): JsonValue | undefined {
  if (rhs === undefined) return lhs;
  if (lhs === undefined) return rhs;
  const node = nodeFor(schema, rhs);
  switch (node.kind) {
    case 'map': {
      if (node.atomic) return rhs;
      if (!isJsonObject(rhs)) return isNonEmptyObject(lhs) ? lhs : rhs;
      if (!isJsonObject(lhs)) return rhs;
      const out: JsonObject = { ...lhs };
      for (const k in rhs) {
        setKey(out, k, mergeValues(getKey(lhs, k), rhs[k], childOfMap(node, k).schema) as JsonValue);
      }
      return out;
    }
    case 'list': {
      if (node.mode === 'atomic') return rhs;
      if (!Array.isArray(rhs)) return Array.isArray(lhs) && lhs.length > 0 ? lhs : rhs;
      if (!Array.isArray(lhs)) return rhs;
      return mergeLists(node, lhs, rhs);
    }
    default:
      return rhs;
  }
}

/**
 * Items only in the live list keep their place; items of the configuration
 * come in the configuration's order, each shared item pulling in the
 * configuration's items that precede it.
 */
function mergeLists(node: ListNode, lhs: JsonValue[], rhs: JsonValue[]): JsonValue[] {
  const lpes = listElements(node, lhs, [], LENIENT);
  const rpes = listElements(node, rhs, [], LENIENT);
  if (lpes === null || rpes === null) return rhs;
  const lIndex = new Map<string, number>();
  lpes.forEach((pe, i) => lIndex.set(pe, i));
  const rIndex = new Set(rpes);
  const out: JsonValue[] = [];
  let j = 0;
  const takeRight = (): boolean => {
    const li = lIndex.get(rpes[j] as string);
    const item = rhs[j] as JsonValue;
    out.push(li === undefined || node.mode === 'set' ? item : (mergeValues(lhs[li], item, node.items) as JsonValue));
    j++;
    return li !== undefined;
  };
  for (let i = 0; i < lhs.length; i++) {
    if (!rIndex.has(lpes[i] as string)) {
      out.push(lhs[i] as JsonValue);
      continue;
    }
    while (j < rhs.length) if (takeRight()) break;
  }
  while (j < rhs.length) takeRight();
  return out;
}

// ---------------------------------------------------------------- compare

export interface Comparison {
  added: FieldSet;
  removed: FieldSet;
  modified: FieldSet;
  /**
   * Fields inside a value replaced by one of another shape (a map by a
   * scalar, say): they are removed, and an owner of any of them sees its
   * field changed, so they count as conflicts too.
   */
  replaced: FieldSet;
}

/** The fields added, removed and modified between two values (leaves are compared by value). */
export function compareValues(lhs: JsonValue, rhs: JsonValue, schema: Schema | undefined, ctx: WalkContext): Comparison {
  const c: Comparison = { added: new FieldSet(), removed: new FieldSet(), modified: new FieldSet(), replaced: new FieldSet() };
  compareAt(lhs, rhs, schema, [], c, ctx);
  return c;
}

function compareAt(lhs: JsonValue | undefined, rhs: JsonValue | undefined, schema: Schema | undefined, path: string[], c: Comparison, ctx: WalkContext): void {
  const node = nodeFor(schema, rhs !== undefined && rhs !== null ? rhs : lhs);
  const leaf = (): void => {
    if (lhs === undefined) {
      if (rhs !== undefined) insertPath(c.added, path);
    } else if (rhs === undefined) insertPath(c.removed, path);
    else if (!jsonEqual(lhs, rhs)) {
      insertPath(c.modified, path);
      if (shapeOf(lhs) !== shapeOf(rhs)) {
        const gone = fieldSetOfValue(lhs, schema, LENIENT);
        insertSubtree(c.replaced, path, gone);
        insertSubtree(c.removed, path, gone);
        insertSubtree(c.added, path, fieldSetOfValue(rhs, schema, LENIENT));
      }
    }
  };
  const post = (): void => {
    if (lhs === undefined) insertPath(c.added, path);
    else if (rhs === undefined) insertPath(c.removed, path);
  };
  switch (node.kind) {
    case 'scalar':
      if (rhs !== undefined && ctx.checkTypes) {
        if (typeof rhs === 'object' && rhs !== null) ctx.report(path, `expected ${scalarTypeName(node.accepts)}, got ${typeName(rhs)}`);
        else checkScalar(node, rhs, path, ctx);
      }
      return leaf();
    case 'map': {
      const lo = isJsonObject(lhs) ? lhs : undefined;
      const ro = isJsonObject(rhs) ? rhs : undefined;
      if (rhs !== undefined && rhs !== null && ro === undefined) {
        if (ctx.checkTypes) ctx.report(path, `expected map, got ${typeName(rhs)}`);
        return leaf();
      }
      if (node.atomic) {
        if (ro && ctx.checkTypes) validateBelow(ro, node, path, ctx);
        return leaf();
      }
      if ((lhs !== undefined && lhs !== null && lo === undefined) || (!isNonEmptyObject(lo) && !isNonEmptyObject(ro))) {
        if (ro && ctx.strict) collect(ro, schema, path, new FieldSet(), ctx);
        return leaf();
      }
      if (lo) {
        for (const k in lo) {
          path.push(`f:${k}`);
          compareAt(lo[k], getKey(ro, k), childOfMap(node, k).schema, path, c, ctx);
          path.pop();
        }
      }
      if (ro) {
        for (const k in ro) {
          if (lo && Object.prototype.hasOwnProperty.call(lo, k)) continue;
          path.push(`f:${k}`);
          compareAt(undefined, ro[k], childOfMap(node, k).schema, path, c, ctx);
          path.pop();
        }
      }
      if (rhs === null && lo) insertPath(c.modified, path);
      return post();
    }
    case 'list': {
      const la = Array.isArray(lhs) ? lhs : undefined;
      const ra = Array.isArray(rhs) ? rhs : undefined;
      if (rhs !== undefined && rhs !== null && ra === undefined) {
        if (ctx.checkTypes) ctx.report(path, `expected list, got ${typeName(rhs)}`);
        return leaf();
      }
      if (node.mode === 'atomic') {
        if (ra && ctx.checkTypes) validateBelow(ra, node, path, ctx);
        return leaf();
      }
      const rpes = ra ? listElements(node, ra, path, ctx) : [];
      const lpes = la ? listElements(node, la, path, LENIENT) : [];
      if (rpes === null || lpes === null || (lhs !== undefined && lhs !== null && la === undefined) || ((la?.length ?? 0) === 0 && (ra?.length ?? 0) === 0)) {
        if (ra && rpes !== null && ctx.strict) collect(ra, schema, path, new FieldSet(), ctx);
        return leaf();
      }
      const rIndex = new Map<string, number>();
      rpes.forEach((pe, i) => rIndex.set(pe, i));
      const lSeen = new Set<string>();
      for (let i = 0; i < lpes.length; i++) {
        const pe = lpes[i] as string;
        lSeen.add(pe);
        const ri = rIndex.get(pe);
        path.push(pe);
        compareAt((la as JsonValue[])[i], ri === undefined ? undefined : (ra as JsonValue[])[ri], node.items, path, c, ctx);
        path.pop();
      }
      for (let i = 0; i < rpes.length; i++) {
        const pe = rpes[i] as string;
        if (lSeen.has(pe)) continue;
        path.push(pe);
        compareAt(undefined, (ra as JsonValue[])[i], node.items, path, c, ctx);
        path.pop();
      }
      if (rhs === null && la) insertPath(c.modified, path);
      return post();
    }
    default:
      return leaf();
  }
}

function shapeOf(v: JsonValue): number {
  return Array.isArray(v) ? 1 : isJsonObject(v) ? 2 : 0;
}

// ---------------------------------------------------------------- prune

/**
 * Removes from `value` the fields an applier owned last time (`last`) that no
 * manager owns now (`owned`, which includes the applier's new configuration).
 * A field stays while anyone owns it or anything below it; a removed struct
 * field with a schema default is reset to the default; the key fields of a
 * kept list item are never removed. Copy-on-write: unchanged subtrees are
 * returned as they are.
 */
export function pruneValue(value: JsonValue, last: FieldSet, owned: FieldSet | undefined, schema: Schema | undefined, protectedKeys?: readonly string[]): JsonValue {
  const node = nodeFor(schema, value);
  if (node.kind === 'map' && !node.atomic && isJsonObject(value)) {
    let out: JsonObject | undefined;
    for (const pe of elementsOf(last)) {
      if (!pe.startsWith('f:')) continue;
      const name = pe.slice(2);
      if (!Object.prototype.hasOwnProperty.call(value, name)) continue;
      if (protectedKeys && protectedKeys.includes(name)) continue;
      const stillOwned = owned !== undefined && (owned.members.has(pe) || owned.children.has(pe));
      if (!stillOwned) {
        out ??= { ...value };
        const d = fieldDefault(node, name);
        if (d !== undefined) setKey(out, name, cloneJson(d));
        else delete out[name];
        continue;
      }
      const below = last.children.get(pe);
      if (!below) continue;
      const current = value[name] as JsonValue;
      const next = pruneValue(current, below, owned?.children.get(pe), childOfMap(node, name).schema);
      if (next !== current) {
        out ??= { ...value };
        setKey(out, name, next);
      }
    }
    return out ?? value;
  }
  if (node.kind === 'list' && node.mode !== 'atomic' && Array.isArray(value)) {
    const pes = listElements(node, value, [], LENIENT);
    if (pes === null) return value;
    const index = new Map<string, number>();
    pes.forEach((pe, i) => index.set(pe, i));
    let out: JsonValue[] | undefined;
    const drop = new Set<number>();
    for (const pe of elementsOf(last)) {
      const i = index.get(pe);
      if (i === undefined) continue;
      const stillOwned = owned !== undefined && (owned.members.has(pe) || owned.children.has(pe));
      if (!stillOwned) {
        drop.add(i);
        continue;
      }
      const below = last.children.get(pe);
      if (!below) continue;
      const current = value[i] as JsonValue;
      const next = pruneValue(current, below, owned?.children.get(pe), node.items, node.mode === 'map' ? node.keys : undefined);
      if (next !== current) {
        out ??= [...value];
        out[i] = next;
      }
    }
    if (drop.size === 0) return out ?? value;
    return (out ?? value).filter((_, i) => !drop.has(i));
  }
  return value;
}

function* elementsOf(set: FieldSet): Generator<string> {
  yield* set.members;
  for (const pe of set.children.keys()) if (!set.members.has(pe)) yield pe;
}

// ---------------------------------------------------------------- schema changes

/**
 * Reconciles a recorded field set with the current schema: where a type is
 * now atomic but the set owns fields inside it, the set owns the whole node
 * instead (rule 4: owners of elements own the whole). A node that became
 * granular keeps its single claim, so it conflicts with nobody afterwards.
 * Returns the same set when nothing changes.
 */
export function reconcileWithSchema(set: FieldSet, schema: Schema | undefined): FieldSet {
  return reconcileNode(set, schema) ?? set;
}

function reconcileNode(set: FieldSet, schema: Schema | undefined): FieldSet | null {
  const node = resolve(schema);
  if (node.kind !== 'map' && node.kind !== 'list') return null;
  let members: Set<string> | undefined;
  let children: Map<string, FieldSet> | undefined;
  for (const [pe, below] of set.children) {
    let childSchema: Schema | undefined;
    if (node.kind === 'map') {
      if (!pe.startsWith('f:')) continue;
      childSchema = childOfMap(node, pe.slice(2)).schema;
    } else {
      if (pe.startsWith('f:')) continue;
      childSchema = node.items;
    }
    const child = resolve(childSchema);
    const atomic = child.kind === 'scalar' || (child.kind === 'map' && child.atomic) || (child.kind === 'list' && child.mode === 'atomic');
    if (atomic) {
      members ??= new Set(set.members);
      children ??= new Map(set.children);
      members.add(pe);
      children.delete(pe);
      continue;
    }
    const next = reconcileNode(below, childSchema);
    if (next) {
      children ??= new Map(set.children);
      children.set(pe, next);
    }
  }
  if (!members && !children) return null;
  return new FieldSet(members ?? set.members, children ?? set.children);
}
