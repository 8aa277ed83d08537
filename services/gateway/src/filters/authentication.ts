import type { TLSSocket, PeerCertificate, DetailedPeerCertificate } from 'node:tls';
import { ApiError } from '@svc/apimachinery';
import type { GatewayDeps } from '../backends';
import { requestIdFrom, withUser } from '../context';
import type { Handler } from './chain';

/** Headers that carry credentials; only these are sent to authn. */
const CREDENTIAL_HEADERS = /^(authorization|impersonate-.*|x-remote-.*)$/;

/** The client certificate chain the TLS layer verified, leaf first (DER). */
export function verifiedChain(socket: TLSSocket): Buffer[] {
  if (typeof socket.getPeerCertificate !== 'function' || !socket.authorized) return [];
  const chain: Buffer[] = [];
  let cert: PeerCertificate | DetailedPeerCertificate | undefined = socket.getPeerCertificate(true);
  const seen = new Set<string>();
  while (cert && cert.raw && !seen.has(cert.fingerprint256)) {
    seen.add(cert.fingerprint256);
    chain.push(cert.raw);
    cert = (cert as DetailedPeerCertificate).issuerCertificate;
  }
  return chain;
}

/** Asks authn who the caller is; 401 when credentials are rejected. */
export function withAuthentication(handler: Handler, deps: GatewayDeps): Handler {
  return async (req, res) => {
    const headers: Record<string, string[]> = {};
    for (const [name, value] of Object.entries(req.headers)) {
      if (!CREDENTIAL_HEADERS.test(name) || value === undefined) continue;
      headers[name] = Array.isArray(value) ? value : [value];
    }
    const outcome = await deps.authn.authenticate(
      { clientCertificateChain: verifiedChain(req.socket as TLSSocket), headers, method: req.method, path: req.path, remoteAddress: req.socket.remoteAddress ?? '' },
      { requestId: requestIdFrom(req), timeoutMs: deps.limits.backendTimeoutMs },
    );
    if (!outcome.authenticated) throw ApiError.unauthorized();
    withUser(req, outcome.user);
    await handler(req, res);
  };
}
