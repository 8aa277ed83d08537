import type { Response } from 'express';
import { ApiError, type ResourceRegistry, type UserInfo } from '@svc/apimachinery';
import { processMetrics } from '@svc/service-kit';
import { currentUserFrom, requestInfoFrom } from '../context';
import { enterInflight, gatewayMetrics, reportedDryRun, reportedScope, reportedVerb, requestKind, type GatewayMetrics } from '../apiserver-metrics';
import { CachedStorage } from '../cache/cached-storage';
import type { ObjectStorage } from '../registry/storage-interface';
import type { AuthorizeFn } from './authorization';
import type { Handler } from './chain';
import { isLongRunning, type RequestInfo } from '../request-info';

/**
 * Records every request that parsed (the request-info filter refuses the
 * rest before anything is known about them) once its answer is sent:
 * `apiserver_request_total`, the duration and response-size histograms,
 * in-flight and long-running gauges, the deprecated APIs requested, and
 * the authentication outcome. Labels are bound once per combination, so a
 * request costs a map lookup and a few increments.
 */

const COMPONENT = 'apiserver';

/** The storage whose watch cache `apiserver_storage_objects` reports (the chain built last). */
let storageSource: ObjectStorage | undefined;

/** Label combinations remembered; past this the children are dropped and bound again (the metrics keep their values). */
const MAX_BOUND_COMBINATIONS = 10_000;

interface Bound {
  requests: { inc(): void };
  duration: { observe(v: number): void };
  sizes: { observe(v: number): void } | undefined;
}

/** Internal identities whose names are reported as they are; others collapse, as the original keeps this label bounded. */
const NAMED_USERS = new Set(['admin', 'client', 'kube_proxy', 'kubelet', 'system:serviceaccount:kube-system:default']);

export function compressUsername(username: string): string {
  if (NAMED_USERS.has(username)) return username;
  return username.includes('@') ? 'email_id' : 'other';
}

export interface ResourceLabels {
  group: string;
  version: string;
  resource: string;
  subresource: string;
  /** The version is deprecated (requests to it set apiserver_requested_deprecated_apis). */
  deprecated: boolean;
}

/**
 * The group, version, resource and subresource labels of a request, kept
 * bounded: a resource the registry does not serve (or a subresource it
 * does not have) is not named, and a non-resource path is named only when
 * it was found (not 404).
 */
export function resourceLabels(info: RequestInfo, registry: ResourceRegistry, code: number): ResourceLabels {
  let group = '';
  let version = '';
  let resource = '';
  let subresource = '';
  let deprecated = false;
  if (info.isResourceRequest) {
    const def = registry.lookup(info.apiGroup, info.apiVersion, info.resource);
    // A resource nobody serves is not named: the label stays bounded by what the registry holds.
    if (def) {
      group = info.apiGroup;
      version = info.apiVersion;
      resource = info.resource;
      if (info.subresource && def.subresources.some((s) => s.name === info.subresource)) subresource = info.subresource;
      deprecated = def.deprecationWarning !== undefined;
    }
  } else if (code !== 404) {
    // Non-resource paths are reported in the subresource label, as the original does; only paths that exist.
    subresource = info.path;
  }
  return { group, version, resource, subresource, deprecated };
}

/**
 * `apiserver_storage_objects` from the watch cache: the objects each ready
 * cache holds, read at scrape time (no request to storage; resources no
 * cache follows yet are not reported).
 */
function countStoredObjects(m: GatewayMetrics, storage: ObjectStorage): void {
  if (!(storage instanceof CachedStorage)) return;
  m.storageObjects.reset();
  for (const [resource, count] of storage.objectCounts()) m.storageObjects.labels(resource).set(count);
}

export function withRequestMetrics(handler: Handler, registry: ResourceRegistry, storage: ObjectStorage): Handler {
  const m = gatewayMetrics();
  processMetrics.collectDefaultMetrics();
  storageSource = storage;
  const bound = new Map<string, Bound>();
  const bind = (key: string, verb: string, dryRun: string, l: ResourceLabels, scope: string, code: string): Bound => {
    let b = bound.get(key);
    if (!b) {
      if (bound.size >= MAX_BOUND_COMBINATIONS) bound.clear();
      b = {
        requests: m.requests.labels(verb, dryRun, l.group, l.version, l.resource, l.subresource, scope, COMPONENT, code),
        duration: m.duration.labels(verb, dryRun, l.group, l.version, l.resource, l.subresource, scope, COMPONENT),
        // Only reads' response sizes are of interest, as the original records them.
        sizes: verb === 'GET' || verb === 'LIST' ? m.responseSizes.labels(verb, l.group, l.version, l.resource, l.subresource, scope, COMPONENT) : undefined,
      };
      bound.set(key, b);
    }
    return b;
  };

  return async (req, res) => {
    const started = performance.now();
    const info = requestInfoFrom(req);
    const longRunning = isLongRunning(info);
    const kind = requestKind(info, req.method);
    let release: () => void;
    if (longRunning) {
      const l = resourceLabels(info, registry, 200);
      const gauge = m.longRunning.labels(reportedVerb(info, req.method, undefined), l.group, l.version, l.resource, l.subresource, reportedScope(info), COMPONENT);
      gauge.inc();
      release = () => gauge.dec();
    } else {
      release = enterInflight(kind);
    }
    const counted = { bytes: 0 };
    // A watch's events are not a response size (the original records sizes of GET and LIST only).
    if (req.method === 'GET' && !longRunning) countWrittenBytes(res, counted);
    let done = false;
    const finish = (): void => {
      if (done) return;
      done = true;
      release();
      const code = res.statusCode;
      const l = resourceLabels(info, registry, code);
      const verb = reportedVerb(info, req.method, req.headers['content-type']);
      const dryRun = reportedDryRun(info.query.getAll('dryRun'));
      const scope = reportedScope(info);
      const codeText = String(code);
      const key = `${verb}\u0000${dryRun}\u0000${l.group}\u0000${l.version}\u0000${l.resource}\u0000${l.subresource}\u0000${scope}\u0000${codeText}`;
      const b = bind(key, verb, dryRun, l, scope, codeText);
      b.requests.inc();
      // A watch lasts as long as the client keeps it; its duration is not a latency.
      if (!longRunning) b.duration.observe((performance.now() - started) / 1000);
      if (b.sizes) {
        const length = Number(res.getHeader('content-length'));
        b.sizes.observe(Number.isFinite(length) && length > 0 ? length : counted.bytes);
      }
      if (l.deprecated) m.deprecatedApis.labels(l.group, l.version, l.resource, l.subresource, '').set(1);
      recordAuthentication(m, currentUserFrom(req), code);
    };
    res.once('finish', finish);
    res.once('close', finish);
    await handler(req, res);
  };
}

/** Children bound once: the attempts by result, and requests by the few user names reported. */
let attempts: { success: { inc(): void }; failure: { inc(): void }; byUser: Map<string, { inc(): void }> } | undefined;

function recordAuthentication(m: GatewayMetrics, user: UserInfo | undefined, code: number): void {
  attempts ??= { success: m.authenticationAttempts.labels('success'), failure: m.authenticationAttempts.labels('failure'), byUser: new Map() };
  if (user) {
    attempts.success.inc();
    const name = compressUsername(user.username);
    let byUser = attempts.byUser.get(name);
    if (!byUser) {
      byUser = m.authenticatedUserRequests.labels(name);
      attempts.byUser.set(name, byUser);
    }
    byUser.inc();
  } else if (code === 401) {
    attempts.failure.inc();
  }
}

/** Counts the bytes of a response written without a Content-Length (a streamed list). */
function countWrittenBytes(res: Response, counted: { bytes: number }): void {
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  const add = (chunk: unknown): void => {
    if (typeof chunk === 'string') counted.bytes += Buffer.byteLength(chunk);
    else if (chunk instanceof Uint8Array) counted.bytes += chunk.length;
  };
  res.write = ((...args: unknown[]) => {
    add(args[0]);
    return write(...args);
  }) as Response['write'];
  res.end = ((...args: unknown[]) => {
    if (typeof args[0] !== 'function') add(args[0]);
    return end(...args);
  }) as Response['end'];
}

/** The authorizer, counting its decisions (`apiserver_authorization_decisions_total`). */
export function countedAuthorizer(authorize: AuthorizeFn): AuthorizeFn {
  const m = gatewayMetrics();
  const allowed = m.authorizationDecisions.labels('Service', 'authz', 'allowed');
  const denied = m.authorizationDecisions.labels('Service', 'authz', 'denied');
  return async (attrs, requestId) => {
    const decision = await authorize(attrs, requestId);
    (decision.decision === 'allow' ? allowed : denied).inc();
    return decision;
  };
}

/**
 * `GET /metrics`: this process's metrics, in Prometheus text or, when the
 * Accept header asks for it, OpenMetrics. Placed after authorization, so it
 * is allowed like any non-resource URL (`system:monitoring` may).
 */
export function withMetricsEndpoint(next: Handler): Handler {
  return async (req, res) => {
    const info = requestInfoFrom(req);
    if (info.isResourceRequest || info.segments.length !== 1 || info.segments[0] !== 'metrics') return next(req, res);
    if (req.method !== 'GET' && req.method !== 'HEAD') throw ApiError.methodNotAllowed(`${req.method} is not allowed on /metrics`);
    if (storageSource) countStoredObjects(gatewayMetrics(), storageSource);
    const { contentType, body } = await processMetrics.render(req.headers.accept);
    res.status(200).setHeader('Content-Type', contentType);
    res.end(req.method === 'HEAD' ? undefined : body);
  };
}
