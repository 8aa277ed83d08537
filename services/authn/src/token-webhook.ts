import { createHash } from 'node:crypto';
import type { UserInfo } from '@svc/apimachinery';
import { TtlCache, loadWebhookConfig, postJson, type Logger, type WebhookReply } from '@svc/service-kit';
import { audienceIntersection, rejected, type MethodOutcome, type TokenAuthenticator } from './methods';
import { recordTokenCache } from './authn-metrics';

export { loadWebhookConfig };

/**
 * The token authentication webhook (SPEC section 5): a bearer token no
 * other method recognised is POSTed as a TokenReview to a remote service
 * described by a kubeconfig-format file; its answer decides. Anything but a
 * well-formed answer (an error status, a timeout, a body that is too big or
 * not a TokenReview, `authenticated` without a username) is a rejection:
 * 401, never a crash and never anonymous.
 *
 * Caching follows the original server: the webhook's decisions are kept for
 * the cache TTL under a digest of the token and the audiences, except a
 * refusal that carries an `error` (the original treats that as the webhook
 * failing to check the token, and does not cache errors); failures to get a
 * decision are never cached. Connection failures and the answers that say
 * "try again" (429, 500, 504) are retried with backoff, all attempts within
 * one timeout.
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
  /** Bounds every review, retries included. */
  timeoutMs?: number;
  maxResponseBytes?: number;
  /** The first pause before a retry; each next one is 1.5 times longer. */
  retryBackoffMs?: number;
  maxCacheEntries?: number;
  logger?: Logger;
}

export const WEBHOOK_TIMEOUT_MS = 10_000;
export const WEBHOOK_MAX_RESPONSE_BYTES = 1024 * 1024;
export const WEBHOOK_RETRY_BACKOFF_MS = 500;
/** Attempts per review, the first included. */
export const WEBHOOK_MAX_ATTEMPTS = 5;
export const WEBHOOK_CACHE_ENTRIES = 10_000;

/** Connection errors worth another attempt: the webhook was not reached or dropped the connection. */
const RETRIABLE_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN']);
/** Statuses that say "try again" (too many requests, an internal error, a gateway timeout). */
const RETRIABLE_STATUSES = new Set([429, 500, 504]);

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

/**
 * A review's outcome; whether it may be cached (a decision, not a refusal
 * with an error); whether it is a failure to get a decision at all.
 */
export interface Review {
  outcome: MethodOutcome;
  cacheable: boolean;
  failed: boolean;
}

/**
 * Reads a webhook's answer; `audiences` are those requested (none: not
 * audience-limited). `token`, when given, is cut out of the webhook's error
 * text: a webhook that echoes it must not get it into our logs.
 */
export function interpretReply(reply: WebhookReply, audiences: readonly string[], apiAudiences: readonly string[], token = ''): Review {
  const failed = (why: string): Review => ({ outcome: rejected(`token webhook: ${why}`), cacheable: false, failed: true });
  const decided = (outcome: MethodOutcome, cacheable = true): Review => ({ outcome, cacheable, failed: false });
  if (reply.status < 200 || reply.status >= 300) return failed(`answered HTTP ${reply.status}`);
  let doc: unknown;
  try {
    doc = JSON.parse(reply.body);
  } catch {
    return failed('answered something that is not JSON');
  }
  const status = (doc as { status?: unknown } | null)?.status;
  if (typeof status !== 'object' || status === null) return failed('answered without a status');
  const s = status as Record<string, unknown>;
  const replied = s['audiences'] === undefined || s['audiences'] === null ? [] : stringList(s['audiences']);
  if (!replied) return failed('status.audiences must be a list of strings');
  // As the original: the audiences are checked first, whatever the verdict,
  // and a reply without audiences speaks for this server's own.
  let valid: string[] = [];
  if (audiences.length > 0) {
    valid = audienceIntersection(replied.length > 0 ? replied : apiAudiences, audiences);
    if (valid.length === 0) return decided(rejected('token webhook: the token is not valid for the requested audiences'));
  }
  if (s['authenticated'] !== true) {
    if (typeof s['error'] === 'string' && s['error'] !== '') {
      const error = token === '' ? s['error'] : s['error'].split(token).join('[token]');
      return decided(rejected(`token webhook: ${error.slice(0, 512)}`), false);
    }
    return decided(rejected('token webhook: the token was not authenticated'));
  }
  const user = userOf(s['user']);
  if (typeof user === 'string') return failed(user);
  return decided({ status: 'authenticated', user, audiences: valid });
}

const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

export function tokenWebhookAuthenticator(opts: TokenWebhookOptions): TokenAuthenticator {
  const creds = loadWebhookConfig(opts.configFile);
  const cache = new TtlCache<MethodOutcome>(opts.cacheTtlMs, opts.maxCacheEntries ?? WEBHOOK_CACHE_ENTRIES);
  // Reviews under way by cache key: the same token arriving on many requests at once is reviewed once.
  const inflight = new Map<string, Promise<MethodOutcome>>();
  const timeoutMs = opts.timeoutMs ?? WEBHOOK_TIMEOUT_MS;
  const maxBytes = opts.maxResponseBytes ?? WEBHOOK_MAX_RESPONSE_BYTES;
  const backoffMs = opts.retryBackoffMs ?? WEBHOOK_RETRY_BACKOFF_MS;
  const apiVersion = `authentication.svc.io/${opts.version}`;

  /** POSTs the review, again after a pause while the webhook says to and time is left. */
  async function post(body: string): Promise<WebhookReply> {
    const deadline = Date.now() + timeoutMs;
    let pause = backoffMs;
    for (let attempt = 1; ; attempt++) {
      // A tagged result rather than `instanceof Error`, which errors from another realm fail.
      let result: { reply: WebhookReply; retriable: boolean } | { error: unknown; retriable: boolean };
      try {
        const reply = await postJson(creds, body, Math.max(1, deadline - Date.now()), maxBytes);
        result = { reply, retriable: RETRIABLE_STATUSES.has(reply.status) };
      } catch (error) {
        result = { error, retriable: RETRIABLE_CODES.has((error as NodeJS.ErrnoException | undefined)?.code ?? '') };
      }
      // Jitter of up to a fifth, so that callers that failed together do not retry together.
      const wait = pause * (1 + Math.random() * 0.2);
      if (!result.retriable || attempt >= WEBHOOK_MAX_ATTEMPTS || Date.now() + wait >= deadline) {
        if ('error' in result) throw result.error;
        return result.reply;
      }
      await sleep(wait);
      pause *= 1.5;
    }
  }

  async function review(token: string, audiences: readonly string[]): Promise<Review> {
    // Audiences go with the review when the request is audience-limited, as the original sends them.
    const spec: Record<string, unknown> = audiences.length > 0 ? { token, audiences: [...audiences] } : { token };
    let reply: WebhookReply;
    try {
      reply = await post(JSON.stringify({ apiVersion, kind: 'TokenReview', metadata: {}, spec }));
    } catch (err) {
      return { outcome: rejected(`token webhook: ${(err as Error | undefined)?.message ?? String(err)}`), cacheable: false, failed: true };
    }
    return interpretReply(reply, audiences, opts.apiAudiences, token);
  }

  return {
    name: 'webhook',
    async authenticateToken(token, audiences) {
      // The token itself is never a key: only its digest, with the audiences it was asked for.
      const key = createHash('sha256').update(token).update('\0').update(audiences.join('\0')).digest('base64');
      const cached = cache.get(key);
      if (cache.enabled) recordTokenCache(cached !== undefined);
      if (cached) return cached;
      let pending = inflight.get(key);
      if (!pending) {
        pending = review(token, audiences).then((r) => {
          if (r.cacheable) cache.set(key, r.outcome);
          // An outage or a misconfiguration is the operator's concern; a refusal is not. Never the token.
          if (r.failed && r.outcome.status === 'rejected') opts.logger?.warn('token webhook gave no decision', { error: r.outcome.error });
          return r.outcome;
        });
        inflight.set(key, pending);
        const forget = () => inflight.delete(key);
        pending.then(forget, forget);
      }
      return pending;
    },
  };
}
