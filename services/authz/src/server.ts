import { authz } from '@svc/proto';
import { createLogger, fromProtoUser, startGrpcServer, unary, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { chain, type Decision, type Mode } from './authorizer';

/** Who may call this service (the identities of the internal certificates). */
const ALLOWED_CALLERS = ['gateway'];

export interface AuthzConfig {
  listen: string;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  modes: Mode[];
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
  const authorize = chain(config.modes);
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
  return { address: server.address, port: server.port, close: () => server.close() };
}
