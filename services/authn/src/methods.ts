import type { UserInfo } from '@svc/apimachinery';

/**
 * The contract every authentication method implements. A method looks at
 * the credential and answers one of three things:
 * - `authenticated`: the credential is good; `audiences` are the requested
 *   audiences it is valid for (the server's own when none were requested).
 * - `rejected`: the credential is of this method's kind and does not verify
 *   (a bad signature, an expired token, a deleted account). `error` says why,
 *   for logs; it never contains the credential.
 * - `not-mine`: this method does not recognise the credential; another may.
 */
export type MethodOutcome =
  | { status: 'authenticated'; user: UserInfo; audiences: string[] }
  | { status: 'rejected'; error: string }
  | { status: 'not-mine' };

export const NOT_MINE: MethodOutcome = { status: 'not-mine' };

export function rejected(error: string): MethodOutcome {
  return { status: 'rejected', error };
}

/** What a method sees of the request: the presented certificate chain and the credential headers. */
export interface AuthenticationInput {
  /** DER, leaf first, as the client presented it (not yet verified). */
  clientCertificateChain: Uint8Array[];
  /** Credential headers, lower-cased names. */
  headers: Record<string, string[]>;
  /** The request path, for methods whose answer depends on it (anonymous with path conditions). */
  path?: string;
}

/** A method that reads the whole request (client certificates, the authenticating proxy). */
export interface RequestAuthenticator {
  readonly name: string;
  authenticateRequest(input: AuthenticationInput, audiences: readonly string[]): Promise<MethodOutcome>;
}

/** A method that verifies a bearer token (token file, service-account, bootstrap, OIDC, webhook). */
export interface TokenAuthenticator {
  readonly name: string;
  authenticateToken(token: string, audiences: readonly string[]): Promise<MethodOutcome>;
}

/**
 * The audiences a credential valid for `tokenAudiences` serves, of those
 * `requested`: the intersection. Empty means not valid for any.
 */
export function audienceIntersection(tokenAudiences: readonly string[], requested: readonly string[]): string[] {
  const set = new Set(tokenAudiences);
  return requested.filter((a) => set.has(a));
}
