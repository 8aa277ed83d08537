import { spawn, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort, startEnvironment, type Environment } from '@svc/testenv';
import { until } from './helpers';
import { adminRequest } from './http';

/**
 * The harness and `make up` supervise what they start: a service killed
 * with SIGKILL comes back (logged, with backoff) and the API serves again;
 * `make up` killed with SIGKILL leaves no process behind.
 */
describe('supervision', () => {
  let env: Environment;

  beforeAll(async () => {
    // A stopping gateway keeps serving for 3 s while its readiness fails, then refuses with 429 and Retry-After.
    env = await startEnvironment({ serviceArgs: { gateway: ['--shutdown-delay-duration=3s', '--shutdown-send-retry-after'] } });
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test.each(['storage', 'authn', 'admission', 'gateway'])('%s killed with SIGKILL is restarted and the API serves again', async (name) => {
    const proc = env.processes.find((p) => p.name === name);
    if (!proc) throw new Error(`no process ${name}`);
    const before = proc.restarts;
    const oldPid = proc.pid;
    proc.kill('SIGKILL');
    await until(() => (proc.restarts > before ? true : undefined), 15000);
    await proc.running();
    expect(proc.pid).not.toBe(oldPid);
    await until(async () => ((await adminRequest(env, 'GET', '/readyz').catch(() => ({ status: 0 }))).status === 200 ? true : undefined), 30000);
    const body = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `after-${name}` } });
    expect((await adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', body)).status).toBe(201);
    const log = fs.readFileSync(path.join(env.dir, 'logs', 'supervisor.log'), 'utf8');
    expect(log).toContain(`"process":"${name}"`);
  });

  test('a gateway stopped with SIGTERM ends its watches cleanly and lets writes in flight finish', async () => {
    const gateway = env.processes.find((p) => p.name === 'gateway');
    if (!gateway) throw new Error('no gateway process');
    const ca = fs.readFileSync(env.pki.caCert);
    const cert = fs.readFileSync(env.pki.adminCert);
    const key = fs.readFileSync(env.pki.adminKey);
    // A watch: its stream must end without an ERROR event, so the client simply watches again.
    let watchBody = '';
    const watchEnded = new Promise<void>((resolve) => {
      const req = https.request(`${env.url}/api/v1/namespaces/default/configmaps?watch=1&resourceVersion=0`, { ca, cert, key, agent: false }, (res) => {
        res.on('data', (c: Buffer) => (watchBody += c.toString()));
        res.on('end', () => resolve());
        res.on('error', () => resolve());
      });
      req.on('error', () => resolve());
      req.end();
    });
    await until(() => (watchBody.includes('"type":"ADDED"') ? true : undefined), 10000);
    const writes = Array.from({ length: 20 }, (_, i) =>
      adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `drain-${i}` } })).then(
        (r) => ({ name: `drain-${i}`, status: r.status }),
        () => ({ name: `drain-${i}`, status: 0 }),
      ),
    );
    const restarts = gateway.restarts;
    gateway.kill('SIGTERM');
    const outcomes = await Promise.all(writes);
    await watchEnded;
    expect(watchBody).not.toContain('"type":"ERROR"');
    // Each write was answered 201 or refused as a whole (429 or 503, or no connection); never a 500.
    for (const o of outcomes) expect([0, 201, 429, 503]).toContain(o.status);
    await until(() => (gateway.restarts > restarts ? true : undefined), 15000);
    await until(async () => ((await adminRequest(env, 'GET', '/readyz').catch(() => ({ status: 0 }))).status === 200 ? true : undefined), 30000);
    for (const o of outcomes.filter((x) => x.status === 201)) expect((await adminRequest(env, 'GET', `/api/v1/namespaces/default/configmaps/${o.name}`)).status).toBe(200);
  });

  test('a stopping gateway fails /readyz for --shutdown-delay-duration while it still serves requests, then stops and comes back', async () => {
    const gateway = env.processes.find((p) => p.name === 'gateway');
    if (!gateway) throw new Error('no gateway process');
    await until(async () => ((await adminRequest(env, 'GET', '/readyz').catch(() => ({ status: 0 }))).status === 200 ? true : undefined), 30000);
    const restarts = gateway.restarts;
    gateway.kill('SIGTERM');
    const readyz = await until(async () => {
      const r = await adminRequest(env, 'GET', '/readyz?verbose').catch(() => undefined);
      return r && r.status !== 200 ? r : undefined;
    }, 3000);
    expect(readyz.status).toBe(500);
    expect(readyz.body).toContain('[-]shutdown failed');
    expect(readyz.body).toContain('[+]etcd ok');
    // Still within the delay: the API serves as before.
    const created = await adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'during-shutdown-delay' } }));
    expect(created.status).toBe(201);
    expect(gateway.restarts).toBe(restarts);
    await until(() => (gateway.restarts > restarts ? true : undefined), 20000);
    await until(async () => ((await adminRequest(env, 'GET', '/readyz').catch(() => ({ status: 0 }))).status === 200 ? true : undefined), 30000);
  });

  test('make up killed with SIGKILL leaves no process behind', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-up-'));
    const upMain = path.join(path.dirname(require.resolve('@svc/testenv/package.json')), 'dist', 'up.js');
    // Eight consecutive gRPC ports: storage, authn, authz, admission, two watch-fanout replicas, controller-manager.
    let base = 0;
    for (let tries = 0; tries < 20 && base === 0; tries++) {
      const candidate = 20000 + Math.floor(Math.random() * 20000);
      const free = await Promise.all(Array.from({ length: 8 }, (_, i) => isFree(candidate + i)));
      if (free.every(Boolean)) base = candidate;
    }
    expect(base).toBeGreaterThan(0);
    const up = spawn(process.execPath, [upMain], {
      env: {
        ...process.env,
        SVC_DATA_DIR: dir,
        SVC_GATEWAY_PORT: String(await freePort()),
        SVC_ETCD_PORT: String(await freePort()),
        SVC_NATS_PORT: String(await freePort()),
        SVC_GRPC_BASE_PORT: String(base),
        SVC_QUIET: '1',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    let started: number[] = [];
    up.stdout?.on('data', (d: Buffer) => (output += d.toString()));
    up.stderr?.on('data', (d: Buffer) => (output += d.toString()));
    try {
      await until(() => (output.includes('Ctrl-C stops everything') ? true : undefined), 60000).catch(() => {
        throw new Error(`make up did not come up:\n${output}`);
      });
      started = descendants(up.pid as number);
      expect(started.length).toBeGreaterThanOrEqual(9); // etcd, NATS, seven services and more
      up.kill('SIGKILL');
      await until(() => (started.every((pid) => !alive(pid)) ? true : undefined), 20000).catch(() => {
        throw new Error(`still running after make up was killed: ${started.filter(alive).join(', ')}`);
      });
    } finally {
      for (const pid of [...started, ...descendants(up.pid as number)]) if (alive(pid)) process.kill(pid, 'SIGKILL');
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/** Every process below `root` (by parent pid), as `ps` sees them now. */
function descendants(root: number): number[] {
  const table = execFileSync('ps', ['-eo', 'pid=,ppid='], { encoding: 'utf8' })
    .split('\n')
    .map((l) => l.trim().split(/\s+/).map(Number))
    .filter((p) => p.length === 2 && Number.isFinite(p[0]));
  const found: number[] = [];
  const queue = [root];
  while (queue.length > 0) {
    const parent = queue.shift() as number;
    for (const [pid, ppid] of table) {
      if (ppid === parent && pid !== undefined && !found.includes(pid)) {
        found.push(pid);
        queue.push(pid);
      }
    }
  }
  return found;
}
