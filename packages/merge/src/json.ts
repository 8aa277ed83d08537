/**
 * Plain JSON values and the few operations every engine here needs: a
 * validating deep copy (so no engine ever mutates its input), structural
 * equality, the total order structured-merge-diff uses for values, and the
 * Go-compatible encoding used inside FieldsV1 keys.
 */
import { MergeError } from './errors';

export type JsonPrimitive = string | number | boolean | null;
export type JsonValue = JsonPrimitive | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Sets a key on a plain object. `__proto__` is an ordinary key in JSON but an
 * accessor on JS objects, so it is defined rather than assigned.
 */
export function setKey(obj: JsonObject, key: string, value: JsonValue): void {
  if (key === '__proto__') Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
  else obj[key] = value;
}

/** An own key of a plain object (never something inherited, such as `__proto__`). */
export function getKey(obj: JsonObject | undefined, key: string): JsonValue | undefined {
  return obj !== undefined && Object.prototype.hasOwnProperty.call(obj, key) ? obj[key] : undefined;
}

/** True for a non-empty plain object. */
export function isNonEmptyObject(value: unknown): value is JsonObject {
  if (!isJsonObject(value)) return false;
  for (const _ in value) return true;
  return false;
}

/**
 * A deep copy of `value` that is guaranteed to be plain JSON. Keys holding
 * `undefined` are dropped (as JSON.stringify would); anything that JSON
 * cannot carry (functions, symbols, NaN, class instances) is a BadRequest
 * naming where it was found.
 */
export function toJson(value: unknown, where: string): JsonValue {
  return copyJson(value, where, [], 0);
}

/**
 * Deeper documents are refused: every engine here recurses, and no API
 * object comes near this depth.
 */
export const MAX_DEPTH = 1000;

/** `path` is only turned into text when something is wrong. */
function copyJson(value: unknown, where: string, path: Array<string | number>, depth: number): JsonValue {
  if (depth > MAX_DEPTH) throw notJson(where, path, `nesting deeper than ${MAX_DEPTH} levels`);
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      if (!Number.isFinite(value)) throw notJson(where, path, 'numbers must be finite');
      return value;
    case 'object': {
      if (value === null) return null;
      if (Array.isArray(value)) {
        const out: JsonValue[] = new Array<JsonValue>(value.length);
        for (let i = 0; i < value.length; i++) {
          const item: unknown = value[i];
          path.push(i);
          if (item === undefined) throw notJson(where, path, 'list items must be values');
          out[i] = copyJson(item, where, path, depth + 1);
          path.pop();
        }
        return out;
      }
      const proto: unknown = Object.getPrototypeOf(value);
      if (proto !== Object.prototype && proto !== null) throw notJson(where, path, 'only plain objects are JSON');
      const out: JsonObject = {};
      for (const k of Object.keys(value)) {
        const v: unknown = (value as Record<string, unknown>)[k];
        if (v === undefined) continue;
        path.push(k);
        setKey(out, k, copyJson(v, where, path, depth + 1));
        path.pop();
      }
      return out;
    }
    default:
      throw notJson(where, path, `a ${typeof value} is not a JSON value`);
  }
}

function notJson(where: string, path: Array<string | number>, message: string): MergeError {
  let field = path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${p}`)).join('');
  if (field.length > 200) field = `...${field.slice(-200)}`;
  field = field || '.';
  return MergeError.badRequest(`${where} is not valid JSON: ${field}: ${message}`, [{ field, message, reason: 'FieldValueInvalid' }]);
}

/** Copies JSON that is already known to be valid (internal values, schema defaults). */
export function cloneJson<T extends JsonValue>(value: T): T {
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((v) => cloneJson(v)) as T;
  const out: JsonObject = {};
  for (const k in value) setKey(out, k, cloneJson((value as JsonObject)[k] as JsonValue));
  return out as T;
}

/** Structural equality; object key order is irrelevant, list order is not. */
export function jsonEqual(a: JsonValue | undefined, b: JsonValue | undefined): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  if (Array.isArray(b)) return false;
  let count = 0;
  for (const k in a) {
    if (!Object.prototype.hasOwnProperty.call(b, k)) return false;
    if (!jsonEqual(a[k], b[k])) return false;
    count++;
  }
  for (const _ in b) count--;
  return count === 0;
}

export function typeName(value: JsonValue | undefined): string {
  if (value === undefined) return 'nothing';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'list';
  if (typeof value === 'object') return 'map';
  return typeof value;
}

/**
 * Orders strings by their UTF-8 bytes, as Go does. UTF-16 code-unit order only
 * differs for a surrogate (a code point above U+FFFF) against U+E000..U+FFFF.
 */
export function compareStrings(a: string, b: string): number {
  if (a === b) return 0;
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x === y) continue;
    const xs = x >= 0xd800 && x <= 0xdfff;
    const ys = y >= 0xd800 && y <= 0xdfff;
    if (xs && !ys && y >= 0xe000) return 1;
    if (ys && !xs && x >= 0xe000) return -1;
    return x < y ? -1 : 1;
  }
  return a.length - b.length < 0 ? -1 : a.length === b.length ? 0 : 1;
}

function valueRank(v: JsonValue): number {
  if (typeof v === 'number') return 0;
  if (typeof v === 'string') return 1;
  if (typeof v === 'boolean') return 2;
  if (Array.isArray(v)) return 3;
  if (v === null) return 5;
  return 4;
}

/** The total order of values used to sort set items: numbers, strings, booleans, lists, maps, null. */
export function compareValues(a: JsonValue, b: JsonValue): number {
  const ra = valueRank(a);
  const rb = valueRank(b);
  if (ra !== rb) return ra < rb ? -1 : 1;
  switch (ra) {
    case 0:
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 1:
      return compareStrings(a as string, b as string);
    case 2:
      return a === b ? 0 : a === false ? -1 : 1;
    case 3: {
      const la = a as JsonValue[];
      const lb = b as JsonValue[];
      const n = Math.min(la.length, lb.length);
      for (let i = 0; i < n; i++) {
        const c = compareValues(la[i] as JsonValue, lb[i] as JsonValue);
        if (c !== 0) return c;
      }
      return la.length === lb.length ? 0 : la.length < lb.length ? -1 : 1;
    }
    case 4: {
      const ma = a as JsonObject;
      const mb = b as JsonObject;
      const ka = Object.keys(ma).sort(compareStrings);
      const kb = Object.keys(mb).sort(compareStrings);
      const n = Math.min(ka.length, kb.length);
      for (let i = 0; i < n; i++) {
        const c = compareStrings(ka[i] as string, kb[i] as string);
        if (c !== 0) return c;
        const d = compareValues(ma[ka[i] as string] as JsonValue, mb[kb[i] as string] as JsonValue);
        if (d !== 0) return d;
      }
      return ka.length === kb.length ? 0 : ka.length < kb.length ? -1 : 1;
    }
    default:
      return 0;
  }
}

const needsGoEscape = /[<>&\u2028\u2029\u0000-\u001f"\\]/;

/**
 * JSON text as Go's encoding/json writes it: map keys sorted, and `<`, `>`,
 * `&`, U+2028, U+2029 and control characters other than \n, \r, \t escaped as
 * `\u00XX`. FieldsV1 keys embed values in this form, so one value always
 * gives one key.
 */
export function goJson(value: JsonValue): string {
  if (typeof value === 'string') return needsGoEscape.test(value) ? goString(value) : `"${value}"`;
  if (typeof value !== 'object' || value === null) return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map(goJson).join(',')}]`;
  const keys = Object.keys(value).sort(compareStrings);
  return `{${keys.map((k) => `${goJson(k)}:${goJson(value[k] as JsonValue)}`).join(',')}}`;
}

function goString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x22) out += '\\"';
    else if (c === 0x5c) out += '\\\\';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c < 0x20 || c === 0x3c || c === 0x3e || c === 0x26 || c === 0x2028 || c === 0x2029) {
      out += `\\u${c.toString(16).padStart(4, '0')}`;
    } else out += s[i];
  }
  return out + '"';
}
