import { ApiError } from '@svc/apimachinery';
import type { GatewayDeps } from '../backends';
import { requestIdFrom, requestInfoFrom, userFrom } from '../context';
import type { Handler } from './chain';

/** Asks authz whether the user may do what the request info says; 403 otherwise. */
export function withAuthorization(handler: Handler, deps: GatewayDeps): Handler {
  return async (req, res) => {
    const info = requestInfoFrom(req);
    const user = userFrom(req);
    const decision = await deps.authz.authorize(
      {
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
      },
      { requestId: requestIdFrom(req), timeoutMs: deps.limits.backendTimeoutMs },
    );
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
