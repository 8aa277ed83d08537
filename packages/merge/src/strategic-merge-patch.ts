/**
 * Strategic merge patch, for built-in kinds, driven by the schema markers
 * `x-svc-patch-strategy` (`merge`, `replace`, `retainKeys`, comma separated)
 * and `x-svc-patch-merge-key`:
 *
 * - maps merge key by key; `null` deletes a key; a `replace` strategy or
 *   `$patch: replace` replaces the map, `$patch: delete` empties it;
 * - lists replace, unless their strategy is `merge`: lists of maps then merge
 *   items by the merge key (`$patch: delete` items delete, a `$patch:
 *   replace` item replaces the whole list), lists of scalars take the union;
 * - `$deleteFromPrimitiveList/<field>` removes values from a scalar list,
 *   `$setElementOrder/<field>` fixes the order of a merged list, and
 *   `$retainKeys` drops the keys of the original it does not list.
 *
 * Malformed patches are BadRequest; a list of lists to merge is Invalid, as
 * upstream answers them.
 */
import { MergeError } from './errors';
import { getKey, goJson, isJsonObject, jsonEqual, JsonObject, JsonValue, setKey, toJson, typeName } from './json';
import type { Schema } from '@svc/apimachinery';
import { rootSchema } from './topology';

const DIRECTIVE = '$patch';
const RETAIN_KEYS = '$retainKeys';
const SET_ORDER_PREFIX = '$setElementOrder/';
const DELETE_PRIMITIVE_PREFIX = '$deleteFromPrimitiveList/';

/** Applies a strategic merge patch to `original`; neither argument is modified. */
export function strategicMergePatch(original: unknown, patch: unknown, schema?: Schema): JsonObject {
  const doc = toJson(original, 'the original object');
  const p = toJson(patch, 'the patch');
  if (!isJsonObject(doc)) throw bad('', 'the original document must be a JSON object');
  if (!isJsonObject(p)) throw bad('', `the patch must be a JSON object, got ${typeName(p)}`);
  return mergeMap(doc, p, rootSchema(schema), '');
}

function bad(field: string, message: string): MergeError {
  return MergeError.badRequest(field ? `${field}: ${message}` : message, [{ field: field || '.', message, reason: 'FieldValueInvalid' }]);
}

function childSchema(schema: Schema | undefined, key: string): Schema | undefined {
  if (!schema) return undefined;
  const prop = schema.properties?.[key];
  if (prop && Object.prototype.hasOwnProperty.call(schema.properties, key)) return prop;
  return typeof schema.additionalProperties === 'object' ? schema.additionalProperties : undefined;
}

function strategies(schema: Schema | undefined): string[] {
  return (schema?.['x-svc-patch-strategy'] ?? '').split(',').map((s) => s.trim()).filter((s) => s !== '');
}

function isDirectiveKey(key: string): boolean {
  return key === DIRECTIVE || key === RETAIN_KEYS || key.startsWith(SET_ORDER_PREFIX) || key.startsWith(DELETE_PRIMITIVE_PREFIX);
}

function mergeMap(original: JsonObject, patch: JsonObject, schema: Schema | undefined, path: string): JsonObject {
  const directive = patch[DIRECTIVE];
  if (directive !== undefined) {
    if (directive === 'delete') return {};
    if (directive === 'replace') {
      const rest: JsonObject = { ...patch };
      delete rest[DIRECTIVE];
      return mergeMap({}, rest, schema, path);
    }
    if (directive !== 'merge') throw bad(path, `Unknown patch type: ${goJson(directive)} in map`);
  }

  const out: JsonObject = { ...original };
  const retain = patch[RETAIN_KEYS];
  if (retain !== undefined) {
    if (!Array.isArray(retain) || retain.some((k) => typeof k !== 'string')) {
      throw bad(`${path}.${RETAIN_KEYS}`, 'the $retainKeys directive must be a list of field names');
    }
    const keep = new Set(retain as string[]);
    for (const k in patch) {
      if (isDirectiveKey(k) || patch[k] === null) continue;
      if (!keep.has(k)) throw bad(`${path}.${k}`, `the field is not in the $retainKeys list`);
    }
    for (const k of Object.keys(out)) if (!keep.has(k)) delete out[k];
  }

  const orders = new Map<string, JsonValue[]>();
  for (const k in patch) {
    const v = patch[k] as JsonValue;
    if (k.startsWith(DELETE_PRIMITIVE_PREFIX)) {
      const field = k.slice(DELETE_PRIMITIVE_PREFIX.length);
      if (!Array.isArray(v)) throw bad(`${path}.${k}`, 'the $deleteFromPrimitiveList directive must be a list');
      if (v.some((x) => typeof x === 'object' && x !== null)) throw bad(`${path}.${k}`, 'the $deleteFromPrimitiveList directive only deletes scalars');
      const current = getKey(out, field);
      if (Array.isArray(current)) setKey(out, field, current.filter((item) => !v.some((d) => jsonEqual(d, item))));
    } else if (k.startsWith(SET_ORDER_PREFIX)) {
      if (!Array.isArray(v)) throw bad(`${path}.${k}`, 'the $setElementOrder directive must be a list');
      orders.set(k.slice(SET_ORDER_PREFIX.length), v);
    }
  }

  for (const k in patch) {
    if (isDirectiveKey(k)) continue;
    const pv = patch[k] as JsonValue;
    const at = `${path}.${k}`;
    if (pv === null) {
      delete out[k];
      continue;
    }
    const s = childSchema(schema, k);
    const strat = strategies(s);
    const ov = getKey(out, k);
    if (isJsonObject(ov) && isJsonObject(pv)) {
      setKey(out, k, strat.includes('replace') ? fresh(pv, s, at) : mergeMap(ov, pv, s, at));
    } else if (Array.isArray(ov) && Array.isArray(pv) && strat.includes('merge')) {
      setKey(out, k, mergeList(ov, pv, s, orders.get(k), at));
      orders.delete(k);
    } else if (ov === undefined && Array.isArray(pv) && strat.includes('merge')) {
      setKey(out, k, mergeList([], pv, s, orders.get(k), at));
      orders.delete(k);
    } else {
      setKey(out, k, fresh(pv, s, at));
    }
  }

  // Orders for lists the patch did not otherwise change.
  for (const [k, order] of orders) {
    const list = getKey(out, k);
    if (!Array.isArray(list)) continue;
    const s = childSchema(schema, k);
    const key = keyFunction(list, order, s, `${path}.${k}`);
    setKey(out, k, orderItems(list, order, list, key));
  }
  return out;
}

/** A value the patch brings in whole: its maps still lose null fields and directives. */
function fresh(value: JsonValue, schema: Schema | undefined, path: string): JsonValue {
  if (isJsonObject(value)) return mergeMap({}, value, schema, path);
  if (Array.isArray(value) && strategies(schema).includes('merge')) return mergeList([], value, schema, undefined, path);
  return value;
}

type KeyOf = (item: JsonValue) => string;

function keyFunction(items: JsonValue[], order: JsonValue[], schema: Schema | undefined, path: string): KeyOf {
  const mergeKey = schema?.['x-svc-patch-merge-key'];
  const maps = items.some(isJsonObject) || order.some(isJsonObject);
  if (!maps) return goJson;
  if (!mergeKey) throw bad(path, 'cannot order a list of maps without a merge key');
  return (item: JsonValue): string => {
    if (!isJsonObject(item) || item[mergeKey] === undefined) throw bad(path, `map: ${goJson(item)} does not contain declared merge key: ${mergeKey}`);
    return goJson(item[mergeKey] as JsonValue);
  };
}

function mergeList(original: JsonValue[], patch: JsonValue[], schema: Schema | undefined, setOrder: JsonValue[] | undefined, path: string): JsonValue[] {
  if (original.length === 0 && patch.length === 0) return [];
  if (original.some(Array.isArray) || patch.some(Array.isArray)) {
    throw MergeError.invalidDocument(`${path}: lists of lists are not supported`, [{ field: path, message: 'lists of lists are not supported', reason: 'FieldValueInvalid' }]);
  }
  const mapItems = original.some(isJsonObject) || patch.some(isJsonObject);
  if (!mapItems) {
    const merged: JsonValue[] = [];
    for (const item of [...original, ...patch]) if (!merged.some((m) => jsonEqual(m, item))) merged.push(item);
    const order = setOrder ?? patch;
    if (setOrder) checkOrder(patch, setOrder, goJson, path);
    return orderItems(merged, order, original, goJson);
  }

  const mergeKey = schema?.['x-svc-patch-merge-key'];
  if (!mergeKey) throw bad(path, 'cannot merge lists of maps without a merge key');
  const itemSchema = schema?.items;
  const key = (item: JsonValue, where: string): string => {
    if (!isJsonObject(item)) throw bad(where, `expected map, got ${typeName(item)}`);
    const v = item[mergeKey];
    if (v === undefined) throw bad(where, `map: ${goJson(item)} does not contain declared merge key: ${mergeKey}`);
    return goJson(v);
  };

  let base = original;
  const items: JsonObject[] = [];
  let replace = false;
  patch.forEach((item, i) => {
    const where = `${path}[${i}]`;
    if (!isJsonObject(item)) throw bad(where, `expected map, got ${typeName(item)}`);
    const directive = item[DIRECTIVE];
    if (directive === undefined) items.push(item);
    else if (directive === 'delete') {
      const k = key(item, where);
      base = base.filter((o) => !(isJsonObject(o) && o[mergeKey] !== undefined && goJson(o[mergeKey] as JsonValue) === k));
    } else if (directive === 'replace') replace = true;
    else if (directive === 'merge') {
      const rest: JsonObject = { ...item };
      delete rest[DIRECTIVE];
      items.push(rest);
    } else throw bad(where, `Unknown patch type: ${goJson(directive)} in list item`);
  });
  if (replace) return items.map((item, i) => mergeMap({}, item, itemSchema, `${path}[${i}]`));

  const merged = [...base];
  items.forEach((item, i) => {
    const k = key(item, `${path}[${i}]`);
    const where = `${path}[${mergeKey}=${k}]`;
    const at = merged.findIndex((o) => isJsonObject(o) && o[mergeKey] !== undefined && goJson(o[mergeKey] as JsonValue) === k);
    if (at >= 0) merged[at] = mergeMap(merged[at] as JsonObject, item, itemSchema, where);
    else merged.push(mergeMap({}, item, itemSchema, where));
  });
  const keyOf: KeyOf = (item) => key(item, path);
  if (setOrder) checkOrder(items, setOrder, keyOf, path);
  return orderItems(merged, setOrder ?? items, base, keyOf);
}

/** The patch list must follow the relative order of its $setElementOrder list, which must hold all of its items. */
function checkOrder(patchItems: JsonValue[], order: JsonValue[], keyOf: KeyOf, path: string): void {
  const positions = new Map<string, number>();
  order.forEach((item, i) => positions.set(keyOf(item), i));
  let last = -1;
  for (const item of patchItems) {
    const at = positions.get(keyOf(item));
    if (at === undefined || at < last) {
      throw bad(path, `the order of the patch list does not match its $setElementOrder list`);
    }
    last = at;
  }
}

/**
 * Orders a merged list: items named by `patchOrder` in that order, the other
 * (server-only) items in their original order, woven in where the original
 * order puts them before a patch item.
 */
function orderItems(merged: JsonValue[], patchOrder: JsonValue[], serverOrder: JsonValue[], keyOf: KeyOf): JsonValue[] {
  const patchPos = new Map<string, number>();
  patchOrder.forEach((item, i) => {
    const k = keyOf(item);
    if (!patchPos.has(k)) patchPos.set(k, i);
  });
  const serverPos = new Map<string, number>();
  serverOrder.forEach((item, i) => {
    const k = keyOf(item);
    if (!serverPos.has(k)) serverPos.set(k, i);
  });
  const fromPatch: Array<[string, JsonValue]> = [];
  const serverOnly: Array<[string, JsonValue]> = [];
  for (const item of merged) {
    const k = keyOf(item);
    (patchPos.has(k) ? fromPatch : serverOnly).push([k, item]);
  }
  const byPosition = (pos: Map<string, number>) => (a: [string, JsonValue], b: [string, JsonValue]): number =>
    (pos.get(a[0]) ?? Number.MAX_SAFE_INTEGER) - (pos.get(b[0]) ?? Number.MAX_SAFE_INTEGER);
  fromPatch.sort(byPosition(patchPos));
  serverOnly.sort(byPosition(serverPos));

  const out: JsonValue[] = [];
  let i = 0;
  let j = 0;
  while (i < serverOnly.length || j < fromPatch.length) {
    if (i >= serverOnly.length) out.push((fromPatch[j++] as [string, JsonValue])[1]);
    else if (j >= fromPatch.length) out.push((serverOnly[i++] as [string, JsonValue])[1]);
    else {
      const si = serverPos.get((serverOnly[i] as [string, JsonValue])[0]);
      const pj = serverPos.get((fromPatch[j] as [string, JsonValue])[0]);
      if (si !== undefined && pj !== undefined && si < pj) out.push((serverOnly[i++] as [string, JsonValue])[1]);
      else out.push((fromPatch[j++] as [string, JsonValue])[1]);
    }
  }
  return out;
}
