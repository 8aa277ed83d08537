import type { UserInfo } from '@svc/apimachinery';
import type { AuthenticationInput, RequestAuthenticator, TokenAuthenticator } from './methods';

export type { AuthenticationInput } from './methods';

/**
 * The union of authentication methods. Rules (SPEC section 5): the first
 * method that succeeds decides; every authenticated user gets
 * `system:authenticated`; with no credentials the request is anonymous when
 * that is enabled.
 *
 * Fail closed: a request method that rejects (a client certificate that does
 * not verify) ends authentication with 401, and a bearer token that no token
 * method accepts is 401 too, never anonymous. Headers naming a user
 * (`X-Remote-User` and the like) count only when the authenticating-proxy
 * method is configured and the proxy's certificate verifies.
 */
export type AuthenticationResult =
  | { authenticated: true; user: UserInfo; method: string; audiences: string[] }
  | { authenticated: false; error: string };

export interface AuthenticatorOptions {
  /** Request methods, in order (the authenticating proxy before client certificates). */
  requestAuthenticators: RequestAuthenticator[];
  /** Token methods, in order; the first that authenticates decides. */
  tokenAuthenticators: TokenAuthenticator[];
  /** Whether a request without credentials is anonymous (it may depend on the path). */
  anonymous: boolean | ((path: string | undefined) => boolean);
  /** The audiences of this server (`--api-audiences`), used when a request names none. */
  apiAudiences: string[];
}

export const ANONYMOUS_USER = 'system:anonymous';
export const UNAUTHENTICATED_GROUP = 'system:unauthenticated';
export const AUTHENTICATED_GROUP = 'system:authenticated';

function withAuthenticatedGroup(user: UserInfo): UserInfo {
  const groups = user.groups.includes(AUTHENTICATED_GROUP) ? user.groups : [...user.groups, AUTHENTICATED_GROUP];
  return { ...user, groups };
}

/** The bearer token of an `Authorization` header, or undefined when there is none. */
export function bearerToken(headers: Record<string, string[]>): string | undefined {
  const value = headers['authorization']?.[0];
  if (!value) return undefined;
  const m = /^Bearer\s+(.+)$/i.exec(value.trim());
  return m ? (m[1] as string).trim() : undefined;
}

export type Authenticator = (input: AuthenticationInput, audiences?: readonly string[]) => Promise<AuthenticationResult>;

/** Verifies a bearer token with the token methods only (TokenReview). */
export type TokenVerifier = (token: string, audiences?: readonly string[]) => Promise<AuthenticationResult>;

export function createTokenVerifier(opts: Pick<AuthenticatorOptions, 'tokenAuthenticators' | 'apiAudiences'>): TokenVerifier {
  return async (token, requested) => {
    const audiences = requested && requested.length > 0 ? requested : opts.apiAudiences;
    const errors: string[] = [];
    for (const method of opts.tokenAuthenticators) {
      const outcome = await method.authenticateToken(token, audiences);
      if (outcome.status === 'authenticated') return { authenticated: true, user: withAuthenticatedGroup(outcome.user), method: method.name, audiences: outcome.audiences };
      if (outcome.status === 'rejected') errors.push(`[${method.name}] ${outcome.error}`);
    }
    return { authenticated: false, error: errors.length > 0 ? errors.join(', ') : 'invalid bearer token' };
  };
}

export function createAuthenticator(opts: AuthenticatorOptions): Authenticator {
  const verifyToken = createTokenVerifier(opts);
  return async (input, requested) => {
    const audiences = requested && requested.length > 0 ? requested : opts.apiAudiences;
    for (const method of opts.requestAuthenticators) {
      const outcome = await method.authenticateRequest(input, audiences);
      if (outcome.status === 'authenticated') return { authenticated: true, user: withAuthenticatedGroup(outcome.user), method: method.name, audiences: outcome.audiences };
      if (outcome.status === 'rejected') return { authenticated: false, error: outcome.error };
    }
    const token = bearerToken(input.headers);
    if (token !== undefined) return verifyToken(token, audiences);
    const anonymous = typeof opts.anonymous === 'function' ? opts.anonymous(input.path) : opts.anonymous;
    if (anonymous) {
      return { authenticated: true, user: { username: ANONYMOUS_USER, uid: '', groups: [UNAUTHENTICATED_GROUP], extra: {} }, method: 'anonymous', audiences: [...audiences] };
    }
    return { authenticated: false, error: '' };
  };
}
