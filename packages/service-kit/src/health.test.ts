import * as grpc from '@grpc/grpc-js';
import { health, storage } from '@svc/proto';
import { clientCredentials } from './internal-tls';
import { startGrpcServer, unary, type GrpcServerHandle } from './grpc';
import { HealthService, ServingStatus, startHealthServer, type HealthServerHandle } from './health';
import { makeTestPki } from './testing/pki';
import { createLogger, type Logger } from './logger';

const quiet = (): Logger => createLogger('test', { write: () => undefined });

const pki = makeTestPki();
afterAll(() => pki.remove());

type Client = InstanceType<typeof health.HealthClient>;

function check(client: Client, service: string): Promise<ServingStatus> {
  return new Promise((resolve, reject) => {
    client.check({ service }, new grpc.Metadata(), { deadline: Date.now() + 5000 }, (err, res) => (err ? reject(err) : resolve(res.status)));
  });
}

function plaintextClient(address: string): Client {
  return new health.HealthClient(address, grpc.credentials.createInsecure());
}

/** The next `count` statuses a Watch call sends. */
function nextStatuses(call: grpc.ClientReadableStream<health.HealthCheckResponse>, count: number): Promise<ServingStatus[]> {
  const seen: ServingStatus[] = [];
  return new Promise((resolve, reject) => {
    const onData = (res: health.HealthCheckResponse): void => {
      seen.push(res.status);
      if (seen.length === count) {
        call.off('data', onData);
        resolve(seen);
      }
    };
    call.on('data', onData);
    call.once('error', reject);
  });
}

describe('grpc.health.v1 on a service (startGrpcServer)', () => {
  let ready: () => boolean | Promise<boolean>;
  let server: GrpcServerHandle;
  let plain: Client;

  beforeAll(async () => {
    const log = quiet();
    const methods = { currentRevision: unary(log, 'CurrentRevision', async () => ({ revision: 1, compactRevision: 0 })) };
    server = await startGrpcServer('127.0.0.1:0', [{ definition: storage.StorageService, implementation: methods }], {
      security: { tls: pki.tlsFor('storage'), allowedCallers: ['gateway'], log },
      health: { ready: () => ready(), bindAddress: '127.0.0.1:0', timeoutMs: 200 },
    });
    plain = plaintextClient(server.healthAddress as string);
  });

  afterAll(async () => {
    plain.close();
    await server.close();
  });

  beforeEach(() => {
    ready = () => true;
  });

  it('answers SERVING for the server and its services while ready, NOT_SERVING when not', async () => {
    expect(await check(plain, '')).toBe(ServingStatus.SERVING);
    expect(await check(plain, 'svc.storage.v1.Storage')).toBe(ServingStatus.SERVING);
    ready = () => false;
    expect(await check(plain, '')).toBe(ServingStatus.NOT_SERVING);
    ready = () => Promise.reject(new Error('etcd unreachable'));
    expect(await check(plain, 'svc.storage.v1.Storage')).toBe(ServingStatus.NOT_SERVING);
  });

  it('answers NOT_SERVING when the readiness check does not answer, instead of hanging', async () => {
    ready = () => new Promise<boolean>(() => undefined);
    expect(await check(plain, '')).toBe(ServingStatus.NOT_SERVING);
  });

  it('answers liveness whatever readiness says, and NOT_FOUND for an unknown service', async () => {
    ready = () => false;
    expect(await check(plain, 'liveness')).toBe(ServingStatus.SERVING);
    await expect(check(plain, 'svc.nothing.v1.Nothing')).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
  });

  it('serves only the health service on the plaintext port', async () => {
    const client = new storage.StorageClient(server.healthAddress as string, grpc.credentials.createInsecure());
    const err = await new Promise<grpc.ServiceError | null>((resolve) => client.currentRevision({}, (e) => resolve(e)));
    client.close();
    expect(err?.code).toBe(grpc.status.UNIMPLEMENTED);
  });

  it('answers any identity of the internal CA on the internal port, where other methods stay refused', async () => {
    const { credentials, options } = clientCredentials(pki.tlsFor('authn'), 'storage');
    const healthClient = new health.HealthClient(server.address, credentials, options);
    const storageClient = new storage.StorageClient(server.address, credentials, options);
    try {
      expect(await check(healthClient, '')).toBe(ServingStatus.SERVING);
      const err = await new Promise<grpc.ServiceError | null>((resolve) => storageClient.currentRevision({}, (e) => resolve(e)));
      expect(err?.code).toBe(grpc.status.PERMISSION_DENIED);
    } finally {
      healthClient.close();
      storageClient.close();
    }
  });

  it('refuses the health service on the internal port without a client certificate', async () => {
    const client = new health.HealthClient(server.address, grpc.credentials.createSsl(pki.tlsFor('storage').ca), { 'grpc.ssl_target_name_override': 'storage' });
    await expect(check(client, '')).rejects.toMatchObject({ code: grpc.status.UNAVAILABLE });
    client.close();
  });
});

describe('HealthService', () => {
  let served: HealthServerHandle | undefined;
  let client: Client | undefined;

  afterEach(async () => {
    client?.close();
    await served?.close();
    served = undefined;
    client = undefined;
  });

  async function serve(service: HealthService): Promise<Client> {
    served = await startHealthServer('127.0.0.1:0', service);
    client = plaintextClient(served.address);
    return client;
  }

  it('runs one readiness check for probes that arrive together', async () => {
    let runs = 0;
    let release: (ok: boolean) => void = () => undefined;
    const service = new HealthService({
      services: [],
      ready: () => {
        runs++;
        return new Promise<boolean>((resolve) => (release = resolve));
      },
    });
    const answers = Promise.all([service.status(''), service.status(''), service.status('')]);
    while (runs === 0) await new Promise((r) => setImmediate(r));
    release(true);
    expect(await answers).toEqual([ServingStatus.SERVING, ServingStatus.SERVING, ServingStatus.SERVING]);
    expect(runs).toBe(1);
  });

  it('Watch sends the status, then its changes, and NOT_SERVING when the server stops', async () => {
    let ready = true;
    const service = new HealthService({ services: [], ready: () => ready, watchIntervalMs: 20 });
    const c = await serve(service);
    const call = c.watch({ service: '' });
    expect(await nextStatuses(call, 1)).toEqual([ServingStatus.SERVING]);
    ready = false;
    expect(await nextStatuses(call, 1)).toEqual([ServingStatus.NOT_SERVING]);
    ready = true;
    expect(await nextStatuses(call, 1)).toEqual([ServingStatus.SERVING]);
    const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    const last = nextStatuses(call, 1);
    service.shutdown();
    expect(await last).toEqual([ServingStatus.NOT_SERVING]);
    expect((await ended).code).toBe(grpc.status.OK);
    expect(service.openWatches).toBe(0);
    expect(await service.status('liveness')).toBe(ServingStatus.SERVING);
  });

  it('Watch of an unknown service answers SERVICE_UNKNOWN and stays open', async () => {
    const c = await serve(new HealthService({ services: [] }));
    const call = c.watch({ service: 'svc.nothing.v1.Nothing' });
    expect(await nextStatuses(call, 1)).toEqual([ServingStatus.SERVICE_UNKNOWN]);
    call.cancel();
  });

  it('refuses Watch calls past its bound, and frees a place when a watcher leaves', async () => {
    const service = new HealthService({ services: [], maxWatches: 2 });
    const c = await serve(service);
    const first = c.watch({ service: '' });
    const second = c.watch({ service: '' });
    await Promise.all([nextStatuses(first, 1), nextStatuses(second, 1)]);
    const third = c.watch({ service: '' });
    third.on('data', () => undefined);
    await expect(new Promise((_, reject) => third.on('error', reject))).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
    first.cancel();
    const deadline = Date.now() + 5000;
    while (service.openWatches > 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
    const fourth = c.watch({ service: '' });
    expect(await nextStatuses(fourth, 1)).toEqual([ServingStatus.SERVING]);
    second.cancel();
    fourth.cancel();
  });
});
