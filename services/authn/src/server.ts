import * as fs from 'node:fs';
import { authn } from '@svc/proto';
import { createLogger, startGrpcServer, toProtoUser, unary, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { createAuthenticator } from './authenticator';
import type { RequestAuthenticator, TokenAuthenticator } from './methods';
import { parseTokenFile, tokenFileAuthenticator } from './token-file';
import { clientCertificateAuthenticator, parseCaBundle } from './x509';

/** Who may call this service (the identities of the internal certificates). */
const ALLOWED_CALLERS = ['gateway'];

export interface AuthnConfig {
  listen: string;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  /** PEM bundle of CAs that sign client certificates. */
  clientCaFile?: string;
  /** CSV static token file. */
  tokenAuthFile?: string;
  anonymousAuth: boolean;
  /** The audiences of this server (`--api-audiences`); tokens for none of them are refused. */
  apiAudiences?: string[];
  logger?: Logger;
}

export interface AuthnHandle {
  address: string;
  port: number;
  close(): Promise<void>;
}

/** Starts the authentication service. */
export async function start(config: AuthnConfig): Promise<AuthnHandle> {
  const log = config.logger ?? createLogger('authn');
  const tls = loadInternalTls(config.internalTls);
  const requestAuthenticators: RequestAuthenticator[] = [
    clientCertificateAuthenticator(config.clientCaFile ? parseCaBundle(fs.readFileSync(config.clientCaFile, 'utf8')) : []),
  ];
  const tokenAuthenticators: TokenAuthenticator[] = [];
  if (config.tokenAuthFile) tokenAuthenticators.push(tokenFileAuthenticator(parseTokenFile(fs.readFileSync(config.tokenAuthFile, 'utf8'))));
  const authenticate = createAuthenticator({ requestAuthenticators, tokenAuthenticators, anonymous: config.anonymousAuth, apiAudiences: config.apiAudiences ?? [] });
  const implementation: authn.AuthnServer = {
    authenticate: unary(log, 'Authenticate', async (req: authn.AuthenticateRequest): Promise<authn.AuthenticateResponse> => {
      const headers: Record<string, string[]> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = v.values;
      const result = await authenticate({ clientCertificateChain: req.clientCertificateChain, headers, path: req.path }, req.audiences);
      if (!result.authenticated) return { authenticated: false, user: undefined, error: result.error, audiences: [], method: '' };
      return { authenticated: true, user: toProtoUser(result.user), error: '', audiences: result.audiences, method: result.method };
    }),
  };
  const server = await startGrpcServer(config.listen, [{ definition: authn.AuthnService, implementation }], { security: { tls, allowedCallers: ALLOWED_CALLERS, log } });
  log.info('authn listening', { address: server.address });
  return { address: server.address, port: server.port, close: () => server.close() };
}
