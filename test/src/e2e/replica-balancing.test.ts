import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest } from './http';

/**
 * Internal clients balance over every replica they are given: with two
 * storage and two watch-fanout replicas, each replica serves a share of the
 * calls the gateway's requests cause (counted by each replica's own
 * grpc_server_handled_total), where grpc-js's default (pick_first) would
 * send them all to one. The gateway's /version and every service's
 * --version report the build, the environment overriding it.
 */

/** Every service answers --version through the shared runMain: the HTTP front, a gRPC service, and the API client. */
const SERVICES = ['gateway', 'storage', 'controller-manager'];
/** What the environment's processes are told about their build (the image build passes these). */
const BUILD_ENV = { SVC_GIT_COMMIT: '0123456789abcdef0123456789abcdef01234567', SVC_BUILD_DATE: '2026-11-27T09:00:00Z' };

function runService(service: string, args: string[], env: NodeJS.ProcessEnv = {}): Promise<{ code: number; stdout: string }> {
  const main = path.resolve(__dirname, '../../../services', service, 'dist/main.js');
  return new Promise((resolve) => {
    execFile(process.execPath, [main, ...args], { env: { ...process.env, ...env }, timeout: 60_000 }, (err, stdout) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout }));
  });
}

/** Calls a replica has answered for `service` (every method, code and transport). */
async function handled(env: Environment, replica: string, service: string): Promise<number> {
  const text = await (await fetch(`http://${env.metricsAddresses[replica]}/metrics`)).text();
  let total = 0;
  for (const line of text.split('\n')) {
    if (line.startsWith('grpc_server_handled_total{') && line.includes(`grpc_service="${service}"`)) total += Number(line.slice(line.lastIndexOf('}') + 1).trim());
  }
  return total;
}

describe('replicas share the calls', () => {
  let env: Environment;

  beforeAll(async () => {
    env = await startEnvironment({ storageReplicas: 2, watchFanoutReplicas: 2, env: BUILD_ENV });
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('both storage replicas and both watch-fanout replicas serve the gateway', async () => {
    const storageReplicas = ['storage', 'storage-1'];
    const fanoutReplicas = ['watch-fanout-0', 'watch-fanout-1'];
    const count = async (replicas: string[], service: string) => Promise.all(replicas.map((r) => handled(env, r, service)));
    const storageBefore = await count(storageReplicas, 'svc.storage.v1.Storage');
    const fanoutBefore = await count(fanoutReplicas, 'svc.watch.v1.WatchFanout');

    let revision = '';
    for (let i = 0; i < 24; i++) {
      const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `balanced-${i}` }, data: { n: String(i) } });
      const created = await adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', body, { 'Content-Type': 'application/json' });
      expect(created.status).toBe(201);
      if (i === 0) revision = (JSON.parse(created.body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
      // Unary List calls, apart from the Calls stream that carries the creates.
      expect((await adminRequest(env, 'GET', '/api/v1/namespaces/default/configmaps?limit=5')).status).toBe(200);
    }
    // Watches from a past revision catch up from watch-fanout.
    for (let i = 0; i < 10; i++) {
      const watched = await adminRequest(env, 'GET', `/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=${revision}&timeoutSeconds=1`);
      expect(watched.status).toBe(200);
    }

    const storageServed = (await count(storageReplicas, 'svc.storage.v1.Storage')).map((n, i) => n - (storageBefore[i] as number));
    const fanoutServed = (await count(fanoutReplicas, 'svc.watch.v1.WatchFanout')).map((n, i) => n - (fanoutBefore[i] as number));
    if (process.env['SVC_PRINT_BALANCE']) process.stdout.write(`calls served: storage ${storageServed.join(' / ')}, watch-fanout ${fanoutServed.join(' / ')}\n`);
    for (const served of [...storageServed, ...fanoutServed]) expect(served).toBeGreaterThan(0);
    // Neither storage replica serves nearly everything (pick_first would leave the other at 0).
    const [a, b] = storageServed as [number, number];
    expect(Math.min(a, b) / (a + b)).toBeGreaterThan(0.2);
  }, 120_000);

  test("the gateway's /version reports the build, with the environment's commit and date", async () => {
    const res = await adminRequest(env, 'GET', '/version');
    expect(res.status).toBe(200);
    const info = JSON.parse(res.body) as Record<string, string>;
    expect(info).toMatchObject({ major: '1', minor: '32', gitCommit: BUILD_ENV.SVC_GIT_COMMIT, buildDate: BUILD_ENV.SVC_BUILD_DATE, goVersion: process.version, compiler: 'node' });
    expect(info['gitVersion']).toMatch(/^v1\.32\.\d+-svc/);
  });

  test('a service prints its version and exits 0, starting nothing', async () => {
    const results = [];
    // One at a time: loading a service's modules is most of what it does here.
    for (const service of SERVICES) results.push(await runService(service, ['--version'], { SVC_GIT_VERSION: 'v1.32.0-svc.9.9.9' }));
    expect(results).toEqual(SERVICES.map((service) => ({ code: 0, stdout: `${service} v1.32.0-svc.9.9.9\n` })));
    const raw = await runService('storage', ['--version=raw'], BUILD_ENV);
    expect(raw.code).toBe(0);
    expect(JSON.parse(raw.stdout)).toMatchObject({ gitCommit: BUILD_ENV.SVC_GIT_COMMIT, buildDate: BUILD_ENV.SVC_BUILD_DATE });
  }, 240_000);
});
