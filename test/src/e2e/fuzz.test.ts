import * as fs from 'node:fs';
import * as https from 'node:https';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest } from './http';

/**
 * A bounded, seeded fuzz pass: a few thousand hostile requests (malformed
 * and oversized bodies of every content type, alias and nesting bombs, bad
 * names, paths, parameters and headers, stale writes) against the running
 * system. No answer is a 5xx, no connection is dropped, the gateway's
 * resident memory stays under a stated bound, and canary objects are
 * unchanged at the end. A failure prints the seed and the request.
 */
const SEED = Number(process.env['SVC_FUZZ_SEED'] ?? 20261123);
const REQUESTS = Number(process.env['SVC_FUZZ_REQUESTS'] ?? 3000);
const CONCURRENCY = 8;
/** The gateway may hold at most this much resident memory at any point of the run. */
const GATEWAY_RSS_BOUND_BYTES = 768 * 1024 * 1024;

/** mulberry32: a small seeded generator, so a failing run can be replayed. */
function generator(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

interface FuzzRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Buffer;
}

function makeRequests(random: () => number, count: number): FuzzRequest[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)] as T;
  const int = (n: number): number => Math.floor(random() * n);
  const names = ['fz-a', 'fz-b', 'fz-c', 'FZ-Upper', 'fz_under', 'fz.dot', '-fz', 'fz-' + 'x'.repeat(300), '', '%00', '%2e%2e', 'é', 'a%2Fb', 'fz-d'];
  const kinds = [
    { path: '/api/v1/namespaces/fuzz/configmaps', kind: 'ConfigMap', apiVersion: 'v1' },
    { path: '/api/v1/namespaces/fuzz/secrets', kind: 'Secret', apiVersion: 'v1' },
    { path: '/api/v1/namespaces/fuzz/pods', kind: 'Pod', apiVersion: 'v1' },
    { path: '/api/v1/namespaces/fuzz/services', kind: 'Service', apiVersion: 'v1' },
    { path: '/apis/coordination.svc.io/v1/namespaces/fuzz/leases', kind: 'Lease', apiVersion: 'coordination.svc.io/v1' },
    { path: '/api/v1/namespaces/fuzz/serviceaccounts', kind: 'ServiceAccount', apiVersion: 'v1' },
  ] as const;
  const queries = [
    '',
    '?limit=-1',
    '?limit=abc',
    '?resourceVersion=abc',
    '?resourceVersion=999999999999',
    '?resourceVersionMatch=Exact&resourceVersion=1',
    '?continue=garbage',
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
    '?watch=yes&timeoutSeconds=1',
    '?watch=1&timeoutSeconds=abc',
    '?watch=1&timeoutSeconds=1&sendInitialEvents=true',
    '?timeoutSeconds=-5',
    '?propagationPolicy=Sideways',
    '?gracePeriodSeconds=x',
    '?force=true',
    '?a[b]=c&labelSelector[x]=y',
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
    ['application/json', JSON.stringify([1, 2, 3])],
    ['application/json', 'null'],
    ['application/json', '{"a":1,"a":2,"metadata":{"name":"' + name + '","name":"dup"}}'],
    ['application/yaml', `apiVersion: ${k.apiVersion}\nkind: ${k.kind}\nmetadata:\n  name: ${name}\n${aliasBomb()}\n`],
    ['application/yaml', 'a: [unclosed\n  - : :'],
    ['application/yaml', '--- !!binary |\n  AAAA\n'],
    ['application/vnd.svc.protobuf', Buffer.from([0x6b, 0x38, 0x73, 0x00, ...Array.from({ length: int(200) }, () => int(256))])],
    ['application/vnd.kubernetes.protobuf', Buffer.from(Array.from({ length: int(100) }, () => int(256)))],
    ['application/json-patch+json', JSON.stringify([{ op: 'replace', path: '/metadata/name', value: 'other' }, { op: 'bogus' }])],
    ['application/json-patch+json', JSON.stringify([{ op: 'add', path: '/data/x', value: 1 }, { op: 'test', path: '/nope', value: 2 }])],
    ['application/merge-patch+json', JSON.stringify({ metadata: { finalizers: ['example.com/x'], resourceVersion: '1' }, data: null })],
    ['application/strategic-merge-patch+json', JSON.stringify({ $patch: 'delete', metadata: { $retainKeys: 5 } })],
    ['application/apply-patch+yaml', `apiVersion: ${k.apiVersion}\nkind: ${k.kind}\nmetadata:\n  name: ${name}\n  managedFields: [1]\n`],
    ['application/apply-patch+yaml', aliasBomb()],
    ['text/plain', 'hello'],
    ['multipart/form-data; boundary=x', '--x\r\n\r\n--x--'],
  ];
  const out: FuzzRequest[] = [];
  for (let i = 0; i < count; i++) {
    const k = pick(kinds);
    const name = pick(names);
    const method = pick(['GET', 'GET', 'POST', 'PUT', 'PATCH', 'DELETE']);
    const query = pick(queries);
    let path = name && method !== 'POST' ? `${k.path}/${name}` : k.path;
    if (random() < 0.1) path = pick(['/api/v1/namespaces/fuzz', '/apis', '/api', '/openapi/v2', '/version', '/apis/nope.svc.io/v1/things', '/api/v1/namespaces/fuzz/configmaps/a/b/c/d', '/api/v1/namespaces/fuzz/pods/p/status', '/api/v1/namespaces/fuzz/pods/p/exec']);
    // Collections are never deleted as a whole outside the fuzz namespace.
    if (method === 'DELETE' && !path.includes('/namespaces/fuzz/')) path = `${k.path}/fz-a`;
    const headers: Record<string, string> = {};
    let body: Buffer | undefined;
    if (method !== 'GET' && method !== 'DELETE') {
      const [type, payload] = pick(bodies(k, name || 'fz-a'));
      headers['content-type'] = type;
      body = Buffer.isBuffer(payload) ? payload : Buffer.from(payload);
    } else if (method === 'DELETE' && random() < 0.5) {
      headers['content-type'] = 'application/json';
      body = Buffer.from(pick(['{"dryRun":["All"]}', '{"dryRun":"All"}', '{"preconditions":{"uid":5}}', '{"gracePeriodSeconds":-1}', '[', '{"propagationPolicy":"Orphan"}']));
    }
    if (random() < 0.2) headers['accept'] = pick(['application/vnd.svc.protobuf', 'application/json;as=Table;v=v1;g=meta.svc.io', 'text/html', 'application/yaml', '*/*;q=abc', 'application/json;as=PartialObjectMetadata;g=meta.svc.io;v=v1']);
    if (random() < 0.05) headers['impersonate-user'] = 'someone';
    if (random() < 0.05) headers['x-remote-user'] = 'admin';
    if (random() < 0.05) headers['host'] = 'evil.example.com';
    out.push({ method, path: path + query, headers, ...(body ? { body } : {}) });
  }
  return out;
}

describe('fuzz', () => {
  let env: Environment;
  const canaries: Record<string, string> = {};

  beforeAll(async () => {
    env = await startEnvironment();
    for (const ns of ['fuzz', 'canaries']) expect((await adminRequest(env, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }))).status).toBe(201);
    for (let i = 0; i < 3; i++) {
      for (const [resource, kind] of [['configmaps', 'ConfigMap'], ['secrets', 'Secret']] as const) {
        const path = `/api/v1/namespaces/canaries/${resource}`;
        expect((await adminRequest(env, 'POST', path, JSON.stringify({ apiVersion: 'v1', kind, metadata: { name: `canary-${i}` }, data: { v: Buffer.from(`canary ${i}`).toString('base64') } }))).status).toBe(201);
        canaries[`${path}/canary-${i}`] = (await adminRequest(env, 'GET', `${path}/canary-${i}`)).body;
      }
    }
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test(`${REQUESTS} seeded hostile requests (seed ${SEED}): no 5xx, no dropped connection, bounded gateway memory, canaries unchanged`, async () => {
    const requests = makeRequests(generator(SEED), REQUESTS);
    const agent = new https.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
    const tls = { ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) };
    const gateway = env.processes.find((p) => p.name === 'gateway');
    if (!gateway) throw new Error('no gateway process');
    const failures: string[] = [];
    const codes = new Map<number, number>();
    let peakRss = 0;
    const sampleRss = (): void => {
      const status = fs.readFileSync(`/proc/${gateway.pid}/status`, 'utf8');
      const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      peakRss = Math.max(peakRss, kb * 1024);
    };
    const sampler = setInterval(sampleRss, 100);
    const send = (r: FuzzRequest): Promise<void> =>
      new Promise((resolve) => {
        const req = https.request(
          { host: '127.0.0.1', servername: 'localhost', port: Number(new URL(env.url).port), method: r.method, path: r.path, agent, ...tls, headers: { ...r.headers, ...(r.body ? { 'content-length': String(r.body.length) } : {}) }, timeout: 30000 },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () => {
              const code = res.statusCode ?? 0;
              codes.set(code, (codes.get(code) ?? 0) + 1);
              const text = Buffer.concat(chunks).toString('utf8');
              // A read at a resourceVersion the store has not reached waits, then answers 504 as the original server does.
              const tooNew = code === 504 && text.includes('"reason":"ResourceVersionTooLarge"');
              if (code >= 500 && !tooNew) failures.push(`${code} ${r.method} ${r.path}: ${Buffer.concat(chunks).toString('utf8').slice(0, 300)}`);
              else if (code >= 400 && !/"kind":"Status"/.test(Buffer.concat(chunks).toString('utf8'))) failures.push(`${code} without a Status: ${r.method} ${r.path}`);
              resolve();
            });
            res.on('error', (err) => {
              failures.push(`response broke: ${r.method} ${r.path}: ${err.message}`);
              resolve();
            });
          },
        );
        req.on('timeout', () => req.destroy(new Error('no answer in 30 s')));
        req.on('error', (err) => {
          failures.push(`connection dropped: ${r.method} ${r.path} (${r.headers['content-type'] ?? ''}): ${err.message}`);
          resolve();
        });
        req.end(r.body);
      });
    let next = 0;
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        for (let i = next++; i < requests.length; i = next++) await send(requests[i] as FuzzRequest);
      }),
    );
    clearInterval(sampler);
    sampleRss();
    agent.destroy();
    process.stdout.write(`fuzz seed ${SEED}: ${requests.length} requests, answers ${JSON.stringify(Object.fromEntries([...codes].sort()))}, gateway peak RSS ${Math.round(peakRss / 1048576)} MiB\n`);
    expect(failures.slice(0, 20)).toEqual([]);
    expect(peakRss).toBeGreaterThan(0);
    expect(peakRss).toBeLessThan(GATEWAY_RSS_BOUND_BYTES);
    for (const [path, before] of Object.entries(canaries)) expect((await adminRequest(env, 'GET', path)).body).toBe(before);
    expect((await adminRequest(env, 'GET', '/readyz')).status).toBe(200);
  }, 600000);
});
