import { ApiError } from '@svc/apimachinery';
import { DurationError, FlagError, parseDuration, parseGoDuration } from '@svc/service-kit';

/**
 * Request deadlines, as the original server derives them: a request that is
 * not long-running must be answered within the `timeout` query parameter
 * when it is positive and shorter than `--request-timeout`, and within
 * `--request-timeout` otherwise (no parameter, `0`, a negative value, or a
 * longer one). A value that is not a duration is 400 BadRequest.
 */

/**
 * The `timeout` query parameter (its first value) in milliseconds; undefined
 * when absent or empty. Not a duration: 400 BadRequest with the original's
 * message.
 */
export function parseTimeoutParam(query: URLSearchParams): number | undefined {
  const raw = query.get('timeout');
  if (raw === null || raw === '') return undefined;
  try {
    return parseGoDuration(raw);
  } catch (err) {
    if (!(err instanceof DurationError)) throw err;
    // The value is quoted in the message; a long one is cut, as everywhere a refused value is repeated.
    const shown = err.message.length > 300 ? `${err.message.slice(0, 300)}...` : err.message;
    throw ApiError.badRequest(`invalid timeout specified in the request URL - ${shown}`);
  }
}

/** `--request-timeout` in milliseconds: a duration (`60s`, `1m0s`) greater than 0; anything else refuses the start, naming the flag. */
export function requestTimeoutFlag(value: string): number {
  const ms = parseDuration(value, 'request-timeout');
  if (ms <= 0) throw new FlagError('--request-timeout: must be greater than 0');
  return ms;
}

/**
 * How long a request may take: the client's timeout when it is positive and
 * shorter than the server's maximum (`--request-timeout`), the maximum
 * otherwise (a timeout of 0 or less means "none of my own").
 */
export function effectiveTimeoutMs(requested: number | undefined, maximumMs: number): number {
  return requested !== undefined && requested > 0 && requested < maximumMs ? requested : maximumMs;
}

/** The longest any request waits in a priority level's queue, whatever its deadline. */
export const MAX_QUEUE_WAIT_MS = 60_000;

/**
 * How long a request may wait in a priority-and-fairness queue, counted from
 * its arrival: a quarter of the time its deadline allows, at most a minute.
 */
export function queueWaitLimitMs(receivedAt: number, deadline: number): number {
  return Math.min(Math.max(0, deadline - receivedAt) / 4, MAX_QUEUE_WAIT_MS);
}

/**
 * The verbs the original serves through its request finisher (the writes):
 * a deadline that passes while one of them runs reads as such. Others are
 * cut off by the timeout filter, with its own wording.
 */
const FINISHED_VERBS = new Set(['create', 'update', 'patch', 'delete', 'deletecollection']);

/**
 * The 504 of a request whose deadline passed before it was answered, worded
 * as the original words it for the verb (without one: as for a write).
 */
export function deadlineExceeded(info: { isResourceRequest: boolean; verb: string } = { isResourceRequest: true, verb: 'create' }): ApiError {
  const message =
    info.isResourceRequest && FINISHED_VERBS.has(info.verb)
      ? 'Timeout: request did not complete within requested timeout - context deadline exceeded'
      : 'Timeout: request did not complete within the allotted timeout';
  // The original's Status carries empty details (a retry-after of 0 is left out).
  return new ApiError(504, 'Timeout', message, {});
}

/**
 * Options of a call made for a request: its id, and a timeout of `limitMs`
 * or what is left before the request's deadline, whichever is shorter. Past
 * the deadline no call is made (the deadline-exceeded 504).
 */
export function callOptionsWithin(ctx: { requestId: string; deadline?: number | undefined }, limitMs: number): { requestId: string; timeoutMs: number } {
  if (ctx.deadline === undefined) return { requestId: ctx.requestId, timeoutMs: limitMs };
  const left = ctx.deadline - Date.now();
  if (left <= 0) throw deadlineExceeded();
  return { requestId: ctx.requestId, timeoutMs: Math.min(limitMs, Math.ceil(left)) };
}
