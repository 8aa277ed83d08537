import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createLogger, loadInternalTls, type InternalTls, type InternalTlsFiles, type Logger } from '@svc/service-kit';
import { start as startStorage, StorageClient, type StorageHandle } from '@svc/storage';
import { ensureInternalPki, startEtcd, startNats, type EtcdInstance, type InternalIdentity, type NatsInstance } from '@svc/testenv';

/** A logger that writes nothing, for services started inside a test. */
export function quietLogger(): Logger {
  return createLogger('test', { write: () => undefined });
}

/** Polls until `cond` holds; throws after `timeoutMs`. */
export async function until(cond: () => boolean, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** The internal certificates of a test: files for a service to start with, loaded material for a client. */
export interface TestPki {
  files(identity: InternalIdentity): InternalTlsFiles;
  tls(identity: InternalIdentity): InternalTls;
}

export async function testPki(dir: string): Promise<TestPki> {
  const pki = await ensureInternalPki(path.join(dir, 'pki'));
  const files = (identity: InternalIdentity): InternalTlsFiles => ({ caFile: pki.caCert, certFile: pki.identities[identity].cert, keyFile: pki.identities[identity].key });
  return { files, tls: (identity) => loadInternalTls(files(identity)) };
}

/** etcd, NATS (JetStream) and the storage service with a client: what the watch path runs on. */
export interface Backends {
  dir: string;
  etcd: EtcdInstance;
  nats: NatsInstance;
  pki: TestPki;
  storage: StorageHandle;
  client: StorageClient;
  /** Stops NATS; `startNats` brings it back on the same port and store. */
  stopNats(): Promise<void>;
  startNats(): Promise<void>;
  /** Stops everything above and removes the data. */
  stop(): Promise<void>;
}

export async function startBackends(name: string): Promise<Backends> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `svc-${name}-`));
  const pki = await testPki(dir);
  const etcd = await startEtcd({ dataDir: path.join(dir, 'etcd'), logDir: dir, tls: pki.files('etcd') });
  const natsOptions = { storeDir: path.join(dir, 'nats'), logDir: dir, tls: pki.files('nats') };
  const nats = await startNats(natsOptions);
  const storage = await startStorage({ listen: '127.0.0.1:0', internalTls: pki.files('storage'), etcdEndpoints: [etcd.endpoint], etcdTls: pki.files('storage'), logger: quietLogger() });
  const b: Backends = {
    dir,
    etcd,
    nats,
    pki,
    storage,
    client: new StorageClient(storage.address, pki.tls('gateway')),
    stopNats: () => b.nats.process.stop(),
    startNats: async () => {
      b.nats = await startNats({ ...natsOptions, port: b.nats.port });
    },
    stop: async () => {
      b.client.close();
      await b.storage.close();
      await b.nats.process.stop();
      await b.etcd.process.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return b;
}

/** Namespaces for objects a test writes through storage directly (storage refuses content of a missing namespace). */
export async function createNamespaces(client: StorageClient, names: string[]): Promise<void> {
  for (const name of names) {
    await client.create({ group: '', resource: 'namespaces', namespace: '', name }, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, uid: `ns-${name}` }, spec: { finalizers: ['svc'] }, status: { phase: 'Active' } });
  }
}
