import type { X509Certificate } from '@peculiar/x509';
import type { UserInfo } from '@svc/apimachinery';
import { authenticateCertificate } from './x509';

/**
 * The union of authentication methods. Rules (SPEC section 5): the first
 * method that succeeds decides; a presented credential that does not verify
 * (a client certificate or a bearer token) is a rejection, never anonymous
 * and never a fall through to another method; every authenticated user gets
 * `system:authenticated`; with no credentials the request is anonymous when
 * that is enabled.
 *
 * Only the client certificate chain and the `Authorization` header are
 * credentials here. Headers naming a user (`X-Remote-User` and the like) are
 * honoured only from an authenticating proxy with a verified proxy
 * certificate, which is not implemented, so they never change the identity.
 */
export interface AuthenticationInput {
  clientCertificateChain: Uint8Array[];
  headers: Record<string, string[]>;
}

export type AuthenticationResult =
  | { authenticated: true; user: UserInfo; method: string }
  | { authenticated: false; error: string };

export interface AuthenticatorOptions {
  clientCas: X509Certificate[];
  tokens: Map<string, UserInfo>;
  anonymous: boolean;
  now?: () => Date;
}

export const ANONYMOUS_USER = 'system:anonymous';
export const UNAUTHENTICATED_GROUP = 'system:unauthenticated';
export const AUTHENTICATED_GROUP = 'system:authenticated';

function withAuthenticatedGroup(user: UserInfo): UserInfo {
  const groups = user.groups.includes(AUTHENTICATED_GROUP) ? user.groups : [...user.groups, AUTHENTICATED_GROUP];
  return { ...user, groups };
}

export function bearerToken(headers: Record<string, string[]>): string | undefined {
  const value = headers['authorization']?.[0];
  if (!value) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(value.trim());
  return m ? (m[1] as string).trim() : undefined;
}

export type Authenticator = (input: AuthenticationInput) => Promise<AuthenticationResult>;

export function createAuthenticator(opts: AuthenticatorOptions): Authenticator {
  const now = opts.now ?? (() => new Date());
  return async (input) => {
    if (input.clientCertificateChain.length > 0) {
      const cert = await authenticateCertificate(input.clientCertificateChain, opts.clientCas, now());
      if (!cert.ok) return { authenticated: false, error: cert.error };
      return { authenticated: true, user: withAuthenticatedGroup(cert.user), method: 'x509' };
    }
    const token = bearerToken(input.headers);
    if (token !== undefined) {
      const user = opts.tokens.get(token);
      if (user) return { authenticated: true, user: withAuthenticatedGroup(user), method: 'token-file' };
      return { authenticated: false, error: 'invalid bearer token' };
    }
    if (opts.anonymous) {
      return { authenticated: true, user: { username: ANONYMOUS_USER, uid: '', groups: [UNAUTHENTICATED_GROUP], extra: {} }, method: 'anonymous' };
    }
    return { authenticated: false, error: '' };
  };
}
