/**
 * A boolean query parameter as the original server converts one: absent is
 * false; the first value `0` or `false` (any case) is false; any other value,
 * the empty string, `True`, `t` and `1` included, is true.
 */
export function parseBoolParam(raw: unknown): boolean {
  if (raw === undefined || raw === null) return false;
  const values = Array.isArray(raw) ? raw : [raw];
  if (values.length === 0) return false;
  const first = String(values[0]);
  return !(first === '0' || first.toLowerCase() === 'false');
}
