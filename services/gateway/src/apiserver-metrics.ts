import { processMetrics, type MetricsRegistry } from '@svc/service-kit';
import { CONNECT_SUBRESOURCES, type RequestInfo } from './request-info';

/**
 * The gateway's metrics, with the original server's names, types, labels
 * and buckets (k8s.io/apiserver's endpoint, watch, storage and
 * authentication metrics), and how a request's labels are derived: the
 * verb as the original reports it, and label values kept bounded (an
 * unknown verb is `other`, an unknown resource or path is reported without
 * naming it).
 */

const REQUEST_LABELS = ['verb', 'dry_run', 'group', 'version', 'resource', 'subresource', 'scope', 'component', 'code'] as const;
const DURATION_LABELS = ['verb', 'dry_run', 'group', 'version', 'resource', 'subresource', 'scope', 'component'] as const;
const SIZE_LABELS = ['verb', 'group', 'version', 'resource', 'subresource', 'scope', 'component'] as const;
const WATCH_LABELS = ['group', 'version', 'resource'] as const;

/** 1 KB to 10 GB by factors of ten (the original's ExponentialBuckets(1000, 10, 8)). */
const RESPONSE_SIZE_BUCKETS = [1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10];
/** 1 KiB to 128 KiB by factors of two (ExponentialBuckets(1024, 2, 8)). */
const WATCH_EVENT_SIZE_BUCKETS = [1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072];
/** 1 ms to about 16 s by factors of two (ExponentialBuckets(0.001, 2, 15)). */
const AUTHENTICATION_BUCKETS = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);

export type RequestKind = 'readOnly' | 'mutating';
const REQUEST_KINDS: readonly RequestKind[] = ['readOnly', 'mutating'];

/** Requests in flight by kind, and the most since the last scrape (the original reports the maximum of the last second). */
export const inflight = { now: { readOnly: 0, mutating: 0 }, max: { readOnly: 0, mutating: 0 } };

/** Counts a request in flight until the returned function is called. */
export function enterInflight(kind: RequestKind): () => void {
  if (++inflight.now[kind] > inflight.max[kind]) inflight.max[kind] = inflight.now[kind];
  return () => {
    inflight.now[kind]--;
  };
}

function declare(registry: MetricsRegistry) {
  return {
    requests: registry.counter({
      name: 'apiserver_request_total',
      help: 'Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.',
      labelNames: REQUEST_LABELS,
      stabilityLevel: 'STABLE',
    }),
    duration: registry.histogram({
      name: 'apiserver_request_duration_seconds',
      help: 'Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.',
      labelNames: DURATION_LABELS,
      stabilityLevel: 'STABLE',
      buckets: [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60],
    }),
    responseSizes: registry.histogram({
      name: 'apiserver_response_sizes',
      help: 'Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.',
      labelNames: SIZE_LABELS,
      stabilityLevel: 'STABLE',
      buckets: RESPONSE_SIZE_BUCKETS,
    }),
    inflight: registry.gauge({
      name: 'apiserver_current_inflight_requests',
      help: 'Maximal number of currently used inflight request limit of this apiserver per request kind in last second.',
      labelNames: ['request_kind'] as const,
      stabilityLevel: 'STABLE',
      // Each scrape reports the most in flight since the last one, then starts again from those in flight now.
      collect(gauge) {
        for (const kind of REQUEST_KINDS) {
          gauge.labels(kind).set(inflight.max[kind]);
          inflight.max[kind] = inflight.now[kind];
        }
      },
    }),
    longRunning: registry.gauge({
      name: 'apiserver_longrunning_requests',
      help: 'Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.',
      labelNames: SIZE_LABELS,
      stabilityLevel: 'STABLE',
    }),
    deprecatedApis: registry.gauge({
      name: 'apiserver_requested_deprecated_apis',
      help: 'Gauge of deprecated APIs that have been requested, broken out by API group, version, resource, subresource, and removed_release.',
      labelNames: ['group', 'version', 'resource', 'subresource', 'removed_release'] as const,
      stabilityLevel: 'STABLE',
    }),
    registeredWatchers: registry.gauge({ name: 'apiserver_registered_watchers', help: 'Number of currently registered watchers for a given resources', labelNames: WATCH_LABELS }),
    watchEvents: registry.counter({ name: 'apiserver_watch_events_total', help: 'Number of events sent in watch clients', labelNames: WATCH_LABELS }),
    watchEventSizes: registry.histogram({ name: 'apiserver_watch_events_sizes', help: 'Watch event size distribution in bytes', labelNames: WATCH_LABELS, buckets: WATCH_EVENT_SIZE_BUCKETS }),
    storageObjects: registry.gauge({
      name: 'apiserver_storage_objects',
      help: 'Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.',
      labelNames: ['resource'] as const,
      stabilityLevel: 'STABLE',
    }),
    authenticationAttempts: registry.counter({ name: 'authentication_attempts', help: 'Counter of authenticated attempts.', labelNames: ['result'] as const }),
    authenticationDuration: registry.histogram({
      name: 'authentication_duration_seconds',
      help: 'Authentication duration in seconds broken out by result.',
      labelNames: ['result'] as const,
      buckets: AUTHENTICATION_BUCKETS,
    }),
    authenticatedUserRequests: registry.counter({ name: 'authenticated_user_requests', help: 'Counter of authenticated requests broken out by username.', labelNames: ['username'] as const }),
    authorizationDecisions: registry.counter({
      name: 'apiserver_authorization_decisions_total',
      help: 'Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision.',
      labelNames: ['type', 'name', 'decision'] as const,
    }),
    authorizationCache: registry.counter({
      name: 'apiserver_authorization_decision_cache_total',
      help: "Lookups of the gateway's authorization decision cache, by result (hit, miss).",
      labelNames: ['result'] as const,
    }),
    authenticationCache: registry.counter({
      name: 'apiserver_authentication_cache_total',
      help: "Lookups of the gateway's authentication cache, by result (hit, miss).",
      labelNames: ['result'] as const,
    }),
  };
}

export type GatewayMetrics = ReturnType<typeof declare>;

let declared: GatewayMetrics | undefined;

/** The gateway's metrics on this process's registry, declared on first use. */
export function gatewayMetrics(): GatewayMetrics {
  return (declared ??= declare(processMetrics));
}

/** The verbs the original reports; any other is `other`. */
const VALID_VERBS = new Set(['APPLY', 'CONNECT', 'CREATE', 'DELETE', 'DELETECOLLECTION', 'GET', 'LIST', 'PATCH', 'POST', 'PROXY', 'PUT', 'UPDATE', 'WATCH', 'WATCHLIST']);

/** Subresources served as streams over an upgraded or long-held connection: reported as CONNECT. */
/** Request info verbs → the HTTP-flavoured verb the original's routes are instrumented with. */
const RESOURCE_VERBS: Record<string, string> = {
  get: 'GET',
  list: 'LIST',
  watch: 'WATCH',
  create: 'POST',
  update: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  deletecollection: 'DELETECOLLECTION',
};

const APPLY_PATCH_TYPES = new Set(['application/apply-patch+yaml', 'application/apply-patch+cbor']);

/**
 * The verb label as the original reports it: GET of one object, LIST of a
 * collection, WATCH (a `watch=true` list or the legacy `/watch/` path), POST
 * for creates, PUT for updates, APPLY for a server-side apply patch, CONNECT
 * for streaming subresources, the upper-case HTTP method for non-resource
 * requests; anything else `other`.
 */
export function reportedVerb(info: Pick<RequestInfo, 'isResourceRequest' | 'verb' | 'subresource'>, method: string, contentType: string | undefined): string {
  let verb: string;
  if (!info.isResourceRequest) verb = method === 'HEAD' ? 'GET' : method;
  else if (CONNECT_SUBRESOURCES.has(info.subresource)) verb = 'CONNECT';
  else if (info.verb === 'patch' && contentType !== undefined && APPLY_PATCH_TYPES.has(mediaTypeOf(contentType))) verb = 'APPLY';
  else verb = RESOURCE_VERBS[info.verb] ?? method;
  return VALID_VERBS.has(verb) ? verb : 'other';
}

function mediaTypeOf(contentType: string): string {
  const semi = contentType.indexOf(';');
  return (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
}

/** The scope label: `resource` for one named object (or a create), `namespace`, `cluster`, or empty for non-resource requests. */
export function reportedScope(info: Pick<RequestInfo, 'isResourceRequest' | 'verb' | 'name' | 'namespace'>): string {
  if (!info.isResourceRequest) return '';
  if (info.name !== '' || info.verb === 'create') return 'resource';
  if (info.namespace !== '') return 'namespace';
  return 'cluster';
}

/** The dry_run label: the sorted distinct `dryRun` values (`All`), or `invalid` for anything else, as the original reports it. */
export function reportedDryRun(values: readonly string[]): string {
  if (values.length === 0) return '';
  for (const v of values) if (v !== 'All') return 'invalid';
  return 'All';
}

/** Read-only requests (get, list, watch, non-resource GETs) and the rest, as the in-flight limit tells them apart. */
export function requestKind(info: Pick<RequestInfo, 'isResourceRequest' | 'verb'>, method: string): RequestKind {
  if (!info.isResourceRequest) return method === 'GET' || method === 'HEAD' ? 'readOnly' : 'mutating';
  return info.verb === 'get' || info.verb === 'list' || info.verb === 'watch' ? 'readOnly' : 'mutating';
}

/** One watch's metrics, bound to its resource once: an event costs an increment and an observation. */
export interface WatchRecorder {
  /** An event of this many bytes was sent. */
  sent(bytes: number): void;
  /** The watch ended (called once; later calls do nothing). */
  end(): void;
}

/** Registers a watcher of a resource (`apiserver_registered_watchers`) and records the events it is sent. */
export function startWatchRecorder(def: { group: string; version: string; plural: string }): WatchRecorder {
  const m = gatewayMetrics();
  const watchers = m.registeredWatchers.labels(def.group, def.version, def.plural);
  const events = m.watchEvents.labels(def.group, def.version, def.plural);
  const sizes = m.watchEventSizes.labels(def.group, def.version, def.plural);
  watchers.inc();
  let ended = false;
  return {
    sent(bytes) {
      events.inc();
      sizes.observe(bytes);
    },
    end() {
      if (ended) return;
      ended = true;
      watchers.dec();
    },
  };
}

/** Children bound once, for the per-request cache and authentication records below. */
let bound: ReturnType<typeof bindAuthMetrics> | undefined;

function bindAuthMetrics() {
  const m = gatewayMetrics();
  return {
    authnCache: { hit: m.authenticationCache.labels('hit'), miss: m.authenticationCache.labels('miss') },
    authzCache: { hit: m.authorizationCache.labels('hit'), miss: m.authorizationCache.labels('miss') },
    authnDuration: { success: m.authenticationDuration.labels('success'), failure: m.authenticationDuration.labels('failure') },
  };
}

/** A lookup of the gateway's authentication cache (requests with credentials). */
export function recordAuthenticationCache(hit: boolean): void {
  const b = (bound ??= bindAuthMetrics());
  (hit ? b.authnCache.hit : b.authnCache.miss).inc();
}

/** An authentication asked of authn (not answered from the cache), which started at `started` (performance.now()). */
export function recordAuthenticationDuration(authenticated: boolean, started: number): void {
  const b = (bound ??= bindAuthMetrics());
  (authenticated ? b.authnDuration.success : b.authnDuration.failure).observe((performance.now() - started) / 1000);
}

/** A lookup of the gateway's authorization decision cache. */
export function recordAuthorizationCache(hit: boolean): void {
  const b = (bound ??= bindAuthMetrics());
  (hit ? b.authzCache.hit : b.authzCache.miss).inc();
}
