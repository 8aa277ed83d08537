import * as grpc from '@grpc/grpc-js';
import { storage } from '@svc/proto';
import { channelTo, startGrpcServer, unary, type GrpcServerHandle } from './grpc';
import type { Logger } from './logger';
import { makeTestPki } from './testing/pki';

/** The identity rule of every gRPC server: allowed callers only, a verified certificate of the internal CA required. */
describe('internal mutual TLS', () => {
  const pki = makeTestPki();
  const stranger = makeTestPki('another-ca');
  const refusals: Array<Record<string, unknown>> = [];
  const log: Logger = {
    debug: () => undefined,
    info: () => undefined,
    error: () => undefined,
    warn: (msg, fields) => void refusals.push({ msg, ...fields }),
    with: () => log,
  };
  let server: GrpcServerHandle;

  beforeAll(async () => {
    const revision = unary(log, 'CurrentRevision', async () => ({ revision: 42, compactRevision: 0 }));
    server = await startGrpcServer('127.0.0.1:0', [{ definition: storage.StorageService, implementation: { currentRevision: revision } }], {
      security: { tls: pki.tlsFor('storage'), allowedCallers: ['gateway', 'admission'], log },
    });
  });

  afterAll(async () => {
    await server.close();
    pki.remove();
    stranger.remove();
  });

  function ask(client: storage.StorageClient): Promise<{ code: number; revision?: number }> {
    return new Promise((resolve) => {
      client.currentRevision({}, new grpc.Metadata(), { deadline: Date.now() + 5000 }, (err, res) => {
        client.close();
        resolve(err ? { code: err.code } : { code: 0, revision: res.revision });
      });
    });
  }

  it('serves an allowed identity', async () => {
    expect(await ask(new storage.StorageClient(...channelTo(server.address, 'storage', pki.tlsFor('gateway'))))).toEqual({ code: 0, revision: 42 });
    expect(await ask(new storage.StorageClient(...channelTo(server.address, 'storage', pki.tlsFor('admission'))))).toEqual({ code: 0, revision: 42 });
  });

  it('refuses another identity of the same CA with PERMISSION_DENIED, and logs it', async () => {
    expect(await ask(new storage.StorageClient(...channelTo(server.address, 'storage', pki.tlsFor('authz'))))).toEqual({ code: grpc.status.PERMISSION_DENIED });
    expect(refusals).toContainEqual(expect.objectContaining({ msg: 'call refused', caller: 'authz', method: '/svc.storage.v1.Storage/CurrentRevision' }));
  });

  it('refuses a caller without a certificate, or with one of another CA, at the handshake', async () => {
    const noCert = new storage.StorageClient(server.address, grpc.credentials.createSsl(pki.tlsFor('gateway').ca), { 'grpc.ssl_target_name_override': 'storage' });
    expect((await ask(noCert)).code).toBe(grpc.status.UNAVAILABLE);
    const foreign = stranger.tlsFor('gateway');
    const otherCa = new storage.StorageClient(server.address, grpc.credentials.createSsl(pki.tlsFor('gateway').ca, foreign.key, foreign.cert), { 'grpc.ssl_target_name_override': 'storage' });
    expect((await ask(otherCa)).code).toBe(grpc.status.UNAVAILABLE);
    const plaintext = new storage.StorageClient(server.address, grpc.credentials.createInsecure());
    expect((await ask(plaintext)).code).toBe(grpc.status.UNAVAILABLE);
  });

  it('a client refuses a server whose certificate names another identity', async () => {
    // The gateway meant to reach authz, but the address leads to storage.
    expect((await ask(new storage.StorageClient(...channelTo(server.address, 'authz', pki.tlsFor('gateway'))))).code).toBe(grpc.status.UNAVAILABLE);
  });
});
