import { timingSafeEqual } from 'node:crypto';
import type { ApiObject } from '@svc/apimachinery';
import { SECRET_TYPES } from './secret';

/**
 * Bootstrap tokens (SPEC sections 2, 3 and 5): `<id>.<secret>`, six and
 * sixteen lowercase alphanumerics, stored as the Secret
 * `bootstrap-token-<id>` of type `bootstrap.svc.io/token` in the system
 * namespace. Authentication (authn), the cluster-info signer and the token
 * cleaner (controller-manager) read them the same way, here.
 */

export const BOOTSTRAP_TOKEN_SECRET_PREFIX = 'bootstrap-token-';
export const BOOTSTRAP_USER_PREFIX = 'system:bootstrap:';
export const BOOTSTRAPPERS_GROUP = 'system:bootstrappers';
export const CLUSTER_INFO_CONFIG_MAP = 'cluster-info';
export const JWS_KEY_PREFIX = 'jws-kubeconfig-';

const TOKEN = /^([a-z0-9]{6})\.([a-z0-9]{16})$/;
const TOKEN_ID = /^[a-z0-9]{6}$/;
const TOKEN_SECRET = /^[a-z0-9]{16}$/;
const EXTRA_GROUP = /^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$/;

/** The id and secret of a bearer token in the bootstrap format, or undefined. */
export function parseBootstrapToken(token: string): { id: string; secret: string } | undefined {
  const m = TOKEN.exec(token);
  return m ? { id: m[1] as string, secret: m[2] as string } : undefined;
}

export interface BootstrapTokenSecret {
  id: string;
  secret: string;
  description: string;
  /** Undefined: never expires. */
  expiration?: Date;
  usageAuthentication: boolean;
  usageSigning: boolean;
  extraGroups: string[];
}

function dataString(data: Record<string, unknown>, key: string): string | undefined {
  const v = data[key];
  return typeof v === 'string' ? Buffer.from(v, 'base64').toString('utf8') : undefined;
}

/**
 * Reads a stored bootstrap-token Secret (its `data` is base64). Undefined,
 * with the reason, when the Secret is not a usable bootstrap token: wrong
 * type or name, id or secret missing or malformed, an unparsable expiration,
 * extra groups outside `system:bootstrappers:`.
 */
export function readBootstrapTokenSecret(secret: ApiObject): { token: BootstrapTokenSecret } | { problem: string } {
  const name = secret.metadata?.name ?? '';
  if (secret['type'] !== SECRET_TYPES.bootstrapToken) return { problem: `secret ${name} is not of type ${SECRET_TYPES.bootstrapToken}` };
  const data = (secret['data'] ?? {}) as Record<string, unknown>;
  const id = dataString(data, 'token-id') ?? '';
  const tokenSecret = dataString(data, 'token-secret') ?? '';
  if (!TOKEN_ID.test(id) || !TOKEN_SECRET.test(tokenSecret)) return { problem: `secret ${name} has no valid token-id and token-secret` };
  if (name !== `${BOOTSTRAP_TOKEN_SECRET_PREFIX}${id}`) return { problem: `secret ${name} does not match its token-id (${BOOTSTRAP_TOKEN_SECRET_PREFIX}${id})` };
  const token: BootstrapTokenSecret = {
    id,
    secret: tokenSecret,
    description: dataString(data, 'description') ?? '',
    usageAuthentication: dataString(data, 'usage-bootstrap-authentication') === 'true',
    usageSigning: dataString(data, 'usage-bootstrap-signing') === 'true',
    extraGroups: [],
  };
  const expiration = dataString(data, 'expiration');
  if (expiration !== undefined) {
    const at = new Date(expiration);
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/.test(expiration) || Number.isNaN(at.getTime())) return { problem: `secret ${name} has an invalid expiration (RFC 3339 expected)` };
    token.expiration = at;
  }
  const groups = dataString(data, 'auth-extra-groups');
  if (groups !== undefined && groups.trim() !== '') {
    for (const g of groups.split(',').map((x) => x.trim())) {
      if (!EXTRA_GROUP.test(g)) return { problem: `secret ${name} has an invalid auth-extra-groups entry ${JSON.stringify(g)} (must start with system:bootstrappers:)` };
      token.extraGroups.push(g);
    }
  }
  return { token };
}

export function bootstrapTokenExpired(token: BootstrapTokenSecret, now: Date): boolean {
  return token.expiration !== undefined && token.expiration.getTime() <= now.getTime();
}

/** Compares a presented secret with the stored one without leaking where they differ. */
export function bootstrapSecretMatches(token: BootstrapTokenSecret, presented: string): boolean {
  const a = Buffer.from(token.secret);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}
