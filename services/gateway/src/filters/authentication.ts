import type { TLSSocket, PeerCertificate, DetailedPeerCertificate } from 'node:tls';
import { createHash } from 'node:crypto';
import { ApiError, type UserInfo } from '@svc/apimachinery';
import { TtlCache } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { requestIdFrom, withUser } from '../context';
import type { Handler } from './chain';

/** Headers that carry credentials; only these are sent to authn. */
const CREDENTIAL_HEADERS = /^(authorization|impersonate-.*|x-remote-.*)$/;

/** Chains by connection: a connection's certificate cannot change, and reading it is costly. */
const chains = new WeakMap<TLSSocket, Buffer[]>();

/** The client certificate chain the TLS layer verified, leaf first (DER). */
export function verifiedChain(socket: TLSSocket): Buffer[] {
  if (typeof socket.getPeerCertificate !== 'function' || !socket.authorized) return [];
  const known = chains.get(socket);
  if (known) return known;
  const chain: Buffer[] = [];
  let cert: PeerCertificate | DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  const seen = new Set<string>();
  while (cert && cert.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    chain.push(cert.raw);
    cert = (cert as DetailedPeerCertificate).issuerCertificate;
  }
  chains.set(socket, chain);
  return chain;
}

/**
 * What an authentication result depends on: the certificate chain and the
 * credential headers. Requests without credentials are not cached (anonymous
 * access may depend on the path).
 */
function cacheKey(chain: Buffer[], headers: Record<string, string[]>): string | undefined {
  const names = Object.keys(headers).sort();
  if (chain.length === 0 && names.length === 0) return undefined;
  const hash = createHash('sha256');
  for (const der of chain) hash.update(der).update('\0');
  for (const name of names) hash.update(`${name}:${(headers[name] ?? []).join('\0')}\n`);
  return hash.digest('base64');
}

/**
 * Asks authn who the caller is; 401 when credentials are rejected. Successful
 * results are reused for the same credentials for a short while
 * (`--authentication-cache-ttl-seconds`), as the original server caches
 * token reviews.
 */
export function withAuthentication(handler: Handler, deps: GatewayDeps): Handler {
  const cache = new TtlCache<UserInfo>(deps.limits.authnCacheTtlMs);
  return async (req, res) => {
    const headers: Record<string, string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!CREDENTIAL_HEADERS.test(name) || value === undefined) continue;
      headers[name] = Array.isArray(value) ? value : [value];
    }
    const chain = verifiedChain(req.socket as TLSSocket);
    const key = cache.enabled ? cacheKey(chain, headers) : undefined;
    let user = key === undefined ? undefined : cache.get(key);
    if (!user) {
      const outcome = await deps.authn.authenticate(
        { clientCertificateChain: chain, headers, method: req.method, path: req.path, remoteAddress: req.socket.remoteAddress ?? '' },
        { requestId: requestIdFrom(req), timeoutMs: deps.limits.backendTimeoutMs },
      );
      if (!outcome.authenticated) throw ApiError.unauthorized();
      user = outcome.user;
      if (key !== undefined) cache.set(key, user);
    }
    withUser(req, user);
    await handler(req, res);
  };
}
