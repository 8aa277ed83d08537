import * as fs from 'node:fs';
import * as https from 'node:https';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run } from './helpers';

/**
 * One big namespace breaks nothing: 10,000 ConfigMaps of 1 KiB are listed
 * unpaged through every hop (etcd, storage, gateway), paged by kubectl, and
 * small reads keep working throughout.
 */
describe('a big collection', () => {
  let env: Environment;
  let agent: https.Agent;
  const COUNT = 10_000;

  function request(method: string, path: string, body?: string): Promise<{ status: number; body: Buffer }> {
    return new Promise((resolve, reject) => {
      const req = https.request(
        `${env.url}${path}`,
        {
          method,
          agent,
          ca: fs.readFileSync(env.pki.caCert),
          cert: fs.readFileSync(env.pki.adminCert),
          key: fs.readFileSync(env.pki.adminKey),
          headers: { 'content-type': 'application/json', ...(body ? { 'content-length': String(Buffer.byteLength(body)) } : {}) },
          timeout: 120000,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks) }));
        },
      );
      req.on('error', reject);
      req.on('timeout', () => req.destroy(new Error('request timed out')));
      req.end(body);
    });
  }

  beforeAll(async () => {
    env = await startEnvironment();
    agent = new https.Agent({ keepAlive: true, maxSockets: 16 });
    expect((await request('POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'big' } }))).status).toBe(201);
    const value = 'v'.repeat(1024);
    let next = 0;
    const worker = async (): Promise<void> => {
      for (let i = next++; i < COUNT; i = next++) {
        const res = await request('POST', '/api/v1/namespaces/big/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `cm-${i}` }, data: { value } }));
        if (res.status !== 201) throw new Error(`create cm-${i}: ${res.status} ${res.body.toString()}`);
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
  }, 300000);

  afterAll(async () => {
    agent?.destroy();
    await env?.stop(true);
  });

  test('an unpaged list returns every object, and a small read works beside it', async () => {
    const [list, small] = await Promise.all([request('GET', '/api/v1/namespaces/big/configmaps'), request('GET', '/api/v1/namespaces/big/configmaps/cm-7')]);
    expect(list.status).toBe(200);
    const parsed = JSON.parse(list.body.toString('utf8')) as { items: Array<{ metadata: { name: string } }>; metadata: { resourceVersion: string } };
    expect(parsed.items.length).toBe(COUNT);
    expect(new Set(parsed.items.map((i) => i.metadata.name)).size).toBe(COUNT);
    expect(list.body.length).toBeGreaterThan(COUNT * 1024);
    expect(small.status).toBe(200);
    // Unpaged lists again and again (what a retrying controller does) break nothing for anyone else.
    for (let i = 0; i < 3; i++) expect((await request('GET', '/api/v1/namespaces/big/configmaps')).status).toBe(200);
    expect((await request('GET', '/api/v1/namespaces/default')).status).toBe(200);
  });

  test('a list of everything across namespaces, a paged list and kubectl agree', async () => {
    const all = JSON.parse((await request('GET', '/api/v1/configmaps')).body.toString('utf8')) as { items: unknown[] };
    expect(all.items.length).toBeGreaterThanOrEqual(COUNT);
    let names = 0;
    let token = '';
    do {
      const page = JSON.parse((await request('GET', `/api/v1/namespaces/big/configmaps?limit=3000${token ? `&continue=${encodeURIComponent(token)}` : ''}`)).body.toString('utf8')) as {
        items: unknown[];
        metadata: { continue?: string; remainingItemCount?: number };
      };
      names += page.items.length;
      if (page.metadata.continue) expect(page.metadata.remainingItemCount).toBe(COUNT - names);
      token = page.metadata.continue ?? '';
    } while (token);
    expect(names).toBe(COUNT);
    const kubectl = await run('kubectl', ['--kubeconfig', env.kubeconfigPath, 'get', 'configmaps', '-n', 'big', '-o', 'name'], { timeoutMs: 120000 });
    expect(kubectl.code).toBe(0);
    expect(kubectl.stdout.trim().split('\n').length).toBe(COUNT);
  });
});
