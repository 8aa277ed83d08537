import { ApiError } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import type { ApiClient } from './client';
import { ServiceAccountTokenSource, TOKEN_LIFETIME_SECONDS } from './service-account-credentials';

/** A stand-in for the controller-manager's own client: records calls, answers like the API. */
function fakeApi(opts: { accountExists: boolean; expiresInMs?: number; now: () => number }) {
  const calls: string[] = [];
  let issued = 0;
  let exists = opts.accountExists;
  const api: Pick<ApiClient, 'request'> = {
    async request<T>(method: string, urlPath: string): Promise<T> {
      calls.push(`${method} ${urlPath}`);
      await new Promise((r) => setImmediate(r));
      if (method === 'GET') {
        if (!exists) throw ApiError.notFound({ group: '', resource: 'serviceaccounts' }, 'namespace-controller');
        return {} as T;
      }
      if (urlPath.endsWith('/token')) {
        issued++;
        const expires = new Date(opts.now() + (opts.expiresInMs ?? TOKEN_LIFETIME_SECONDS * 1000)).toISOString();
        return { status: { token: `token-${issued}`, expirationTimestamp: expires } } as T;
      }
      exists = true;
      return {} as T;
    },
  };
  return { api, calls };
}

const quiet = createLogger('test', { write: () => undefined });

describe('service account credentials of a controller', () => {
  test('the account is created when missing, then its token is asked for once and shared by concurrent callers', async () => {
    const now = Date.now;
    const { api, calls } = fakeApi({ accountExists: false, now });
    const source = new ServiceAccountTokenSource(api, 'namespace-controller', quiet, now);
    const tokens = await Promise.all([source.token(), source.token(), source.token()]);
    expect(tokens).toEqual(['token-1', 'token-1', 'token-1']);
    expect(calls).toEqual([
      'GET /api/v1/namespaces/svc-system/serviceaccounts/namespace-controller',
      'POST /api/v1/namespaces/svc-system/serviceaccounts',
      'POST /api/v1/namespaces/svc-system/serviceaccounts/namespace-controller/token',
    ]);
  });

  test('a token is reused until four fifths of its life have passed, then renewed', async () => {
    let clock = 1_000_000;
    const now = (): number => clock;
    const { api, calls } = fakeApi({ accountExists: true, expiresInMs: 100_000, now });
    const source = new ServiceAccountTokenSource(api, 'token-cleaner', quiet, now);
    expect(await source.token()).toBe('token-1');
    clock += 79_000;
    expect(await source.token()).toBe('token-1');
    clock += 2_000;
    expect(await source.token()).toBe('token-2');
    expect(calls.filter((c) => c.endsWith('/token'))).toHaveLength(2);
  });

  test('a refused token is replaced at the next call; a stale refusal does not drop a newer token', async () => {
    const now = Date.now;
    const { api } = fakeApi({ accountExists: true, now });
    const source = new ServiceAccountTokenSource(api, 'bootstrap-signer', quiet, now);
    expect(await source.token()).toBe('token-1');
    source.invalidate('token-1');
    expect(await source.token()).toBe('token-2');
    source.invalidate('token-1');
    expect(await source.token()).toBe('token-2');
  });

  test('a failure to get a token is the caller\'s error, and the next call tries again', async () => {
    const now = Date.now;
    let fail = true;
    const { api } = fakeApi({ accountExists: true, now });
    const flaky: Pick<ApiClient, 'request'> = {
      request: async <T>(method: string, urlPath: string, body?: unknown): Promise<T> => {
        if (fail && urlPath.endsWith('/token')) throw ApiError.forbidden({ group: '', resource: 'serviceaccounts' }, 'x', 'not yet bound');
        return api.request<T>(method, urlPath, body);
      },
    };
    const source = new ServiceAccountTokenSource(flaky, 'service-account-controller', quiet, now);
    await expect(source.token()).rejects.toThrow('not yet bound');
    fail = false;
    expect(await source.token()).toBe('token-1');
  });
});
