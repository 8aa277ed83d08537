import { createHash } from 'node:crypto';
import * as https from 'node:https';
import { createLocalJWKSet, decodeProtectedHeader, errors as joseErrors, jwtVerify, type JSONWebKeySet, type JWTPayload } from 'jose';
import type { UserInfo } from '@svc/apimachinery';
import { TtlCache, type Logger } from '@svc/service-kit';
import type { CompiledExpression } from './cel';
import { NOT_MINE, rejected, type MethodOutcome, type TokenAuthenticator } from './methods';
import { unverifiedIssuer } from './service-account';

/**
 * A JWT issuer trusted for authentication: OpenID Connect by the
 * `--oidc-*` flags, or one `jwt[]` entry of the authentication
 * configuration file. Keys are discovered from the issuer
 * (`/.well-known/openid-configuration`, then its `jwks_uri`) over HTTPS,
 * fetched again when a token names a key id not seen yet (key rotation),
 * at most once a second. Verification: the signature with an allowed
 * asymmetric algorithm (never `none` or an HMAC), `iss`, `aud`, `exp`,
 * `nbf`, `iat`; then the claim rules, the mapping to a user and the user
 * rules, as the original server does (`oidc.go`): a `uid` claim that is
 * missing fails, a groups claim that is missing is no groups, and a string or
 * list from an expression drops empty strings.
 *
 * Verified payloads are cached until their `exp` (bounded, keyed by the
 * SHA-256 of the token); the token itself is never kept or logged.
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
/** How far in the future `nbf` and `iat` may be (clocks differ); the original allows as much for `nbf`. */
const CLOCK_SKEW_SECONDS = 5 * 60;
const VERIFIED_CACHE_ENTRIES = 10_000;
const VERIFIED_CACHE_MAX_MS = 60 * 60 * 1000;

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
  private lastError: Error | undefined;
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

  /**
   * Fetches the keys again unless that happened within the last second (a
   * failure is remembered as long); concurrent callers share one fetch.
   */
  async refresh(): Promise<void> {
    if (this.inflight) return this.inflight;
    if (Date.now() - this.lastFetch < REFRESH_INTERVAL_MS) {
      if (this.lastError) throw this.lastError;
      if (this.jwks) return;
    }
    this.lastFetch = Date.now();
    this.inflight = this.fetchKeys()
      .then(() => (this.lastError = undefined))
      .catch((err: unknown) => {
        this.lastError = new Error(`the issuer's keys could not be fetched: ${(err as Error).message}`);
        throw this.lastError;
      })
      .finally(() => (this.inflight = undefined));
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

/** A username or uid: a string claim (which must be present) with its prefix, or a string expression. */
function mapString(spec: ClaimOrExpression, claims: JWTPayload, what: string, required: boolean): Mapped<string> {
  if (spec.expression) {
    const r = spec.expression.evaluate(claims);
    if (!r.ok) return { ok: false, error: `${what} expression failed: ${r.error}` };
    if (typeof r.value !== 'string') return { ok: false, error: `${what} expression must return a string` };
    if (required && r.value === '') return { ok: false, error: `${what} expression returned an empty string` };
    return { ok: true, value: r.value };
  }
  const claim = spec.claim ?? '';
  const v = stringClaim(claims, claim);
  if (v === undefined) return { ok: false, error: `${what} claim ${JSON.stringify(claim)} is missing or not a string` };
  if (required && v === '') return { ok: false, error: `${what} claim ${JSON.stringify(claim)} is empty` };
  return { ok: true, value: `${spec.prefix ?? ''}${v}` };
}

/** A claim holding groups: a string or a list of strings. */
function asStringList(value: unknown): string[] | undefined {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value as string[];
  return undefined;
}

/** An expression's string or list of strings; null, "" and [] are none, and empty strings in a list are dropped. */
function expressionStrings(value: unknown): string[] | undefined {
  if (value === null || value === undefined) return [];
  const list = asStringList(value);
  return list?.filter((v) => v !== '');
}

function mapList(spec: ClaimOrExpression, claims: JWTPayload, what: string): Mapped<string[]> {
  if (spec.expression) {
    const r = spec.expression.evaluate(claims);
    if (!r.ok) return { ok: false, error: `${what} expression failed: ${r.error}` };
    const list = expressionStrings(r.value);
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

/** The outcome of a validation rule: it must return a boolean, and false fails with the rule's message. */
function ruleFailure(r: ReturnType<CompiledExpression['evaluate']>, message: string, source: string, what: string): string | undefined {
  if (!r.ok) return `${what} failed: ${r.error}`;
  if (typeof r.value !== 'boolean') return `${what} must return a boolean`;
  return r.value ? undefined : `${what} '${source}' failed${message ? `: ${message}` : ''}`;
}

/** A JWT issuer as a token method; tokens of other issuers are not-mine. */
export function jwtAuthenticator(settings: JwtIssuerSettings, name = 'jwt', log?: Logger): JwtAuthenticator {
  const keys = new IssuerKeys(settings);
  /** Users of tokens verified and mapped, by the SHA-256 of the token, until the token's `exp`. */
  const authenticated = new TtlCache<{ user: UserInfo; exp: number }>(VERIFIED_CACHE_MAX_MS, VERIFIED_CACHE_ENTRIES);
  const algorithms = settings.algorithms.filter((a) => ASYMMETRIC_ALGORITHMS.includes(a));
  const options = { issuer: settings.url, audience: settings.audiences, algorithms, requiredClaims: ['exp'], clockTolerance: CLOCK_SKEW_SECONDS };

  async function verify(token: string): Promise<JWTPayload> {
    const header = decodeProtectedHeader(token);
    const kid = typeof header.kid === 'string' ? header.kid : undefined;
    let payload: JWTPayload;
    try {
      payload = (await jwtVerify(token, await keys.keySet(kid), options)).payload;
    } catch (err) {
      // A key that appeared since the last fetch: fetch once more and retry.
      if (!(err instanceof joseErrors.JWKSNoMatchingKey)) throw err;
      await keys.refresh();
      payload = (await jwtVerify(token, await keys.keySet(undefined), options)).payload;
    }
    // jose allowed the skew for `nbf`; `exp` allows none, as in the original.
    const now = Date.now() / 1000;
    if ((payload.exp ?? 0) <= now) throw new Error('"exp" claim timestamp check failed (the token has expired)');
    // jose checks that `iat` is a number; one from the future means a wrong clock or a forged token.
    if (payload.iat !== undefined && payload.iat > now + CLOCK_SKEW_SECONDS) throw new Error('"iat" claim timestamp check failed (issued in the future)');
    return payload;
  }

  /** The user of verified claims, or why there is none. */
  function mapUser(claims: JWTPayload): Mapped<UserInfo> {
    for (const rule of settings.claimValidationRules) {
      if ('claim' in rule) {
        const value = claims[rule.claim];
        if (value === undefined) return { ok: false, error: `required claim ${rule.claim} not present` };
        if (value !== rule.requiredValue) return { ok: false, error: `required claim ${rule.claim} does not have the required value` };
      } else {
        const failure = ruleFailure(rule.expression.evaluate(claims), rule.message, rule.expression.source, 'claim validation expression');
        if (failure) return { ok: false, error: failure };
      }
    }
    if (settings.requireVerifiedEmail && settings.username.claim === 'email' && claims['email_verified'] !== undefined && claims['email_verified'] !== true) {
      return { ok: false, error: 'email not verified' };
    }
    const username = mapString(settings.username, claims, 'username', true);
    if (!username.ok) return username;
    const groups: Mapped<string[]> = settings.groups ? mapList(settings.groups, claims, 'groups') : { ok: true, value: [] };
    if (!groups.ok) return groups;
    const uid: Mapped<string> = settings.uid ? mapString(settings.uid, claims, 'uid', false) : { ok: true, value: '' };
    if (!uid.ok) return uid;
    const extra: Record<string, string[]> = {};
    for (const e of settings.extra) {
      const r = e.valueExpression.evaluate(claims);
      if (!r.ok) return { ok: false, error: `extra ${e.key} expression failed: ${r.error}` };
      const values = expressionStrings(r.value);
      if (!values) return { ok: false, error: `extra ${e.key} expression must return a string or a list of strings` };
      if (values.length > 0) extra[e.key] = values;
    }
    const user: UserInfo = { username: username.value, uid: uid.value, groups: groups.value, extra };
    for (const rule of settings.userValidationRules) {
      const failure = ruleFailure(rule.expression.evaluate(user), rule.message, rule.expression.source, 'user validation expression');
      if (failure) return { ok: false, error: failure };
    }
    return { ok: true, value: user };
  }

  return {
    name,
    issuer: settings.url,
    async authenticateToken(token, audiences): Promise<MethodOutcome> {
      if (unverifiedIssuer(token) !== settings.url) return NOT_MINE;
      const digest = createHash('sha256').update(token).digest('base64');
      const cached = authenticated.get(digest);
      if (cached && cached.exp * 1000 > Date.now()) return { status: 'authenticated', user: cached.user, audiences: [...audiences] };
      let claims: JWTPayload;
      try {
        claims = await verify(token);
      } catch (err) {
        return rejected(`${name}: ${(err as Error).message}`);
      }
      const user = mapUser(claims);
      if (!user.ok) return rejected(`${name}: ${user.error}`);
      authenticated.set(digest, { user: user.value, exp: claims.exp ?? 0 });
      log?.info('token verified', { authenticator: name, issuer: settings.url, username: user.value.username, expires: new Date((claims.exp ?? 0) * 1000).toISOString() });
      return { status: 'authenticated', user: user.value, audiences: [...audiences] };
    },
  };
}
