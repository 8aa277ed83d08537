import { ApiError } from '@svc/apimachinery';
import { FlagError, parseGoDuration } from '@svc/service-kit';
import { parseRequestInfo, parseRequestPath } from './request-info';
import { callOptionsWithin, deadlineExceeded, effectiveTimeoutMs, parseTimeoutParam, queueWaitLimitMs, requestTimeoutFlag } from './request-timeout';

/** What `fn` throws, which must be an ApiError. */
function refusal(fn: () => unknown): ApiError {
  let thrown: unknown;
  try {
    fn();
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(ApiError);
  return thrown as ApiError;
}

describe('the timeout parameter', () => {
  test.each([
    ['1s', 1000],
    ['1m0s', 60_000],
    ['1.5h', 5_400_000],
    ['250ms', 250],
    ['1h2m3.5s', 3_723_500],
    ['500us', 0.5],
    ['500µs', 0.5],
    ['0', 0],
    ['+2s', 2000],
    ['-2s', -2000],
    ['.5s', 500],
    ['1.s', 1000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBe(ms);
  });

  test.each([
    ['abc', 'time: invalid duration "abc"'],
    ['1', 'time: missing unit in duration "1"'],
    ['1x', 'time: unknown unit "x" in duration "1x"'],
    ['1s2', 'time: missing unit in duration "1s2"'],
    ['-', 'time: invalid duration "-"'],
    ['.s', 'time: invalid duration ".s"'],
    ['9999999999999999999h', 'time: invalid duration "9999999999999999999h"'],
    ['3000000h', 'time: invalid duration "3000000h"'],
    ['1 s', 'time: unknown unit " s" in duration "1 s"'],
    ['\u00e9', 'time: invalid duration "\\xc3\\xa9"'],
  ])('%j is refused as the original refuses it', (text, message) => {
    const err = refusal(() => parseTimeoutParam(new URLSearchParams({ timeout: text })));
    expect(err.code).toBe(400);
    expect(err.reason).toBe('BadRequest');
    expect(err.message).toBe(`invalid timeout specified in the request URL - ${message}`);
  });

  test('absent or empty: none; repeated: the first counts', () => {
    expect(parseTimeoutParam(new URLSearchParams(''))).toBeUndefined();
    expect(parseTimeoutParam(new URLSearchParams('timeout='))).toBeUndefined();
    expect(parseTimeoutParam(new URLSearchParams('timeout=2s&timeout=abc'))).toBe(2000);
  });

  test('a long refused value is cut in the message', () => {
    const err = refusal(() => parseTimeoutParam(new URLSearchParams({ timeout: 'x'.repeat(5000) })));
    expect(err.message.length).toBeLessThan(400);
  });
});

describe('capping at --request-timeout', () => {
  test.each([
    [undefined, 60_000],
    [1000, 1000],
    [59_999, 59_999],
    [60_000, 60_000],
    [120_000, 60_000],
    [0, 60_000],
    [-5000, 60_000],
  ])('timeout %p with a 60 s maximum: %d ms', (requested, ms) => {
    expect(effectiveTimeoutMs(requested, 60_000)).toBe(ms);
  });
});

describe('parsed with the request info', () => {
  const info = (method: string, path: string, query: string) => parseRequestInfo(method, parseRequestPath(path), new URLSearchParams(query));

  test('once, for any request that is not long-running', () => {
    expect(info('GET', '/api/v1/namespaces/default/configmaps', 'timeout=2s').timeoutMs).toBe(2000);
    expect(info('POST', '/api/v1/namespaces/default/configmaps', 'timeout=10ms').timeoutMs).toBe(10);
    expect(info('GET', '/healthz', 'timeout=1s').timeoutMs).toBe(1000);
    expect(info('GET', '/api/v1/namespaces/default/configmaps', '').timeoutMs).toBeUndefined();
    expect(refusal(() => info('DELETE', '/api/v1/namespaces/default/configmaps/x', 'timeout=abc')).code).toBe(400);
  });

  test('not for watches and connections, which ignore it', () => {
    expect(info('GET', '/api/v1/namespaces/default/configmaps', 'watch=true&timeout=abc').timeoutMs).toBeUndefined();
    expect(info('GET', '/api/v1/namespaces/default/pods/p/log', 'follow=true&timeout=abc').timeoutMs).toBeUndefined();
    expect(info('POST', '/api/v1/namespaces/default/pods/p/exec', 'timeout=abc').timeoutMs).toBeUndefined();
  });
});

describe('the queue wait of priority and fairness', () => {
  test('a quarter of what the deadline allows from the arrival, at most a minute', () => {
    expect(queueWaitLimitMs(1000, 61_000)).toBe(15_000);
    expect(queueWaitLimitMs(1000, 2000)).toBe(250);
    expect(queueWaitLimitMs(0, 3_600_000)).toBe(60_000);
    expect(queueWaitLimitMs(5000, 4000)).toBe(0);
  });
});

describe('calls made for a request', () => {
  test('bounded by the time left, never past the limit', () => {
    const now = Date.now();
    expect(callOptionsWithin({ requestId: 'r' }, 30_000)).toEqual({ requestId: 'r', timeoutMs: 30_000 });
    expect(callOptionsWithin({ requestId: 'r', deadline: now + 3_600_000 }, 30_000).timeoutMs).toBe(30_000);
    expect(callOptionsWithin({ requestId: 'r', deadline: now + 10_000 }, 30_000).timeoutMs).toBeLessThanOrEqual(10_000);
  });

  test('none is made past the deadline', () => {
    const err = refusal(() => callOptionsWithin({ requestId: 'r', deadline: Date.now() - 1 }, 30_000));
    expect(err.toStatus()).toEqual(deadlineExceeded().toStatus());
  });
});

describe('the deadline-exceeded Status', () => {
  test('worded per verb as the original words it, with empty details', () => {
    expect(deadlineExceeded({ isResourceRequest: true, verb: 'create' }).toStatus()).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Timeout: request did not complete within requested timeout - context deadline exceeded',
      reason: 'Timeout',
      details: {},
      code: 504,
    });
    expect(deadlineExceeded({ isResourceRequest: true, verb: 'list' }).message).toBe('Timeout: request did not complete within the allotted timeout');
    expect(deadlineExceeded({ isResourceRequest: false, verb: 'post' }).message).toBe('Timeout: request did not complete within the allotted timeout');
  });
});

describe('--request-timeout', () => {
  test('a duration as the original writes it', () => {
    expect(requestTimeoutFlag('1m0s')).toBe(60_000);
    expect(requestTimeoutFlag('60s')).toBe(60_000);
    expect(requestTimeoutFlag('1500ms')).toBe(1500);
  });

  test.each(['abc', '60', '0', '0s', '-1s'])('%j refuses the start, naming the flag', (value) => {
    expect(() => requestTimeoutFlag(value)).toThrow(FlagError);
    expect(() => requestTimeoutFlag(value)).toThrow(/--request-timeout/);
  });
});
