import type { ResourceRegistry } from '@svc/apimachinery';
import type { AdmissionClient } from '@svc/admission/client';
import type { AuthnClient } from '@svc/authn/client';
import type { AuthzClient } from '@svc/authz/client';
import type { AggregatedDiscoveryDocument, DiscoveryScope } from '@svc/openapi';
import type { Logger, WebhookAgents } from '@svc/service-kit';
import type { WatchFanoutClient } from '@svc/watch-fanout/client';
import type { Auditor } from './audit/auditor';
import type { GatewayFlowControl } from './flowcontrol/setup';
import type { WatchConversions } from './conversion/watch-conversion';
import type { ProtobufCodec } from './negotiation';
import type { WatchHub } from './watch/watch-hub';
import type { WriteBatcher } from './watch/write-batcher';
import type { ObjectStorage } from './registry/storage-interface';

/** Everything the filters and handlers call, injected so tests can replace parts. */
export interface GatewayDeps {
  registry: ResourceRegistry;
  /** Storage, behind the watch cache when it is on. */
  storage: ObjectStorage;
  authn: AuthnClient;
  authz: AuthzClient;
  admission: AdmissionClient;
  fanout: WatchFanoutClient;
  hub: WatchHub;
  protobuf: ProtobufCodec | undefined;
  log: Logger;
  limits: GatewayLimits;
  /** Paths served without authentication or authorization (health probes). */
  alwaysAllowPaths: string[];
  /**
   * Headers of an authenticating proxy forwarded to authn besides the
   * built-in credential headers (`authorization`, `impersonate-*`,
   * `x-remote-*`): lower-cased names and name prefixes.
   */
  proxyHeaders: { names: string[]; prefixes: string[] };
  /** ClusterIP of the `default/kubernetes` Service, which no other Service may take (unset: none is reserved). */
  kubernetesServiceIP?: string;
  /** Readiness checks by name. */
  readiness: Record<string, () => Promise<void>>;
  /** Documents derived from the registry (OpenAPI), rebuilt when it changes. */
  documents: GatewayDocuments;
  /** Watch events of custom resources stored in another version, converted once per served version. */
  watchConversions: WatchConversions;
  /** Batches the writes of watch streams: the events of one interval leave each socket in one write. */
  watchWrites: WriteBatcher;
  /** Kept-alive connections to conversion webhooks, dropped with the definitions that use them. */
  webhookAgents: WebhookAgents;
  /** The audit policy and backends (`--audit-*`); undefined: nothing is audited, at no cost. */
  audit?: Auditor;
  /** Priority and fairness or the max-in-flight limit (`--enable-priority-and-fairness`); undefined: requests are not limited. */
  flowControl?: GatewayFlowControl;
}

export interface GatewayLimits {
  /** Largest request body accepted (SPEC: 3 MiB); larger is 413. */
  maxBodyBytes: number;
  /** Deadline for each backend call. */
  backendTimeoutMs: number;
  /** Longest a watch stays open before the server ends it (clients re-watch). */
  maxWatchSeconds: number;
  /** How long a successful authentication is reused for the same credentials (0: never). */
  authnCacheTtlMs: number;
  /** How long an authorization decision is reused for the same user and attributes (0: never). */
  authzCacheTtlMs: number;
  /** Watches one gateway serves at once; more are 429 with Retry-After. */
  maxWatches: number;
  /**
   * Bytes a watch may have written but not yet sent (its socket does not
   * keep up) or buffered before it goes live; past it the watch ends and
   * the client re-watches from its last resourceVersion.
   */
  watchBufferBytes: number;
  /** Deadline of one admission call: every webhook and policy a write passes, each webhook bounded by its own timeoutSeconds (at most 30 s). */
  admissionTimeoutMs: number;
  /** Deadline of one call to a custom resource's conversion webhook (upstream: 30 s). */
  conversionWebhookTimeoutMs: number;
  /** How long a watch's events may wait to leave its socket together with the next ones (0: the end of the event loop's turn). */
  watchWriteIntervalMs: number;
  /** `--request-timeout`: the longest deadline of a request that is not long-running (its `timeout` parameter may shorten it). */
  requestTimeoutMs: number;
}

/** Builders of documents served from the registry; absent ones answer 404. */
export interface GatewayDocuments {
  openApiV2?(registry: ResourceRegistry): unknown;
  /** The v2 document already serialized as JSON (it is large; serializing it per request is slow). */
  openApiV2Json?(registry: ResourceRegistry): Buffer;
  /** The v2 document as protobuf (`openapi.v2.Document`), for clients that ask for it. */
  openApiV2Protobuf?(registry: ResourceRegistry): Buffer;
  openApiV3Index?(registry: ResourceRegistry): unknown;
  openApiV3GroupVersion?(registry: ResourceRegistry, group: string, version: string): unknown;
  /** `/api` or `/apis` as an aggregated discovery list (without it, only the legacy documents are served). */
  aggregatedDiscovery?(registry: ResourceRegistry, scope: DiscoveryScope): AggregatedDiscoveryDocument;
}
