import { ApiError } from '@svc/apimachinery';
import type { Attributes, AuthorizerDecision } from '@svc/authz/client';
import { TtlCache } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { addAuditAnnotation, requestIdFrom, requestInfoFrom, userFrom, withAuthorizationState, type RequestAuthorization } from '../context';
import type { Handler } from './chain';
import { recordAuthorizationCache } from '../apiserver-metrics';
import type { RequestInfo } from '../request-info';

/** Asks authz about `attrs`; the answer for the same attributes is reused for a while. */
export type AuthorizeFn = (attrs: Attributes, requestId: string) => Promise<AuthorizerDecision>;

/**
 * Decisions are reused for the same user and attributes for a short while
 * (`--authorization-cache-ttl-seconds`), as the original server caches
 * webhook authorizer decisions.
 */
export function cachedAuthorizer(deps: GatewayDeps): AuthorizeFn {
  const cache = new TtlCache<AuthorizerDecision>(deps.limits.authzCacheTtlMs);
  // Requests with the same attributes that arrive while authz is asked wait
  // for that one answer (an entry expiring under load would otherwise send
  // every request in flight to authz), as authentication does; the answer is
  // no older than a cached one could be. Nothing is shared without a cache.
  const inflight = new Map<string, Promise<AuthorizerDecision>>();
  return async (attrs, requestId) => {
    if (!cache.enabled) return deps.authz.authorize(attrs, { requestId, timeoutMs: deps.limits.backendTimeoutMs });
    const key = JSON.stringify(attrs);
    const cached = cache.get(key);
    recordAuthorizationCache(cached !== undefined);
    if (cached) return cached;
    let pending = inflight.get(key);
    if (!pending) {
      const asked = deps.authz.authorize(attrs, { requestId, timeoutMs: deps.limits.backendTimeoutMs }).then((decision) => {
        cache.set(key, decision);
        return decision;
      });
      pending = asked;
      inflight.set(key, asked);
      void asked.then(
        () => inflight.delete(key),
        () => inflight.delete(key),
      );
    }
    return pending;
  };
}

/** The 403 the original server answers when no authorizer allows `attrs`. */
export function forbiddenFor(attrs: Attributes, decision: AuthorizerDecision): ApiError {
  const reason = decision.reason ? `: ${decision.reason}` : '';
  if (!attrs.resourceRequest) {
    return ApiError.forbidden(undefined, '', `User "${attrs.user.username}" cannot ${attrs.verb} path "${attrs.path}"${reason}`);
  }
  const resource = attrs.subresource ? `${attrs.resource}/${attrs.subresource}` : attrs.resource;
  const scope = attrs.namespace ? ` in the namespace "${attrs.namespace}"` : attrs.name || attrs.verb === 'create' ? '' : ' at the cluster scope';
  return ApiError.forbidden(
    { group: attrs.apiGroup, resource: attrs.resource },
    attrs.name,
    `User "${attrs.user.username}" cannot ${attrs.verb} resource "${resource}" in API group "${attrs.apiGroup}"${scope}${reason}`,
  );
}

/**
 * The object a list or watch is limited to by a `metadata.name=<x>` (or
 * `==`) term of its field selector, as the original server reads it: rules
 * with resourceNames then apply to that list or watch.
 */
export function selectedName(info: Pick<RequestInfo, 'verb' | 'name' | 'query'>): string {
  if (info.name !== '' || (info.verb !== 'list' && info.verb !== 'watch')) return info.name;
  const selector = info.query.get('fieldSelector') ?? '';
  for (const term of selector.split(',')) {
    const m = /^\s*metadata\.name\s*==?\s*(.+?)\s*$/.exec(term);
    if (m && !term.includes('!=')) return m[1] as string;
  }
  return '';
}

/**
 * The selectors of a list, watch or deletecollection, from the query parsed
 * once with the request info; authz reads them (the Node mode allows a node
 * to list pods only with `spec.nodeName=<node>`). They are part of the
 * attributes, and so of the decision cache's key.
 */
export function selectorsOf(info: Pick<RequestInfo, 'verb' | 'query'>): Pick<Attributes, 'labelSelector' | 'fieldSelector'> {
  if (info.verb !== 'list' && info.verb !== 'watch' && info.verb !== 'deletecollection') return {};
  const labelSelector = info.query.get('labelSelector') ?? '';
  const fieldSelector = info.query.get('fieldSelector') ?? '';
  return { ...(labelSelector ? { labelSelector } : {}), ...(fieldSelector ? { fieldSelector } : {}) };
}

export const DECISION_ANNOTATION = 'authorization.svc.io/decision';
export const REASON_ANNOTATION = 'authorization.svc.io/reason';

/** Asks authz whether the user may do what the request info says; 403 otherwise. */
export function withAuthorization(handler: Handler, authorize: AuthorizeFn): Handler {
  return async (req, res) => {
    const info = requestInfoFrom(req);
    const attrs: Attributes = {
      user: userFrom(req),
      resourceRequest: info.isResourceRequest,
      verb: info.verb,
      path: info.path,
      apiGroup: info.apiGroup,
      apiVersion: info.apiVersion,
      resource: info.resource,
      subresource: info.subresource,
      namespace: info.namespace,
      name: selectedName(info),
      ...selectorsOf(info),
    };
    const requestId = requestIdFrom(req);
    const decision = await authorize(attrs, requestId);
    // The audit event's annotations, as the original's authorization filter adds them.
    addAuditAnnotation(req, DECISION_ANNOTATION, decision.decision === 'allow' ? 'allow' : 'forbid');
    if (decision.reason) addAuditAnnotation(req, REASON_ANNOTATION, decision.reason);
    if (decision.decision !== 'allow') throw forbiddenFor(attrs, decision);
    withAuthorizationState(req, { attributes: attrs, authorize: (other) => authorize(other, requestId) });
    await handler(req, res);
  };
}

/**
 * Asks whether the request may create what its attributes name: an update or
 * patch that turns out to create (PUT of a kind that allows create on update,
 * server-side apply of a missing object) needs `create` as well as its own
 * verb, as the original server authorizes such a write a second time. A
 * request already authorized as `create` is not asked again.
 */
export async function authorizeAsCreate(authorization: RequestAuthorization): Promise<void> {
  if (authorization.attributes.verb === 'create') return;
  const attrs: Attributes = { ...authorization.attributes, verb: 'create' };
  const decision = await authorization.authorize(attrs);
  if (decision.decision !== 'allow') throw forbiddenFor(attrs, decision);
}
