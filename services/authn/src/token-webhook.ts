import { createHash } from 'node:crypto';
import type { UserInfo } from '@svc/apimachinery';
import { TtlCache, loadWebhookConfig, postJson, type WebhookReply } from '@svc/service-kit';

export { loadWebhookConfig };
import { audienceIntersection, rejected, type MethodOutcome, type TokenAuthenticator } from './methods';

/**
 * The token authentication webhook (SPEC section 5): a bearer token no
 * other method recognised is POSTed as a TokenReview to a remote service
 * described by a kubeconfig-format file; its answer decides. Answers are
 * cached by a digest of the token and the audiences for the cache TTL.
 * Anything but a well-formed answer (an error status, a timeout, a body that
 * is too big or not a TokenReview, `authenticated` without a username) is a
 * rejection: 401, never a crash and never anonymous.
 */

export type TokenReviewVersion = 'v1' | 'v1beta1';

export interface TokenWebhookOptions {
  /** `--authentication-token-webhook-config-file`. */
  configFile: string;
  /** `--authentication-token-webhook-cache-ttl`, in ms (0 disables the cache). */
  cacheTtlMs: number;
  /** `--authentication-token-webhook-version`. */
  version: TokenReviewVersion;
  /** The server's own audiences, which a reply without audiences is valid for. */
  apiAudiences: string[];
  timeoutMs?: number;
  maxResponseBytes?: number;
}

export const WEBHOOK_TIMEOUT_MS = 10_000;
export const WEBHOOK_MAX_RESPONSE_BYTES = 1024 * 1024;

function stringList(value: unknown): string[] | undefined {
  return Array.isArray(value) && value.every((v) => typeof v === 'string') ? (value as string[]) : undefined;
}

/** The user of a reply's `status.user`, or why it is not one. */
function userOf(raw: unknown): UserInfo | string {
  if (typeof raw !== 'object' || raw === null) return 'status.user is missing';
  const u = raw as Record<string, unknown>;
  if (typeof u['username'] !== 'string' || u['username'] === '') return 'status.user.username is required';
  const groups = u['groups'] === undefined || u['groups'] === null ? [] : stringList(u['groups']);
  if (!groups) return 'status.user.groups must be a list of strings';
  const extra: Record<string, string[]> = {};
  if (u['extra'] !== undefined && u['extra'] !== null) {
    if (typeof u['extra'] !== 'object' || Array.isArray(u['extra'])) return 'status.user.extra must be a map of string lists';
    for (const [k, v] of Object.entries(u['extra'] as Record<string, unknown>)) {
      const values = stringList(v);
      if (!values) return `status.user.extra[${JSON.stringify(k)}] must be a list of strings`;
      extra[k] = values;
    }
  }
  return { username: u['username'], uid: typeof u['uid'] === 'string' ? u['uid'] : '', groups, extra };
}

export function tokenWebhookAuthenticator(opts: TokenWebhookOptions): TokenAuthenticator {
  const creds = loadWebhookConfig(opts.configFile);
  const cache = new TtlCache<MethodOutcome>(opts.cacheTtlMs, 10000);
  const timeoutMs = opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  const maxBytes = opts.maxResponseBytes ?? WEBHOOK_MAX_RESPONSE_BYTES;
  const apiVersion = `authentication.svc.io/${opts.version}`;

  /** The outcome, and whether it is the webhook's decision (cached) rather than a failure to get one (not cached). */
  async function review(token: string, audiences: readonly string[]): Promise<{ outcome: MethodOutcome; decided: boolean }> {
    const failed = (why: string) => ({ outcome: rejected(why), decided: false });
    const ownAudiences = audiences.length === opts.apiAudiences.length && audiences.every((a, i) => a === opts.apiAudiences[i]);
    const spec: Record<string, unknown> = { token };
    // Audiences are sent when they are not simply this server's own.
    if (audiences.length > 0 && !ownAudiences) spec['audiences'] = [...audiences];
    let reply: WebhookReply;
    try {
      reply = await postJson(creds, JSON.stringify({ apiVersion, kind: 'TokenReview', metadata: {}, spec }), timeoutMs, maxBytes);
    } catch (err) {
      return failed(`token webhook: ${(err as Error).message}`);
    }
    if (reply.status < 200 || reply.status >= 300) return failed(`token webhook answered HTTP ${reply.status}`);
    let doc: unknown;
    try {
      doc = JSON.parse(reply.body);
    } catch {
      return failed('token webhook answered something that is not JSON');
    }
    const status = (doc as { status?: unknown } | null)?.status;
    if (typeof status !== 'object' || status === null) return failed('token webhook answered without a status');
    const s = status as Record<string, unknown>;
    if (s['authenticated'] !== true) {
      const error = typeof s['error'] === 'string' && s['error'] !== '' ? s['error'] : 'the token webhook did not authenticate the token';
      return { outcome: rejected(`token webhook: ${error.slice(0, 512)}`), decided: true };
    }
    const user = userOf(s['user']);
    if (typeof user === 'string') return failed(`token webhook: ${user}`);
    const replied = s['audiences'] === undefined || s['audiences'] === null ? [] : stringList(s['audiences']);
    if (!replied) return failed('token webhook: status.audiences must be a list of strings');
    // Without audiences the token is valid for this server itself.
    const valid = replied.length === 0 ? audienceIntersection(opts.apiAudiences, audiences) : audienceIntersection(replied, audiences);
    if (valid.length === 0) return { outcome: rejected('token webhook: the token is not valid for the requested audiences'), decided: true };
    return { outcome: { status: 'authenticated', user, audiences: valid }, decided: true };
  }

  return {
    name: 'webhook',
    async authenticateToken(token, audiences) {
      const key = createHash('sha256').update(token).update('\0').update(audiences.join('\0')).digest('base64');
      const cached = cache.get(key);
      if (cached) return cached;
      const { outcome, decided } = await review(token, audiences);
      if (decided) cache.set(key, outcome);
      return outcome;
    },
  };
}
