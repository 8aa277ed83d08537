import { ApiError, SYSTEM_NAMESPACES, type ResourceDefinition, type UserInfo } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { createObject } from './store';
import type { WriteContext } from './write-context';

/** Who the gateway writes its own objects as: the server itself, as the original's loopback client. */
export const SERVER_USER: UserInfo = { username: 'system:apiserver', uid: '', groups: ['system:masters'], extra: {} };

/** A write the server makes on its own behalf: no request, no field validation warnings to return. */
export function systemWriteContext(deps: GatewayDeps, def: ResourceDefinition, requestId = 'system-namespaces', namespace = ''): WriteContext {
  return {
    deps,
    def,
    user: SERVER_USER,
    requestId,
    namespace,
    subresource: '',
    dryRun: false,
    fieldValidation: 'Strict',
    fieldManager: 'svc-apiserver',
    authorizeCreate: async () => undefined,
    warn: () => undefined,
  };
}

/** The longest wait between two tries while the backends are not reachable. */
const MAX_RETRY_MS = 5000;

/**
 * Creates the namespaces that exist from the start, through the store, so
 * the Namespace kind's own strategy (finalizer, name label, phase) and
 * admission apply as to any namespace. Retried while the backends are not
 * reachable yet, waiting `retryMs` and twice as long each time up to 5 s (so
 * a backend that is slow to come up does not fill the log); an existing
 * namespace is left as it is.
 */
export async function ensureSystemNamespaces(deps: GatewayDeps, log: Logger, retryMs = 500): Promise<void> {
  const def = deps.registry.lookup('', 'v1', 'namespaces');
  if (!def) throw new Error('the Namespace kind is not registered');
  let waitMs = retryMs;
  for (const name of SYSTEM_NAMESPACES) {
    for (;;) {
      try {
        await createObject(systemWriteContext(deps, def), { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
        break;
      } catch (err) {
        if (err instanceof ApiError && err.reason === 'AlreadyExists') break;
        if (err instanceof ApiError && err.code < 500) {
          log.error('system namespace refused', { namespace: name, code: err.code, reason: err.reason, err: err.message });
          break;
        }
        log.warn('waiting for the backends to create system namespaces', { namespace: name, retryInMs: waitMs, err: (err as Error).message });
        await new Promise((resolve) => setTimeout(resolve, waitMs));
        waitMs = Math.min(waitMs * 2, MAX_RETRY_MS);
      }
    }
  }
}
