import { ApiError } from '@svc/apimachinery';
import { INT64_MAX, INT64_MIN, firstValue, int64NumberParam, int64Param, resourceVersionParam, resourceVersionValue, safeNumber } from './query-params';

function refusal(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('not refused');
}

describe('typed query parameters', () => {
  it('reads the first value of a repeated parameter', () => {
    expect(firstValue([])).toBeUndefined();
    expect(firstValue(['a', 'b'])).toBe('a');
    expect(int64Param(['5', 'abc'], 'limit')).toBe(5n);
    expect(resourceVersionParam(['7', '9'])).toBe(7);
  });

  it.each([
    ['0', 0n],
    ['42', 42n],
    ['-42', -42n],
    ['+42', 42n],
    ['0007', 7n],
    ['-0', 0n],
    ['9223372036854775807', INT64_MAX],
    ['-9223372036854775808', INT64_MIN],
    [`000000000000000000000009223372036854775807`, INT64_MAX],
  ])('int64 %j is %s', (raw, expected) => {
    expect(int64Param([raw], 'timeoutSeconds')).toBe(expected);
  });

  it('an absent int64 is undefined', () => {
    expect(int64Param([], 'limit')).toBeUndefined();
    expect(int64NumberParam([], 'limit')).toBeUndefined();
  });

  it.each(['', 'abc', '1.5', '1e5', ' 1', '1 ', '0x10', '1_000', '--1', '+', '-', '١٢'])('int64 %j is 400 naming the parameter', (raw) => {
    const err = refusal(() => int64Param([raw], 'timeoutSeconds'));
    expect(err.code).toBe(400);
    expect(err.reason).toBe('BadRequest');
    expect(err.message).toBe(`timeoutSeconds: Invalid value: ${JSON.stringify(raw)}: must be an integer`);
    expect(err.toStatus().details?.causes).toEqual([{ reason: 'FieldValueInvalid', field: 'timeoutSeconds', message: `Invalid value: ${JSON.stringify(raw)}: must be an integer` }]);
  });

  it.each(['9223372036854775808', '-9223372036854775809', '99999999999999999999999', '1'.repeat(100_000)])('int64 %# beyond its range is 400 naming the parameter', (raw) => {
    const err = refusal(() => int64Param([raw], 'gracePeriodSeconds'));
    expect(err.code).toBe(400);
    expect(err.message).toMatch(/^gracePeriodSeconds: Invalid value: ".*": out of range: must be between -9223372036854775808 and 9223372036854775807$/);
    // A long value is not echoed whole.
    expect(err.message.length).toBeLessThan(300);
  });

  it('clamps int64 values to the numbers JavaScript holds exactly', () => {
    expect(safeNumber(INT64_MAX)).toBe(Number.MAX_SAFE_INTEGER);
    expect(safeNumber(INT64_MIN)).toBe(Number.MIN_SAFE_INTEGER);
    expect(safeNumber(12n)).toBe(12);
    expect(int64NumberParam(['9223372036854775807'], 'limit')).toBe(Number.MAX_SAFE_INTEGER);
    expect(int64NumberParam(['-3'], 'limit')).toBe(-3);
  });

  it('resourceVersion: empty or absent is unset; digits up to int64 are a revision', () => {
    expect(resourceVersionValue(undefined)).toBeUndefined();
    expect(resourceVersionValue('')).toBeUndefined();
    expect(resourceVersionParam([])).toBeUndefined();
    expect(resourceVersionValue('0')).toBe(0);
    expect(resourceVersionValue('123')).toBe(123);
    expect(resourceVersionValue('9223372036854775807')).toBe(Number.MAX_SAFE_INTEGER);
  });

  it.each(['abc', '-1', '+1', '1.0', '1e5', ' 1'])('resourceVersion %j is 400 naming it', (raw) => {
    const err = refusal(() => resourceVersionValue(raw));
    expect(err.code).toBe(400);
    expect(err.message).toBe(`resourceVersion: Invalid value: ${JSON.stringify(raw)}: invalid resource version: must be a non-negative integer`);
  });

  it('a resourceVersion beyond int64 is 400 naming it', () => {
    const err = refusal(() => resourceVersionValue('99999999999999999999999'));
    expect(err.code).toBe(400);
    expect(err.message).toBe('resourceVersion: Invalid value: "99999999999999999999999": invalid resource version: out of range: must be at most 9223372036854775807');
    expect(refusal(() => resourceVersionValue('9223372036854775808')).code).toBe(400);
  });
});
