import { ApiError, isStringifiedObject, type ApiObject } from '@svc/apimachinery';
import { CustomResourceEquivalents } from './equivalents';
import { PatchedObjectDecoder } from './patched-objects';
import { AuthzClient } from '@svc/authz/client';
import type { AuthorizationCheck, AuthorizationDecision } from '@svc/cel';
import { admission } from '@svc/proto';
import { CallsServer, TtlCache, createLogger, fromProtoUser, startGrpcServer, unary, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { StorageClient } from '@svc/storage/client';
import { WatchFanoutClient } from '@svc/watch-fanout/client';
import type { ObjectFeed } from '@svc/watch-fanout/feed';
import { AdmissionConfigurations, type AdmissionConfigurationReader } from './configurations';
import { nodeRestriction, type PodReader } from './node-restriction';
import { ownerReferencesPermissionEnforcement, servedOwnerKinds } from './owner-references-permission';
import { namespaceLifecycle, serviceAccountDefaults, runMutating, runValidating, type AdmissionOperation, type AdmissionPlugin, type NamespaceReader } from './plugins';
import { PolicyValidator, isAdmissionConfigurationResource, storageParams, type EquivalentResourceMapper, type PolicyOutcome } from './policy';
import { AdmissionRecord, AdmissionWebhooks, type WebhookAttributes } from './webhook/dispatcher';
import type { IsolationOptions } from './webhook/isolation';
import { mutateWithReinvocation } from './webhook/reinvocation';
import { timeStep } from './admission-metrics';

/** Who may call this service (the identities of the internal certificates). */
const ALLOWED_CALLERS = ['gateway'];

export interface AdmissionConfig {
  listen: string;
  /** host:port of the plaintext grpc.health.v1 port; empty or unset: none. */
  healthBindAddress?: string;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  /** Address of the storage service, for plugins that read state. */
  storageAddress: string;
  /** How long an Active namespace is remembered by the namespace lifecycle check and the selectors of webhooks and policies (0: always read). */
  namespaceCacheTtlMs?: number;
  /**
   * watch-fanout, where the admission configurations (webhook
   * configurations, policies and bindings) are followed; without it none
   * are used and only the built-in plugins run.
   */
  watchFanoutAddress?: string;
  /** The authorization service, asked by the `authorizer` of CEL expressions; without it every such check errs. */
  authzAddress?: string;
  /** How often the configurations are looked at for changes (200 ms by default). */
  configurationPollMs?: number;
  /** How webhooks are called. */
  webhooks?: WebhookSettings;
  /**
   * The ValidatingAdmissionPolicy step of the validating phase (after the
   * built-in plugins, before the validating webhooks); the policy validator
   * by default.
   */
  validatingPolicies?: (deps: AdmissionStepDeps) => ValidatingPolicyStep;
  logger?: Logger;
}

export interface WebhookSettings {
  /** The largest webhook answer read (a larger one is a failed call). */
  maxResponseBytes?: number;
  /** When a failing webhook is isolated and for how long. */
  isolation?: IsolationOptions;
  /** The certificate and key presented to webhooks. */
  clientCertificate?: { cert: Buffer; key: Buffer };
}

/** What an admission step can read. */
export interface AdmissionStepDeps {
  configurations: AdmissionConfigurationReader;
  namespaces: NamespaceReader;
  storage: StorageClient;
  authorize: (check: AuthorizationCheck) => Promise<AuthorizationDecision>;
  log: Logger;
  /** The other versions a resource is served at (matchPolicy Equivalent). */
  equivalents?: EquivalentResourceMapper;
}

/** Validates a request (resolves with its warnings and audit annotations; throws the ApiError that refuses it). */
export interface ValidatingPolicyStep {
  validate(attrs: WebhookAttributes): Promise<PolicyOutcome>;
}

/** The default ValidatingAdmissionPolicy step. */
export function policyValidator(deps: AdmissionStepDeps): ValidatingPolicyStep {
  return new PolicyValidator({
    source: deps.configurations,
    namespaces: deps.namespaces,
    params: storageParams(deps.storage, { definitions: () => deps.configurations.list('CustomResourceDefinition') }),
    authorize: deps.authorize,
    log: deps.log,
    ...(deps.equivalents ? { equivalents: deps.equivalents } : {}),
  });
}

export interface AdmissionHandle {
  address: string;
  port: number;
  /** The plaintext health port's host:port, when --health-bind-address asked for one. */
  healthAddress?: string;
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

/** `err` as an ApiError of its own that also carries `warnings` (the error's first). */
function withWarnings(err: unknown, warnings: readonly string[], auditAnnotations: Readonly<Record<string, string>> = {}): ApiError {
  const apiError = ApiError.from(err);
  if (warnings.length === 0 && Object.keys(auditAnnotations).length === 0) return apiError;
  const copy = new ApiError(apiError.code, apiError.reason, apiError.message, apiError.details, { cause: apiError.cause ?? apiError });
  copy.warnings = [...new Set([...apiError.warnings, ...warnings])];
  // The audit annotations of the webhooks and policies that ran before the refusal go to the request's audit event.
  copy.auditAnnotations = { ...auditAnnotations, ...apiError.auditAnnotations };
  return copy;
}

/** How long a request waits for the configurations to be read once (the service just started) before it is answered 503. */
const CONFIGURATIONS_WAIT_MS = 10_000;

/** Resolves once `configurations` have been read (or refuses with 503 after `waitMs`). */
async function configurationsLoaded(configurations: AdmissionConfigurationReader, waitMs = CONFIGURATIONS_WAIT_MS): Promise<void> {
  const deadline = Date.now() + waitMs;
  while (!configurations.ready) {
    if (Date.now() >= deadline) throw ApiError.serviceUnavailable('admission webhooks and policies are not loaded yet');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/**
 * Starts the admission service: the built-in plugins and, with watch-fanout
 * to follow their configurations, admission webhooks and
 * ValidatingAdmissionPolicies. Mutating: the built-in plugins, then the
 * mutating webhooks (with reinvocation). Validating: the built-in plugins,
 * then the policies, then the validating webhooks.
 */
export async function start(config: AdmissionConfig): Promise<AdmissionHandle> {
  const log = config.logger ?? createLogger('admission');
  const tls = loadInternalTls(config.internalTls);
  const storage = new StorageClient(config.storageAddress, tls);
  const namespaces = storageNamespaces(storage, config.namespaceCacheTtlMs ?? 0);
  const plugins: AdmissionPlugin[] = [serviceAccountDefaults(), namespaceLifecycle(namespaces), nodeRestriction(storagePods(storage))];
  const authz = config.authzAddress ? new AuthzClient(config.authzAddress, tls) : undefined;
  const authorize = async (check: AuthorizationCheck): Promise<AuthorizationDecision> => {
    if (!authz) return { decision: 'no-opinion', reason: '', error: 'the admission service has no authorizer configured (--authz-address)' };
    return authz.authorize(check, { timeoutMs: 5000 });
  };
  let fanout: WatchFanoutClient | undefined;
  let feed: ObjectFeed | undefined;
  let webhooks: AdmissionWebhooks | undefined;
  let policies: ValidatingPolicyStep | undefined;
  let configurations: AdmissionConfigurations | undefined;
  if (config.watchFanoutAddress) {
    const followed = new AdmissionConfigurations();
    configurations = followed;
    fanout = new WatchFanoutClient(config.watchFanoutAddress, tls);
    feed = followed.follow(storage, fanout, { log, ...(config.configurationPollMs !== undefined ? { pollMs: config.configurationPollMs } : {}) });
    const settings = config.webhooks ?? {};
    const equivalents = new CustomResourceEquivalents(followed);
    const decoder = new PatchedObjectDecoder(followed);
    webhooks = new AdmissionWebhooks({
      configurations: followed,
      equivalents,
      decodeProblem: (kind, obj) => decoder.problem(kind, obj),
      namespaces,
      authorize,
      log,
      ...(settings.maxResponseBytes !== undefined ? { maxResponseBytes: settings.maxResponseBytes } : {}),
      ...(settings.isolation ? { isolation: settings.isolation } : {}),
      ...(settings.clientCertificate ? { clientCertificate: settings.clientCertificate } : {}),
    });
    policies = (config.validatingPolicies ?? policyValidator)({ configurations: followed, namespaces, storage, authorize, log, equivalents });
  } else {
    log.info('no --watch-fanout-address: admission webhooks and policies are off');
  }
  // Owner references are checked against the caller's permissions: only with an authorizer to ask.
  if (config.authzAddress) plugins.push(ownerReferencesPermissionEnforcement(authorize, servedOwnerKinds(() => configurations?.list('CustomResourceDefinition') ?? [])));
  const unaryMethods = {
    admit: unary(log, 'Admit', async (req: admission.AdmitRequest, ctx): Promise<admission.AdmitResponse> => {
      const operation = OPERATIONS[req.operation];
      if (!operation) throw ApiError.badRequest('admission request without an operation');
      const object = requestObject(req.object, 'object');
      const oldObject = requestObject(req.oldObject, 'oldObject');
      const options = requestObject(req.options, 'options');
      const attrs: WebhookAttributes = {
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
        get options() {
          return options();
        },
        dryRun: req.dryRun,
      };
      const record = new AdmissionRecord();
      const answer = (validated: boolean, mutated?: Buffer): admission.AdmitResponse => ({ object: mutated ?? Buffer.alloc(0), warnings: record.warnings, auditAnnotations: record.auditAnnotations, validated, mutatedBy: record.mutatedBy });
      // Webhooks and policies act on what is configured: the configurations are read once before any request is admitted.
      if (configurations && !isAdmissionConfigurationResource(attrs)) await configurationsLoaded(configurations);
      if (req.phase === admission.Phase.PHASE_MUTATING || req.phase === admission.Phase.PHASE_MUTATING_THEN_VALIDATING) {
        const result = await timeStep('admit', operation, () => mutateWithReinvocation(attrs, (a) => runMutating(plugins, a), webhooks, record)).catch((err: unknown) => {
          throw withWarnings(err, record.warnings, record.auditAnnotations);
        });
        const mutated = result.changed && result.object ? Buffer.from(JSON.stringify(result.object)) : undefined;
        // Validation in the same call only holds for the object the caller already validated.
        if (mutated || req.phase === admission.Phase.PHASE_MUTATING) return answer(false, mutated);
      }
      try {
        await timeStep('validate', operation, async () => {
          await runValidating(plugins, attrs);
          if (policies) record.merge(await policies.validate(attrs));
          await webhooks?.validate(attrs, record);
        });
      } catch (err) {
        // A refusal carries the warnings earned before it, as the original sends them with a failed request.
        throw withWarnings(err, record.warnings, record.auditAnnotations);
      }
      ctx.log.debug('admitted', { operation, resource: attrs.resource.resource, namespace: attrs.namespace, name: attrs.name });
      return answer(true);
    }),
  };
  const calls = new CallsServer(log, admission.AdmissionService, unaryMethods, ['admit']);
  const implementation: admission.AdmissionServer = { ...unaryMethods, calls: calls.handler };
  const server = await startGrpcServer(config.listen, [{ definition: admission.AdmissionService, implementation }], { security: { tls, allowedCallers: ALLOWED_CALLERS, log }, health: { ready: () => configurations?.ready ?? true, bindAddress: config.healthBindAddress ?? '' }, drain: () => calls.drain() });
  log.info('admission listening', { address: server.address, plugins: plugins.map((p) => p.name), webhooks: webhooks !== undefined });
  return {
    address: server.address,
    port: server.port,
    ...(server.healthAddress ? { healthAddress: server.healthAddress } : {}),
    close: async () => {
      await server.close();
      await feed?.stop();
      webhooks?.close();
      fanout?.close();
      authz?.close();
      storage.close();
    },
  };
}
