import * as fs from 'node:fs';
import { ApiError, type ApiObject } from '@svc/apimachinery';
import { authn } from '@svc/proto';
import { createLogger, startGrpcServer, toProtoUser, unary, TtlCache, type Logger, loadInternalTls, type InternalTlsFiles } from '@svc/service-kit';
import { StorageClient } from '@svc/storage/client';
import { bootstrapTokenAuthenticator } from './bootstrap-token';
import { createAuthenticator, createTokenVerifier, type AuthenticationResult } from './authenticator';
import type { RequestAuthenticator, TokenAuthenticator } from './methods';
import type { JwtIssuerSettings } from './jwt-authenticator';
import { JwtMethods } from './jwt-methods';
import { parseSigningKey, parseVerificationKeys, serviceAccountTokens, type ObjectLookup, type ServiceAccountTokens, type TokenKey } from './service-account';
import { loadRequestHeaderCas, requestHeaderAuthenticator } from './request-header';
import { parseTokenFile, tokenFileAuthenticator } from './token-file';
import { tokenWebhookAuthenticator, type TokenReviewVersion } from './token-webhook';
import { clientCertificateAuthenticator, parseCaBundle } from './x509';
import { recordAuthentication } from './authn-metrics';

/** Who may call this service (the identities of the internal certificates). */
const ALLOWED_CALLERS = ['gateway'];

export interface ServiceAccountConfig {
  /** `--service-account-issuer`: the first is written into new tokens; all are accepted. */
  issuers: string[];
  /** `--service-account-key-file`: PEM files of keys that verify tokens (public or private keys). */
  keyFiles: string[];
  /** `--service-account-signing-key-file`: the private key new tokens are signed with. */
  signingKeyFile?: string;
  /** `--service-account-max-token-expiration` in seconds; 0 = no cap. */
  maxTokenExpirationSeconds: number;
  /** `--service-account-lookup`: reject tokens whose account or bound object is gone (needs `storageAddress`). */
  lookup: boolean;
}

export interface RequestHeaderConfig {
  clientCaFile: string;
  allowedNames: string[];
  usernameHeaders: string[];
  uidHeaders: string[];
  groupHeaders: string[];
  extraHeaderPrefixes: string[];
}

export interface TokenWebhookConfig {
  configFile: string;
  cacheTtlMs: number;
  version: TokenReviewVersion;
}

export interface AuthnConfig {
  listen: string;
  /** host:port of the plaintext grpc.health.v1 port; empty or unset: none. */
  healthBindAddress?: string;
  /** This service's internal certificate and the internal CA (mutual TLS on every gRPC edge). */
  internalTls: InternalTlsFiles;
  /** PEM bundle of CAs that sign client certificates. */
  clientCaFile?: string;
  /** CSV static token file. */
  tokenAuthFile?: string;
  anonymousAuth: boolean;
  /** The audiences of this server (`--api-audiences`); defaults to the first service-account issuer. */
  apiAudiences?: string[];
  serviceAccounts?: ServiceAccountConfig;
  /** `--enable-bootstrap-token-auth`: bootstrap-token Secrets in the system namespace authenticate (needs `storageAddress`). */
  enableBootstrapTokenAuth?: boolean;
  /** The OpenID Connect issuer of the `--oidc-*` flags. */
  oidc?: JwtIssuerSettings;
  /** `--authentication-config`: JWT issuers and anonymous settings, reloaded on change. */
  authenticationConfigFile?: string;
  /** Whether `--anonymous-auth` was given explicitly (it may not be combined with the file's `anonymous`). */
  anonymousAuthExplicit?: boolean;
  /** The authenticating proxy (`--requestheader-*`). */
  requestHeader?: RequestHeaderConfig;
  /** The token review webhook (`--authentication-token-webhook-*`). */
  tokenWebhook?: TokenWebhookConfig;
  /** The storage service, for methods that read objects (service-account lookup, bootstrap tokens). */
  storageAddress?: string;
  logger?: Logger;
}

export interface AuthnHandle {
  address: string;
  port: number;
  /** The plaintext health port's host:port, when --health-bind-address asked for one. */
  healthAddress?: string;
  close(): Promise<void>;
}

/**
 * How long an object found by the lookup is taken to still exist. The
 * original server reads them from an informer cache, just as slightly
 * behind; a missing object is always read again.
 */
const LOOKUP_CACHE_MS = 1000;

/** Objects read from storage for the lookup; undefined when missing. */
function storageLookup(storage: StorageClient): ObjectLookup {
  const found = new TtlCache<ApiObject>(LOOKUP_CACHE_MS, 10000);
  return async (resource, namespace, name) => {
    const key = `${resource}/${namespace}/${name}`;
    const cached = found.get(key);
    if (cached) return cached;
    try {
      const object = (await storage.get({ group: '', resource, namespace, name })).object as ApiObject;
      found.set(key, object);
      return object;
    } catch (err) {
      if (err instanceof ApiError && err.code === 404) return undefined;
      throw err;
    }
  };
}

function serviceAccountMethod(config: ServiceAccountConfig, apiAudiences: string[], storage: StorageClient | undefined): ServiceAccountTokens {
  const signingKey = config.signingKeyFile ? parseSigningKey(fs.readFileSync(config.signingKeyFile, 'utf8'), config.signingKeyFile) : undefined;
  const verificationKeys: TokenKey[] = config.keyFiles.flatMap((file) => parseVerificationKeys(fs.readFileSync(file, 'utf8'), file));
  // The signing key's public half always verifies what this server signs.
  if (signingKey && config.keyFiles.length === 0 && config.signingKeyFile) verificationKeys.push(...parseVerificationKeys(fs.readFileSync(config.signingKeyFile, 'utf8'), config.signingKeyFile));
  if (config.lookup && !storage) throw new Error('--service-account-lookup needs --storage-address');
  return serviceAccountTokens({
    issuers: config.issuers,
    apiAudiences,
    ...(signingKey ? { signingKey } : {}),
    verificationKeys,
    maxExpirationSeconds: config.maxTokenExpirationSeconds,
    ...(config.lookup && storage ? { lookup: storageLookup(storage) } : {}),
  });
}

function toResponse(result: AuthenticationResult): authn.AuthenticateResponse {
  if (!result.authenticated) return { authenticated: false, user: undefined, error: result.error, audiences: [], method: '' };
  return { authenticated: true, user: toProtoUser(result.user), error: '', audiences: result.audiences, method: result.method };
}

/** Starts the authentication service. */
export async function start(config: AuthnConfig): Promise<AuthnHandle> {
  const log = config.logger ?? createLogger('authn');
  const tls = loadInternalTls(config.internalTls);
  const storage = config.storageAddress ? new StorageClient(config.storageAddress, tls) : undefined;
  const sa = config.serviceAccounts;
  const apiAudiences = config.apiAudiences && config.apiAudiences.length > 0 ? config.apiAudiences : sa?.issuers.slice(0, 1) ?? [];
  const requestAuthenticators: RequestAuthenticator[] = [];
  // The proxy comes first: its certificate would otherwise be taken for a user's.
  if (config.requestHeader) {
    const rh = config.requestHeader;
    const { clientCaFile, ...headers } = rh;
    requestAuthenticators.push(requestHeaderAuthenticator({ clientCas: loadRequestHeaderCas(clientCaFile), ...headers }));
  }
  requestAuthenticators.push(clientCertificateAuthenticator(config.clientCaFile ? parseCaBundle(fs.readFileSync(config.clientCaFile, 'utf8')) : []));
  const tokenAuthenticators: TokenAuthenticator[] = [];
  if (config.tokenAuthFile) tokenAuthenticators.push(tokenFileAuthenticator(parseTokenFile(fs.readFileSync(config.tokenAuthFile, 'utf8'))));
  const serviceAccounts = sa && sa.issuers.length > 0 ? serviceAccountMethod(sa, apiAudiences, storage) : undefined;
  if (serviceAccounts) tokenAuthenticators.push(serviceAccounts);
  const jwt = new JwtMethods(log, { apiAudiences, serviceAccountIssuers: sa?.issuers ?? [], anonymousAuthExplicit: config.anonymousAuthExplicit ?? false });
  if (config.oidc) jwt.setIssuers([config.oidc], 'oidc');
  if (config.authenticationConfigFile) {
    if (config.oidc) throw new Error('--authentication-config and --oidc-* flags may not be used together');
    jwt.apply(jwt.read(config.authenticationConfigFile));
    jwt.watch(config.authenticationConfigFile);
  }
  if (config.oidc || config.authenticationConfigFile) tokenAuthenticators.push(jwt);
  if (config.enableBootstrapTokenAuth) {
    if (!storage) throw new Error('--enable-bootstrap-token-auth needs --storage-address');
    tokenAuthenticators.push(bootstrapTokenAuthenticator(storageLookup(storage)));
  }
  // The webhook goes last: it is the only method that makes a remote call for any token.
  if (config.tokenWebhook) tokenAuthenticators.push(tokenWebhookAuthenticator({ ...config.tokenWebhook, apiAudiences, logger: log }));
  // The file's anonymous settings, when it has them, replace --anonymous-auth (and follow reloads).
  const anonymous = (path: string | undefined): boolean => (jwt.anonymous ? jwt.anonymousAllowed(path) : config.anonymousAuth);
  const authenticate = createAuthenticator({ requestAuthenticators, tokenAuthenticators, anonymous, apiAudiences });
  const verifyToken = createTokenVerifier({ tokenAuthenticators, apiAudiences });

  const logged = (result: AuthenticationResult, requestId: string): AuthenticationResult => {
    if (!result.authenticated && result.error !== '') log.info('authentication failed', { requestId, error: result.error });
    return result;
  };
  const implementation: authn.AuthnServer = {
    authenticate: unary(log, 'Authenticate', async (req: authn.AuthenticateRequest, ctx): Promise<authn.AuthenticateResponse> => {
      const headers: Record<string, string[]> = {};
      for (const [k, v] of Object.entries(req.headers)) headers[k.toLowerCase()] = v.values;
      const started = performance.now();
      return toResponse(logged(recordAuthentication(await authenticate({ clientCertificateChain: req.clientCertificateChain, headers, path: req.path }, req.audiences), started), ctx.requestId));
    }),
    reviewToken: unary(log, 'ReviewToken', async (req: authn.ReviewTokenRequest, ctx): Promise<authn.AuthenticateResponse> => {
      if (req.token === '') return toResponse({ authenticated: false, error: 'token is empty' });
      return toResponse(logged(await verifyToken(req.token, req.audiences), ctx.requestId));
    }),
    issueServiceAccountToken: unary(log, 'IssueServiceAccountToken', async (req: authn.IssueTokenRequest): Promise<authn.IssueTokenResponse> => {
      if (!serviceAccounts) throw ApiError.serviceUnavailable('service account tokens are not configured on this server (--service-account-issuer and --service-account-signing-key-file)');
      const bound = req.boundObject;
      const issued = await serviceAccounts.issue({
        namespace: req.namespace,
        name: req.serviceAccountName,
        uid: req.serviceAccountUid,
        audiences: req.audiences,
        expirationSeconds: req.expirationSeconds,
        ...(bound && (bound.kind === 'Pod' || bound.kind === 'Secret') ? { bound: { kind: bound.kind, name: bound.name, uid: bound.uid } } : {}),
      });
      return { token: issued.token, expirationUnix: Math.floor(issued.expires.getTime() / 1000) };
    }),
  };
  const server = await startGrpcServer(config.listen, [{ definition: authn.AuthnService, implementation }], { security: { tls, allowedCallers: ALLOWED_CALLERS, log }, health: { bindAddress: config.healthBindAddress ?? '' } });
  log.info('authn listening', { address: server.address, methods: tokenAuthenticators.map((m) => m.name) });
  return {
    address: server.address,
    port: server.port,
    ...(server.healthAddress ? { healthAddress: server.healthAddress } : {}),
    close: async () => {
      jwt.close();
      await server.close();
      storage?.close();
    },
  };
}
