import * as fs from 'node:fs';
import type { TlsOptions } from 'node:tls';
import express from 'express';
import { ApiError, type ResourceRegistry } from '@svc/apimachinery';
import { AdmissionClient } from '@svc/admission/client';
import { AuthnClient } from '@svc/authn/client';
import { AuthzClient } from '@svc/authz/client';
import { createLogger, WebhookAgents, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { StorageClient } from '@svc/storage/client';
import { ChangeSubscriber, WatchFanoutClient, type NatsTlsFiles } from '@svc/watch-fanout/client';
import type { GatewayDeps, GatewayDocuments, GatewayLimits } from './backends';
import { createAuditor, type AuditOptions } from './audit/auditor';
import { expressForBothProtocols } from './express-http2';
import { createFrontServer } from './front-server';
import { GracefulShutdown, type ShutdownOptions } from './shutdown';
import { buildHandlerChain } from './handler-chain';
import { MAX_HEADER_FIELDS } from './request-head';
import type { ProtobufCodec } from './negotiation';
import { CustomResourceServing } from './custom-resources';
import { WatchHub } from './watch/watch-hub';
import { WriteBatcher } from './watch/write-batcher';
import { CachedStorage, DEFAULT_CACHE_OPTIONS, type CacheOptions } from './cache/cached-storage';
import { WatchConversions } from './conversion/watch-conversion';
import { conversionWebhooks } from './conversion/converter';
import { conversionOptions } from './registry/store';
import { SERVER_USER, ensureSystemNamespaces } from './registry/system-namespaces';
import { DefaultServiceReconciler, type DefaultServiceOptions } from './registry/default-service';
import { DEFAULT_FLOW_CONTROL, setupFlowControl, type FlowControlConfig } from './flowcontrol/setup';
import { queueWaitLimitMs } from './request-timeout';

/** The default/kubernetes Service (default-service.ts); the endpoint's port is the one the gateway listens on. */
export type DefaultServiceConfig = Omit<DefaultServiceOptions, 'port'>;

export interface GatewayConfig {
  /** HTTPS listen address, host:port (port 0 picks a free one). */
  listen: string;
  /** Graceful shutdown (shutdown.ts): how long readiness fails first, and whether refusals say Retry-After. */
  shutdown?: ShutdownOptions;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  tlsCertFile: string;
  tlsKeyFile: string;
  /** CA bundle for client certificates; without it no certificate is requested. */
  clientCaFile?: string;
  storageAddress: string;
  /**
   * The watch cache in front of storage (on unless false): lists and watches
   * answered from memory; options tune its window and consistent-read wait.
   */
  watchCache?: boolean | Partial<CacheOptions>;
  authnAddress: string;
  authzAddress: string;
  admissionAddress: string;
  watchFanoutAddress: string;
  natsUrl: string;
  /** Client certificate for NATS; NATS maps it to the gateways' read-only user. */
  natsTls?: NatsTlsFiles;
  registry: ResourceRegistry;
  documents?: GatewayDocuments;
  protobuf?: ProtobufCodec;
  limits?: Partial<GatewayLimits>;
  alwaysAllowPaths?: string[];
  /** The authenticating proxy's header names and prefixes (as authn's `--requestheader-*`), forwarded to authn. */
  proxyHeaders?: { names: string[]; prefixes: string[] };
  /** Streams an HTTP/2 connection may have open at once (0 or unset: the original's default, 100). */
  http2MaxStreamsPerConnection?: number;
  /** The default/kubernetes Service and this gateway's place in its Endpoints; unset: not kept, no ClusterIP reserved. */
  defaultService?: DefaultServiceConfig;
  /** Auditing (`--audit-policy-file` and a log or webhook); unset: nothing is audited. */
  audit?: AuditOptions;
  /** Priority and fairness and the in-flight limits (defaults: on, 400 and 200). */
  flowControl?: Partial<FlowControlConfig>;
  logger?: Logger;
}

export interface GatewayHandle {
  port: number;
  url: string;
  hub: WatchHub;
  close(): Promise<void>;
}

export const DEFAULT_LIMITS: GatewayLimits = {
  maxBodyBytes: 3 * 1024 * 1024,
  backendTimeoutMs: 30000,
  maxWatchSeconds: 1800,
  authnCacheTtlMs: 10000,
  authzCacheTtlMs: 1000,
  maxWatches: 10000,
  watchBufferBytes: 16 * 1024 * 1024,
  admissionTimeoutMs: 60_000,
  conversionWebhookTimeoutMs: 30_000,
  watchWriteIntervalMs: 50,
  requestTimeoutMs: 60_000,
};

/** Tolerates "reachable but refused": any Status below 500 proves the backend answers. */
async function reachable(call: () => Promise<unknown>): Promise<void> {
  try {
    await call();
  } catch (err) {
    if (err instanceof ApiError && err.code < 500) return;
    throw err;
  }
}

/** Go's default header limit (1 MiB), so long label selectors fit as they do upstream. */
const MAX_HEADER_BYTES = 1024 * 1024;
/** HTTP/1.1 keep-alive (and HTTP/2 idle connection) timeout, the time to receive a head, and a whole request (node's default). */
const KEEP_ALIVE_TIMEOUT_MS = 65_000;
const HEADERS_TIMEOUT_MS = 70_000;
const REQUEST_TIMEOUT_MS = 300_000;
/** How often the watch hub compares its position with watch-fanout's head, and how long it may go unconfirmed before /readyz fails. */
const HUB_PROGRESS_CHECK_MS = 2000;
const HUB_STALE_MS = 10_000;
/** How long a stopping gateway lets requests in flight finish once it refuses new ones. */
const SHUTDOWN_DRAIN_MS = 10_000;

/** Starts the gateway: the HTTPS front of the system. */
export async function start(config: GatewayConfig): Promise<GatewayHandle> {
  const log = config.logger ?? createLogger('gateway');
  // First: an audit policy that cannot be used refuses the start before anything is connected.
  const auditor = config.audit ? createAuditor(config.audit, log.with({ component: 'audit' })) : undefined;
  const tls = loadInternalTls(config.internalTls);
  const storage = new StorageClient(config.storageAddress, tls);
  const authn = new AuthnClient(config.authnAddress, tls);
  const authz = new AuthzClient(config.authzAddress, tls);
  const admission = new AdmissionClient(config.admissionAddress, tls);
  const fanout = new WatchFanoutClient(config.watchFanoutAddress, tls);
  const hub = new WatchHub(fanout, log);
  const subscriber = await ChangeSubscriber.connect(config.natsUrl, log, config.natsTls);
  const attached = hub.attach(subscriber);
  const customResources = new CustomResourceServing(config.registry, storage, hub, log.with({ component: 'custom-resources' }));
  const cache = config.watchCache === false ? undefined : new CachedStorage(storage, hub, log.with({ component: 'watch-cache' }), { ...DEFAULT_CACHE_OPTIONS, ...(config.watchCache === true ? {} : config.watchCache) });

  const limits = { ...DEFAULT_LIMITS, ...config.limits };
  const webhookAgents = new WebhookAgents();
  const watchWrites = new WriteBatcher(limits.watchWriteIntervalMs);
  const stopRetainingAgents = config.registry.onChange(() => webhookAgents.retain(conversionWebhooks(config.registry.all())));
  const shutdown = new GracefulShutdown(config.shutdown);
  // A request without a deadline of its own waits in a queue as one with the longest deadline would.
  const flowControl = setupFlowControl({ ...DEFAULT_FLOW_CONTROL, queueWaitMs: queueWaitLimitMs(0, limits.requestTimeoutMs), ...config.flowControl }, cache ?? storage, log.with({ component: 'flowcontrol' }));
  const deps: GatewayDeps = {
    registry: config.registry,
    storage: cache ?? storage,
    authn,
    authz,
    admission,
    fanout,
    hub,
    protobuf: config.protobuf,
    log,
    limits,
    alwaysAllowPaths: config.alwaysAllowPaths ?? ['/healthz', '/livez', '/readyz'],
    proxyHeaders: config.proxyHeaders ?? { names: [], prefixes: [] },
    documents: config.documents ?? {},
    webhookAgents,
    watchWrites,
    watchConversions: new WatchConversions(conversionOptions({ limits, webhookAgents })),
    ...(auditor ? { audit: auditor } : {}),
    ...(config.defaultService ? { kubernetesServiceIP: config.defaultService.serviceIP } : {}),
    flowControl,
    readiness: {
      etcd: async () => void (await storage.currentRevision({ timeoutMs: 3000 })),
      authn: () => reachable(() => authn.authenticate({ clientCertificateChain: [], headers: {}, method: 'GET', path: '/readyz', remoteAddress: '' }, { timeoutMs: 3000 })),
      authz: () =>
        reachable(() =>
          authz.authorize(
            { user: SERVER_USER, resourceRequest: false, verb: 'get', path: '/readyz', apiGroup: '', apiVersion: '', resource: '', subresource: '', namespace: '', name: '' },
            { timeoutMs: 3000 },
          ),
        ),
      admission: () =>
        reachable(() =>
          admission.admit(
            { phase: 'validating', operation: 'CONNECT', kind: { group: '', version: 'v1', kind: '' }, resource: { group: '', version: 'v1', resource: '' }, subresource: '', namespace: '', name: '', userInfo: SERVER_USER, dryRun: true },
            { timeoutMs: 3000 },
          ),
        ),
      'watch-fanout': async () => void (await fanout.head({ timeoutMs: 3000 })),
      nats: () => subscriber.ping(),
      'custom-resources': async () => {
        if (!customResources.isSynced) throw new Error('custom resource definitions not listed yet');
      },
      shutdown: shutdown.readinessCheck,
      'watch-hub': async () => {
        if (!hub.isReady) throw new Error('not following the change bus yet');
        if (hub.staleMs > HUB_STALE_MS) throw new Error(`not known to be current with the change bus for ${Math.round(hub.staleMs / 1000)} s`);
      },
    },
  };

  // Graceful shutdown (shutdown.ts): readiness fails first, then new requests are
  // refused, watches end so their clients re-watch elsewhere, and requests in
  // flight finish (up to SHUTDOWN_DRAIN_MS).
  let inFlight = 0;
  let drained: (() => void) | undefined;
  const chain = buildHandlerChain(deps);
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  // The query is parsed once, by the request-info filter (URLSearchParams, as Go's url.ParseQuery
  // reads it); express parses none, so no handler can read another form of it.
  app.set('query parser', false);
  app.use((req, res) => {
    if (shutdown.refuse(req, res)) return;
    inFlight++;
    res.once('close', () => {
      inFlight--;
      if (inFlight === 0) drained?.();
    });
    void chain(req, res);
  });

  const tlsOptions: TlsOptions = {
    cert: fs.readFileSync(config.tlsCertFile),
    key: fs.readFileSync(config.tlsKeyFile),
  };
  if (config.clientCaFile) {
    tlsOptions.ca = fs.readFileSync(config.clientCaFile);
    tlsOptions.requestCert = true;
    tlsOptions.rejectUnauthorized = false;
  }
  // HTTP/2 and HTTP/1.1 on one port (ALPN), one express app for both.
  const front = createFrontServer(expressForBothProtocols(app), {
    tls: tlsOptions,
    maxHeaderBytes: MAX_HEADER_BYTES,
    maxHeadersCount: MAX_HEADER_FIELDS + 1,
    keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
    headersTimeoutMs: HEADERS_TIMEOUT_MS,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    ...(config.http2MaxStreamsPerConnection ? { maxConcurrentStreams: config.http2MaxStreamsPerConnection } : {}),
    log: log.with({ component: 'front-server' }),
  });
  const sep = config.listen.lastIndexOf(':');
  const host = config.listen.slice(0, sep);
  const port = Number(config.listen.slice(sep + 1));
  const bound = await front.listen(host, port);
  void ensureSystemNamespaces(deps, log.with({ component: 'system-namespaces' }));
  const defaultService = config.defaultService ? new DefaultServiceReconciler(deps, { ...config.defaultService, port: bound }, log.with({ component: 'default-service' })) : undefined;
  // As the original, the gateway lists itself as an endpoint only once it is ready.
  defaultService?.start(async () => {
    try {
      for (const check of Object.values(deps.readiness)) await check();
      return true;
    } catch {
      return false;
    }
  });
  void attached.catch((err: unknown) => log.error('watch hub failed', { err }));
  void customResources.start();
  hub.startProgressCheck(HUB_PROGRESS_CHECK_MS);
  log.info('gateway listening', { url: `https://${host}:${bound}` });

  return {
    port: bound,
    url: `https://${host}:${bound}`,
    hub,
    close: async () => {
      // First out of the kubernetes Endpoints, so clients stop being sent here while the gateway drains.
      const leaving = defaultService?.stop();
      await shutdown.begin();
      // With Retry-After the gateway keeps listening until drained, so refused clients are told when to retry.
      const closing = shutdown.options.sendRetryAfter ? undefined : front.beginShutdown();
      hub.endAll();
      if (inFlight > 0) {
        await new Promise<void>((resolve) => {
          drained = resolve;
          setTimeout(resolve, SHUTDOWN_DRAIN_MS).unref();
        });
      }
      const closed = closing ?? front.beginShutdown();
      front.destroyAll();
      await closed;
      hub.stop();
      flowControl.stop();
      cache?.stop();
      customResources.stop();
      stopRetainingAgents();
      webhookAgents.destroy();
      watchWrites.stop();
      await leaving;
      await auditor?.close();
      await subscriber.close();
      for (const c of [storage, authn, authz, admission, fanout]) c.close();
    },
  };
}
