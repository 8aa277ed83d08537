import type { TLSSocket, PeerCertificate, DetailedPeerCertificate } from 'node:tls';
import { createHash } from 'node:crypto';
import { ApiError, type UserInfo } from '@svc/apimachinery';
import { TtlCache } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { requestIdFrom, withUser } from '../context';
import type { Handler } from './chain';

/** Headers that carry credentials; only these are sent to authn. */
const CREDENTIAL_HEADERS = /^(authorization|impersonate-.*|x-remote-.*)$/;

interface VerifiedChain {
  /** The client certificate chain the TLS layer verified, leaf first (DER). */
  der: Buffer[];
  /** A digest of `der`, for cache keys. */
  digest: string;
}

const NO_CHAIN: VerifiedChain = { der: [], digest: '' };

/** Chains by connection: a connection's certificate cannot change, and reading it is costly. */
const chains = new WeakMap<TLSSocket, VerifiedChain>();

export function verifiedChain(socket: TLSSocket): VerifiedChain {
  if (typeof socket.getPeerCertificate !== 'function' || !socket.authorized) return NO_CHAIN;
  const known = chains.get(socket);
  if (known) return known;
  const der: Buffer[] = [];
  let cert: PeerCertificate | DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  const seen = new Set<string>();
  while (cert && cert.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    der.push(cert.raw);
    cert = (cert as DetailedPeerCertificate).issuerCertificate;
  }
  const hash = createHash('sha256');
  for (const d of der) hash.update(d).update('\0');
  const chain = { der, digest: hash.digest('base64') };
  chains.set(socket, chain);
  return chain;
}

/**
 * What an authentication result depends on: the certificate chain and the
 * credential headers. Requests without credentials are not cached (anonymous
 * access may depend on the path).
 */
function cacheKey(chain: VerifiedChain, headers: Record<string, string[]>): string | undefined {
  const names = Object.keys(headers);
  if (chain.der.length === 0 && names.length === 0) return undefined;
  if (names.length === 0) return chain.digest;
  const hash = createHash('sha256').update(chain.digest).update('\n');
  for (const name of names.sort()) hash.update(`${name}:${(headers[name] ?? []).join('\0')}\n`);
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
        { clientCertificateChain: chain.der, headers, method: req.method, path: req.path, remoteAddress: req.socket.remoteAddress ?? '' },
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
