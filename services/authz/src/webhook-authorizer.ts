import { createHash } from 'node:crypto';
import type { CompiledExpression } from '@svc/cel';
import { TtlCache, loadWebhookConfig, postJson, type Credentials } from '@svc/service-kit';
import type { Attributes, Authorizer, AuthorizerDecision } from './authorizer';
import { recordWebhookCache, recordWebhookCall } from './authz-metrics';

/**
 * The Webhook mode (SPEC section 5, `--authorization-webhook-config-file`):
 * each decision not in the cache is asked of a remote service as a
 * SubjectAccessReview (v1 or v1beta1) over HTTPS. `allowed` allows,
 * `denied` denies, anything else has no opinion. A call that fails, times
 * out or answers malformed is not cached and follows the failure policy:
 * no opinion (the request is then denied unless a later mode allows it; the
 * only policy of the `--authorization-webhook-*` flags) or deny. Decisions
 * are cached for the authorized and unauthorized TTLs.
 *
 * An authorization configuration file's webhook may carry match conditions
 * (CEL over `request`, the SubjectAccessReview v1 spec): when one is false
 * the webhook is not asked (no opinion); when none is false and one fails
 * to evaluate, the failure policy decides; otherwise the webhook is asked.
 */
export type FailurePolicy = 'NoOpinion' | 'Deny';

export interface WebhookAuthorizerOptions {
  /** The kubeconfig-format connection file, or `credentials` already resolved (InClusterConfig). */
  configFile?: string;
  credentials?: Credentials;
  version: 'v1' | 'v1beta1';
  authorizedTtlMs: number;
  unauthorizedTtlMs: number;
  timeoutMs?: number;
  maxResponseBytes?: number;
  /** The configuration file's name of this webhook, used in reasons (`webhook <name>: ...`). */
  name?: string;
  /** NoOpinion by default. */
  failurePolicy?: FailurePolicy;
  matchConditions?: readonly CompiledExpression[];
}

export const AUTHORIZATION_WEBHOOK_TIMEOUT_MS = 10_000;

function reviewOf(attrs: Attributes, version: 'v1' | 'v1beta1'): Record<string, unknown> {
  const spec: Record<string, unknown> = {
    user: attrs.user.username,
    ...(attrs.user.uid ? { uid: attrs.user.uid } : {}),
    // v1beta1 names the groups field `group`.
    [version === 'v1' ? 'groups' : 'group']: attrs.user.groups,
    ...(Object.keys(attrs.user.extra).length > 0 ? { extra: attrs.user.extra } : {}),
  };
  if (attrs.resourceRequest) {
    spec['resourceAttributes'] = {
      namespace: attrs.namespace,
      verb: attrs.verb,
      group: attrs.apiGroup,
      version: attrs.apiVersion,
      resource: attrs.resource,
      subresource: attrs.subresource,
      name: attrs.name,
    };
  } else {
    spec['nonResourceAttributes'] = { path: attrs.path, verb: attrs.verb };
  }
  return { apiVersion: `authorization.svc.io/${version}`, kind: 'SubjectAccessReview', spec };
}

/** `request` of the match conditions: the SubjectAccessReview v1 spec with empty fields left out, as the original's unstructured form has it. */
export function matchRequestOf(attrs: Attributes): Record<string, unknown> {
  const nonEmpty = (o: Record<string, string>) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== ''));
  const extra = Object.fromEntries(Object.entries(attrs.user.extra).filter(([, v]) => v.length > 0));
  return {
    ...(attrs.user.username ? { user: attrs.user.username } : {}),
    ...(attrs.user.uid ? { uid: attrs.user.uid } : {}),
    ...(attrs.user.groups.length > 0 ? { groups: attrs.user.groups } : {}),
    ...(Object.keys(extra).length > 0 ? { extra } : {}),
    ...(attrs.resourceRequest
      ? { resourceAttributes: nonEmpty({ namespace: attrs.namespace, verb: attrs.verb, group: attrs.apiGroup, version: attrs.apiVersion, resource: attrs.resource, subresource: attrs.subresource, name: attrs.name }) }
      : { nonResourceAttributes: nonEmpty({ path: attrs.path, verb: attrs.verb }) }),
  };
}

export type MatchOutcome = { match: true } | { match: false } | { match: 'error'; error: string };

/** All conditions are evaluated: a false one wins over errors (as in the original), then an error, else a match. */
export function evaluateMatchConditions(conditions: readonly CompiledExpression[], request: Record<string, unknown>): MatchOutcome {
  const errors: string[] = [];
  for (const c of conditions) {
    const r = c.evaluate({ request });
    if (!r.ok) errors.push(`${JSON.stringify(c.source)}: ${r.error.message}`);
    else if (r.value === false) return { match: false };
    else if (r.value !== true) errors.push(`${JSON.stringify(c.source)}: the result is not a bool`);
  }
  return errors.length > 0 ? { match: 'error', error: `match condition failed: ${errors.join('; ')}` } : { match: true };
}

export function webhookAuthorizer(opts: WebhookAuthorizerOptions): Authorizer {
  const creds = opts.credentials ?? loadWebhookConfig(opts.configFile ?? '');
  const label = opts.name ? `webhook ${opts.name}` : 'webhook';
  const metricName = opts.name ?? 'webhook';
  const conditions = opts.matchConditions ?? [];
  // A failure is never cached; the policy says whether it denies.
  const failed = (message: string): AuthorizerDecision => ({ decision: opts.failurePolicy === 'Deny' ? 'deny' : 'no-opinion', reason: `${label}: ${message}` });
  const allowed = new TtlCache<AuthorizerDecision>(opts.authorizedTtlMs, 10000);
  const refused = new TtlCache<AuthorizerDecision>(opts.unauthorizedTtlMs, 10000);
  const timeoutMs = opts.timeoutMs ?? AUTHORIZATION_WEBHOOK_TIMEOUT_MS;
  const maxBytes = opts.maxResponseBytes ?? 1024 * 1024;
  return async (attrs) => {
    if (conditions.length > 0) {
      const matched = evaluateMatchConditions(conditions, matchRequestOf(attrs));
      if (matched.match === false) return { decision: 'no-opinion', reason: '' };
      if (matched.match === 'error') return failed(matched.error);
    }
    const body = JSON.stringify(reviewOf(attrs, opts.version));
    const key = createHash('sha256').update(body).digest('base64');
    const cached = allowed.get(key) ?? refused.get(key);
    recordWebhookCache(metricName, cached !== undefined);
    if (cached) return cached;
    let reply;
    const started = performance.now();
    try {
      reply = await postJson(creds, body, timeoutMs, maxBytes);
    } catch (err) {
      recordWebhookCall(metricName, /timed? ?out|timeout/i.test((err as Error).message) ? 'timeout' : 'error', started);
      return failed((err as Error).message);
    }
    recordWebhookCall(metricName, reply.status >= 200 && reply.status < 300 ? 'success' : 'error', started);
    if (reply.status < 200 || reply.status >= 300) return failed(`answered HTTP ${reply.status}`);
    let status: Record<string, unknown> | undefined;
    try {
      const doc = JSON.parse(reply.body) as { status?: unknown };
      status = typeof doc.status === 'object' && doc.status !== null ? (doc.status as Record<string, unknown>) : undefined;
    } catch {
      status = undefined;
    }
    if (!status) return failed('the answer is not a SubjectAccessReview with a status');
    const reason = typeof status['reason'] === 'string' ? status['reason'] : '';
    const decision: AuthorizerDecision =
      status['allowed'] === true ? { decision: 'allow', reason } : status['denied'] === true ? { decision: 'deny', reason: reason || `denied by the authorization ${label}` } : { decision: 'no-opinion', reason };
    (decision.decision === 'allow' ? allowed : refused).set(key, decision);
    return decision;
  };
}
