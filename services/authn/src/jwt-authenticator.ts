import { createHash } from 'node:crypto';
import * as https from 'node:https';
import { createLocalJWKSet, decodeJwt, errors as joseErrors, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import type { UserInfo } from '@svc/apimachinery';
import { TtlCache } from '@svc/service-kit';
import type { CompiledExpression } from './cel';
import { NOT_MINE, rejected, type MethodOutcome, type TokenAuthenticator } from './methods';
import { MAX_TOKEN_BYTES } from './service-account';

/**
 * A JWT issuer trusted for authentication: OpenID Connect by the
 * `--oidc-*` flags, or one `jwt[]` entry of the authentication
 * configuration file. Keys are discovered from the issuer
 * (`/.well-known/openid-configuration`, then its `jwks_uri`) over HTTPS,
 * fetched again when a token names a key id not seen yet (key rotation),
 * at most once a second. Verification: the signature with an allowed
 * asymmetric algorithm (never `none` or an HMAC), `iss`, `aud`, `exp`,
 * `nbf`; then the claim rules, the mapping to a user and the user rules.
 */

export interface ClaimOrExpression {
  claim?: string;
  prefix?: string;
  expression?: CompiledExpression;
}

export interface JwtIssuerSettings {
  /** `iss` of the tokens, and where discovery starts. */
  url: string;
  /** The discovery document's URL when it is not under `url`. */
  discoveryUrl?: string;
  /** PEM CA bundle for the issuer's HTTPS; the system's trust store when unset. */
  certificateAuthority?: string;
  audiences: string[];
  algorithms: string[];
  claimValidationRules: Array<{ claim: string; requiredValue: string } | { expression: CompiledExpression; message: string }>;
  username: ClaimOrExpression;
  /** Whether a username from the `email` claim requires `email_verified` (when the claim is present). */
  requireVerifiedEmail: boolean;
  groups?: ClaimOrExpression;
  uid?: ClaimOrExpression;
  extra: Array<{ key: string; valueExpression: CompiledExpression }>;
  userValidationRules: Array<{ expression: CompiledExpression; message: string }>;
}

export const ASYMMETRIC_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'ES256', 'ES384', 'ES512', 'PS256', 'PS384', 'PS512', 'EdDSA'];
const DISCOVERY_TIMEOUT_MS = 10_000;
const MAX_DOCUMENT_BYTES = 1024 * 1024;
const REFRESH_INTERVAL_MS = 1000;

function fetchJson(url: string, ca: string | undefined): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, { ...(ca ? { ca } : {}), timeout: DISCOVERY_TIMEOUT_MS, agent: false, headers: { accept: 'application/json' } }, (res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        size += c.length;
        if (size > MAX_DOCUMENT_BYTES) req.destroy(new Error(`${url}: larger than ${MAX_DOCUMENT_BYTES} bytes`));
        else chunks.push(c);
      });
      res.on('end', () => {
        if ((res.statusCode ?? 0) !== 200) return reject(new Error(`${url}: HTTP ${res.statusCode ?? 0}`));
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')));
        } catch {
          reject(new Error(`${url}: not JSON`));
        }
      });
    });
    req.on('timeout', () => req.destroy(new Error(`${url}: no answer within ${DISCOVERY_TIMEOUT_MS} ms`)));
    req.on('error', reject);
  });
}

/** The keys of one issuer, discovered lazily and refreshed on an unknown key id. */
class IssuerKeys {
  private jwks: ReturnType<typeof createLocalJWKSet> | undefined;
  private kids = new Set<string>();
  private lastFetch = 0;
  private inflight: Promise<void> | undefined;

  constructor(private readonly settings: JwtIssuerSettings) {}

  private async fetchKeys(): Promise<void> {
    const discovery = this.settings.discoveryUrl ?? `${this.settings.url.replace(/\/+$/, '')}/.well-known/openid-configuration`;
    const doc = (await fetchJson(discovery, this.settings.certificateAuthority)) as { issuer?: unknown; jwks_uri?: unknown };
    if (doc.issuer !== this.settings.url) throw new Error(`the discovered issuer ${JSON.stringify(doc.issuer)} is not ${this.settings.url}`);
    if (typeof doc.jwks_uri !== 'string' || !doc.jwks_uri.startsWith('https://')) throw new Error('the discovery document has no https jwks_uri');
    const keys = (await fetchJson(doc.jwks_uri, this.settings.certificateAuthority)) as JSONWebKeySet;
    if (!keys || !Array.isArray(keys.keys)) throw new Error('the JWKS has no keys');
    this.jwks = createLocalJWKSet(keys);
    this.kids = new Set(keys.keys.map((k) => k.kid).filter((k): k is string => typeof k === 'string'));
  }

  /** Fetches the keys again unless that happened within the last second; concurrent callers share one fetch. */
  async refresh(): Promise<void> {
    if (this.inflight) return this.inflight;
    if (this.jwks && Date.now() - this.lastFetch < REFRESH_INTERVAL_MS) return;
    this.lastFetch = Date.now();
    this.inflight = this.fetchKeys().finally(() => (this.inflight = undefined));
    return this.inflight;
  }

  async keySet(kid: string | undefined): Promise<ReturnType<typeof createLocalJWKSet>> {
    if (!this.jwks || (kid !== undefined && !this.kids.has(kid))) await this.refresh();
    if (!this.jwks) throw new Error('the issuer keys are not available');
    return this.jwks;
  }
}

function stringClaim(claims: JWTPayload, name: string): string | undefined {
  const v = claims[name];
  return typeof v === 'string' ? v : undefined;
}

type Mapped<T> = { ok: true; value: T } | { ok: false; error: string };

function mapString(spec: ClaimOrExpression, claims: JWTPayload, what: string, required: boolean): Mapped<string> {
  if (spec.expression) {
    const r = spec.expression({ claims });
    if (!r.ok) return { ok: false, error: `${what} expression failed: ${r.error}` };
    if (typeof r.value !== 'string') return { ok: false, error: `${what} expression must return a string` };
    if (required && r.value === '') return { ok: false, error: `${what} expression returned an empty string` };
    return { ok: true, value: r.value };
  }
  const claim = spec.claim ?? '';
  const v = stringClaim(claims, claim);
  if (v === undefined) return required || claims[claim] !== undefined ? { ok: false, error: `claim ${JSON.stringify(claim)} is missing or not a string` } : { ok: true, value: '' };
  if (required && v === '') return { ok: false, error: `claim ${JSON.stringify(claim)} is empty` };
  return { ok: true, value: `${spec.prefix ?? ''}${v}` };
}

function asStringList(value: unknown): string[] | undefined {
  if (typeof value === 'string') return value === '' ? [] : [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  return undefined;
}

function mapList(spec: ClaimOrExpression, claims: JWTPayload, what: string): Mapped<string[]> {
  if (spec.expression) {
    const r = spec.expression({ claims });
    if (!r.ok) return { ok: false, error: `${what} expression failed: ${r.error}` };
    const list = asStringList(r.value);
    return list ? { ok: true, value: list } : { ok: false, error: `${what} expression must return a string or a list of strings` };
  }
  const raw = claims[spec.claim ?? ''];
  if (raw === undefined || raw === null) return { ok: true, value: [] };
  const list = asStringList(raw);
  if (!list) return { ok: false, error: `claim ${JSON.stringify(spec.claim)} is not a string or a list of strings` };
  return { ok: true, value: list.map((g) => `${spec.prefix ?? ''}${g}`) };
}

export interface JwtAuthenticator extends TokenAuthenticator {
  readonly issuer: string;
}

/** A JWT issuer as a token method; tokens of other issuers are not-mine. */
export function jwtAuthenticator(settings: JwtIssuerSettings, name = 'jwt'): JwtAuthenticator {
  const keys = new IssuerKeys(settings);
  const verified = new TtlCache<JWTPayload>(60 * 60 * 1000, 10000);
  const algorithms = settings.algorithms.filter((a) => ASYMMETRIC_ALGORITHMS.includes(a));

  async function verify(token: string): Promise<JWTPayload> {
    const digest = createHash('sha256').update(token).digest('base64');
    const cached = verified.get(digest);
    if (cached && (cached.exp ?? 0) * 1000 > Date.now()) return cached;
    const header = JSON.parse(Buffer.from(token.split('.')[0] ?? '', 'base64url').toString('utf8')) as { kid?: unknown };
    const kid = typeof header.kid === 'string' ? header.kid : undefined;
    const options = { issuer: settings.url, audience: settings.audiences, algorithms, requiredClaims: ['exp'] };
    let payload: JWTPayload;
    try {
      payload = (await jwtVerify(token, await keys.keySet(kid), options)).payload;
    } catch (err) {
      // A key that appeared since the last fetch: fetch once more and retry.
      if (!(err instanceof joseErrors.JWKSNoMatchingKey)) throw err;
      await keys.refresh();
      payload = (await jwtVerify(token, await keys.keySet(undefined), options)).payload;
    }
    verified.set(digest, payload);
    return payload;
  }

  return {
    name,
    issuer: settings.url,
    async authenticateToken(token, audiences): Promise<MethodOutcome> {
      if (token.length > MAX_TOKEN_BYTES || token.split('.').length !== 3) return NOT_MINE;
      let unverified: JWTPayload;
      try {
        unverified = decodeJwt(token);
      } catch {
        return NOT_MINE;
      }
      if (unverified.iss !== settings.url) return NOT_MINE;
      let claims: JWTPayload;
      try {
        claims = await verify(token);
      } catch (err) {
        return rejected(`${name}: ${(err as Error).message}`);
      }
      for (const rule of settings.claimValidationRules) {
        if ('claim' in rule) {
          if (stringClaim(claims, rule.claim) !== rule.requiredValue) return rejected(`${name}: required claim ${rule.claim} does not have the required value`);
        } else {
          const r = rule.expression({ claims });
          if (!r.ok) return rejected(`${name}: claim validation failed: ${r.error}`);
          if (r.value !== true) return rejected(`${name}: ${rule.message || 'a claim validation rule failed'}`);
        }
      }
      if (settings.requireVerifiedEmail && settings.username.claim === 'email' && claims['email_verified'] !== undefined && claims['email_verified'] !== true) {
        return rejected(`${name}: email not verified`);
      }
      const username = mapString(settings.username, claims, 'username', true);
      if (!username.ok) return rejected(`${name}: ${username.error}`);
      const groups: Mapped<string[]> = settings.groups ? mapList(settings.groups, claims, 'groups') : { ok: true, value: [] };
      if (!groups.ok) return rejected(`${name}: ${groups.error}`);
      const uid: Mapped<string> = settings.uid ? mapString(settings.uid, claims, 'uid', false) : { ok: true, value: '' };
      if (!uid.ok) return rejected(`${name}: ${uid.error}`);
      const extra: Record<string, string[]> = {};
      for (const e of settings.extra) {
        const r = e.valueExpression({ claims });
        if (!r.ok) return rejected(`${name}: extra ${e.key} expression failed: ${r.error}`);
        const values = asStringList(r.value);
        if (!values) return rejected(`${name}: extra ${e.key} expression must return a string or a list of strings`);
        if (values.length > 0) extra[e.key] = values;
      }
      const user: UserInfo = { username: username.value, uid: uid.value, groups: groups.value, extra };
      for (const rule of settings.userValidationRules) {
        const r = rule.expression({ user });
        if (!r.ok) return rejected(`${name}: user validation failed: ${r.error}`);
        if (r.value !== true) return rejected(`${name}: ${rule.message || 'a user validation rule failed'}`);
      }
      return { status: 'authenticated', user, audiences: [...audiences] };
    },
  };
}
