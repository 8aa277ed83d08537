import { rfc3339 } from '@svc/apimachinery';

/**
 * The JSON forms of the two timestamp messages: `Time` is RFC 3339 with
 * second precision, `MicroTime` RFC 3339 with six fractional digits, both in
 * UTC. On the wire both are seconds since the epoch plus nanoseconds.
 */
export interface Timestamp {
  seconds: bigint;
  nanos: number;
}

const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d{2}):(\d{2}))$/;

/** Parses an RFC 3339 timestamp; undefined when the text is not one. */
export function parseTimestamp(text: string): Timestamp | undefined {
  const m = RFC3339.exec(text);
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, frac, , sign, oh, om] = m;
  let ms = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s));
  if (Number.isNaN(ms)) return undefined;
  if (sign !== undefined) {
    const offset = (Number(oh) * 60 + Number(om)) * 60_000;
    ms += sign === '+' ? -offset : offset;
  }
  const nanos = frac === undefined ? 0 : Number(frac.padEnd(9, '0'));
  return { seconds: BigInt(Math.floor(ms / 1000)), nanos };
}

/** `Time` on the JSON side: `2024-01-02T03:04:05Z`. */
export function formatTime(ts: Timestamp): string {
  return rfc3339(new Date(Number(ts.seconds) * 1000));
}

/** `MicroTime` on the JSON side: `2024-01-02T03:04:05.123456Z` (all six digits from the nanos). */
export function formatMicroTime(ts: Timestamp): string {
  const micros = String(Math.floor(ts.nanos / 1000)).padStart(6, '0');
  return formatTime(ts).replace(/Z$/, `.${micros}Z`);
}
