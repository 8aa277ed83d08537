import * as fs from 'node:fs';
import * as https from 'node:https';
import * as tls from 'node:tls';
import type { Environment } from '@svc/testenv';

/**
 * A seeded stream of hostile requests against a running system, and what
 * it did: every answer's code, 5xx answers, connections dropped without a
 * status line, 4xx answers without a Status body, requests that had to be
 * refused but were not, and canary objects that changed.
 *
 * Three classes of request:
 * - anything goes, in the `fuzz` namespace: malformed and oversized bodies
 *   of every content type, alias and nesting bombs, bad names, paths, query
 *   values (out of range too) and headers, values no client could decode;
 *   any 2xx-4xx answer is fine, a 5xx or silence is not;
 * - writes aimed at the canaries that must be refused (a 4xx with a Status):
 *   renames and moves by every patch type and PUT, invalid base64, bad
 *   timestamps, oversized objects, stale or foreign preconditions, bad
 *   options, delete policies not supported;
 * - raw request heads over TLS (repeated Host, HTTP/1.0 without Host, 10,000
 *   headers, CONNECT, malformed lines and framing): each must get a status
 *   line that is not 5xx.
 * The same stream (same seed and count) is the same requests, so a failure
 * can be replayed.
 */
export const CANARY_NAMESPACE = 'canaries';
export const FUZZ_NAMESPACE = 'fuzz';

export interface FuzzOptions {
  seed: number;
  requests: number;
  concurrency?: number;
}

export interface FuzzReport {
  seed: number;
  requests: number;
  /** Of `requests`: raw request heads, and writes aimed at canaries that had to be refused. */
  rawRequests: number;
  canaryWrites: number;
  codes: Record<string, number>;
  serverErrors: string[];
  /** Connections closed or timed out without a status line. */
  dropped: string[];
  /** 4xx answers whose body is not a Status. */
  withoutStatus: string[];
  /** Canary writes answered with something other than a 4xx. */
  notRefused: string[];
  canaries: number;
  canariesChanged: string[];
  peakGatewayRssBytes: number;
  seconds: number;
}

interface HttpCase {
  kind: 'http';
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
  /** A write at a canary: only a 4xx is right. */
  mustRefuse?: boolean;
}

interface RawCase {
  kind: 'raw';
  label: string;
  head: Buffer;
}

type FuzzCase = HttpCase | RawCase;

/** mulberry32: a small seeded generator, so a failing run can be replayed. */
export function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const WIDGET_API = 'example.com/v1';
const CANARY_KINDS = [
  { path: `/api/v1/namespaces/${CANARY_NAMESPACE}/configmaps`, kind: 'ConfigMap', apiVersion: 'v1', count: 8 },
  { path: `/api/v1/namespaces/${CANARY_NAMESPACE}/secrets`, kind: 'Secret', apiVersion: 'v1', count: 8 },
  { path: `/apis/example.com/v1/namespaces/${CANARY_NAMESPACE}/widgets`, kind: 'Widget', apiVersion: WIDGET_API, count: 4 },
] as const;

function canaryBody(kind: (typeof CANARY_KINDS)[number], i: number): Record<string, unknown> {
  const metadata = { name: `canary-${i}`, labels: { canary: 'yes' } };
  if (kind.kind === 'Widget') return { apiVersion: kind.apiVersion, kind: kind.kind, metadata, spec: { size: 1 + (i % 9), color: 'blue' } };
  const data = { v: Buffer.from(`canary ${i}`).toString('base64') };
  if (kind.kind === 'Secret') return { apiVersion: kind.apiVersion, kind: kind.kind, metadata, data };
  return { apiVersion: kind.apiVersion, kind: kind.kind, metadata, data: { v: `canary ${i}` }, binaryData: { b: data.v } };
}

function cases(random: () => number, count: number): FuzzCase[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const int = (n: number): number => Math.floor(random() * n);
  const names = ['fz-a', 'fz-b', 'fz-c', 'FZ-Upper', 'fz_under', 'fz.dot', '-fz', 'fz-' + 'x'.repeat(300), '', '%00', '%2e%2e', 'é', 'a%2Fb', 'fz-d'];
  const kinds = [
    { path: `/api/v1/namespaces/${FUZZ_NAMESPACE}/configmaps`, kind: 'ConfigMap', apiVersion: 'v1' },
    { path: `/api/v1/namespaces/${FUZZ_NAMESPACE}/secrets`, kind: 'Secret', apiVersion: 'v1' },
    { path: `/api/v1/namespaces/${FUZZ_NAMESPACE}/pods`, kind: 'Pod', apiVersion: 'v1' },
    { path: `/api/v1/namespaces/${FUZZ_NAMESPACE}/services`, kind: 'Service', apiVersion: 'v1' },
    { path: `/apis/coordination.svc.io/v1/namespaces/${FUZZ_NAMESPACE}/leases`, kind: 'Lease', apiVersion: 'coordination.svc.io/v1' },
    { path: `/api/v1/namespaces/${FUZZ_NAMESPACE}/serviceaccounts`, kind: 'ServiceAccount', apiVersion: 'v1' },
    { path: `/apis/example.com/v1/namespaces/${FUZZ_NAMESPACE}/widgets`, kind: 'Widget', apiVersion: WIDGET_API },
  ] as const;
  const huge = '99999999999999999999999';
  const queries = [
    '',
    '?limit=-1',
    '?limit=abc',
    `?limit=${huge}`,
    '?limit=1.5',
    '?resourceVersion=abc',
    '?resourceVersion=999999999999',
    `?resourceVersion=${huge}`,
    '?resourceVersion=-1',
    '?resourceVersion=1e5',
    '?resourceVersionMatch=Exact&resourceVersion=1',
    '?resourceVersionMatch=NotOlderThan',
    '?continue=garbage',
    '?continue=' + Buffer.from('{"v":"meta.svc.io/v1","rv":-5,"start":"\\u0000"}').toString('base64'),
    '?labelSelector=a%20in%20(',
    '?labelSelector=' + 'a'.repeat(5000),
    '?fieldSelector=spec.nothing%3Dx',
    '?fieldSelector=metadata.name%3D%3D%3D',
    '?dryRun=Maybe',
    '?dryRun=All',
    '?fieldManager=' + 'm'.repeat(200),
    '?fieldValidation=Sometimes',
    '?fieldValidation=Strict',
    '?pretty=t',
    '?pretty=maybe',
    '?watch=yes&timeoutSeconds=1',
    '?watch=1&timeoutSeconds=abc',
    '?watch=1&timeoutSeconds=1&sendInitialEvents=true',
    '?timeoutSeconds=abc',
    `?timeoutSeconds=${huge}`,
    '?timeoutSeconds=-5',
    '?propagationPolicy=Sideways',
    '?propagationPolicy=Orphan',
    '?gracePeriodSeconds=x',
    `?gracePeriodSeconds=${huge}`,
    '?orphanDependents=true',
    '?force=true',
    '?a[b]=c&labelSelector[x]=y',
    '?%zz=1',
  ];
  const nested = (depth: number, open: string, close: string): string => open.repeat(depth) + close.repeat(depth);
  const aliasBomb = (): string => {
    const lines = ['x0: &a0 ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i <= 7; i++) lines.push(`x${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(',')}]`);
    return lines.join('\n');
  };
  const bodies = (k: (typeof kinds)[number], name: string): Array<[string, string | Buffer]> => [
    ['application/json', JSON.stringify({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name, labels: { a: 'b' } }, data: { k: 'v' } })],
    ['application/json', `{"apiVersion":"${k.apiVersion}","kind":"${k.kind}","metadata":{"name":"${name}"`],
    ['application/json', JSON.stringify({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name, labels: { 'bad key!': 'x'.repeat(100) }, annotations: { a: 1 } } })],
    ['application/json', JSON.stringify({ apiVersion: 'v2', kind: 'Nope', metadata: { name } })],
    ['application/json', JSON.stringify({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name, resourceVersion: '1' }, spec: 'not an object', data: [1, 2] })],
    ['application/json', `{"apiVersion":"${k.apiVersion}","kind":"${k.kind}","metadata":{"name":"${name}"},"data":${nested(5000, '[', ']')}}`],
    ['application/json', JSON.stringify({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name }, data: { big: 'y'.repeat(int(2_000_000)) } })],
    ['application/json', JSON.stringify({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name }, data: { big: 'z'.repeat(2_200_000 + int(800_000)) } })],
    ['application/json', JSON.stringify({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name }, binaryData: { b: 'not base64!' }, data: { s: '%%%' } })],
    ['application/json', JSON.stringify({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name, creationTimestamp: 'garbage', deletionTimestamp: '2020-13-45T99:00:00Z' } })],
    ['application/json', JSON.stringify({ apiVersion: k.apiVersion, kind: k.kind, metadata: { name, generation: 1e30 }, spec: { ports: [{ port: 99999999999 }], replicas: 1.5, size: 1e40, leaseDurationSeconds: -1e20 } })],
    ['application/json', JSON.stringify([1, 2, 3])],
    ['application/json', 'null'],
    ['application/json', '{"a":1,"a":2,"metadata":{"name":"' + name + '","name":"dup"}}'],
    ['application/yaml', `apiVersion: ${k.apiVersion}\nkind: ${k.kind}\nmetadata:\n  name: ${name}\n${aliasBomb()}\n`],
    ['application/yaml', 'a: [unclosed\n  - : :'],
    ['application/yaml', '--- !!binary |\n  AAAA\n'],
    ['application/yaml', `apiVersion: ${k.apiVersion}\nkind: ${k.kind}\nmetadata:\n  name: ${name}\n  creationTimestamp: 2001-12-14\ndata:\n  k: !!int 5\n`],
    ['application/vnd.svc.protobuf', Buffer.from([0x6b, 0x38, 0x73, 0x00, ...Array.from({ length: int(200) }, () => int(256))])],
    ['application/vnd.kubernetes.protobuf', Buffer.from(Array.from({ length: int(100) }, () => int(256)))],
    ['application/json-patch+json', JSON.stringify([{ op: 'replace', path: '/metadata/name', value: 'other' }, { op: 'bogus' }])],
    ['application/json-patch+json', JSON.stringify([{ op: 'add', path: '/data/x', value: 1 }, { op: 'test', path: '/nope', value: 2 }])],
    ['application/json-patch+json', JSON.stringify([{ op: 'remove', path: '/metadata' }])],
    ['application/json-patch+json', JSON.stringify([{ op: 'move', from: '/data', path: '/data/inner' }])],
    ['application/merge-patch+json', JSON.stringify({ metadata: { finalizers: ['example.com/x'], resourceVersion: '1' }, data: null })],
    ['application/merge-patch+json', JSON.stringify({ metadata: { name: 'renamed', namespace: 'elsewhere' } })],
    ['application/merge-patch+json', JSON.stringify({ metadata: { creationTimestamp: 'garbage' }, binaryData: { b: '====' } })],
    ['application/strategic-merge-patch+json', JSON.stringify({ $patch: 'delete', metadata: { $retainKeys: 5 } })],
    ['application/strategic-merge-patch+json', JSON.stringify({ metadata: { name: 'renamed' }, spec: { ports: [{ port: 'x', $patch: 'replace' }] } })],
    ['application/apply-patch+yaml', `apiVersion: ${k.apiVersion}\nkind: ${k.kind}\nmetadata:\n  name: ${name}\n  managedFields: [1]\n`],
    ['application/apply-patch+yaml', `apiVersion: ${k.apiVersion}\nkind: ${k.kind}\nmetadata:\n  name: ${name}-other\n`],
    ['application/apply-patch+yaml', aliasBomb()],
    ['text/plain', 'hello'],
    ['multipart/form-data; boundary=x', '--x\r\n\r\n--x--'],
  ];
  const odd = [
    `/api/v1/namespaces/${FUZZ_NAMESPACE}`,
    '/apis',
    '/api',
    '/openapi/v2',
    '/openapi/v3/apis/example.com/v1',
    '/version',
    '/apis/nope.svc.io/v1/things',
    `/api/v1/namespaces/${FUZZ_NAMESPACE}/configmaps/`,
    `/api/v1/namespaces/${FUZZ_NAMESPACE}/configmaps/fz-a/`,
    `//api/v1//namespaces//${FUZZ_NAMESPACE}/configmaps`,
    `/api/v1/namespaces/${FUZZ_NAMESPACE}/configmaps/a/b/c/d`,
    `/api/v1/namespaces/${FUZZ_NAMESPACE}/pods/p/status`,
    `/api/v1/namespaces/${FUZZ_NAMESPACE}/pods/p/exec`,
    `/apis/example.com/v1/namespaces/${FUZZ_NAMESPACE}/widgets/w/scale`,
    '/api/v1/namespaces/%2e%2e/configmaps',
    '/readyz/../api/v1/secrets',
    '/' + 'p/'.repeat(2000),
  ];

  const out: FuzzCase[] = [];
  for (let i = 0; i < count; i++) {
    const roll = random();
    if (roll < 0.05) {
      out.push(rawCase(random));
      continue;
    }
    if (roll < 0.2) {
      out.push(canaryWrite(random));
      continue;
    }
    const k = pick(kinds);
    const name = pick(names);
    const method = pick(['GET', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
    const query = pick(queries);
    let path = name && method !== 'POST' ? `${k.path}/${name}` : k.path;
    if (random() < 0.1) path = pick(odd);
    // Collections are never deleted as a whole outside the fuzz namespace.
    if (method === 'DELETE' && !path.includes(`/namespaces/${FUZZ_NAMESPACE}/`)) path = `${k.path}/fz-a`;
    const headers: Record<string, string> = {};
    let body: Buffer | undefined;
    if (method !== 'GET' && method !== 'DELETE') {
      const [type, payload] = pick(bodies(k, name || 'fz-a'));
      headers['content-type'] = type;
      body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
    } else if (method === 'DELETE' && random() < 0.5) {
      headers['content-type'] = 'application/json';
      body = Buffer.from(pick(['{"dryRun":["All"]}', '{"dryRun":"All"}', '{"preconditions":{"uid":5}}', '{"gracePeriodSeconds":-1}', '[', '{"propagationPolicy":"Orphan"}', '{"orphanDependents":true,"propagationPolicy":"Background"}', '{"gracePeriodSeconds":1e400}']));
    }
    if (random() < 0.2) headers['accept'] = pick(['application/vnd.svc.protobuf', 'application/json;as=Table;v=v1;g=meta.svc.io', 'text/html', 'application/yaml', '*/*;q=abc', 'application/json;as=PartialObjectMetadata;g=meta.svc.io;v=v1']);
    if (random() < 0.05) headers['impersonate-user'] = 'someone';
    if (random() < 0.05) headers['x-remote-user'] = 'admin';
    if (random() < 0.05) headers['host'] = 'evil.example.com';
    if (random() < 0.03) headers['content-encoding'] = 'gzip';
    out.push({ kind: 'http', method, path: path + query, headers, ...(body ? { body } : {}) });
  }
  return out;
}

/** A write at a canary that the server must refuse, whatever else the fuzz has done. */
function canaryWrite(random: () => number): HttpCase {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const kind = pick(CANARY_KINDS);
  const i = Math.floor(random() * kind.count);
  const name = `canary-${i}`;
  const path = `${kind.path}/${name}`;
  const json = (method: string, type: string, body: unknown, query = ''): HttpCase => ({ kind: 'http', method, path: path + query, headers: { 'content-type': type }, body: Buffer.from(typeof body === 'string' ? body : JSON.stringify(body)), mustRefuse: true });
  const MERGE = 'application/merge-patch+json';
  const typed = kind.kind === 'Widget' ? {} : { binaryData: { v: 'not base64!' } };
  const variants: Array<() => HttpCase> = [
    () => json('PATCH', MERGE, { metadata: { name: `${name}-renamed` } }),
    () => json('PATCH', MERGE, { metadata: { name: null } }),
    () => json('PATCH', MERGE, { metadata: { namespace: 'elsewhere' } }),
    () => json('PATCH', 'application/json-patch+json', [{ op: 'replace', path: '/metadata/name', value: 'other' }]),
    () => json('PATCH', 'application/json-patch+json', [{ op: 'remove', path: '/metadata' }]),
    () => json('PATCH', 'application/json-patch+json', [{ op: 'test', path: '/metadata/uid', value: 'not-the-uid' }, { op: 'add', path: '/metadata/labels/x', value: 'y' }]),
    () => json('PATCH', 'application/strategic-merge-patch+json', { metadata: { name: 'other' } }),
    () => json('PATCH', 'application/apply-patch+yaml', `apiVersion: ${kind.apiVersion}\nkind: ${kind.kind}\nmetadata:\n  name: other\n`, '?fieldManager=fuzz&force=true'),
    () => json('PATCH', 'application/apply-patch+yaml', `apiVersion: ${kind.apiVersion}\nkind: ${kind.kind}\nmetadata:\n  name: ${name}\n  labels: {x: y}\n`),
    () => json('PATCH', MERGE, { metadata: { creationTimestamp: 'garbage' } }),
    () => json('PATCH', MERGE, kind.kind === 'Secret' ? { data: { v: 'not base64!' } } : kind.kind === 'ConfigMap' ? { binaryData: { v: '@@@@' } } : { spec: { size: 99 } }),
    () => json('PATCH', MERGE, { metadata: { labels: { x: 'y' } } }, '?dryRun=Maybe'),
    () => json('PATCH', MERGE, { metadata: { labels: { x: 'y' } } }, '?fieldValidation=Sometimes'),
    () => json('PATCH', MERGE, { metadata: { labels: { x: 'y' }, resourceVersion: '1' } }),
    () => json('PATCH', MERGE, { metadata: { labels: { x: 'y' } }, data: { big: 'q'.repeat(3_200_000) } }),
    () => json('PUT', 'application/json', { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name: 'other' }, ...typed }),
    () => json('PUT', 'application/json', { apiVersion: kind.apiVersion, kind: kind.kind, metadata: {}, ...typed }),
    () => json('PUT', 'application/json', { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name, resourceVersion: '2' }, ...typed }),
    () => json('PUT', 'application/json', { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name, namespace: 'elsewhere' } }),
    () => ({ ...json('POST', 'application/json', { apiVersion: kind.apiVersion, kind: kind.kind, metadata: { name } }), path: kind.path }),
    () => json('DELETE', 'application/json', { preconditions: { uid: 'not-the-uid' } }),
    () => json('DELETE', 'application/json', { preconditions: { resourceVersion: '1' } }),
    () => json('DELETE', 'application/json', { propagationPolicy: 'Sometimes' }),
    () => json('DELETE', 'application/json', { propagationPolicy: 'Foreground', orphanDependents: true }),
    () => json('DELETE', 'application/json', { gracePeriodSeconds: 'soon' }),
    () => json('DELETE', 'application/json', { dryRun: ['Maybe'] }),
    () => json('DELETE', 'application/json', {}, '?propagationPolicy=Orphan&orphanDependents=true'),
  ];
  return pick(variants)();
}

function rawCase(random: () => number): RawCase {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const list = `/api/v1/namespaces/${FUZZ_NAMESPACE}/configmaps`;
  const heads: Array<[string, () => string]> = [
    ['two Host headers', () => `GET ${list} HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`],
    ['HTTP/1.0 without Host', () => `GET ${list} HTTP/1.0\r\n\r\n`],
    ['HTTP/1.1 without Host', () => `GET ${list} HTTP/1.1\r\n\r\n`],
    ['10,000 headers', () => `GET ${list} HTTP/1.1\r\nHost: x\r\n${Array.from({ length: 10000 }, (_, i) => `X-H${i}: v\r\n`).join('')}\r\n`],
    ['CONNECT', () => 'CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n'],
    ['garbage request line', () => 'HELLO THERE\r\n\r\n'],
    ['header without a colon', () => `GET ${list} HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n`],
    ['URL of 20,000 characters', () => `GET /api/v1/${'a'.repeat(20000)} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['bad chunk size', () => `POST ${list} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`],
    ['Content-Length and chunked', () => `POST ${list} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n`],
    ['two Content-Lengths', () => `POST ${list} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 2\r\nContent-Length: 5\r\n\r\n{}`],
    ['NUL in a header', () => `GET ${list} HTTP/1.1\r\nHost: x\r\nX-A: a\u0000b\r\n\r\n`],
    ['lower-case method', () => `get ${list} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['folded header', () => `GET ${list} HTTP/1.1\r\nHost: x\r\nX-A: a\r\n  b\r\n\r\n`],
    ['absolute URI', () => `GET https://elsewhere.example${list} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['asterisk form', () => 'OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['unknown method', () => `BREW ${list} HTTP/1.1\r\nHost: x\r\n\r\n`],
    ['TRACE', () => `TRACE ${list} HTTP/1.1\r\nHost: x\r\n\r\n`],
  ];
  const [label, head] = pick(heads);
  return { kind: 'raw', label, head: Buffer.from(head(), 'latin1') };
}

/** Creates the fuzz and canary namespaces and the 20 canaries; answers each canary's path and stored bytes. */
export async function prepareFuzz(request: (method: string, path: string, body?: string) => Promise<{ status: number; body: string }>): Promise<Map<string, string>> {
  for (const ns of [FUZZ_NAMESPACE, CANARY_NAMESPACE]) {
    const res = await request('POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }));
    if (res.status !== 201) throw new Error(`creating namespace ${ns}: ${res.status} ${res.body}`);
  }
  const canaries = new Map<string, string>();
  for (const kind of CANARY_KINDS) {
    for (let i = 0; i < kind.count; i++) {
      const res = await request('POST', kind.path, JSON.stringify(canaryBody(kind, i)));
      if (res.status !== 201) throw new Error(`creating canary ${kind.kind} ${i}: ${res.status} ${res.body}`);
      const path = `${kind.path}/canary-${i}`;
      canaries.set(path, (await request('GET', path)).body);
    }
  }
  return canaries;
}

export async function runFuzz(env: Environment, canaries: Map<string, string>, options: FuzzOptions, request: (method: string, path: string) => Promise<{ status: number; body: string }>): Promise<FuzzReport> {
  const started = Date.now();
  const concurrency = options.concurrency ?? 8;
  const stream = cases(generator(options.seed), options.requests);
  const report: FuzzReport = {
    seed: options.seed,
    requests: stream.length,
    rawRequests: stream.filter((c) => c.kind === 'raw').length,
    canaryWrites: stream.filter((c) => c.kind === 'http' && c.mustRefuse).length,
    codes: {},
    serverErrors: [],
    dropped: [],
    withoutStatus: [],
    notRefused: [],
    canaries: canaries.size,
    canariesChanged: [],
    peakGatewayRssBytes: 0,
    seconds: 0,
  };
  const tlsOptions = { ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) };
  const port = Number(new URL(env.url).port);
  const agent = new https.Agent({ keepAlive: true, maxSockets: concurrency });
  const gateway = env.processes.find((p) => p.name === 'gateway');
  const sampleRss = (): void => {
    if (!gateway?.pid) return;
    try {
      const kb = Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${gateway.pid}/status`, 'utf8'))?.[1] ?? 0);
      report.peakGatewayRssBytes = Math.max(report.peakGatewayRssBytes, kb * 1024);
    } catch {
      // The process is between restarts; the next sample reads it.
    }
  };
  const sampler = setInterval(sampleRss, 100);
  const count = (code: number): void => {
    report.codes[String(code)] = (report.codes[String(code)] ?? 0) + 1;
  };

  const sendHttp = (c: HttpCase): Promise<void> =>
    new Promise((resolve) => {
      const describe = `${c.method} ${c.path.slice(0, 200)} (${c.headers['content-type'] ?? ''})`;
      const req = https.request(
        { host: '127.0.0.1', servername: 'localhost', port, method: c.method, path: c.path, agent, ...tlsOptions, headers: { ...c.headers, ...(c.body ? { 'content-length': String(c.body.length) } : {}) }, timeout: 30000 },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            const code = res.statusCode ?? 0;
            count(code);
            const text = Buffer.concat(chunks).toString('utf8');
            // A read at a resourceVersion the store has not reached waits, then answers 504 as the original server does.
            const tooNew = code === 504 && text.includes('"reason":"ResourceVersionTooLarge"');
            if (code >= 500 && !tooNew) report.serverErrors.push(`${code} ${describe}: ${text.slice(0, 300)}`);
            else if (code >= 400 && !/"kind":"Status"/.test(text)) report.withoutStatus.push(`${code} ${describe}`);
            if (c.mustRefuse && (code < 400 || code >= 500)) report.notRefused.push(`${code} ${describe}: ${text.slice(0, 200)}`);
            resolve();
          });
          res.on('error', (err) => {
            report.dropped.push(`response broke: ${describe}: ${err.message}`);
            resolve();
          });
        },
      );
      req.on('timeout', () => req.destroy(new Error('no answer in 30 s')));
      req.on('error', (err) => {
        report.dropped.push(`${describe}: ${err.message}`);
        resolve();
      });
      req.end(c.body);
    });

  const sendRaw = (c: RawCase): Promise<void> =>
    new Promise((resolve) => {
      let received = '';
      let settled = false;
      const finish = (problem?: string): void => {
        if (settled) return;
        settled = true;
        socket.destroy();
        const line = /^HTTP\/1\.[01] (\d{3})/.exec(received);
        if (!line) report.dropped.push(`raw ${c.label}: ${problem ?? 'closed'} without a status line${received ? ` (got ${JSON.stringify(received.slice(0, 80))})` : ''}`);
        else {
          const code = Number(line[1]);
          count(code);
          if (code >= 500) report.serverErrors.push(`${code} raw ${c.label}`);
        }
        resolve();
      };
      const socket = tls.connect({ host: '127.0.0.1', port, servername: 'localhost', ...tlsOptions, ALPNProtocols: ['http/1.1'] }, () => {
        socket.write(c.head);
      });
      socket.setTimeout(15000, () => finish('no answer in 15 s'));
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('latin1');
        if (/\r\n/.test(received)) finish();
      });
      socket.on('end', () => finish());
      socket.on('close', () => finish());
      socket.on('error', (err) => finish(err.message));
    });

  let next = 0;
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      for (let i = next++; i < stream.length; i = next++) {
        const c = stream[i] as FuzzCase;
        await (c.kind === 'raw' ? sendRaw(c) : sendHttp(c));
      }
    }),
  );
  clearInterval(sampler);
  sampleRss();
  agent.destroy();
  for (const [path, before] of canaries) {
    const now = (await request('GET', path)).body;
    if (now !== before) report.canariesChanged.push(`${path}: ${before.slice(0, 120)} -> ${now.slice(0, 120)}`);
  }
  report.seconds = Math.round((Date.now() - started) / 100) / 10;
  return report;
}

/** One line per figure, as `make fuzz` prints them and BENCHMARKS.md records them. */
export function formatReport(r: FuzzReport): string {
  const fivexx = Object.entries(r.codes)
    .filter(([code]) => Number(code) >= 500)
    .reduce((n, [, c]) => n + c, 0);
  return [
    `fuzz seed ${r.seed}: ${r.requests} requests (${r.rawRequests} raw request heads, ${r.canaryWrites} writes at canaries that must be refused) in ${r.seconds} s`,
    `answers by code: ${JSON.stringify(Object.fromEntries(Object.entries(r.codes).sort()))}`,
    `5xx answers: ${fivexx} (unexpected: ${r.serverErrors.length}); connections dropped without a status line: ${r.dropped.length}; 4xx without a Status body: ${r.withoutStatus.length}`,
    `canary writes not refused: ${r.notRefused.length}; canaries unchanged: ${r.canaries - r.canariesChanged.length} of ${r.canaries}`,
    `gateway peak RSS: ${Math.round(r.peakGatewayRssBytes / 1048576)} MiB`,
    ...[...r.serverErrors, ...r.dropped, ...r.withoutStatus, ...r.notRefused, ...r.canariesChanged].slice(0, 20).map((line) => `  ${line}`),
  ].join('\n');
}

/** True when the run found nothing wrong. */
export function fuzzPassed(r: FuzzReport): boolean {
  return r.serverErrors.length === 0 && r.dropped.length === 0 && r.withoutStatus.length === 0 && r.notRefused.length === 0 && r.canariesChanged.length === 0;
}
