/**
 * The authentication service: who is making this request? `start(config)`
 * runs it; `AuthnClient` is how the gateway calls it.
 */
export { start, type AuthnConfig, type AuthnHandle } from './server';
export { AuthnClient, type AuthenticateInput, type AuthenticateOutcome, type IssueTokenInput } from './client';
export { serviceAccountTokens, parseSigningKey, parseVerificationKeys, KeyFileError, SERVICE_ACCOUNT_CLAIM, type ServiceAccountTokens, type IssueRequest } from './service-account';
export { createAuthenticator, createTokenVerifier, bearerToken, ANONYMOUS_USER, AUTHENTICATED_GROUP, UNAUTHENTICATED_GROUP, type AuthenticationResult } from './authenticator';
export type { MethodOutcome, AuthenticationInput, RequestAuthenticator, TokenAuthenticator } from './methods';
export { parseTokenFile, parseCsvLine, TokenFileError, tokenFileAuthenticator } from './token-file';
export { clientCertificateAuthenticator } from './x509';
export { AUTHN_FLAGS } from './flags';
