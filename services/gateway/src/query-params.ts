import { ApiError } from '@svc/apimachinery';

/**
 * Typed query parameters, converted as the original server converts them
 * (its parameter codec): the first value of a repeated parameter counts; an
 * integer parameter is a base-10 int64 with an optional sign, nothing else
 * (no spaces, no exponent, no fraction, not empty). A value that does not
 * parse, or an integer beyond int64, is 400 BadRequest naming the parameter,
 * in the message and as the cause's field. Every handler converts its
 * parameters here, never case by case.
 *
 * JavaScript numbers hold integers exactly only up to 2^53 - 1; the
 * `...Number` forms clamp to that range (a limit, timeout or grace period of
 * 2^53 seconds or items means the same as any larger one), so a value within
 * int64 never becomes a number the gRPC edge to storage cannot carry.
 */
export const INT64_MAX = (1n << 63n) - 1n;
export const INT64_MIN = -(1n << 63n);

/** The longest piece of a refused value a message repeats. */
const ECHO_LIMIT = 128;

/** The value that counts: the first, as the original's conversions read a parameter. */
export function firstValue(values: readonly string[]): string | undefined {
  return values[0];
}

function echo(raw: string): string {
  return JSON.stringify(raw.length > ECHO_LIMIT ? `${raw.slice(0, ECHO_LIMIT)}...` : raw);
}

/** 400 BadRequest naming the parameter, in the message and as the cause's field. */
export function invalidParam(name: string, raw: string, why: string): ApiError {
  const message = `${name}: Invalid value: ${echo(raw)}: ${why}`;
  return ApiError.badRequest(message, [{ reason: 'FieldValueInvalid', field: name, message: `Invalid value: ${echo(raw)}: ${why}` }]);
}

const OUT_OF_RANGE = `out of range: must be between ${INT64_MIN} and ${INT64_MAX}`;

/** Digits beyond this many (after leading zeros) cannot be an int64, whatever they are. */
const INT64_DIGITS = 19;

function digitsInRange(sign: string, digits: string): bigint | undefined {
  const significant = digits.replace(/^0+(?=.)/, '');
  if (significant.length > INT64_DIGITS) return undefined;
  const value = sign === '-' ? -BigInt(significant) : BigInt(significant);
  return value > INT64_MAX || value < INT64_MIN ? undefined : value;
}

/**
 * An int64 parameter: undefined when absent; its first value converted like
 * Go's `strconv.ParseInt(s, 10, 64)` otherwise.
 */
export function int64Param(values: readonly string[], name: string): bigint | undefined {
  const raw = firstValue(values);
  if (raw === undefined) return undefined;
  const m = /^([+-]?)([0-9]+)$/.exec(raw);
  if (!m) throw invalidParam(name, raw, 'must be an integer');
  const value = digitsInRange(m[1] as string, m[2] as string);
  if (value === undefined) throw invalidParam(name, raw, OUT_OF_RANGE);
  return value;
}

/** An int64 as a JavaScript number, clamped to the range numbers hold exactly. */
export function safeNumber(value: bigint): number {
  if (value > BigInt(Number.MAX_SAFE_INTEGER)) return Number.MAX_SAFE_INTEGER;
  if (value < BigInt(Number.MIN_SAFE_INTEGER)) return Number.MIN_SAFE_INTEGER;
  return Number(value);
}

/** `int64Param` as a number (clamped to the exactly representable range). */
export function int64NumberParam(values: readonly string[], name: string): number | undefined {
  const value = int64Param(values, name);
  return value === undefined ? undefined : safeNumber(value);
}

/**
 * A resourceVersion (a string parameter the store reads as a revision):
 * undefined when absent or empty; otherwise only decimal digits, at most
 * int64's maximum. A revision beyond what numbers hold exactly is clamped;
 * no store reaches it, so it reads as a version from the future either way.
 */
export function resourceVersionValue(raw: string | undefined, name = 'resourceVersion'): number | undefined {
  if (raw === undefined || raw === '') return undefined;
  if (!/^[0-9]+$/.test(raw)) throw invalidParam(name, raw, 'invalid resource version: must be a non-negative integer');
  const value = digitsInRange('', raw);
  if (value === undefined) throw invalidParam(name, raw, `invalid resource version: out of range: must be at most ${INT64_MAX}`);
  return safeNumber(value);
}

/** The resourceVersion parameter: see `resourceVersionValue`. */
export function resourceVersionParam(values: readonly string[]): number | undefined {
  return resourceVersionValue(firstValue(values));
}
