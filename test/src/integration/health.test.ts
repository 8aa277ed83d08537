import { execFile } from 'node:child_process';
import * as net from 'node:net';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { health } from '@svc/proto';
import { ServingStatus } from '@svc/service-kit';
import { start as startStorage, type StorageHandle } from '@svc/storage';
import { start as startFanout, type WatchFanoutHandle } from '@svc/watch-fanout';
import { quietLogger, startBackends, type Backends } from './helpers';

/**
 * grpc.health.v1 on real services: storage answers SERVING while etcd
 * answers, watch-fanout while NATS is connected and etcd answers, and both
 * say NOT_SERVING (never hang) once their backend is gone; the container
 * health check (deploy/scripts/healthcheck.js) exits 0 only on SERVING.
 */

const HEALTHCHECK = path.resolve(__dirname, '../../../deploy/scripts/healthcheck.js');

type Client = InstanceType<typeof health.HealthClient>;

/** The status, or the gRPC code of the failure; a call that hangs fails on its deadline (DEADLINE_EXCEEDED). */
function check(client: Client, service = ''): Promise<string> {
  return new Promise((resolve) => {
    client.check({ service }, new grpc.Metadata(), { deadline: Date.now() + 5000 }, (err, res) =>
      resolve(err ? `error ${grpc.status[err.code]}` : (ServingStatus[res.status] ?? String(res.status))),
    );
  });
}

/** Polls until the status is `want` (30 s at most); returns the last status seen. */
async function statusBecomes(client: Client, want: string): Promise<string> {
  const deadline = Date.now() + 30_000;
  let seen = await check(client);
  while (seen !== want && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 200));
    seen = await check(client);
  }
  return seen;
}

function healthcheck(...args: string[]): Promise<{ code: number; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [HEALTHCHECK, ...args], { timeout: 15_000 }, (err, _stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
      resolve({ code, stderr });
    });
  });
}

describe('grpc.health.v1 on storage and watch-fanout', () => {
  let b: Backends;
  let storage: StorageHandle;
  let fanout: WatchFanoutHandle;
  let storageHealth: Client;
  let fanoutHealth: Client;

  beforeAll(async () => {
    b = await startBackends('health');
    storage = await startStorage({ listen: '127.0.0.1:0', healthBindAddress: '127.0.0.1:0', internalTls: b.pki.files('storage'), etcdEndpoints: [b.etcd.endpoint], etcdTls: b.pki.files('storage'), requestTimeoutMs: 2000, logger: quietLogger() });
    fanout = await startFanout({
      listen: '127.0.0.1:0',
      healthBindAddress: '127.0.0.1:0',
      internalTls: b.pki.files('watch-fanout'),
      etcdEndpoints: [b.etcd.endpoint],
      etcdTls: b.pki.files('watch-fanout'),
      natsUrl: b.nats.url,
      natsTls: b.pki.files('watch-fanout'),
      logger: quietLogger(),
    });
    storageHealth = new health.HealthClient(storage.healthAddress as string, grpc.credentials.createInsecure());
    fanoutHealth = new health.HealthClient(fanout.healthAddress as string, grpc.credentials.createInsecure());
  }, 60_000);

  afterAll(async () => {
    storageHealth?.close();
    fanoutHealth?.close();
    await storage?.close();
    await fanout?.close();
    await b?.stop();
  }, 60_000);

  it('answers SERVING with every backend up, on the plaintext port and the internal one', async () => {
    expect(await check(storageHealth)).toBe('SERVING');
    expect(await check(storageHealth, 'svc.storage.v1.Storage')).toBe('SERVING');
    expect(await check(fanoutHealth)).toBe('SERVING');
    expect(await healthcheck('grpc', storage.healthAddress as string)).toEqual({ code: 0, stderr: '' });
    // The service's own certificate on its internal port, as compose's health check does it.
    const own = b.pki.files('watch-fanout');
    expect(await healthcheck('grpc', fanout.address, own.caFile, own.certFile, own.keyFile)).toEqual({ code: 0, stderr: '' });
    const unknown = await healthcheck('grpc', storage.healthAddress as string, '--service=svc.nothing.v1.Nothing');
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('unknown service');
  });

  it('answers NOT_SERVING from the moment the service stops', async () => {
    const handle = await startStorage({ listen: '127.0.0.1:0', healthBindAddress: '127.0.0.1:0', internalTls: b.pki.files('storage'), etcdEndpoints: [b.etcd.endpoint], etcdTls: b.pki.files('storage'), logger: quietLogger() });
    const client = new health.HealthClient(handle.healthAddress as string, grpc.credentials.createInsecure());
    const watch = client.watch({ service: '' });
    const statuses: string[] = [];
    watch.on('data', (r: health.HealthCheckResponse) => statuses.push(ServingStatus[r.status] ?? ''));
    const ended = new Promise<void>((resolve) => watch.on('status', () => resolve()));
    watch.on('error', () => undefined);
    while (statuses.length === 0) await new Promise((r) => setTimeout(r, 20));
    await handle.close();
    await ended;
    client.close();
    expect([statuses[0], statuses.at(-1)]).toEqual(['SERVING', 'NOT_SERVING']);
  }, 30_000);

  it('watch-fanout is NOT_SERVING while NATS is down, and SERVING again once it is back', async () => {
    await b.stopNats();
    expect(await statusBecomes(fanoutHealth, 'NOT_SERVING')).toBe('NOT_SERVING');
    expect(await check(fanoutHealth, 'liveness')).toBe('SERVING');
    expect(await check(storageHealth)).toBe('SERVING');
    await b.startNats();
    expect(await statusBecomes(fanoutHealth, 'SERVING')).toBe('SERVING');
  }, 90_000);

  it('storage and watch-fanout are NOT_SERVING once etcd is stopped, answering every check', async () => {
    await b.etcd.process.stop();
    expect(await statusBecomes(storageHealth, 'NOT_SERVING')).toBe('NOT_SERVING');
    expect(await statusBecomes(fanoutHealth, 'NOT_SERVING')).toBe('NOT_SERVING');
    // Answered each time: a check bounded by its timeout, not by etcd's.
    for (let i = 0; i < 3; i++) expect(await check(storageHealth)).toBe('NOT_SERVING');
    expect(await check(storageHealth, 'liveness')).toBe('SERVING');
    const probe = await healthcheck('grpc', storage.healthAddress as string);
    expect(probe.code).toBe(1);
    expect(probe.stderr).toContain('NOT_SERVING');
    expect(await healthcheck('grpc', storage.healthAddress as string, '--service=liveness')).toEqual({ code: 0, stderr: '' });
  }, 90_000);

});

describe('deploy/scripts/healthcheck.js', () => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const script = require(HEALTHCHECK) as { encodeRequest(service: string): Buffer; decodeResponse(bytes: Buffer): { status: number } };

  it('writes and reads the messages as the generated code does', () => {
    for (const service of ['', 'liveness', 'x'.repeat(300)]) {
      expect(script.encodeRequest(service)).toEqual(Buffer.from(health.HealthCheckRequest.encode({ service }).finish()));
    }
    for (const status of [ServingStatus.SERVING, ServingStatus.NOT_SERVING, ServingStatus.UNKNOWN]) {
      expect(script.decodeResponse(Buffer.from(health.HealthCheckResponse.encode({ status }).finish()))).toEqual({ status });
    }
    // Fields it does not know are skipped.
    expect(script.decodeResponse(Buffer.from([0x12, 0x02, 0x61, 0x62, 0x08, 0x01]))).toEqual({ status: 1 });
  });

  it('gives up on a server that accepts the connection and never answers, within its timeout', async () => {
    const sockets: net.Socket[] = [];
    const silent = net.createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    const { port } = silent.address() as net.AddressInfo;
    try {
      const probe = await healthcheck('grpc', `127.0.0.1:${port}`, '--timeout=500');
      expect(probe.code).toBe(1);
      expect(probe.stderr).toMatch(/Deadline exceeded|no answer/i);
    } finally {
      for (const s of sockets) s.destroy();
      silent.close();
    }
  });

  it('refuses arguments it does not understand with exit code 2', async () => {
    expect((await healthcheck('grpc', '127.0.0.1:1', '--timeout=soon')).code).toBe(2);
    expect((await healthcheck('grpc', '127.0.0.1:1', 'ca.pem')).code).toBe(2);
    expect((await healthcheck('tcp', '127.0.0.1:1')).code).toBe(2);
  });
});

