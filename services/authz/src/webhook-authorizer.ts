import { createHash } from 'node:crypto';
import { TtlCache, loadWebhookConfig, postJson } from '@svc/service-kit';
import type { Attributes, Authorizer, AuthorizerDecision } from './authorizer';

/**
 * The Webhook mode (SPEC section 5, `--authorization-webhook-config-file`):
 * each decision not in the cache is asked of a remote service as a
 * SubjectAccessReview (v1 or v1beta1) over HTTPS. `allowed` allows,
 * `denied` denies, anything else has no opinion. A call that fails, times
 * out or answers malformed has no opinion either (the request is then denied
 * unless a later mode allows it), and is not cached; decisions are cached for
 * the authorized and unauthorized TTLs.
 */
export interface WebhookAuthorizerOptions {
  configFile: string;
  version: 'v1' | 'v1beta1';
  authorizedTtlMs: number;
  unauthorizedTtlMs: number;
  timeoutMs?: number;
  maxResponseBytes?: number;
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

export function webhookAuthorizer(opts: WebhookAuthorizerOptions): Authorizer {
  const creds = loadWebhookConfig(opts.configFile);
  const allowed = new TtlCache<AuthorizerDecision>(opts.authorizedTtlMs, 10000);
  const refused = new TtlCache<AuthorizerDecision>(opts.unauthorizedTtlMs, 10000);
  const timeoutMs = opts.timeoutMs ?? AUTHORIZATION_WEBHOOK_TIMEOUT_MS;
  const maxBytes = opts.maxResponseBytes ?? 1024 * 1024;
  return async (attrs) => {
    const body = JSON.stringify(reviewOf(attrs, opts.version));
    const key = createHash('sha256').update(body).digest('base64');
    const cached = allowed.get(key) ?? refused.get(key);
    if (cached) return cached;
    let reply;
    try {
      reply = await postJson(creds, body, timeoutMs, maxBytes);
    } catch (err) {
      return { decision: 'no-opinion', reason: `webhook: ${(err as Error).message}` };
    }
    if (reply.status < 200 || reply.status >= 300) return { decision: 'no-opinion', reason: `webhook: answered HTTP ${reply.status}` };
    let status: Record<string, unknown> | undefined;
    try {
      const doc = JSON.parse(reply.body) as { status?: unknown };
      status = typeof doc.status === 'object' && doc.status !== null ? (doc.status as Record<string, unknown>) : undefined;
    } catch {
      status = undefined;
    }
    if (!status) return { decision: 'no-opinion', reason: 'webhook: the answer is not a SubjectAccessReview with a status' };
    const reason = typeof status['reason'] === 'string' ? status['reason'] : '';
    const decision: AuthorizerDecision =
      status['allowed'] === true ? { decision: 'allow', reason } : status['denied'] === true ? { decision: 'deny', reason: reason || 'denied by the authorization webhook' } : { decision: 'no-opinion', reason };
    (decision.decision === 'allow' ? allowed : refused).set(key, decision);
    return decision;
  };
}
