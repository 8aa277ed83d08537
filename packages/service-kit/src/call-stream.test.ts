import * as grpc from '@grpc/grpc-js';
import { ApiError } from '@svc/apimachinery';
import { storage } from '@svc/proto';
import { CallStream, CallsServer } from './call-stream';
import { channelTo, fromGrpcError, startGrpcServer, unary, type CallContext, type GrpcServerHandle } from './grpc';
import { makeTestPki } from './testing/pki';
import { createLogger, type Logger } from './logger';

const quiet = (): Logger => createLogger('test', { write: () => undefined });

const pki = makeTestPki();
afterAll(() => pki.remove());

const key = (name: string) => ({ group: '', resource: 'configmaps', namespace: 'default', name });

/**
 * A storage-shaped gRPC server on loopback whose methods answer from a map,
 * so the Calls stream is checked against real grpc-js on both sides.
 */
async function serve(address = '127.0.0.1:0'): Promise<{ server: GrpcServerHandle; seen: CallContext[]; release: () => void }> {
  const log = quiet();
  const objects = new Map<string, Buffer>([['present', Buffer.from('{"kind":"ConfigMap"}')]]);
  const seen: CallContext[] = [];
  let release: () => void = () => undefined;
  const methods = {
    get: unary(log, 'Get', async (req: storage.GetRequest, ctx) => {
      seen.push(ctx);
      const name = req.key?.name ?? '';
      if (name === 'slow') {
        await new Promise<void>((resolve) => {
          release = resolve;
          ctx.signal.addEventListener('abort', () => resolve());
        });
      }
      const object = objects.get(name);
      if (name === 'warned') {
        const refusal = ApiError.forbidden({ group: '', resource: 'configmaps' }, name, 'no');
        refusal.warnings.push('first', 'second');
        throw refusal;
      }
      if (!object) throw ApiError.notFound({ group: '', resource: 'configmaps' }, name);
      return { object, revision: 7 };
    }),
    list: unary(log, 'List', async () => ({ items: [], revision: 7, continueToken: '' })),
    create: unary(log, 'Create', async (req: storage.CreateRequest) => ({ object: Buffer.from(req.object), revision: 8 })),
    update: unary(log, 'Update', async () => {
      throw new Error('disk on fire');
    }),
    delete: unary(log, 'Delete', async () => ({ object: Buffer.alloc(0), revision: 9 })),
    currentRevision: unary(log, 'CurrentRevision', async () => ({ revision: 9, compactRevision: 0 })),
  };
  const calls = new CallsServer(log, storage.StorageService, methods, ['get', 'create', 'update', 'delete', 'currentRevision']);
  const server = await startGrpcServer(address, [{ definition: storage.StorageService, implementation: { ...methods, calls: calls.handler } }], {
    security: { tls: pki.tlsFor('storage'), allowedCallers: ['gateway'], log },
    drain: () => calls.drain(),
  });
  return { server, seen, release: () => release() };
}

describe('Calls stream', () => {
  let backend: Awaited<ReturnType<typeof serve>>;
  let client: storage.StorageClient;
  let calls: CallStream;

  beforeEach(async () => {
    backend = await serve();
    client = new storage.StorageClient(...channelTo(backend.server.address, 'storage', pki.tlsFor('gateway')));
    calls = new CallStream('storage', () => client.calls());
  });

  afterEach(async () => {
    calls.close();
    client.close();
    await backend.server.close();
  });

  it('answers many concurrent calls on one stream, each with its own response', async () => {
    const created = await Promise.all(
      Array.from({ length: 50 }, (_, i) => calls.call(storage.StorageService.create, { key: key(`cm-${i}`), object: Buffer.from(`{"n":${i}}`), dryRun: false })),
    );
    expect(created.map((r) => Buffer.from(r.object).toString())).toEqual(Array.from({ length: 50 }, (_, i) => `{"n":${i}}`));
    const got = await calls.call(storage.StorageService.get, { key: key('present'), at: undefined }, { requestId: 'req-1' });
    expect(got.revision).toBe(7);
    expect(backend.seen[0]?.requestId).toBe('req-1');
  });

  it('carries the API Status of a failed call', async () => {
    const err = (await calls.call(storage.StorageService.get, { key: key('absent'), at: undefined }).catch((e: unknown) => e)) as ApiError;
    expect(err).toBeInstanceOf(ApiError);
    expect(err.code).toBe(404);
    expect(err.reason).toBe('NotFound');
    expect(err.message).toContain('"absent" not found');
    const fault = (await calls.call(storage.StorageService.update, { key: key('x'), object: Buffer.from('{}'), preconditions: undefined, dryRun: false }).catch((e: unknown) => e)) as ApiError;
    expect(fault.code).toBe(500);
    expect([err.warnings, fault.warnings]).toEqual([[], []]);
  });

  it("carries a refusal's warnings, on the stream and on a plain call", async () => {
    const onStream = (await calls.call(storage.StorageService.get, { key: key('warned'), at: undefined }).catch((e: unknown) => e)) as ApiError;
    const plain = await new Promise<unknown>((resolve) => client.get({ key: key('warned'), at: undefined }, (e) => resolve(e)));
    const fromPlain = fromGrpcError(plain, 'storage');
    expect([onStream.code, onStream.warnings, onStream.toStatus().message]).toEqual([403, ['first', 'second'], 'configmaps "warned" is forbidden: no']);
    expect([fromPlain.code, fromPlain.warnings]).toEqual([403, ['first', 'second']]);
    expect(JSON.stringify(fromPlain.toStatus())).not.toContain('first');
  });

  it('refuses a method the stream does not serve', async () => {
    const err = (await calls.call(storage.StorageService.list, { key: key(''), at: undefined, limit: 0, continueToken: '', labelSelector: '', fieldSelector: '' }).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(405);
    expect(err.message).toContain('/svc.storage.v1.Storage/List');
  });

  it('times a call out with 504 and tells the callee to stop', async () => {
    const err = (await calls.call(storage.StorageService.get, { key: key('slow'), at: undefined }, { timeoutMs: 200 }).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(504);
    const ctx = backend.seen.at(-1);
    for (let i = 0; i < 100 && !ctx?.signal.aborted; i++) await new Promise((r) => setTimeout(r, 10));
    expect(ctx?.signal.aborted).toBe(true);
    // The stream still serves later calls.
    expect((await calls.call(storage.StorageService.currentRevision, {})).revision).toBe(9);
  });

  it('a call made just after the service restarted waits for the channel to reconnect instead of failing', async () => {
    const waiting = new CallStream('storage', () => client.calls(), { channel: () => client.getChannel() });
    try {
      expect((await waiting.call(storage.StorageService.currentRevision, {})).revision).toBe(9);
      const address = backend.server.address;
      await backend.server.close();
      // Down long enough for the channel to fail a few dials and back off.
      await new Promise((r) => setTimeout(r, 700));
      expect(client.getChannel().getConnectivityState(false)).not.toBe(grpc.connectivityState.READY);
      backend = await serve(address);
      expect((await waiting.call(storage.StorageService.currentRevision, {}, { timeoutMs: 5000 })).revision).toBe(9);
    } finally {
      waiting.close();
    }
  });

  it('finishes in-flight calls on shutdown and then answers 503', async () => {
    const slow = calls.call(storage.StorageService.get, { key: key('slow'), at: undefined }, { timeoutMs: 5000 });
    for (let i = 0; i < 100 && backend.seen.length === 0; i++) await new Promise((r) => setTimeout(r, 10));
    const closing = backend.server.close();
    backend.release();
    await expect(slow).rejects.toMatchObject({ code: 404 });
    await closing;
    const after = (await calls.call(storage.StorageService.currentRevision, {}).catch((e: unknown) => e)) as ApiError;
    expect(after.code).toBe(503);
    expect(after.retryAfterSeconds).toBeGreaterThan(0);
  });
});
