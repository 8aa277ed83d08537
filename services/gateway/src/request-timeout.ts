import { ApiError } from '@svc/apimachinery';
import { FlagError, parseDuration } from '@svc/service-kit';

/**
 * Request deadlines, as the original server derives them: a request that is
 * not long-running must be answered within the `timeout` query parameter
 * when it is positive and shorter than `--request-timeout`, and within
 * `--request-timeout` otherwise (no parameter, `0`, a negative value, or a
 * longer one). A value that is not a duration is 400 BadRequest.
 */

const NS_PER_UNIT: Record<string, bigint> = {
  ns: 1n,
  us: 1_000n,
  'µs': 1_000n, // U+00B5 micro sign
  'μs': 1_000n, // U+03BC Greek mu
  ms: 1_000_000n,
  s: 1_000_000_000n,
  m: 60_000_000_000n,
  h: 3_600_000_000_000n,
};
const INT64_MAX = (1n << 63n) - 1n;

/** A value as the original's duration errors quote it: ASCII from the space up as is (`"` and `\` escaped), other bytes as `\xNN`. */
function quoted(text: string): string {
  let out = '"';
  for (const byte of Buffer.from(text, 'utf8')) {
    const c = String.fromCharCode(byte);
    if (c === '"' || c === '\\') out += `\\${c}`;
    else if (byte >= 0x20 && byte < 0x80) out += c;
    else out += `\\x${byte.toString(16).padStart(2, '0')}`;
  }
  return `${out}"`;
}

class DurationError extends Error {}

/**
 * A duration in the syntax of the original's `time.ParseDuration` (an
 * optional sign, then one or more decimal numbers each with a unit: `1m30s`,
 * `1.5h`, `-2s`, `500ms`; `0` alone needs no unit), in milliseconds
 * (fractional below 1 ms). Throws with the original's wording otherwise.
 */
export function parseGoDuration(text: string): number {
  let rest = text;
  let negative = false;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    negative = rest.startsWith('-');
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  const invalid = (): DurationError => new DurationError(`time: invalid duration ${quoted(text)}`);
  if (rest === '') throw invalid();
  let totalNs = 0n;
  while (rest !== '') {
    const m = /^([0-9]*)(?:\.([0-9]*))?/.exec(rest) as RegExpExecArray;
    const whole = m[1] as string;
    const fraction = m[2];
    if (whole === '' && (fraction === undefined || fraction === '')) throw invalid();
    rest = rest.slice(m[0].length);
    const unitMatch = /^[^0-9.]*/.exec(rest) as RegExpExecArray;
    const unit = unitMatch[0];
    if (unit === '') throw new DurationError(`time: missing unit in duration ${quoted(text)}`);
    const perUnit = NS_PER_UNIT[unit];
    if (perUnit === undefined) throw new DurationError(`time: unknown unit ${quoted(unit)} in duration ${quoted(text)}`);
    rest = rest.slice(unit.length);
    const wholeValue = whole === '' ? 0n : BigInt(whole);
    if (wholeValue > (1n << 63n) / perUnit) throw invalid();
    let value = wholeValue * perUnit;
    if (fraction) {
      // Precision past the nanosecond does not matter; the digits that fit an int64 are read.
      const digits = fraction.slice(0, 18);
      value += (BigInt(digits) * perUnit) / 10n ** BigInt(digits.length);
    }
    totalNs += value;
    if (totalNs > 1n << 63n) throw invalid();
  }
  if (!negative && totalNs > INT64_MAX) throw invalid();
  const ms = Number(totalNs) / 1e6;
  return negative ? -ms : ms;
}

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
