/**
 * The authorization service: may this user do this? `start(config)` runs it;
 * `AuthzClient` is how the gateway calls it.
 */
export { start, type AuthzConfig, type AuthzHandle } from './server';
export { AuthzClient } from './client';
export { chain, parseModes, privilegedGroupAuthorizer, MASTERS_GROUP, MODES, AuthorizationConfigError, type Attributes, type Authorizer, type AuthorizerDecision, type Decision, type Mode } from './authorizer';
export { AUTHZ_FLAGS } from './flags';
export { RbacPolicy, ruleAllows, uncoveredRules, type PolicyRule, type Binding, type Subject } from './rbac';
