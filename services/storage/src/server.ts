import type { StoredKey } from '@svc/apimachinery';
import { ApiError } from '@svc/apimachinery';
import { storage, type common } from '@svc/proto';
import { CallsServer, createLogger, startGrpcServer, unary, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { EtcdStore } from './etcd-store';
import { startObjectCounting } from './object-counts';
import { etcdTlsOptions, type EtcdTlsFiles } from './etcd-options';
import type { EncryptionAtRest } from './encryption/at-rest';

/** Who may call this service (the identities of the internal certificates). */
const ALLOWED_CALLERS = ['gateway', 'admission', 'watch-fanout', 'authn', 'authz'];

export interface StorageConfig {
  /** gRPC listen address, host:port (port 0 picks a free one). */
  listen: string;
  /** host:port of the plaintext grpc.health.v1 port; empty or unset: none. */
  healthBindAddress?: string;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  etcdEndpoints: string[];
  /** Client certificate for etcd (TLS); plain connections without. */
  etcdTls?: EtcdTlsFiles;
  requestTimeoutMs?: number;
  /** etcd's --max-request-bytes; larger writes are refused (413) before they are sent. */
  maxRequestBytes?: number;
  /** How often `apiserver_storage_objects` is counted (default a minute, as the original). */
  objectCountIntervalMs?: number;
  /** Encryption at rest (--encryption-provider-config); values are stored in plain text without. */
  encryption?: EncryptionAtRest;
  logger?: Logger;
}

export interface StorageHandle {
  address: string;
  port: number;
  /** The plaintext health port's host:port, when --health-bind-address asked for one. */
  healthAddress?: string;
  store: EtcdStore;
  close(): Promise<void>;
}

function storedKey(key: common.ObjectKey | undefined, needName: boolean): StoredKey {
  if (!key || !key.resource) throw ApiError.badRequest('storage request without a resource');
  if (needName && !key.name) throw ApiError.badRequest('storage request without a name');
  return { group: key.group, resource: key.resource, namespace: key.namespace, name: key.name };
}

/** Starts the storage service: the only process that talks to etcd. */
export async function start(config: StorageConfig): Promise<StorageHandle> {
  const log = config.logger ?? createLogger('storage');
  const tls = loadInternalTls(config.internalTls);
  const store = new EtcdStore({
    endpoints: config.etcdEndpoints,
    requestTimeoutMs: config.requestTimeoutMs ?? 10000,
    ...(config.maxRequestBytes !== undefined ? { maxRequestBytes: config.maxRequestBytes } : {}),
    etcdOptions: etcdTlsOptions(config.etcdTls),
    ...(config.encryption ? { values: config.encryption } : {}),
  });
  const counting = startObjectCounting(store.client, log, config.objectCountIntervalMs);
  const unaryMethods = {
    get: unary(log, 'Get', async (req: storage.GetRequest) => {
      const res = await store.get(storedKey(req.key, true), { revision: req.at?.revision ?? 0, minRevision: req.at?.minRevision ?? 0 });
      return { object: res.json, revision: res.revision, ...(res.stale ? { stale: true } : {}) };
    }),
    list: unary(log, 'List', async (req: storage.ListRequest) => {
      const res = await store.list(storedKey(req.key, false), {
        at: { revision: req.at?.revision ?? 0, minRevision: req.at?.minRevision ?? 0 },
        limit: req.limit,
        ...(req.continueToken ? { continueToken: req.continueToken } : {}),
        labelSelector: req.labelSelector,
        fieldSelector: req.fieldSelector,
      });
      const out: storage.ListResponse = { items: res.items, revision: res.revision, continueToken: res.continueToken };
      if (res.remainingItemCount !== undefined) out.remainingItemCount = res.remainingItemCount;
      return out;
    }),
    create: unary(log, 'Create', async (req: storage.CreateRequest) => {
      // The object's JSON goes to the store as sent: it is parsed only when not as JSON.stringify writes it.
      const res = await store.create(storedKey(req.key, true), req.object, req.dryRun);
      return { object: res.json, revision: res.revision };
    }),
    update: unary(log, 'Update', async (req: storage.UpdateRequest) => {
      const pre = { revision: req.preconditions?.revision ?? 0, uid: req.preconditions?.uid ?? '' };
      const res = await store.update(storedKey(req.key, true), req.object, pre, req.dryRun);
      return { object: res.json, revision: res.revision };
    }),
    delete: unary(log, 'Delete', async (req: storage.DeleteRequest) => {
      const pre = { revision: req.preconditions?.revision ?? 0, uid: req.preconditions?.uid ?? '' };
      const res = await store.delete(storedKey(req.key, true), pre, req.dryRun);
      return { object: res.deleted.json, revision: res.revision };
    }),
    currentRevision: unary(log, 'CurrentRevision', async () => store.currentRevision()),
  };
  const calls = new CallsServer(log, storage.StorageService, unaryMethods, ['get', 'create', 'update', 'delete', 'currentRevision']);
  const implementation: storage.StorageServer = { ...unaryMethods, calls: calls.handler };
  const server = await startGrpcServer(config.listen, [{ definition: storage.StorageService, implementation }], {
    security: { tls, allowedCallers: ALLOWED_CALLERS, log },
    drain: () => calls.drain(),
    // Serving while etcd answers (the health service bounds the wait).
    health: { ready: async () => (await store.currentRevision()).revision >= 0, bindAddress: config.healthBindAddress ?? '' },
  });
  log.info('storage listening', { address: server.address, etcd: config.etcdEndpoints });
  return {
    address: server.address,
    port: server.port,
    ...(server.healthAddress ? { healthAddress: server.healthAddress } : {}),
    store,
    close: async () => {
      counting.stop();
      config.encryption?.close();
      await server.close();
      store.close();
    },
  };
}
