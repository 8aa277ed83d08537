/**
 * Kubernetes resource quantities (`1.5Gi`, `500m`, `2e3`), with the parsing
 * rules of k8s.io/apimachinery/pkg/api/resource: what typed decoding checks
 * a quantity field against, and what CEL's `quantity` library computes with.
 *
 * A quantity is exact: `coefficient × 10^exponent` with BigInt coefficient,
 * normalized (no trailing zeros in the coefficient, zero is `0 × 10^0`), so
 * two quantities of the same value have the same representation. Parsing
 * rounds a value finer than 1n away from zero to the next nano (as the
 * original does: asking for some resource gets some), and caps binary-suffix
 * values at the largest int64, as the original does; decimal ones keep their
 * size. Arithmetic is exact and never rounds.
 */

/** The original's refusal of a text that is not a quantity at all, and of one whose suffix it does not know. */
export const QUANTITY_FORMAT_MESSAGE = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
export const QUANTITY_SUFFIX_MESSAGE = "unable to parse quantity's suffix";

export interface Quantity {
  readonly coefficient: bigint;
  readonly exponent: number;
}

const NANO = -9;
const MAX_INT64 = (1n << 63n) - 1n;
const MIN_INT64 = -(1n << 63n);
const MAX_INT32 = 2 ** 31 - 1;
/**
 * Aligning two quantities for a sum builds a coefficient with as many digits
 * as their exponents differ; beyond this the sum is refused instead of
 * building a number of millions of digits (`1e999999999` plus `1`).
 */
const MAX_ALIGNMENT_DIGITS = 10_000;

const BINARY_SUFFIXES: Readonly<Record<string, bigint>> = { Ki: 10n, Mi: 20n, Gi: 30n, Ti: 40n, Pi: 50n, Ei: 60n };
const DECIMAL_SUFFIXES: Readonly<Record<string, number>> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
/** The characters a suffix may start with (before an exponent's sign and digits). */
const SUFFIX_LETTERS = 'eEinumkKMGTP';

const ZERO: Quantity = { coefficient: 0n, exponent: 0 };

function abs(n: bigint): bigint {
  return n < 0n ? -n : n;
}

function digits(n: bigint): number {
  return n === 0n ? 0 : abs(n).toString().length;
}

function normalize(coefficient: bigint, exponent: number): Quantity {
  if (coefficient === 0n) return ZERO;
  // On the digits rather than by repeated division, which is quadratic in a long coefficient's length.
  const text = coefficient.toString();
  const zeros = text.length - text.replace(/0+$/, '').length;
  return zeros === 0 ? { coefficient, exponent } : { coefficient: BigInt(text.slice(0, -zeros)), exponent: exponent + zeros };
}

function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** The sign and the digits before and after the point, and the suffix, as the original's scanner splits them; undefined when the form is wrong. */
function scan(text: string): { negative: boolean; whole: string; fraction: string; suffix: string } | undefined {
  let pos = 0;
  let negative = false;
  if (text[0] === '-' || text[0] === '+') {
    negative = text[0] === '-';
    pos++;
  }
  const digitsFrom = (start: number): number => {
    let i = start;
    while (i < text.length && text.charCodeAt(i) >= 48 && text.charCodeAt(i) <= 57) i++;
    return i;
  };
  let end = digitsFrom(pos);
  const whole = text.slice(pos, end);
  let fraction = '';
  if (text[end] === '.') {
    const fractionEnd = digitsFrom(end + 1);
    fraction = text.slice(end + 1, fractionEnd);
    end = fractionEnd;
  }
  const suffixStart = end;
  while (end < text.length && SUFFIX_LETTERS.includes(text[end] ?? '')) end++;
  if (text[end] === '-' || text[end] === '+') end++;
  end = digitsFrom(end);
  if (end !== text.length) return undefined;
  return { negative, whole, fraction, suffix: text.slice(suffixStart) };
}

type Multiplier = { base: 2; power: bigint } | { base: 10; power: number };

function multiplierOf(suffix: string): Multiplier | undefined {
  const binary = BINARY_SUFFIXES[suffix];
  if (binary !== undefined) return { base: 2, power: binary };
  const decimal = DECIMAL_SUFFIXES[suffix];
  if (decimal !== undefined) return { base: 10, power: decimal };
  if (suffix.length > 1 && (suffix[0] === 'e' || suffix[0] === 'E') && /^[+-]?[0-9]+$/.test(suffix.slice(1))) {
    const power = Number(suffix.slice(1));
    if (Number.isSafeInteger(power) && power <= MAX_INT32 && power >= -MAX_INT32 - 1) return { base: 10, power };
  }
  return undefined;
}

/** Rounds away from zero to a multiple of 1n. */
function roundToNano(q: Quantity): Quantity {
  if (q.exponent >= NANO || q.coefficient === 0n) return q;
  const shift = NANO - q.exponent;
  const sign = q.coefficient < 0n ? -1n : 1n;
  // Smaller than 1n altogether: one nano, without building 10^shift.
  if (shift > digits(q.coefficient)) return { coefficient: sign, exponent: NANO };
  const divisor = pow10(shift);
  const truncated = q.coefficient / divisor;
  return normalize(q.coefficient % divisor === 0n ? truncated : truncated + sign, NANO);
}

/** Parses a quantity as the original does; undefined when the text is not one. */
export function parseQuantity(text: string): Quantity | undefined {
  if (text === '') return undefined;
  const parts = scan(text);
  if (!parts) return undefined;
  const multiplier = multiplierOf(parts.suffix);
  if (!multiplier) return undefined;
  const unscaled = BigInt((parts.whole + parts.fraction).replace(/^0+/, '') || '0') * (parts.negative ? -1n : 1n);
  if (multiplier.base === 10) return roundToNano(normalize(unscaled, multiplier.power - parts.fraction.length));
  const value = roundToNano(normalize(unscaled << multiplier.power, -parts.fraction.length));
  // The original caps binary-suffix values at the largest int64.
  if (compareMagnitude(value, { coefficient: MAX_INT64, exponent: 0 }) > 0) return { coefficient: value.coefficient < 0n ? -MAX_INT64 : MAX_INT64, exponent: 0 };
  return value;
}

/** -1, 0 or 1 as |a| is less than, equal to or greater than |b|. */
function compareMagnitude(a: Quantity, b: Quantity): number {
  const x = abs(a.coefficient);
  const y = abs(b.coefficient);
  if (x === 0n || y === 0n) return x === y ? 0 : x === 0n ? -1 : 1;
  // The position of the leading digit decides unless it is the same; then aligning costs at most the coefficients' digits.
  const leadA = digits(x) + a.exponent;
  const leadB = digits(y) + b.exponent;
  if (leadA !== leadB) return leadA < leadB ? -1 : 1;
  const low = Math.min(a.exponent, b.exponent);
  const ax = x * pow10(a.exponent - low);
  const by = y * pow10(b.exponent - low);
  return ax === by ? 0 : ax < by ? -1 : 1;
}

export function sign(q: Quantity): number {
  return q.coefficient === 0n ? 0 : q.coefficient < 0n ? -1 : 1;
}

export function compareQuantities(a: Quantity, b: Quantity): number {
  const sa = sign(a);
  const sb = sign(b);
  if (sa !== sb) return sa < sb ? -1 : 1;
  return sa * compareMagnitude(a, b);
}

export function addQuantities(a: Quantity, b: Quantity): Quantity {
  if (a.coefficient === 0n) return b;
  if (b.coefficient === 0n) return a;
  const low = Math.min(a.exponent, b.exponent);
  const spread = Math.max(a.exponent, b.exponent) - low;
  if (spread > MAX_ALIGNMENT_DIGITS) throw new Error(`quantity arithmetic needs more than ${MAX_ALIGNMENT_DIGITS} digits`);
  return normalize(a.coefficient * pow10(a.exponent - low) + b.coefficient * pow10(b.exponent - low), low);
}

export function negate(q: Quantity): Quantity {
  return q.coefficient === 0n ? q : { coefficient: -q.coefficient, exponent: q.exponent };
}

/** The value as an int64, or undefined when it has a fraction or does not fit. */
export function asInt64(q: Quantity): bigint | undefined {
  if (q.exponent < 0) return undefined;
  // Anything with more than 19 digits before the point is beyond int64; checked before building 10^exponent.
  if (digits(q.coefficient) + q.exponent > 19) return undefined;
  const value = q.coefficient * pow10(q.exponent);
  return value >= MIN_INT64 && value <= MAX_INT64 ? value : undefined;
}

export function asApproximateFloat(q: Quantity): number {
  return Number.parseFloat(`${q.coefficient}e${q.exponent}`);
}

export function quantityFromInt(n: bigint): Quantity {
  return normalize(n, 0);
}
