import { ApiError } from '@svc/apimachinery';
import { apiVersionOf } from './debug';
import { enterLimit, type InFlightLimits } from './max-in-flight';
import { requestKind } from '../apiserver-metrics';
import { isLongRunning } from '../request-info';
import { deadlineFrom, requestInfoFrom, userFrom } from '../context';
import { queueWaitLimitMs } from '../request-timeout';
import type { Handler } from '../filters/chain';
import type { FlowControl } from './controller';
import type { RejectReason } from './queueset';
import { estimateSeats, type ObjectCountFn } from './work-estimate';

/**
 * API Priority and Fairness, after authentication and impersonation and
 * before authorization (as the original): each request is classified by the
 * first matching FlowSchema, its response names the schema and priority
 * level (`X-Svc-PF-FlowSchema-UID`, `X-Svc-PF-PriorityLevel-UID`), and it
 * runs when its level admits it: at once for the exempt level, when seats
 * are free for a Reject level, after fair queuing for a Queue level. A
 * request its level can neither run nor queue, or that waited too long, is
 * answered 429 with Retry-After; a client that goes away while queued
 * leaves its queue. Long-running requests (watches, exec, proxy, follow)
 * are not dispatched here: the watch cap bounds them.
 */

export const FLOW_SCHEMA_UID_HEADER = 'X-Svc-PF-FlowSchema-UID';
export const PRIORITY_LEVEL_UID_HEADER = 'X-Svc-PF-PriorityLevel-UID';
/** What a refused client is told to wait, in seconds. */
const RETRY_AFTER_SECONDS = 1;

/** The 429 of a request flow control refused. */
export function tooManyRequests(reason: RejectReason | 'max-in-flight'): ApiError {
  const why =
    reason === 'time-out'
      ? 'it waited too long in its queue'
      : reason === 'queue-full'
        ? 'its queue is full'
        : reason === 'max-in-flight'
          ? 'too many requests of its kind are in flight'
          : 'its priority level is at its concurrency limit';
  return ApiError.tooManyRequests(`Too many requests, please try again later (${why}).`, RETRY_AFTER_SECONDS);
}

export function withPriorityAndFairness(handler: Handler, fc: FlowControl, count: ObjectCountFn): Handler {
  return async (req, res) => {
    const info = requestInfoFrom(req);
    if (isLongRunning(info)) return handler(req, res);
    const user = userFrom(req);
    const c = fc.classify(user, info);
    res.setHeader(FLOW_SCHEMA_UID_HEADER, c.schema.uid);
    res.setHeader(PRIORITY_LEVEL_UID_HEADER, c.level.config.uid);
    const ticket = fc.admit(c, estimateSeats(info, count), {
      user: user.username,
      verb: info.verb,
      path: info.path,
      namespace: info.namespace,
      name: info.name,
      apiVersion: apiVersionOf(info),
      resource: info.resource,
      subresource: info.subresource,
    }, queueWaitOf(req));
    // A client gone while its request waits: the request leaves its queue (nothing once it runs).
    const gone = (): void => ticket.cancel();
    res.once('close', gone);
    const decision = await ticket.decision;
    res.off('close', gone);
    if (decision === 'cancelled') return;
    if (decision !== 'execute') throw tooManyRequests(decision);
    try {
      await handler(req, res);
    } finally {
      ticket.finish();
    }
  };
}

/**
 * How long the request may still wait in its queue: a quarter of the time
 * its deadline allows (at most a minute), counted from its arrival, as the
 * original derives it; undefined (the configured wait) without a deadline.
 */
function queueWaitOf(req: Parameters<Handler>[0]): number | undefined {
  const d = deadlineFrom(req);
  return d && Math.max(0, d.receivedAt + queueWaitLimitMs(d.receivedAt, d.deadline) - Date.now());
}

/**
 * With `--enable-priority-and-fairness=false`: the original's max-in-flight
 * limit, read-only and mutating requests counted apart, 429 past either
 * limit (0: no limit). Long-running requests and system:masters are not
 * limited.
 */
export function withMaxInFlight(handler: Handler, limits: InFlightLimits): Handler {
  return async (req, res) => {
    const info = requestInfoFrom(req);
    if (isLongRunning(info)) return handler(req, res);
    const release = enterLimit(limits, requestKind(info, req.method), userFrom(req));
    if (!release) throw tooManyRequests('max-in-flight');
    try {
      await handler(req, res);
    } finally {
      release();
    }
  };
}
