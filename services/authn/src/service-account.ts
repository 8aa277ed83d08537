import { createHash, createPrivateKey, createPublicKey, randomUUID, type KeyObject } from 'node:crypto';
import { SignJWT, decodeJwt, decodeProtectedHeader, jwtVerify, type JWTPayload } from 'jose';
import type { ApiObject, UserInfo } from '@svc/apimachinery';
import { TtlCache } from '@svc/service-kit';
import { NOT_MINE, audienceIntersection, rejected, type MethodOutcome, type TokenAuthenticator } from './methods';

/**
 * Service-account tokens: JWTs this server signs (TokenRequest) and verifies
 * (bearer tokens), with `jose`. The token names the account, and optionally
 * the Pod or Secret it is bound to, in a private claim; with lookup on, a
 * token stops working as soon as its account or bound object is gone or
 * replaced (another uid).
 */

/** The private claim holding the account and the bound object. */
export const SERVICE_ACCOUNT_CLAIM = 'svc.io';
export const SERVICE_ACCOUNT_USER_PREFIX = 'system:serviceaccount:';
export const SERVICE_ACCOUNTS_GROUP = 'system:serviceaccounts';
/** Keys of `extra` the token's binding fills in. */
export const EXTRA_POD_NAME = 'authentication.svc.io/pod-name';
export const EXTRA_POD_UID = 'authentication.svc.io/pod-uid';
export const EXTRA_CREDENTIAL_ID = 'authentication.svc.io/credential-id';
/** Larger bearer tokens are not parsed as service-account tokens. */
export const MAX_TOKEN_BYTES = 16 * 1024;
/** Lifetimes a TokenRequest may ask for (SPEC: the original server's bounds). */
export const MIN_EXPIRATION_SECONDS = 600;
export const MAX_EXPIRATION_SECONDS = 2 ** 32;
export const DEFAULT_EXPIRATION_SECONDS = 3600;

export class KeyFileError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'KeyFileError';
  }
}

/**
 * The `iss` a bearer token claims, read without verifying it, or undefined
 * when the token is not a JWT of at most MAX_TOKEN_BYTES: how each JWT
 * method tells its own tokens from others' before any signature work.
 */
export function unverifiedIssuer(token: string): string | undefined {
  if (token.length > MAX_TOKEN_BYTES || token.split('.').length !== 3) return undefined;
  try {
    const iss = decodeJwt(token).iss;
    return typeof iss === 'string' ? iss : undefined;
  } catch {
    return undefined;
  }
}

export interface TokenKey {
  /** Public key (verification) or private key (signing). */
  key: KeyObject;
  alg: string;
  /** base64url SHA-256 of the public key's SPKI form, as the `kid` header. */
  kid: string;
}

function algorithmOf(key: KeyObject, file: string): string {
  if (key.asymmetricKeyType === 'rsa') return 'RS256';
  if (key.asymmetricKeyType === 'ec') {
    const curve = key.asymmetricKeyDetails?.namedCurve;
    if (curve === 'prime256v1') return 'ES256';
    if (curve === 'secp384r1') return 'ES384';
    if (curve === 'secp521r1') return 'ES512';
  }
  throw new KeyFileError(`${file}: unsupported key type ${key.asymmetricKeyType ?? 'unknown'} (RSA or ECDSA P-256, P-384, P-521 keys are supported)`);
}

function keyIdOf(publicKey: KeyObject): string {
  return createHash('sha256').update(publicKey.export({ type: 'spki', format: 'der' })).digest('base64url');
}

const PEM_BLOCK = /-----BEGIN ([A-Z ]+)-----[\s\S]+?-----END \1-----/g;

/** Every public key of a PEM file: public keys, and the public half of private keys. */
export function parseVerificationKeys(pem: string, file: string): TokenKey[] {
  const out: TokenKey[] = [];
  for (const match of pem.matchAll(PEM_BLOCK)) {
    const [block, type] = match as unknown as [string, string];
    let key: KeyObject;
    try {
      key = type.includes('PRIVATE') ? createPublicKey(createPrivateKey(block)) : type.includes('PUBLIC') ? createPublicKey(block) : (undefined as never);
    } catch (err) {
      throw new KeyFileError(`${file}: the ${type} block cannot be read: ${(err as Error).message}`);
    }
    if (!key) continue;
    out.push({ key, alg: algorithmOf(key, file), kid: keyIdOf(key) });
  }
  if (out.length === 0) throw new KeyFileError(`${file}: no public or private key found`);
  return out;
}

/** The signing key: the one private key of a PEM file. */
export function parseSigningKey(pem: string, file: string): TokenKey {
  const blocks = [...pem.matchAll(PEM_BLOCK)].filter((m) => (m[1] as string).includes('PRIVATE'));
  if (blocks.length !== 1) throw new KeyFileError(`${file}: expected exactly one private key, found ${blocks.length}`);
  let key: KeyObject;
  try {
    key = createPrivateKey((blocks[0] as RegExpMatchArray)[0]);
  } catch (err) {
    throw new KeyFileError(`${file}: the private key cannot be read: ${(err as Error).message}`);
  }
  return { key, alg: algorithmOf(key, file), kid: keyIdOf(createPublicKey(key)) };
}

export interface BoundObjectRef {
  kind: 'Pod' | 'Secret';
  name: string;
  uid: string;
}

export interface IssueRequest {
  namespace: string;
  name: string;
  uid: string;
  /** Empty: the server's own audiences. */
  audiences: string[];
  expirationSeconds: number;
  bound?: BoundObjectRef;
}

interface ObjectRefClaim {
  name: string;
  uid: string;
}

interface PrivateClaims {
  namespace: string;
  serviceaccount: ObjectRefClaim;
  pod?: ObjectRefClaim;
  secret?: ObjectRefClaim;
}

/** Reads an object for the lookup; undefined when it does not exist. */
export type ObjectLookup = (resource: 'serviceaccounts' | 'pods' | 'secrets', namespace: string, name: string) => Promise<ApiObject | undefined>;

export interface ServiceAccountTokenOptions {
  /** `--service-account-issuer`: the first signs, all are accepted. */
  issuers: string[];
  /** `--api-audiences`: the audiences of tokens requested without any. */
  apiAudiences: string[];
  signingKey?: TokenKey;
  verificationKeys: TokenKey[];
  /** `--service-account-max-token-expiration` in seconds; 0 = no cap below the API's limit. */
  maxExpirationSeconds: number;
  /** `--service-account-lookup`: reject tokens whose account or bound object is gone. */
  lookup?: ObjectLookup;
  now?: () => Date;
}

function objectRef(value: unknown): ObjectRefClaim | undefined {
  if (typeof value !== 'object' || value === null) return undefined;
  const { name, uid } = value as Record<string, unknown>;
  return typeof name === 'string' && typeof uid === 'string' && name !== '' ? { name, uid } : undefined;
}

function privateClaims(payload: JWTPayload): PrivateClaims | undefined {
  const raw = payload[SERVICE_ACCOUNT_CLAIM];
  if (typeof raw !== 'object' || raw === null) return undefined;
  const r = raw as Record<string, unknown>;
  const serviceaccount = objectRef(r['serviceaccount']);
  if (typeof r['namespace'] !== 'string' || r['namespace'] === '' || !serviceaccount) return undefined;
  const out: PrivateClaims = { namespace: r['namespace'], serviceaccount };
  const pod = objectRef(r['pod']);
  const secret = objectRef(r['secret']);
  if (pod) out.pod = pod;
  if (secret) out.secret = secret;
  return out;
}

function aliveWithUid(obj: ApiObject | undefined, uid: string): boolean {
  return obj !== undefined && !obj.metadata?.deletionTimestamp && (uid === '' || obj.metadata?.uid === uid);
}

export interface ServiceAccountTokens extends TokenAuthenticator {
  issue(req: IssueRequest): Promise<{ token: string; expires: Date }>;
}

/** Verified tokens, by digest, until they expire: signature checks are the expensive part. */
interface Verified {
  payload: JWTPayload;
  claims: PrivateClaims;
}

export function serviceAccountTokens(opts: ServiceAccountTokenOptions): ServiceAccountTokens {
  const now = opts.now ?? (() => new Date());
  const allowed = [...new Set(opts.verificationKeys.map((k) => k.alg))];
  const verified = new TtlCache<Verified>(60 * 60 * 1000, 10000);

  async function verifySignature(token: string): Promise<JWTPayload> {
    const header = decodeProtectedHeader(token);
    const candidates = opts.verificationKeys.filter((k) => k.alg === header.alg && (header.kid === undefined || k.kid === header.kid));
    if (candidates.length === 0) throw new Error(header.kid === undefined ? 'no verification key for the token algorithm' : 'the token was signed by an unknown key');
    let last: unknown;
    for (const candidate of candidates) {
      try {
        const { payload } = await jwtVerify(token, candidate.key, { algorithms: allowed, issuer: opts.issuers, currentDate: now() });
        return payload;
      } catch (err) {
        last = err;
      }
    }
    throw last instanceof Error ? last : new Error('the token signature is invalid');
  }

  return {
    name: 'service-account',

    async authenticateToken(token, audiences): Promise<MethodOutcome> {
      const issuer = unverifiedIssuer(token);
      if (issuer === undefined || !opts.issuers.includes(issuer)) return NOT_MINE;
      const digest = createHash('sha256').update(token).digest('base64');
      let entry = verified.get(digest);
      if (!entry || (entry.payload.exp ?? 0) * 1000 <= now().getTime()) {
        let payload: JWTPayload;
        try {
          payload = await verifySignature(token);
        } catch (err) {
          return rejected(`service account token is invalid: ${(err as Error).message}`);
        }
        const claims = privateClaims(payload);
        if (!claims || payload.sub !== `${SERVICE_ACCOUNT_USER_PREFIX}${claims.namespace}:${claims.serviceaccount.name}`) {
          return rejected('service account token claims are missing or inconsistent');
        }
        entry = { payload, claims };
        if (payload.exp !== undefined) verified.set(digest, entry);
      }
      const tokenAudiences = typeof entry.payload.aud === 'string' ? [entry.payload.aud] : (entry.payload.aud ?? []);
      const valid = audienceIntersection(tokenAudiences, audiences);
      if (valid.length === 0) return rejected('service account token audiences are invalid for the target audiences');
      const { claims } = entry;
      if (opts.lookup) {
        const lookup = opts.lookup;
        const bound = claims.pod ? (['pods', claims.pod] as const) : claims.secret ? (['secrets', claims.secret] as const) : undefined;
        const [account, target] = await Promise.all([
          lookup('serviceaccounts', claims.namespace, claims.serviceaccount.name),
          bound ? lookup(bound[0], claims.namespace, bound[1].name) : Promise.resolve(undefined),
        ]);
        if (!aliveWithUid(account, claims.serviceaccount.uid)) return rejected(`service account ${claims.namespace}/${claims.serviceaccount.name} has been deleted`);
        if (bound && !aliveWithUid(target, bound[1].uid)) {
          return rejected(`${bound[0] === 'pods' ? 'pod' : 'secret'} ${claims.namespace}/${bound[1].name} the token is bound to has been deleted`);
        }
      }
      const extra: Record<string, string[]> = {};
      if (claims.pod) {
        extra[EXTRA_POD_NAME] = [claims.pod.name];
        extra[EXTRA_POD_UID] = [claims.pod.uid];
      }
      if (typeof entry.payload.jti === 'string') extra[EXTRA_CREDENTIAL_ID] = [`JTI=${entry.payload.jti}`];
      const user: UserInfo = {
        username: `${SERVICE_ACCOUNT_USER_PREFIX}${claims.namespace}:${claims.serviceaccount.name}`,
        uid: claims.serviceaccount.uid,
        groups: [SERVICE_ACCOUNTS_GROUP, `${SERVICE_ACCOUNTS_GROUP}:${claims.namespace}`],
        extra,
      };
      return { status: 'authenticated', user, audiences: valid };
    },

    async issue(req) {
      const signing = opts.signingKey;
      if (!signing) throw new Error('no --service-account-signing-key-file is configured: this server cannot issue service account tokens');
      let seconds = req.expirationSeconds;
      if (opts.maxExpirationSeconds > 0 && seconds > opts.maxExpirationSeconds) seconds = opts.maxExpirationSeconds;
      const issuedAt = Math.floor(now().getTime() / 1000);
      const expires = issuedAt + seconds;
      const claims: PrivateClaims = { namespace: req.namespace, serviceaccount: { name: req.name, uid: req.uid } };
      if (req.bound?.kind === 'Pod') claims.pod = { name: req.bound.name, uid: req.bound.uid };
      if (req.bound?.kind === 'Secret') claims.secret = { name: req.bound.name, uid: req.bound.uid };
      const token = await new SignJWT({ [SERVICE_ACCOUNT_CLAIM]: claims })
        .setProtectedHeader({ alg: signing.alg, kid: signing.kid })
        .setIssuer(opts.issuers[0] as string)
        .setSubject(`${SERVICE_ACCOUNT_USER_PREFIX}${req.namespace}:${req.name}`)
        .setAudience(req.audiences.length > 0 ? req.audiences : opts.apiAudiences)
        .setIssuedAt(issuedAt)
        .setNotBefore(issuedAt)
        .setExpirationTime(expires)
        .setJti(randomUUID())
        .sign(signing.key);
      return { token, expires: new Date(expires * 1000) };
    },
  };
}
