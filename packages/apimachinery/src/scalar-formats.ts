import { parseQuantity, QUANTITY_FORMAT_MESSAGE, QUANTITY_SUFFIX_MESSAGE } from './quantity';

/**
 * Decoding of the typed scalars of built-in kinds, as the original server's
 * Go decoder reads them into its structs: bytes (`format: byte`) as
 * encoding/json reads a []byte (base64.StdEncoding, padding required, CR and
 * LF ignored), times (`format: date-time`) as metav1.Time reads them
 * (time.Parse with the RFC 3339 layout), integers (`int32`, `int64`) within
 * their Go type, quantities as resource.ParseQuantity reads them. Problems
 * carry the Go decoder's wording.
 *
 * The common, well-formed value is accepted by one cheap test; the exact
 * diagnosis runs only for a value that fails it. A value the original
 * accepts in a form our own readers (the protobuf encoder) do not read is
 * rewritten to the form the original stores (base64 re-encoded, a time's
 * comma or one-digit hour spelled out).
 */

/** A value that decodes as sent. */
export interface FormatAccepted {
  readonly outcome: 'accepted';
}
/** A value that decodes, to be stored as `value` (the form the original stores). */
export interface FormatNormalized {
  readonly outcome: 'normalized';
  readonly value: string;
}
/** A value that does not decode; `message` is the Go decoder's. */
export interface FormatRefused {
  readonly outcome: 'refused';
  readonly message: string;
}
export type FormatDecoding = FormatAccepted | FormatNormalized | FormatRefused;

const ACCEPTED: FormatAccepted = { outcome: 'accepted' };

function refused(message: string): FormatRefused {
  return { outcome: 'refused', message };
}

// ---- bytes -------------------------------------------------------------------

/** Base64 alphabet characters followed by at most two pad characters; with a length that is a multiple of 4, exactly what StdEncoding decodes when there are no line breaks. */
const BASE64_SHAPE = /^[A-Za-z0-9+/]*={0,2}$/;
/** Last data characters whose unused low bits are zero: re-encoding the bytes gives the same text. */
const CANONICAL_BEFORE_ONE_PAD = /[AEIMQUYcgkosw048]/;
const CANONICAL_BEFORE_TWO_PADS = /[AQgw]/;

const PAD = 0x3d; // '='
const LF = 0x0a;
const CR = 0x0d;

function isBase64Letter(byte: number): boolean {
  return (
    (byte >= 0x41 && byte <= 0x5a) || // A-Z
    (byte >= 0x61 && byte <= 0x7a) || // a-z
    (byte >= 0x30 && byte <= 0x39) || // 0-9
    byte === 0x2b || // +
    byte === 0x2f // /
  );
}

/**
 * Bytes as the original decodes a []byte from JSON: standard base64 with
 * padding, line breaks ignored, non-zero unused bits in the last character
 * tolerated (the encoding is not strict). Such a value is re-encoded.
 */
export function decodeBytesField(text: string): FormatDecoding {
  if (text.length % 4 === 0 && BASE64_SHAPE.test(text)) {
    if (!text.endsWith('=')) return ACCEPTED;
    const twoPads = text.endsWith('==');
    const last = text.charAt(text.length - (twoPads ? 3 : 2));
    if ((twoPads ? CANONICAL_BEFORE_TWO_PADS : CANONICAL_BEFORE_ONE_PAD).test(last)) return ACCEPTED;
    return { outcome: 'normalized', value: Buffer.from(text, 'base64').toString('base64') };
  }
  const offset = base64ErrorOffset(Buffer.from(text, 'utf8'));
  if (offset !== undefined) return refused(`illegal base64 data at input byte ${offset}`);
  return { outcome: 'normalized', value: Buffer.from(text.replace(/[\r\n]/g, ''), 'base64').toString('base64') };
}

/**
 * Where Go's base64.StdEncoding.Decode stops on this input (its
 * CorruptInputError, a byte offset), or undefined when it decodes. Read one
 * quantum of four characters at a time, skipping CR and LF, as Go does.
 */
export function base64ErrorOffset(src: Uint8Array): number | undefined {
  const end = src.length;
  const skipLineBreaks = (from: number): number => {
    let at = from;
    while (at < end && (src[at] === LF || src[at] === CR)) at++;
    return at;
  };
  let at = 0;
  for (;;) {
    for (let filled = 0; filled < 4; ) {
      if (at === end) {
        if (filled === 0) return undefined;
        // A quantum cut short: padding is required.
        return at - filled;
      }
      const byte = src[at++] as number;
      if (isBase64Letter(byte)) {
        filled++;
        continue;
      }
      if (byte === LF || byte === CR) continue;
      if (byte !== PAD || filled < 2) return at - 1;
      if (filled === 2) {
        // "==" is expected; the first is read.
        at = skipLineBreaks(at);
        if (at === end) return end;
        if (src[at] !== PAD) return at - 1;
        at++;
      }
      at = skipLineBreaks(at);
      // Nothing may follow the padding.
      return at < end ? at : undefined;
    }
  }
}

// ---- times -------------------------------------------------------------------

/** The layout Go's time.RFC3339 names, quoted in its parse errors. */
const RFC3339_LAYOUT = '2006-01-02T15:04:05Z07:00';

/** The RFC 3339 form every reader here accepts: two-digit fields, a point before at most nine fraction digits. */
const STRICT_RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d{1,9})?(?:Z|[+-]\d{2}:\d{2})$/;

/** Go's quoting of a time value in a parse error: control and non-ASCII bytes as `\xNN`. */
function goQuote(text: string): string {
  let out = '"';
  for (const char of text) {
    const code = char.codePointAt(0) as number;
    if (code < 0x20 || code >= 0x80) {
      for (const byte of Buffer.from(char, 'utf8')) out += `\\x${byte.toString(16).padStart(2, '0')}`;
    } else {
      out += char === '"' || char === '\\' ? `\\${char}` : char;
    }
  }
  return `${out}"`;
}

function daysIn(month: number, year: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

function isDigit(text: string, at: number): boolean {
  const code = text.charCodeAt(at);
  return code >= 0x30 && code <= 0x39;
}

/** Go's getnum: one or two digits, exactly two when `fixed`; undefined when there is no digit. */
function leadingNumber(text: string, fixed: boolean): { value: number; rest: string } | undefined {
  if (!isDigit(text, 0)) return undefined;
  if (!isDigit(text, 1)) return fixed ? undefined : { value: text.charCodeAt(0) - 0x30, rest: text.slice(1) };
  return { value: (text.charCodeAt(0) - 0x30) * 10 + (text.charCodeAt(1) - 0x30), rest: text.slice(2) };
}

/** How a time is written back: metav1.Time in whole seconds, metav1.MicroTime with six fraction digits. */
export type TimePrecision = 'second' | 'micro';

/** A time as the original writes it at each precision: UTC, `Z`. */
const CANONICAL_TIME: Record<TimePrecision, RegExp> = {
  second: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/,
  micro: /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/,
};

/**
 * A time as metav1.Time (or MicroTime) decodes one: Go's time.Parse with
 * the RFC 3339 layout, which also takes a comma before the fraction, any
 * number of fraction digits (it keeps nine) and a one-digit hour. An offset
 * of up to 24 hours and 60 minutes is Go's too. With a precision, a value
 * that decodes is stored as the original writes it back: in UTC, in whole
 * seconds for a Time (the fraction dropped), with six fraction digits for a
 * MicroTime; without one, in the strict RFC 3339 form of what was sent.
 */
export function decodeTimeField(text: string, precision?: TimePrecision): FormatDecoding {
  let strict = text;
  if (STRICT_RFC3339.test(text) && inRange(text)) {
    if (precision === undefined || CANONICAL_TIME[precision].test(text)) return ACCEPTED;
  } else {
    const parsed = parseGoRfc3339(text);
    if (parsed.outcome === 'refused' || precision === undefined) return parsed;
    if (parsed.outcome === 'normalized') strict = parsed.value;
  }
  const written = inUtc(strict, precision);
  return written === text ? ACCEPTED : { outcome: 'normalized', value: written };
}

const STRICT_PARTS = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:Z|([+-])(\d{2}):(\d{2}))$/;

/**
 * A time of the strict form, in UTC at the precision given (the fraction
 * truncated, as Go's formatting does). One whose UTC year is outside
 * 0000-9999, which the original cannot write back, is left as it is.
 */
function inUtc(strict: string, precision: TimePrecision): string {
  const m = STRICT_PARTS.exec(strict);
  if (!m) return strict;
  const [, year, month, day, hour, minute, second, fraction, sign, offsetHours, offsetMinutes] = m;
  const at = new Date(0);
  at.setUTCFullYear(Number(year), Number(month) - 1, Number(day));
  at.setUTCHours(Number(hour), Number(minute), Number(second), 0);
  let ms = at.getTime();
  if (sign !== undefined) {
    const offset = (Number(offsetHours) * 60 + Number(offsetMinutes)) * 60_000;
    ms += sign === '+' ? -offset : offset;
  }
  const utc = new Date(ms);
  const utcYear = utc.getUTCFullYear();
  if (utcYear < 0 || utcYear > 9999) return strict;
  const two = (n: number): string => String(n).padStart(2, '0');
  const date = `${String(utcYear).padStart(4, '0')}-${two(utc.getUTCMonth() + 1)}-${two(utc.getUTCDate())}`;
  const clock = `${two(utc.getUTCHours())}:${two(utc.getUTCMinutes())}:${two(utc.getUTCSeconds())}`;
  const micros = precision === 'micro' ? `.${(fraction ?? '').padEnd(6, '0').slice(0, 6)}` : '';
  return `${date}T${clock}${micros}Z`;
}

/** Whether every field of a value of the strict form is within its range. */
function inRange(text: string): boolean {
  const year = Number(text.slice(0, 4));
  const month = Number(text.slice(5, 7));
  const day = Number(text.slice(8, 10));
  if (month < 1 || month > 12 || day < 1 || day > daysIn(month, year)) return false;
  if (Number(text.slice(11, 13)) >= 24 || Number(text.slice(14, 16)) >= 60 || Number(text.slice(17, 19)) >= 60) return false;
  return text.endsWith('Z') || offsetProblem(Number(text.slice(-5, -3)), Number(text.slice(-2))) === undefined;
}

/** Go's range check of a zone offset; it allows 24 hours and 60 minutes, and names the minutes when both are beyond. */
function offsetProblem(hours: number, minutes: number): string | undefined {
  if (minutes > 60) return 'time zone offset minute';
  if (hours > 24) return 'time zone offset hour';
  return undefined;
}

/** Go's time.Parse(time.RFC3339, text), chunk by chunk, for its exact message (or the value spelled out strictly). */
function parseGoRfc3339(text: string): FormatDecoding {
  const quoted = goQuote(text);
  const cannotParse = (rest: string, element: string): FormatRefused =>
    refused(`parsing time ${quoted} as "${RFC3339_LAYOUT}": cannot parse ${goQuote(rest)} as "${element}"`);
  const outOfRange = (what: string): FormatRefused => refused(`parsing time ${quoted}: ${what} out of range`);
  /** A literal separator of the layout; the rest of the value when it matches. */
  const literal = (rest: string, separator: string): string | undefined => (rest.startsWith(separator) ? rest.slice(separator.length) : undefined);

  let rest = text;
  if (rest.length < 4 || !/^\d{4}/.test(rest)) return cannotParse(rest, '2006');
  const year = Number(rest.slice(0, 4));
  rest = rest.slice(4);

  const fields: number[] = [];
  const chunks: Array<{ separator: string; element: string; fixed: boolean; range?: { what: string; limit: number } }> = [
    { separator: '-', element: '01', fixed: true, range: { what: 'month', limit: 13 } },
    { separator: '-', element: '02', fixed: true },
    { separator: 'T', element: '15', fixed: false, range: { what: 'hour', limit: 24 } },
    { separator: ':', element: '04', fixed: true, range: { what: 'minute', limit: 60 } },
    { separator: ':', element: '05', fixed: true, range: { what: 'second', limit: 60 } },
  ];
  for (const chunk of chunks) {
    const afterSeparator = literal(rest, chunk.separator);
    if (afterSeparator === undefined) return cannotParse(rest, chunk.separator);
    const number = leadingNumber(afterSeparator, chunk.fixed);
    if (number === undefined) return cannotParse(afterSeparator, chunk.element);
    if (chunk.element === '01' && number.value === 0) return outOfRange('month');
    if (chunk.range && number.value >= chunk.range.limit) return outOfRange(chunk.range.what);
    fields.push(number.value);
    rest = number.rest;
  }
  const [month, day, hour, minute, second] = fields as [number, number, number, number, number];

  // A fraction the layout does not name is read all the same, keeping nine digits.
  let fraction = '';
  if (rest.length >= 2 && (rest[0] === '.' || rest[0] === ',') && isDigit(rest, 1)) {
    let digitsEnd = 2;
    while (digitsEnd < rest.length && isDigit(rest, digitsEnd)) digitsEnd++;
    fraction = rest.slice(1, Math.min(digitsEnd, 10));
    rest = rest.slice(digitsEnd);
  }

  let zone: string;
  if (rest.startsWith('Z')) {
    zone = 'Z';
    rest = rest.slice(1);
  } else {
    if (rest.length < 6 || rest[3] !== ':') return cannotParse(rest, 'Z07:00');
    const hours = leadingNumber(rest.slice(1, 3), true);
    const minutes = hours === undefined ? undefined : leadingNumber(rest.slice(4, 6), true);
    // Go reports a range problem before a malformed offset.
    const problem = offsetProblem(hours?.value ?? 0, minutes?.value ?? 0);
    if (problem !== undefined) return outOfRange(problem);
    if (hours === undefined || minutes === undefined || (rest[0] !== '+' && rest[0] !== '-')) return cannotParse(rest, 'Z07:00');
    zone = rest.slice(0, 6);
    rest = rest.slice(6);
  }
  if (rest.length > 0) return refused(`parsing time ${quoted}: extra text: ${goQuote(rest)}`);
  if (day < 1 || day > daysIn(month, year)) return outOfRange('day');

  const two = (n: number): string => String(n).padStart(2, '0');
  const strict = `${text.slice(0, 4)}-${two(month)}-${two(day)}T${two(hour)}:${two(minute)}:${two(second)}${fraction ? `.${fraction}` : ''}${zone}`;
  return strict === text ? ACCEPTED : { outcome: 'normalized', value: strict };
}

// ---- integers ----------------------------------------------------------------

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
/**
 * The int64 bounds as doubles. JSON numbers arrive as doubles, so the
 * largest int64 (2^63 - 1) is read as 2^63.
 */
const INT64_MIN = -(2 ** 63);
const INT64_MAX_AS_DOUBLE = 2 ** 63;

/**
 * Go's refusal of an integral number its integer type cannot hold, or
 * undefined when it fits. An int64 beyond what a double holds exactly
 * (2^53 - 1) is refused too: it would be stored rounded, and the largest
 * int64 would come back as 9223372036854776000, which no Go client can
 * decode, so every typed list of its kind would fail for them.
 */
export function integerRangeProblem(format: string | undefined, value: number): string | undefined {
  if (format === 'int32') {
    if (value >= INT32_MIN && value <= INT32_MAX) return undefined;
  } else if (format === 'int64') {
    if (Number.isSafeInteger(value)) return undefined;
    if (value >= INT64_MIN && value <= INT64_MAX_AS_DOUBLE) return `int64 value too large to be stored exactly: integers from -${Number.MAX_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER} are accepted`;
  } else {
    return undefined;
  }
  return `cannot unmarshal number ${String(value)} into a field of type ${format}`;
}

// ---- quantities --------------------------------------------------------------

export { QUANTITY_FORMAT_MESSAGE, QUANTITY_SUFFIX_MESSAGE };

/** The common quantity: digits, an optional fraction, an optional suffix from the tables (read without the parser). */
const PLAIN_QUANTITY = /^[+-]?[0-9]*\.?[0-9]*(?:[numkMGTPE]|[KMGTPE]i)?$/;
/** What the original's scanner takes: a sign, digits and points, then suffix letters, a sign and digits. */
const QUANTITY_SHAPE = /^([+-]?[0-9]*(?:\.[0-9]*)?)([eEinumkKMGTP]*[-+]?[0-9]*)$/;

/**
 * A quantity as resource.Quantity decodes one from JSON: a string (trimmed)
 * or a number's literal, read by the quantity parser. Undefined when it
 * parses, else the original's message: the form, or (a form the scanner
 * takes) the suffix.
 */
export function quantityProblem(value: unknown): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : QUANTITY_FORMAT_MESSAGE;
  if (typeof value !== 'string') return QUANTITY_FORMAT_MESSAGE;
  const text = value.trim();
  if (text === '') return QUANTITY_FORMAT_MESSAGE;
  if (PLAIN_QUANTITY.test(text) || parseQuantity(text) !== undefined) return undefined;
  return QUANTITY_SHAPE.test(text) ? QUANTITY_SUFFIX_MESSAGE : QUANTITY_FORMAT_MESSAGE;
}
