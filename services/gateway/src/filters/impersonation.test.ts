import type { Request, Response } from 'express';
import { ApiError, type UserInfo } from '@svc/apimachinery';
import type { Attributes } from '@svc/authz/client';
import { createLogger } from '@svc/service-kit';
import { initRequestState, userFrom, withUser } from '../context';
import { impersonationChecks, parseImpersonation, refuseImpersonation, withImpersonation } from './impersonation';

const alice: UserInfo = { username: 'alice', uid: 'a1', groups: ['dev', 'system:authenticated'], extra: {} };

function request(headers: Record<string, string | string[]>): Request {
  const distinct = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v : [v]]));
  const req = { headers: Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : v])), headersDistinct: distinct } as unknown as Request;
  initRequestState(req, 'r1', createLogger('test', { write: () => undefined }));
  withUser(req, alice);
  return req;
}

/** Runs the filter with an authorizer that allows what `allowed` says; returns who the request ran as, and what was asked. */
async function run(headers: Record<string, string | string[]>, allowed: (a: Attributes) => boolean): Promise<{ ranAs?: UserInfo; error?: ApiError; asked: Attributes[] }> {
  const asked: Attributes[] = [];
  const req = request(headers);
  let ranAs: UserInfo | undefined;
  try {
    await withImpersonation(
      async (r) => void (ranAs = userFrom(r)),
      async (attrs) => {
        asked.push(attrs);
        return { decision: allowed(attrs) ? 'allow' : 'deny', reason: '' };
      },
    )(req, {} as Response);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { error: err, asked };
  }
  return { ...(ranAs ? { ranAs } : {}), asked };
}

describe('impersonation', () => {
  it('runs the request as the impersonated user and groups once each is allowed', async () => {
    const { ranAs, asked } = await run({ 'Impersonate-User': 'bob', 'Impersonate-Group': ['ops', 'audit'], 'Impersonate-Uid': 'u-7', 'Impersonate-Extra-Scopes': ['read', 'write'] }, () => true);
    expect(ranAs).toEqual({ username: 'bob', uid: 'u-7', groups: ['ops', 'audit', 'system:authenticated'], extra: { scopes: ['read', 'write'] } });
    expect(asked.map((a) => [a.verb, a.apiGroup, a.resource, a.subresource, a.name, a.user.username])).toEqual([
      ['impersonate', '', 'users', '', 'bob', 'alice'],
      ['impersonate', '', 'groups', '', 'ops', 'alice'],
      ['impersonate', '', 'groups', '', 'audit', 'alice'],
      ['impersonate', 'authentication.svc.io', 'userextras', 'scopes', 'read', 'alice'],
      ['impersonate', 'authentication.svc.io', 'userextras', 'scopes', 'write', 'alice'],
      ['impersonate', 'authentication.svc.io', 'uids', '', 'u-7', 'alice'],
    ]);
  });

  it('a service account is checked as serviceaccounts in its namespace and gets its groups', async () => {
    const { ranAs, asked } = await run({ 'Impersonate-User': 'system:serviceaccount:team:robot' }, () => true);
    expect(asked[0]).toMatchObject({ resource: 'serviceaccounts', namespace: 'team', name: 'robot', apiGroup: '' });
    expect(ranAs?.groups).toEqual(['system:serviceaccounts', 'system:serviceaccounts:team', 'system:authenticated']);
  });

  it('impersonating system:anonymous gives system:unauthenticated', async () => {
    expect((await run({ 'Impersonate-User': 'system:anonymous' }, () => true)).ranAs?.groups).toEqual(['system:unauthenticated']);
  });

  it('is 403 naming what may not be impersonated, and stops at the first refusal', async () => {
    const { error, asked } = await run({ 'Impersonate-User': 'bob', 'Impersonate-Group': 'system:masters' }, (a) => a.resource !== 'groups');
    expect(error).toMatchObject({ code: 403, reason: 'Forbidden' });
    expect(error?.message).toBe('groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group ""');
    expect(asked.length).toBe(2);
  });

  it('groups, uid or extra without a user are 400; headers of unknown kinds are 400', async () => {
    expect((await run({ 'Impersonate-Group': 'ops' }, () => true)).error).toMatchObject({ code: 400 });
    expect((await run({ 'Impersonate-Uid': 'x' }, () => true)).error).toMatchObject({ code: 400 });
    expect((await run({ 'Impersonate-User': 'bob', 'Impersonate-Whatever': 'x' }, () => true)).error?.message).toContain('unknown impersonation header "Impersonate-Whatever"');
    expect((await run({ 'Impersonate-User': ['bob', 'carol'] }, () => true)).error?.message).toContain('only one Impersonate-User');
  });

  it('extra keys are percent-decoded and lower-cased', () => {
    const wanted = parseImpersonation(request({ 'Impersonate-User': 'bob', 'Impersonate-Extra-Example.com%2fTeam': 'x' }));
    expect(wanted?.extra).toEqual({ 'example.com/team': ['x'] });
    expect(impersonationChecks(alice, wanted!).map((c) => c.subresource)).toEqual(['', 'example.com/team']);
  });

  it('without impersonation headers the request runs as the requester, with no extra check', async () => {
    const { ranAs, asked } = await run({ authorization: 'Bearer x', 'x-impersonate-user': 'not one of ours' }, () => false);
    expect(ranAs).toEqual(alice);
    expect(asked).toEqual([]);
  });

  it('paths served without authentication refuse impersonation headers', async () => {
    let passed = false;
    await expect(refuseImpersonation(async () => void (passed = true))(request({ 'Impersonate-User': 'bob' }), {} as Response)).rejects.toMatchObject({ code: 403 });
    expect(passed).toBe(false);
  });
});
