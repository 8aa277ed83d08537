/**
 * Path elements and their two textual forms: the FieldsV1 key form
 * (`f:name`, `k:{"name":"a"}`, `v:"x"`, `i:3`) used in managedFields, and the
 * readable form (`.spec.containers[name="a"].image`) used in messages.
 *
 * Internally every engine passes path elements around in their FieldsV1 key
 * form: it is canonical (key fields sorted, values encoded as Go does), so
 * equal elements are equal strings and can key a Map.
 */
import { MergeError } from './errors';
import { compareStrings, compareValues, goJson, isJsonObject, JsonValue } from './json';

/** One step of a field path. */
export type PathElement =
  | { readonly field: string }
  /** An item of a `map` list, by its key fields (sorted by name). */
  | { readonly key: ReadonlyArray<readonly [string, JsonValue]> }
  /** An item of a `set` list, by its value. */
  | { readonly value: JsonValue }
  | { readonly index: number };

export type FieldPath = readonly PathElement[];

export function serializePathElement(pe: PathElement): string {
  if ('field' in pe) return `f:${pe.field}`;
  if ('key' in pe) {
    const fields = [...pe.key].sort((a, b) => compareStrings(a[0], b[0]));
    return `k:{${fields.map(([n, v]) => `${goJson(n)}:${goJson(v)}`).join(',')}}`;
  }
  if ('value' in pe) return `v:${goJson(pe.value)}`;
  return `i:${pe.index}`;
}

/** Result of parsing a FieldsV1 key: an element, or `undefined` for a type this version does not know. */
export function parsePathElement(s: string): PathElement | undefined {
  if (s.length < 2 || s[1] !== ':') throw badElement(s, 'a path element is a type letter, a colon and a value');
  const body = s.slice(2);
  switch (s[0]) {
    case 'f':
      return { field: body };
    case 'k': {
      const parsed = parseJsonText(s, body);
      if (!isJsonObject(parsed)) throw badElement(s, 'a key element holds a JSON object');
      const key = Object.keys(parsed)
        .sort(compareStrings)
        .map((name) => [name, parsed[name] as JsonValue] as const);
      return { key };
    }
    case 'v':
      return { value: parseJsonText(s, body) };
    case 'i': {
      if (!/^[+-]?\d+$/.test(body)) throw badElement(s, 'an index element holds an integer');
      return { index: Number.parseInt(body, 10) };
    }
    default:
      // Like upstream: element types from a newer version are dropped, not rejected.
      return undefined;
  }
}

function parseJsonText(element: string, text: string): JsonValue {
  try {
    return JSON.parse(text) as JsonValue;
  } catch {
    throw badElement(element, 'the value is not valid JSON');
  }
}

function badElement(s: string, why: string): MergeError {
  return MergeError.badRequest(`invalid path element ${JSON.stringify(s)}: ${why}`, [
    { field: s, message: why, reason: 'FieldValueInvalid' },
  ]);
}

/** Readable form of a value inside a path: strings quoted, everything else as JSON. */
function valueText(v: JsonValue): string {
  return JSON.stringify(v);
}

/** Readable form of one element: `.name`, `[name="a",port=80]`, `[="x"]`, `[3]`. */
export function pathElementText(pe: PathElement): string {
  if ('field' in pe) return `.${pe.field}`;
  if ('key' in pe) return `[${pe.key.map(([n, v]) => `${n}=${valueText(v)}`).join(',')}]`;
  if ('value' in pe) return `[=${valueText(pe.value)}]`;
  return `[${pe.index}]`;
}

/** Readable form of a path, as upstream prints it in conflicts: `.spec.ports[port=80,protocol="TCP"]`. */
export function pathToString(path: FieldPath): string {
  return path.map(pathElementText).join('');
}

// Parsing key and value elements for ordering costs JSON.parse; cache it.
const parsedCache = new Map<string, PathElement | undefined>();
const CACHE_LIMIT = 20000;

export function parseSerialized(s: string): PathElement | undefined {
  let pe = parsedCache.get(s);
  if (pe === undefined && !parsedCache.has(s)) {
    pe = parsePathElement(s);
    if (parsedCache.size >= CACHE_LIMIT) parsedCache.clear();
    parsedCache.set(s, pe);
  }
  return pe;
}

/** Readable form of a path given as FieldsV1 key strings. */
export function serializedPathToString(path: readonly string[]): string {
  let out = '';
  for (const s of path) {
    if (s.startsWith('f:')) out += `.${s.slice(2)}`;
    else {
      const pe = parseSerialized(s);
      out += pe ? pathElementText(pe) : `[${s}]`;
    }
  }
  return out;
}

const RANK: Record<string, number> = { f: 0, k: 1, v: 2, i: 3 };

/**
 * The order of path elements, as structured-merge-diff sorts them: fields by
 * name, then keys, then values, then indexes.
 */
export function compareSerialized(a: string, b: string): number {
  if (a === b) return 0;
  const ra = RANK[a[0] as string] ?? 4;
  const rb = RANK[b[0] as string] ?? 4;
  if (ra !== rb) return ra < rb ? -1 : 1;
  // Same type, so the same two-character prefix: whole strings compare like their bodies.
  if (ra === 0) return compareStrings(a, b);
  const pa = parseSerialized(a);
  const pb = parseSerialized(b);
  if (pa === undefined || pb === undefined) return compareStrings(a, b);
  if ('key' in pa && 'key' in pb) {
    if (pa.key.length !== pb.key.length) return pa.key.length < pb.key.length ? -1 : 1;
    for (let i = 0; i < pa.key.length; i++) {
      const [na, va] = pa.key[i] as readonly [string, JsonValue];
      const [nb, vb] = pb.key[i] as readonly [string, JsonValue];
      const c = compareStrings(na, nb);
      if (c !== 0) return c;
      const d = compareValues(va, vb);
      if (d !== 0) return d;
    }
    return 0;
  }
  if ('value' in pa && 'value' in pb) return compareValues(pa.value, pb.value);
  if ('index' in pa && 'index' in pb) return pa.index < pb.index ? -1 : pa.index > pb.index ? 1 : 0;
  return compareStrings(a, b);
}

export function fieldElement(name: string): string {
  return `f:${name}`;
}
