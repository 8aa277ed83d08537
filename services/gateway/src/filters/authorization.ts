import { ApiError } from '@svc/apimachinery';
import type { Attributes, AuthorizerDecision } from '@svc/authz/client';
import { TtlCache } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { requestIdFrom, requestInfoFrom, userFrom } from '../context';
import type { Handler } from './chain';

/**
 * Asks authz whether the user may do what the request info says; 403
 * otherwise. Decisions are reused for the same user and attributes for a
 * short while (`--authorization-cache-ttl-seconds`), as the original server
 * caches webhook authorizer decisions.
 */
export function withAuthorization(handler: Handler, deps: GatewayDeps): Handler {
  const cache = new TtlCache<AuthorizerDecision>(deps.limits.authzCacheTtlMs);
  return async (req, res) => {
    const info = requestInfoFrom(req);
    const user = userFrom(req);
    const attrs: Attributes = {
      user,
      resourceRequest: info.isResourceRequest,
      verb: info.verb,
      path: info.path,
      apiGroup: info.apiGroup,
      apiVersion: info.apiVersion,
      resource: info.resource,
      subresource: info.subresource,
      namespace: info.namespace,
      name: info.name,
    };
    const key = cache.enabled ? JSON.stringify(attrs) : '';
    let decision = cache.get(key);
    if (!decision) {
      decision = await deps.authz.authorize(attrs, { requestId: requestIdFrom(req), timeoutMs: deps.limits.backendTimeoutMs });
      cache.set(key, decision);
    }
    if (decision.decision === 'allow') {
      await handler(req, res);
      return;
    }
    const reason = decision.reason ? `: ${decision.reason}` : '';
    if (!info.isResourceRequest) {
      throw ApiError.forbidden(undefined, '', `User "${user.username}" cannot ${info.verb} path "${info.path}"${reason}`);
    }
    const resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
    const scope = info.namespace ? ` in the namespace "${info.namespace}"` : info.name || info.verb === 'create' ? '' : ' at the cluster scope';
    throw ApiError.forbidden(
      { group: info.apiGroup, resource: info.resource },
      info.name,
      `User "${user.username}" cannot ${info.verb} resource "${resource}" in API group "${info.apiGroup}"${scope}${reason}`,
    );
  };
}
