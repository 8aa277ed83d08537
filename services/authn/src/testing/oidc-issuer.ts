import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, type JWK, type JWTPayload } from 'jose';

/**
 * An OpenID Connect issuer for tests: discovery and JWKS over loopback HTTPS
 * (with the certificate it is given), keys that can be added and removed
 * (rotation), and signed ID tokens.
 */
export interface TestIssuer {
  url: string;
  /** Adds a signing key and returns its key id; the newest key signs. */
  addKey(): Promise<string>;
  removeKey(kid: string): void;
  /** Signs `claims` with `iat` now (unless given) and `exp` in ten minutes (`expiresInSeconds`; null for none). */
  sign(claims: JWTPayload, opts?: { kid?: string; expiresInSeconds?: number | null; alg?: string }): Promise<string>;
  /** How many times the JWKS was fetched. */
  readonly jwksFetches: number;
  close(): Promise<void>;
}

export async function startTestIssuer(tls: { cert: Buffer; key: Buffer }, path = ''): Promise<TestIssuer> {
  const keys = new Map<string, { privateKey: KeyObject; jwk: JWK }>();
  let newest = '';
  let fetches = 0;
  let url = '';
  const server = https.createServer(tls, (req, res) => {
    if (req.url === `${path}/.well-known/openid-configuration`) {
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ issuer: url, jwks_uri: `${url}/keys`, id_token_signing_alg_values_supported: ['RS256'] }));
    } else if (req.url === `${path}/keys`) {
      fetches++;
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ keys: [...keys.values()].map((k) => k.jwk) }));
    } else {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `https://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  let counter = 0;
  return {
    url,
    get jwksFetches() {
      return fetches;
    },
    async addKey() {
      const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const kid = `key-${++counter}`;
      keys.set(kid, { privateKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } });
      newest = kid;
      return kid;
    },
    removeKey(kid) {
      keys.delete(kid);
      if (newest === kid) newest = [...keys.keys()].at(-1) ?? '';
    },
    async sign(claims, opts = {}) {
      const kid = opts.kid ?? newest;
      const key = keys.get(kid);
      if (!key) throw new Error(`no key ${kid}`);
      const now = Math.floor(Date.now() / 1000);
      const jwt = new SignJWT(claims).setProtectedHeader({ alg: opts.alg ?? 'RS256', kid }).setIssuer(typeof claims.iss === 'string' ? claims.iss : url);
      if (claims.iat === undefined) jwt.setIssuedAt(now);
      if (opts.expiresInSeconds !== null) jwt.setExpirationTime(now + (opts.expiresInSeconds ?? 600));
      return jwt.sign(key.privateKey);
    },
    async close() {
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}
