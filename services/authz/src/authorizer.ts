import { NO_OPINION_PREFIX, type Attributes, type AuthorizerDecision } from './contract';

export type { Attributes, AuthorizerDecision, Decision } from './contract';

/**
 * Authorization modes, consulted in order; the first that allows or denies
 * decides, and if none has an opinion the request is denied (SPEC section 5).
 * Members of `system:masters` may do everything, before any mode is asked.
 */
export type Authorizer = (attrs: Attributes) => AuthorizerDecision | Promise<AuthorizerDecision>;

export const MASTERS_GROUP = 'system:masters';


export const privilegedGroupAuthorizer: Authorizer = (attrs) =>
  attrs.user.groups.includes(MASTERS_GROUP) ? { decision: 'allow', reason: '' } : { decision: 'no-opinion', reason: '' };

export const alwaysAllow: Authorizer = () => ({ decision: 'allow', reason: '' });
export const alwaysDeny: Authorizer = () => ({ decision: 'deny', reason: 'Everything is forbidden.' });

export const MODES = ['AlwaysAllow', 'AlwaysDeny', 'ABAC', 'RBAC', 'Node', 'Webhook'] as const;
export type Mode = (typeof MODES)[number];

export class AuthorizationConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AuthorizationConfigError';
  }
}

export function parseModes(value: string): Mode[] {
  const modes = value.split(',').map((m) => m.trim()).filter(Boolean);
  if (modes.length === 0) throw new AuthorizationConfigError('at least one authorization mode must be given');
  const seen = new Set<string>();
  for (const m of modes) {
    if (!(MODES as readonly string[]).includes(m)) {
      throw new AuthorizationConfigError(`authorization mode ${JSON.stringify(m)} is not supported; supported modes: ${MODES.join(', ')}`);
    }
    if (seen.has(m)) throw new AuthorizationConfigError(`authorization mode ${JSON.stringify(m)} is given twice`);
    seen.add(m);
  }
  return modes as Mode[];
}

/** The authorizer of each mode that needs state (RBAC's policy, Node's graph, the webhook's connection). */
export interface ModeAuthorizers {
  ABAC?: Authorizer;
  RBAC?: Authorizer;
  Node?: Authorizer;
  Webhook?: Authorizer;
}

/** One link of the chain, named for messages: the mode, or the name an authorization configuration file gives it. */
export interface NamedAuthorizer {
  name: string;
  authorize: Authorizer;
}

/** The authorizer of mode `m`; a mode that needs state and has none is a configuration error. */
export function modeAuthorizer(m: Mode, stateful: ModeAuthorizers = {}): Authorizer {
  if (m === 'AlwaysAllow') return alwaysAllow;
  if (m === 'AlwaysDeny') return alwaysDeny;
  const a = stateful[m];
  if (!a) throw new AuthorizationConfigError(`authorization mode ${m} has no authorizer`);
  return a;
}

export function chain(modes: Mode[], stateful: ModeAuthorizers = {}): Authorizer {
  return chainOf(modes.map((m) => ({ name: m, authorize: modeAuthorizer(m, stateful) })));
}

/** The authorizers in order, after `system:masters`; the first with an opinion decides. */
export function chainOf(entries: readonly NamedAuthorizer[]): Authorizer {
  const authorizers: Authorizer[] = [privilegedGroupAuthorizer, ...entries.map((e) => e.authorize)];
  // Beyond the original server: a refusal says which modes were asked and had no opinion.
  const asked = `${NO_OPINION_PREFIX}${entries.map((e) => e.name).join(', ')}) allowed it`;
  return async (attrs) => {
    const reasons: string[] = [];
    for (const authorize of authorizers) {
      const d = await authorize(attrs);
      if (d.decision !== 'no-opinion') return d;
      if (d.reason) reasons.push(d.reason);
    }
    return { decision: 'no-opinion', reason: reasons.length > 0 ? `${asked}; ${reasons.join('; ')}` : asked };
  };
}
