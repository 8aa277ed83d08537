import { authz } from '@svc/proto';
import { createLogger, fromProtoUser, startGrpcServer, unary, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { StorageClient } from '@svc/storage/client';
import { WatchFanoutClient } from '@svc/watch-fanout/client';
import { chain, type Authorizer, type Decision, type Mode } from './authorizer';
import { PolicyFeed } from './policy-feed';
import { RbacPolicy } from './rbac';

/** Who may call this service (the identities of the internal certificates). */
const ALLOWED_CALLERS = ['gateway'];

export interface AuthzConfig {
  listen: string;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  modes: Mode[];
  /** The storage service and watch-fanout, where RBAC reads its policy (required with the RBAC mode). */
  storageAddress?: string;
  watchFanoutAddress?: string;
  /** How often RBAC looks for policy changes. */
  policyPollMs?: number;
  logger?: Logger;
}

export interface AuthzHandle {
  address: string;
  port: number;
  close(): Promise<void>;
}

const DECISION: Record<Decision, authz.Decision> = {
  allow: authz.Decision.DECISION_ALLOW,
  deny: authz.Decision.DECISION_DENY,
  'no-opinion': authz.Decision.DECISION_NO_OPINION,
};

/** Starts the authorization service. */
export async function start(config: AuthzConfig): Promise<AuthzHandle> {
  const log = config.logger ?? createLogger('authz');
  const tls = loadInternalTls(config.internalTls);
  let feed: PolicyFeed | undefined;
  let storage: StorageClient | undefined;
  let fanout: WatchFanoutClient | undefined;
  const stateful: { RBAC?: Authorizer } = {};
  if (config.modes.includes('RBAC')) {
    if (!config.storageAddress || !config.watchFanoutAddress) throw new Error('the RBAC mode needs --storage-address and --watch-fanout-address');
    storage = new StorageClient(config.storageAddress, tls);
    fanout = new WatchFanoutClient(config.watchFanoutAddress, tls);
    const policy = new RbacPolicy();
    const rbacFeed = new PolicyFeed(policy, storage, fanout, { log, ...(config.policyPollMs !== undefined ? { pollMs: config.policyPollMs } : {}) });
    feed = rbacFeed;
    stateful.RBAC = (attrs) => (rbacFeed.ready ? policy.authorize(attrs) : { decision: 'no-opinion', reason: 'RBAC: the policy is not loaded yet' });
    rbacFeed.start();
  }
  const authorize = chain(config.modes, stateful);
  const implementation: authz.AuthzServer = {
    authorize: unary(log, 'Authorize', async (req: authz.AuthorizeRequest): Promise<authz.AuthorizeResponse> => {
      const d = await authorize({
        user: fromProtoUser(req.user),
        resourceRequest: req.resourceRequest,
        verb: req.verb,
        path: req.path,
        apiGroup: req.apiGroup,
        apiVersion: req.apiVersion,
        resource: req.resource,
        subresource: req.subresource,
        namespace: req.namespace,
        name: req.name,
      });
      return { decision: DECISION[d.decision], reason: d.reason, evaluationError: '' };
    }),
  };
  const server = await startGrpcServer(config.listen, [{ definition: authz.AuthzService, implementation }], { security: { tls, allowedCallers: ALLOWED_CALLERS, log } });
  log.info('authz listening', { address: server.address, modes: config.modes });
  return {
    address: server.address,
    port: server.port,
    close: async () => {
      await server.close();
      await feed?.stop();
      storage?.close();
      fanout?.close();
    },
  };
}
