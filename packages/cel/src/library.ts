import { celFunc, celMethod, CelScalar, isCelList, isCelMap, isCelUint, listType, mapType, type CelFunc, type CelList, type CelValue } from '@bufbuild/cel';
import type { CelDeclaredType } from './declared-type';
import { quantityLibrary } from './quantity';
import { compileSearcher, findAllMatches, type Searcher } from './regex-search';

/**
 * The functions the original server adds to every CEL environment
 * (k8s.io/apiserver/pkg/cel/library) that the base library lacks: lists
 * (`isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`), regular
 * expressions (`find`, `findAll`) and URLs (`url`, `isURL`, `getScheme`,
 * `getHost`, `getHostname`, `getPort`, `getEscapedPath`, `getQuery`) and
 * quantities (quantity.ts). The
 * string extension (`lowerAscii`, `replace`, `split`, `join`, ...) comes
 * with the library's own `strings` extension.
 *
 * Regular expressions take RE2 syntax and run in linear time: `matches`
 * on the RE2 port, `find` and `findAll` on its compiled program run as a
 * Pike VM (regex-search.ts), so a pattern cannot make a rule backtrack.
 */

const LIST = listType(CelScalar.DYN);
const STRING_LIST = listType(CelScalar.STRING);
/** A URL is a map with one private key holding the parsed URL's parts. */
const URL_TYPE = mapType(CelScalar.STRING, CelScalar.DYN);
const URL_KEY = '@url';

type Comparable = bigint | number | string | boolean;

function comparable(v: CelValue): Comparable {
  if (isCelUint(v)) return v.value;
  if (typeof v === 'bigint' || typeof v === 'number' || typeof v === 'string' || typeof v === 'boolean') return v;
  throw new Error(`no such overload: ${typeof v} is not comparable`);
}

function compare(a: CelValue, b: CelValue): number {
  const x = comparable(a);
  const y = comparable(b);
  if (typeof x !== typeof y && !(typeof x === 'bigint' && typeof y === 'number') && !(typeof x === 'number' && typeof y === 'bigint')) {
    throw new Error(`no such overload: cannot compare ${typeof x} with ${typeof y}`);
  }
  return x < y ? -1 : x > y ? 1 : 0;
}

function same(a: CelValue, b: CelValue): boolean {
  if (isCelList(a) && isCelList(b)) {
    if (a.size !== b.size) return false;
    for (let i = 0; i < a.size; i++) if (!same(a.get(i) ?? null, b.get(i) ?? null)) return false;
    return true;
  }
  if (isCelMap(a) && isCelMap(b)) {
    if (a.size !== b.size) return false;
    for (const [k, v] of a.entries()) {
      if (!b.has(k)) return false;
      if (!same(v, b.get(k) ?? null)) return false;
    }
    return true;
  }
  if (isCelUint(a) && isCelUint(b)) return a.value === b.value;
  return a === b;
}

function items(list: CelList): CelValue[] {
  return [...list];
}

function isSorted(this: CelList): boolean {
  const all = items(this);
  for (let i = 1; i < all.length; i++) if (compare(all[i - 1] ?? null, all[i] ?? null) > 0) return false;
  return true;
}

function sum(this: CelList): CelValue {
  const all = items(this);
  if (all.length === 0) return 0n;
  const first = all[0];
  if (typeof first === 'bigint') return all.reduce<bigint>((acc, v) => acc + (typeof v === 'bigint' ? v : fail('sum of mixed types')), 0n);
  if (typeof first === 'number') return all.reduce<number>((acc, v) => acc + (typeof v === 'number' ? v : fail('sum of mixed types')), 0);
  return fail('no such overload: sum of a list that is not of int or double');
}

function extreme(direction: 1 | -1): (this: CelList) => CelValue {
  return function (this: CelList): CelValue {
    const all = items(this);
    if (all.length === 0) return fail(`${direction > 0 ? 'max' : 'min'}(list) argument must not be empty`);
    let best = all[0] ?? null;
    for (const v of all) if (compare(v, best) * direction > 0) best = v;
    return best;
  };
}

function indexIn(list: CelList, value: CelValue, last: boolean): bigint {
  const all = items(list);
  if (last) {
    for (let i = all.length - 1; i >= 0; i--) if (same(all[i] ?? null, value)) return BigInt(i);
  } else {
    for (let i = 0; i < all.length; i++) if (same(all[i] ?? null, value)) return BigInt(i);
  }
  return -1n;
}

function fail(message: string): never {
  throw new Error(message);
}

// ---- regular expressions ----

/** Compiled patterns, bounded: expressions and their constant patterns are few, the map only avoids recompiling per call. */
const patterns = new Map<string, Searcher>();
const MAX_PATTERNS = 500;

function pattern(source: string): Searcher {
  let p = patterns.get(source);
  if (!p) {
    try {
      p = compileSearcher(source);
    } catch (err) {
      throw new Error(`invalid regex pattern ${JSON.stringify(source)}: ${(err as Error).message}`);
    }
    if (patterns.size >= MAX_PATTERNS) patterns.clear();
    patterns.set(source, p);
  }
  return p;
}

function findAllIn(input: string, source: string, limit: number): string[] {
  if (limit === 0) return [];
  return findAllMatches(pattern(source), input, limit);
}

// ---- URLs ----

interface UrlParts {
  scheme: string;
  host: string;
  hostname: string;
  port: string;
  escapedPath: string;
  query: Map<string, string[]>;
}

/** Absolute URLs (with a scheme) and absolute paths, as Go's url.ParseRequestURI accepts them. */
function parseUrl(raw: string): UrlParts | undefined {
  if (raw.startsWith('/')) {
    try {
      const u = new URL(raw, 'http://placeholder.invalid');
      return { scheme: '', host: '', hostname: '', port: '', escapedPath: u.pathname, query: queryOf(u) };
    } catch {
      return undefined;
    }
  }
  if (!/^[A-Za-z][A-Za-z0-9+.-]*:/.test(raw) || /\s/.test(raw)) return undefined;
  try {
    const u = new URL(raw);
    const hostname = u.hostname.startsWith('[') ? u.hostname.slice(1, -1) : u.hostname;
    return { scheme: u.protocol.slice(0, -1), host: u.host, hostname, port: u.port, escapedPath: u.pathname === '/' && !/^[^:]+:\/\/[^/]*\//.test(raw) ? '' : u.pathname, query: queryOf(u) };
  } catch {
    return undefined;
  }
}

function queryOf(u: URL): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const [k, v] of u.searchParams) out.set(k, [...(out.get(k) ?? []), v]);
  return out;
}

function urlValue(raw: string): Map<string, CelValue> {
  const parts = parseUrl(raw);
  if (!parts) return fail(`URL parse error during conversion from string: ${raw}`);
  return new Map<string, CelValue>([[URL_KEY, raw]]);
}

function partsOf(value: unknown): UrlParts {
  const raw = isCelMap(value) ? value.get(URL_KEY) : undefined;
  const parts = typeof raw === 'string' ? parseUrl(raw) : undefined;
  return parts ?? fail('no such overload: not a URL');
}

export const kubernetesLibrary: readonly CelFunc[] = [
  celMethod('isSorted', LIST, [], CelScalar.BOOL, isSorted),
  celMethod('sum', LIST, [], CelScalar.DYN, sum),
  celMethod('min', LIST, [], CelScalar.DYN, extreme(-1)),
  celMethod('max', LIST, [], CelScalar.DYN, extreme(1)),
  celMethod('indexOf', LIST, [CelScalar.DYN], CelScalar.INT, function (this: CelList, v: CelValue) {
    return indexIn(this, v, false);
  }),
  celMethod('lastIndexOf', LIST, [CelScalar.DYN], CelScalar.INT, function (this: CelList, v: CelValue) {
    return indexIn(this, v, true);
  }),
  celMethod('find', CelScalar.STRING, [CelScalar.STRING], CelScalar.STRING, function (this: string, re: string) {
    return findAllIn(this, re, 1)[0] ?? '';
  }),
  celMethod('findAll', CelScalar.STRING, [CelScalar.STRING], STRING_LIST, function (this: string, re: string) {
    return findAllIn(this, re, -1);
  }),
  celMethod('findAll', CelScalar.STRING, [CelScalar.STRING, CelScalar.INT], STRING_LIST, function (this: string, re: string, limit: bigint) {
    return findAllIn(this, re, Number(limit));
  }),
  celFunc('url', [CelScalar.STRING], URL_TYPE, urlValue),
  celFunc('isURL', [CelScalar.STRING], CelScalar.BOOL, (raw: string) => parseUrl(raw) !== undefined),
  celMethod('getScheme', URL_TYPE, [], CelScalar.STRING, function (this: unknown) {
    return partsOf(this).scheme;
  }),
  celMethod('getHost', URL_TYPE, [], CelScalar.STRING, function (this: unknown) {
    return partsOf(this).host;
  }),
  celMethod('getHostname', URL_TYPE, [], CelScalar.STRING, function (this: unknown) {
    return partsOf(this).hostname;
  }),
  celMethod('getPort', URL_TYPE, [], CelScalar.STRING, function (this: unknown) {
    return partsOf(this).port;
  }),
  celMethod('getEscapedPath', URL_TYPE, [], CelScalar.STRING, function (this: unknown) {
    return partsOf(this).escapedPath;
  }),
  celMethod('getQuery', URL_TYPE, [], mapType(CelScalar.STRING, STRING_LIST), function (this: unknown) {
    return partsOf(this).query;
  }),
  ...quantityLibrary,
];

/** The names of the library's functions with a scalar result type, for the compile-time type inference. */
export const LIBRARY_RESULT_TYPES: Readonly<Record<string, CelDeclaredType>> = {
  isSorted: 'bool',
  isURL: 'bool',
  find: 'string',
  getScheme: 'string',
  getHost: 'string',
  getHostname: 'string',
  getPort: 'string',
  getEscapedPath: 'string',
  quantity: 'quantity',
  isQuantity: 'bool',
  isInteger: 'bool',
  asInteger: 'int',
  asApproximateFloat: 'double',
  sign: 'int',
  isGreaterThan: 'bool',
  isLessThan: 'bool',
  compareTo: 'int',
  add: 'quantity',
  sub: 'quantity',
  // The admission authorizer library's decisions (admission.ts).
  allowed: 'bool',
  errored: 'bool',
  reason: 'string',
  error: 'string',
};
