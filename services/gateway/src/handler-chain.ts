import type { GatewayDeps } from './backends';
import type { Handler } from './filters/chain';
import { withAuthentication } from './filters/authentication';
import { withAuthorization } from './filters/authorization';
import { withPanicRecovery } from './filters/panic-recovery';
import { withRequestInfoFilter } from './filters/request-info';
import { buildRouter } from './router';

/**
 * The filter chain, assembled in one place. Read bottom-up for the order a
 * request passes through: panic recovery (request id, logging, every error a
 * Status) → request info → [public paths skip to the router] →
 * authentication (401) → authorization (403) → router → verb handler.
 */
export function buildHandlerChain(deps: GatewayDeps): Handler {
  const router = buildRouter(deps);
  let handler: Handler = router;
  handler = withAuthorization(handler, deps);
  handler = withAuthentication(handler, deps);
  handler = withPublicPaths(handler, router, deps.alwaysAllowPaths);
  handler = withRequestInfoFilter(handler);
  handler = withPanicRecovery(handler, deps.log);
  return handler;
}

/** Health probes are answered without credentials (the original server's always-allow paths). */
function withPublicPaths(protectedHandler: Handler, router: Handler, paths: string[]): Handler {
  const matches = (path: string): boolean => paths.some((p) => path === p || (p.endsWith('/*') ? path.startsWith(p.slice(0, -1)) : path.startsWith(`${p}/`)));
  return async (req, res) => {
    if (matches(req.path)) await router(req, res);
    else await protectedHandler(req, res);
  };
}
