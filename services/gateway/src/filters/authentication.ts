import type { TLSSocket, PeerCertificate, DetailedPeerCertificate } from 'node:tls';
import { createHash } from 'node:crypto';
import { ApiError, type UserInfo } from '@svc/apimachinery';
import { TtlCache } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { connectionSocketOf } from '../express-http2';
import { requestIdFrom, requestInfoFrom, withUser } from '../context';
import type { Handler } from './chain';
import { recordAuthenticationCache, recordAuthenticationDuration } from '../apiserver-metrics';

/** Headers that carry credentials; only these (and the configured proxy headers) are sent to authn. */
const CREDENTIAL_HEADERS = /^(authorization|impersonate-.*|x-remote-.*)$/;

function isCredentialHeader(name: string, proxy: GatewayDeps['proxyHeaders']): boolean {
  return CREDENTIAL_HEADERS.test(name) || proxy.names.includes(name) || proxy.prefixes.some((p) => name.startsWith(p));
}

interface PresentedChain {
  /** The client certificate chain the peer presented, leaf first (DER). */
  der: Buffer[];
  /** A digest of `der`, for cache keys. */
  digest: string;
}

const NO_CHAIN: PresentedChain = { der: [], digest: '' };

/** Chains by connection: a connection's certificate cannot change, and reading it is costly. */
const chains = new WeakMap<TLSSocket, PresentedChain>();

/**
 * The certificate chain the peer presented, whether or not the TLS layer
 * could verify it. The TLS server requests certificates without requiring
 * them to verify (a client without one is still served), so a certificate
 * from an unknown CA, an expired one or a broken chain arrives here too, and
 * is forwarded: authn verifies it and answers 401. Dropping it would turn a
 * bad credential into an anonymous request.
 */
export function presentedChain(socket: TLSSocket): PresentedChain {
  if (typeof socket.getPeerCertificate !== 'function') return NO_CHAIN;
  const known = chains.get(socket);
  if (known) return known;
  const der: Buffer[] = [];
  let cert: PeerCertificate | DetailedPeerCertificate | undefined;
  try {
    cert = socket.getPeerCertificate(true);
  } catch {
    // Something was presented that cannot even be read: a credential that does not verify.
    throw ApiError.unauthorized();
  }
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
function cacheKey(chain: PresentedChain, headers: Record<string, string[]>): string | undefined {
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
  // Requests with the same credentials that arrive while authn is asked wait for that one answer
  // (many connections opening at once, or an entry expiring under load, would otherwise each ask).
  const inflight = new Map<string, Promise<UserInfo | undefined>>();
  return async (req, res) => {
    // Repeated headers stay apart (a proxy sends one group per header line).
    const headers: Record<string, string[]> = {};
    for (const [name, values] of Object.entries(req.headersDistinct)) {
      if (!isCredentialHeader(name, deps.proxyHeaders) || values === undefined) continue;
      headers[name] = values;
    }
    // The connection's socket (for HTTP/2 the session's, so the chain is read once per connection there too).
    const chain = presentedChain(connectionSocketOf(req) as TLSSocket);
    const key = cache.enabled ? cacheKey(chain, headers) : undefined;
    let user = key === undefined ? undefined : cache.get(key);
    if (key !== undefined) recordAuthenticationCache(user !== undefined);
    if (!user) {
      const ask = async (): Promise<UserInfo | undefined> => {
        const outcome = await deps.authn.authenticate(
          { clientCertificateChain: chain.der, headers, method: req.method, path: requestInfoFrom(req).path, remoteAddress: req.socket.remoteAddress ?? '' },
          { requestId: requestIdFrom(req), timeoutMs: deps.limits.backendTimeoutMs },
        );
        if (!outcome.authenticated) return undefined;
        if (key !== undefined) cache.set(key, outcome.user);
        return outcome.user;
      };
      let pending = key === undefined ? undefined : inflight.get(key);
      if (!pending) {
        pending = ask();
        if (key !== undefined) {
          const k = key;
          inflight.set(k, pending);
          void pending.then(
            () => inflight.delete(k),
            () => inflight.delete(k),
          );
        }
      }
      const started = performance.now();
      user = await pending;
      recordAuthenticationDuration(user !== undefined, started);
      if (!user) throw ApiError.unauthorized();
    }
    withUser(req, user);
    await handler(req, res);
  };
}
