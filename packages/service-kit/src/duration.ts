/**
 * Durations as the original server reads them everywhere (Go's
 * `time.ParseDuration`): flags, configuration files and the `timeout`
 * query parameter share this one parser.
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

/** A text that is not a duration, in the original's words (`time: invalid duration "x"`). */
export class DurationError extends Error {}

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
