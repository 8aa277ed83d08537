/**
 * The authentication service: who is making this request? `start(config)`
 * runs it; `AuthnClient` is how the gateway calls it.
 */
export { start, type AuthnConfig, type AuthnHandle } from './server';
export { AuthnClient, type AuthenticateInput, type AuthenticateOutcome } from './client';
export { createAuthenticator, bearerToken, ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, type AuthenticationResult } from './authenticator';
export { parseTokenFile, parseCsvLine, TokenFileError } from './token-file';
export { AUTHN_FLAGS } from './flags';
