import { ApiError, isStringifiedObject, type ApiObject } from '@svc/apimachinery';
import { admission } from '@svc/proto';
import { CallsServer, TtlCache, createLogger, fromProtoUser, startGrpcServer, unary, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { StorageClient } from '@svc/storage/client';
import { nodeRestriction, type PodReader } from './node-restriction';
import { namespaceLifecycle, serviceAccountDefaults, runMutating, runValidating, type AdmissionAttributes, type AdmissionOperation, type AdmissionPlugin, type NamespaceReader } from './plugins';

/** Who may call this service (the identities of the internal certificates). */
const ALLOWED_CALLERS = ['gateway'];

export interface AdmissionConfig {
  listen: string;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  /** Address of the storage service, for plugins that read state. */
  storageAddress: string;
  /** How long an Active namespace is remembered by the namespace lifecycle check (0: always read). */
  namespaceCacheTtlMs?: number;
  logger?: Logger;
}

export interface AdmissionHandle {
  address: string;
  port: number;
  close(): Promise<void>;
}

const OPERATIONS: Record<number, AdmissionOperation> = {
  [admission.Operation.OPERATION_CREATE]: 'CREATE',
  [admission.Operation.OPERATION_UPDATE]: 'UPDATE',
  [admission.Operation.OPERATION_DELETE]: 'DELETE',
  [admission.Operation.OPERATION_CONNECT]: 'CONNECT',
};

function parseJson(bytes: Uint8Array, field: string): ApiObject | undefined {
  if (bytes.length === 0) return undefined;
  try {
    return JSON.parse(Buffer.from(bytes).toString('utf8')) as ApiObject;
  } catch {
    throw ApiError.badRequest(`admission request with an undecodable ${field}`);
  }
}

/**
 * An object of the request, parsed when a plugin first reads it: most
 * plugins look only at the kind and namespace. JSON as JSON.stringify writes
 * an object (what the gateway sends) is known to parse; any other is parsed
 * at once, so an undecodable one is still refused before any plugin runs.
 */
function requestObject(bytes: Uint8Array, field: string): () => ApiObject | undefined {
  const json = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (json.length === 0 || !isStringifiedObject(json)) {
    const parsed = parseJson(json, field);
    return () => parsed;
  }
  let parsed: ApiObject | undefined;
  return () => (parsed ??= JSON.parse(json.toString('utf8')) as ApiObject);
}

/**
 * Namespaces read from storage. Active namespaces are remembered for
 * `cacheTtlMs` (the original server reads them from an informer cache, so it
 * too acts on a slightly old view); a missing or terminating namespace is
 * always read again.
 */
export function storageNamespaces(storage: StorageClient, cacheTtlMs = 0): NamespaceReader {
  const active = new TtlCache<ApiObject>(cacheTtlMs);
  const isActive = (ns: ApiObject | undefined): ns is ApiObject => (ns?.['status'] as { phase?: string } | undefined)?.phase === 'Active' && !ns?.metadata?.deletionTimestamp;
  const read = async (name: string): Promise<ApiObject | undefined> => {
    try {
      const ns = (await storage.get({ group: '', resource: 'namespaces', namespace: '', name })).object;
      if (isActive(ns)) active.set(name, ns);
      return ns;
    } catch (err) {
      if (err instanceof ApiError && err.code === 404) return undefined;
      throw err;
    }
  };
  // When a remembered namespace expires, the creates in flight in it would
  // each read it; the first reads, the others take an Active answer from that
  // read (no older than the cache allows). Any other answer they read again
  // themselves, since the read began before they asked.
  const reading = new Map<string, Promise<ApiObject | undefined>>();
  return {
    async getNamespace(name) {
      const cached = active.get(name);
      if (cached) return cached;
      const inFlight = cacheTtlMs > 0 ? reading.get(name) : undefined;
      if (inFlight) {
        const shared = await inFlight.catch(() => undefined);
        if (isActive(shared)) return shared;
        return read(name);
      }
      const own = read(name);
      if (cacheTtlMs <= 0) return own;
      reading.set(name, own);
      try {
        return await own;
      } finally {
        if (reading.get(name) === own) reading.delete(name);
      }
    },
  };
}

/** Pods read from storage (NodeRestriction checks the pod a node binds a token to). */
export function storagePods(storage: StorageClient): PodReader {
  return {
    async getPod(namespace, name) {
      try {
        return (await storage.get({ group: '', resource: 'pods', namespace, name })).object;
      } catch (err) {
        if (err instanceof ApiError && err.code === 404) return undefined;
        throw err;
      }
    },
  };
}

/** Starts the admission service with the built-in plugins. */
export async function start(config: AdmissionConfig): Promise<AdmissionHandle> {
  const log = config.logger ?? createLogger('admission');
  const tls = loadInternalTls(config.internalTls);
  const storage = new StorageClient(config.storageAddress, tls);
  const plugins: AdmissionPlugin[] = [serviceAccountDefaults(), namespaceLifecycle(storageNamespaces(storage, config.namespaceCacheTtlMs ?? 0)), nodeRestriction(storagePods(storage))];
  const unaryMethods = {
    admit: unary(log, 'Admit', async (req: admission.AdmitRequest, ctx): Promise<admission.AdmitResponse> => {
      const operation = OPERATIONS[req.operation];
      if (!operation) throw ApiError.badRequest('admission request without an operation');
      const object = requestObject(req.object, 'object');
      const oldObject = requestObject(req.oldObject, 'oldObject');
      const attrs: AdmissionAttributes = {
        operation,
        kind: { group: req.kind?.group ?? '', version: req.kind?.version ?? '', kind: req.kind?.kind ?? '' },
        resource: { group: req.resource?.group ?? '', version: req.resource?.version ?? '', resource: req.resource?.resource ?? '' },
        subresource: req.subresource,
        namespace: req.namespace,
        name: req.name,
        userInfo: fromProtoUser(req.userInfo),
        get object() {
          return object();
        },
        get oldObject() {
          return oldObject();
        },
        dryRun: req.dryRun,
      };
      if (req.phase === admission.Phase.PHASE_MUTATING || req.phase === admission.Phase.PHASE_MUTATING_THEN_VALIDATING) {
        const result = await runMutating(plugins, attrs);
        const mutated = result.changed && result.object ? Buffer.from(JSON.stringify(result.object)) : undefined;
        // Validation in the same call only holds for the object the caller already validated.
        if (mutated || req.phase === admission.Phase.PHASE_MUTATING) return { object: mutated ?? Buffer.alloc(0), warnings: [], auditAnnotations: {}, validated: false };
      }
      await runValidating(plugins, attrs);
      ctx.log.debug('admitted', { operation, resource: attrs.resource.resource, namespace: attrs.namespace, name: attrs.name });
      return { object: Buffer.alloc(0), warnings: [], auditAnnotations: {}, validated: true };
    }),
  };
  const calls = new CallsServer(log, admission.AdmissionService, unaryMethods, ['admit']);
  const implementation: admission.AdmissionServer = { ...unaryMethods, calls: calls.handler };
  const server = await startGrpcServer(config.listen, [{ definition: admission.AdmissionService, implementation }], { security: { tls, allowedCallers: ALLOWED_CALLERS, log }, drain: () => calls.drain() });
  log.info('admission listening', { address: server.address, plugins: plugins.map((p) => p.name) });
  return {
    address: server.address,
    port: server.port,
    close: async () => {
      await server.close();
      storage.close();
    },
  };
}
