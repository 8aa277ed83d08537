import { withAudit, withAuditBegin } from './audit/filter';
import type { GatewayDeps } from './backends';
import { withCompression } from './compression';
import type { Handler } from './filters/chain';
import { withAuthentication } from './filters/authentication';
import { cachedAuthorizer, withAuthorization } from './filters/authorization';
import { refuseImpersonation, withImpersonation } from './filters/impersonation';
import { withPanicRecovery } from './filters/panic-recovery';
import { withRequestDeadline } from './filters/request-deadline';
import { withRequestInfoFilter } from './filters/request-info';
import { countedAuthorizer, withMetricsEndpoint, withRequestMetrics } from './filters/metrics';
import { withTracing } from './filters/tracing';
import { requestInfoFrom } from './context';
import { parseRequestPath } from './request-info';
import { buildRouter } from './router';

/**
 * The filter chain, assembled in one place. Read bottom-up for the order a
 * request passes through: panic recovery (request id, logging, every error a
 * Status) → tracing (the server span, when tracing is on) → request info
 * (a path that does not parse is refused here, 400 or 404; so is a `timeout`
 * parameter that is not a duration) → response compression (gzip past
 * 128 KiB, never a watch) → request deadline (504 Timeout when it passes
 * before the answer; not for long-running requests) →
 * audit (when configured) → [public paths skip to the router] →
 * authentication (401) → audit policy decided for the requester →
 * impersonation (the requester must be allowed to impersonate; 403) →
 * priority and fairness (429 when the request's level can neither run nor
 * queue it) → authorization of the resulting identity (403) → router → verb handler.
 */
export function buildHandlerChain(deps: GatewayDeps): Handler {
  // /metrics and the flow control dumps are served behind authorization, as any non-resource URL.
  const served = withMetricsEndpoint(buildRouter(deps));
  const router = deps.flowControl ? deps.flowControl.debug(served) : served;
  let handler: Handler = router;
  const authorize = countedAuthorizer(cachedAuthorizer(deps));
  handler = withAuthorization(handler, authorize);
  // Priority and fairness (or the max-in-flight limit) classifies the identity impersonation settled on, before authorization, as in the original.
  if (deps.flowControl) handler = deps.flowControl.filter(handler);
  // Impersonation changes who the request is authorized as, so it runs
  // after authentication and before authorization, as in the original.
  handler = withImpersonation(handler, authorize);
  // The audit policy is asked about the authenticated requester, before impersonation and authorization (403s are audited).
  handler = withAuditBegin(handler, deps.audit);
  handler = withAuthentication(handler, deps);
  // Public paths skip authentication, so there is nobody whose impersonation could be allowed.
  handler = withPublicPaths(handler, refuseImpersonation(router), deps.alwaysAllowPaths);
  // Audits every request, those refused with 401 and the public paths too; inside compression, so it sees the body as written.
  handler = withAudit(handler, deps.audit);
  // Knows the verb (a watch is never compressed); wraps every answer below it, Statuses included.
  // Outside authentication, audit and priority and fairness, as in the original: the deadline covers them all.
  // Inside compression, so it sees the handler's first write (which compression may hold back).
  handler = withRequestDeadline(handler, deps.limits.requestTimeoutMs);
  handler = withCompression(handler);
  // Every request that parsed is counted and timed (apiserver_request_total...), refusals below included.
  handler = withRequestMetrics(handler, deps.registry, deps.storage);
  handler = withRequestInfoFilter(handler);
  handler = withTracing(handler);
  handler = withPanicRecovery(handler, deps.log, deps.limits.maxBodyBytes);
  return handler;
}

/**
 * Health probes are answered without credentials (the original server's
 * always-allow paths). Matching is on the parsed segments of the request
 * info, the same ones the router dispatches on: a path that could mean
 * something else (`/healthz/../api/...`) was already refused when it was
 * parsed, and a resource request never matches.
 */
function withPublicPaths(protectedHandler: Handler, router: Handler, paths: string[]): Handler {
  // `/p` matches `/p` and below it; `/p/*` only below it.
  const patterns = paths.map((p) => ({ prefix: parseRequestPath(p.endsWith('/*') ? p.slice(0, -2) : p), below: p.endsWith('/*') }));
  const matches = (segments: string[]): boolean =>
    patterns.some(({ prefix, below }) => (below ? prefix.length < segments.length : prefix.length <= segments.length) && prefix.every((s, i) => segments[i] === s));
  return async (req, res) => {
    const info = requestInfoFrom(req);
    if (!info.isResourceRequest && matches(info.segments)) await router(req, res);
    else await protectedHandler(req, res);
  };
}
