import type { Request, Response } from 'express';
import { ApiError, type UserInfo } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { initRequestState, userFrom, withRequestInfo, withUser } from '../context';
import { DEFAULT_LIMITS } from '../server';
import { withAuthentication } from './authentication';
import { cachedAuthorizer, withAuthorization } from './authorization';

/** The authentication and authorization caches in front of authn and authz. */
const admin: UserInfo = { username: 'alice', uid: '', groups: ['dev', 'system:authenticated'], extra: {} };
const quiet = createLogger('test', { write: () => undefined });

const info = { isResourceRequest: true, verb: 'list', path: '/api/v1/namespaces/a/configmaps', apiPrefix: 'api', apiGroup: '', apiVersion: 'v1', resource: 'configmaps', subresource: '', namespace: 'a', name: '', parts: [], query: new URLSearchParams(), segments: ['api', 'v1', 'namespaces', 'a', 'configmaps'] };

function request(headers: Record<string, string>): Request {
  const headersDistinct = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k, [v]]));
  const req = { headers, headersDistinct, method: 'GET', socket: { remoteAddress: '127.0.0.1' } } as unknown as Request;
  initRequestState(req, 'r1', quiet);
  withRequestInfo(req, info);
  return req;
}

function deps(calls: { authn: number; authz: number }, opts: { ttlMs: number; allow: boolean }): GatewayDeps {
  return {
    limits: { ...DEFAULT_LIMITS, authnCacheTtlMs: opts.ttlMs, authzCacheTtlMs: opts.ttlMs },
    proxyHeaders: { names: [], prefixes: [] },
    authn: {
      authenticate: async (input: { headers: Record<string, string[]> }) => {
        calls.authn++;
        return input.headers['authorization']?.[0] === 'Bearer good' ? { authenticated: true, user: admin, method: 'token' } : { authenticated: false, error: 'bad token' };
      },
    },
    authz: {
      authorize: async () => {
        calls.authz++;
        return { decision: opts.allow ? 'allow' : 'deny', reason: '' };
      },
    },
  } as unknown as GatewayDeps;
}


describe('authentication cache', () => {
  it('asks authn once for the same credentials, and again for different ones', async () => {
    const calls = { authn: 0, authz: 0 };
    const seen: string[] = [];
    const filter = withAuthentication(async (req) => void seen.push(userFrom(req).username), deps(calls, { ttlMs: 60000, allow: true }));
    await filter(request({ authorization: 'Bearer good' }), {} as Response);
    await filter(request({ authorization: 'Bearer good' }), {} as Response);
    expect(calls.authn).toBe(1);
    await expect(filter(request({ authorization: 'Bearer bad' }), {} as Response)).rejects.toBeInstanceOf(ApiError);
    await expect(filter(request({ authorization: 'Bearer bad' }), {} as Response)).rejects.toBeInstanceOf(ApiError);
    expect(calls.authn).toBe(3); // rejections are not remembered
    expect(seen).toEqual(['alice', 'alice']);
  });

  it('does not cache requests without credentials, nor anything with a time to live of 0', async () => {
    const calls = { authn: 0, authz: 0 };
    const noCache = withAuthentication(async () => undefined, deps(calls, { ttlMs: 0, allow: true }));
    await noCache(request({ authorization: 'Bearer good' }), {} as Response);
    await noCache(request({ authorization: 'Bearer good' }), {} as Response);
    expect(calls.authn).toBe(2);
    const cached = withAuthentication(async () => undefined, deps(calls, { ttlMs: 60000, allow: true }));
    await expect(cached(request({}), {} as Response)).rejects.toBeInstanceOf(ApiError);
    await expect(cached(request({}), {} as Response)).rejects.toBeInstanceOf(ApiError);
    expect(calls.authn).toBe(4);
  });
});

describe('authorization cache', () => {
  it('reuses a decision for the same user and attributes, for allow and deny alike', async () => {
    for (const allow of [true, false]) {
      const calls = { authn: 0, authz: 0 };
      let handled = 0;
      const filter = withAuthorization(async () => void handled++, cachedAuthorizer(deps(calls, { ttlMs: 60000, allow })));
      const run = async (user: UserInfo, namespace: string): Promise<void> => {
        const req = request({});
        withRequestInfo(req, { ...info, namespace });
        withUser(req, user);
        await filter(req, {} as Response).catch((err: unknown) => {
          if (!(err instanceof ApiError) || err.code !== 403) throw err;
        });
      };
      await run(admin, 'a');
      await run(admin, 'a');
      expect(calls.authz).toBe(1);
      await run(admin, 'b');
      await run({ ...admin, groups: ['system:authenticated'] }, 'a');
      expect(calls.authz).toBe(3);
      expect(handled).toBe(allow ? 4 : 0);
    }
  });

  it('asks authz once for requests with the same attributes that arrive while it is asked; a failure reaches each of them', async () => {
    const calls = { authn: 0, authz: 0 };
    const base = deps(calls, { ttlMs: 60000, allow: true });
    const waitingForAnswer: Array<() => void> = [];
    const answer = (): void => {
      for (const resolve of waitingForAnswer.splice(0)) resolve();
    };
    let fail = false;
    let asked = 0;
    const authz = {
      authorize: async (attrs: never) => {
        asked++;
        await new Promise<void>((resolve) => waitingForAnswer.push(resolve));
        if (fail) throw ApiError.serviceUnavailable('authz is down', 1);
        return base.authz.authorize(attrs);
      },
    };
    const authorize = cachedAuthorizer({ ...base, authz } as unknown as GatewayDeps);
    const attrs = { user: admin, resourceRequest: true, verb: 'create', path: '/api/v1/namespaces/a/configmaps', apiGroup: '', apiVersion: 'v1', resource: 'configmaps', subresource: '', namespace: 'a', name: '' };
    fail = true;
    const failing = [authorize(attrs, 'r1'), authorize(attrs, 'r2')];
    answer();
    for (const p of failing) await expect(p).rejects.toMatchObject({ code: 503 });
    expect(asked).toBe(1);
    fail = false;
    const waiting = [authorize(attrs, 'r1'), authorize(attrs, 'r2'), authorize(attrs, 'r3'), authorize({ ...attrs, namespace: 'b' }, 'r4')];
    expect(waitingForAnswer).toHaveLength(2);
    answer();
    expect((await Promise.all(waiting)).map((d) => d.decision)).toEqual(['allow', 'allow', 'allow', 'allow']);
    // One question for the three alike and one for the other namespace; then the cache answers.
    expect(asked).toBe(3);
    await authorize(attrs, 'r5');
    expect(asked).toBe(3);
  });

  it('shares nothing without a cache', async () => {
    const calls = { authn: 0, authz: 0 };
    const authorize = cachedAuthorizer(deps(calls, { ttlMs: 0, allow: true }));
    const attrs = { user: admin, resourceRequest: true, verb: 'create', path: '/x', apiGroup: '', apiVersion: 'v1', resource: 'configmaps', subresource: '', namespace: 'a', name: '' };
    await Promise.all([authorize(attrs, 'r1'), authorize(attrs, 'r2')]);
    expect(calls.authz).toBe(2);
  });

  it('keys decisions by the selectors too, and passes them to authz', async () => {
    const calls = { authn: 0, authz: 0 };
    const base = deps(calls, { ttlMs: 60000, allow: true });
    const seen: Array<{ fieldSelector?: string; labelSelector?: string }> = [];
    const authz = { authorize: async (attrs: { fieldSelector?: string; labelSelector?: string }) => (seen.push(attrs), base.authz.authorize(attrs as never)) };
    const filter = withAuthorization(async () => undefined, cachedAuthorizer({ ...base, authz } as unknown as GatewayDeps));
    const run = async (query: string): Promise<void> => {
      const req = request({});
      withRequestInfo(req, { ...info, query: new URLSearchParams(query) });
      withUser(req, admin);
      await filter(req, {} as Response);
    };
    await run('fieldSelector=spec.nodeName%3Dn1');
    await run('fieldSelector=spec.nodeName%3Dn1');
    expect(calls.authz).toBe(1);
    await run('fieldSelector=spec.nodeName%3Dn2');
    await run('labelSelector=app%3Dweb&fieldSelector=spec.nodeName%3Dn1');
    await run('');
    expect(calls.authz).toBe(4);
    expect(seen.map((a) => [a.fieldSelector, a.labelSelector])).toEqual([
      ['spec.nodeName=n1', undefined],
      ['spec.nodeName=n2', undefined],
      ['spec.nodeName=n1', 'app=web'],
      [undefined, undefined],
    ]);
  });
});
