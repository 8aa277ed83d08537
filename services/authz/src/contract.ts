import type { AuthorizationAttributes } from '@svc/apimachinery';

/**
 * The authorization contract: what a caller asks (the attributes of a
 * request) and what it is told. Both the authorizers and the client read
 * these, so they live apart from either.
 */
export type Decision = 'allow' | 'deny' | 'no-opinion';

/** What is asked (shared with the admission expressions' authorizer library). */
export type Attributes = AuthorizationAttributes;

export interface AuthorizerDecision {
  decision: Decision;
  reason: string;
}

/** How the reason of a decision nobody had an opinion on begins (then the modes, and what they said). */
export const NO_OPINION_PREFIX = 'none of the authorization modes (';

/**
 * What the modes themselves said about a decision, without the summary of a
 * refusal: what access reviews report as their reason, as the original
 * server does (kubectl auth can-i prints it after "no").
 */
export function modesReason(d: AuthorizerDecision): string {
  if (!d.reason.startsWith(NO_OPINION_PREFIX)) return d.reason;
  const rest = d.reason.indexOf('; ');
  return rest < 0 ? '' : d.reason.slice(rest + 2);
}
