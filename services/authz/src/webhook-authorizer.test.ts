import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { makeTestPki, webhookKubeconfig, type TestPki } from '@svc/service-kit/testing/pki';
import { chain, parseModes, type Attributes } from './authorizer';
import { compile } from '@svc/cel';
import { MATCH_CONDITION_REQUEST } from './authorization-config';
import { evaluateMatchConditions, matchRequestOf, webhookAuthorizer } from './webhook-authorizer';

describe('Webhook authorization mode', () => {
  let pki: TestPki;
  let server: https.Server;
  let configFile = '';
  const seen: Array<Record<string, unknown>> = [];
  let answer: (review: { spec: Record<string, unknown> }) => { status: number; body: string; delayMs?: number } = () => ({ status: 200, body: '{}' });
  const decided = (status: Record<string, unknown>) => ({ status: 200, body: JSON.stringify({ apiVersion: 'authorization.svc.io/v1', kind: 'SubjectAccessReview', status }) });
  const attrs = (verb: string, user = 'alice'): Attributes => ({ user: { username: user, uid: 'u1', groups: ['dev'], extra: {} }, resourceRequest: true, verb, path: '', apiGroup: 'apps', apiVersion: 'v1', resource: 'deployments', subresource: 'scale', namespace: 'team', name: 'web' });

  beforeAll(async () => {
    pki = makeTestPki('webhook-ca');
    const authz = pki.tlsFor('authz');
    server = https.createServer({ ...pki.tlsFor('webhook'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString()) as { spec: Record<string, unknown> };
        seen.push(review);
        const a = answer(review);
        setTimeout(() => res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body), a.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    configFile = path.join(pki.dir, 'authz-webhook.kubeconfig');
    fs.writeFileSync(configFile, webhookKubeconfig(`https://127.0.0.1:${(server.address() as AddressInfo).port}/authorize`, authz));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    pki.remove();
  });
  beforeEach(() => {
    seen.length = 0;
  });

  test('asks with a SubjectAccessReview of the configured version and follows its answer', async () => {
    answer = (r) => decided(r.spec['resourceAttributes'] && (r.spec['resourceAttributes'] as { verb: string }).verb === 'get' ? { allowed: true, reason: 'ok' } : { allowed: false, denied: true, reason: 'no writes' });
    const v1 = webhookAuthorizer({ configFile, version: 'v1', authorizedTtlMs: 0, unauthorizedTtlMs: 0 });
    expect(await v1(attrs('get'))).toEqual({ decision: 'allow', reason: 'ok' });
    expect(await v1(attrs('delete'))).toEqual({ decision: 'deny', reason: 'no writes' });
    expect(seen[0]).toEqual({
      apiVersion: 'authorization.svc.io/v1',
      kind: 'SubjectAccessReview',
      spec: { user: 'alice', uid: 'u1', groups: ['dev'], resourceAttributes: { namespace: 'team', verb: 'get', group: 'apps', version: 'v1', resource: 'deployments', subresource: 'scale', name: 'web' } },
    });
    const beta = webhookAuthorizer({ configFile, version: 'v1beta1', authorizedTtlMs: 0, unauthorizedTtlMs: 0 });
    await beta({ ...attrs('get'), resourceRequest: false, path: '/metrics' });
    expect(seen[2]).toMatchObject({ apiVersion: 'authorization.svc.io/v1beta1', spec: { group: ['dev'], nonResourceAttributes: { path: '/metrics', verb: 'get' } } });
  });

  test('allowed and refused decisions are cached for their TTLs; failures are not, and have no opinion', async () => {
    answer = (r) => decided({ allowed: (r.spec['user'] as string) === 'alice' });
    const w = webhookAuthorizer({ configFile, version: 'v1', authorizedTtlMs: 60_000, unauthorizedTtlMs: 60_000, timeoutMs: 300 });
    await w(attrs('get'));
    await w(attrs('get'));
    await w(attrs('get', 'bob'));
    await w(attrs('get', 'bob'));
    expect(seen).toHaveLength(2);
    for (const reply of [() => ({ status: 500, body: 'x' }), () => ({ status: 200, body: 'not json' }), () => ({ ...decided({ allowed: true }), delayMs: 1000 })]) {
      answer = reply;
      const out = await w(attrs('list', `carol-${seen.length}`));
      expect(out.decision).toBe('no-opinion');
      expect(out.reason).toMatch(/^webhook: /);
    }
  });

  test('in the mode chain: a webhook with no opinion leaves the request to the next mode, or to the final 403', async () => {
    answer = () => decided({ allowed: false });
    const w = webhookAuthorizer({ configFile, version: 'v1', authorizedTtlMs: 0, unauthorizedTtlMs: 0 });
    expect((await chain(parseModes('Webhook'), { Webhook: w })(attrs('get'))).decision).toBe('no-opinion');
    expect((await chain(parseModes('Webhook,AlwaysAllow'), { Webhook: w })(attrs('get'))).decision).toBe('allow');
    answer = () => decided({ denied: true, reason: 'blocked' });
    expect(await chain(parseModes('Webhook,AlwaysAllow'), { Webhook: w })(attrs('get'))).toEqual({ decision: 'deny', reason: 'blocked' });
  });
  describe('match conditions and the failure policy (configuration file webhooks)', () => {
    const condition = (expression: string) => compile(expression, { field: 'f', variables: { request: MATCH_CONDITION_REQUEST }, resultType: 'bool' });
    // true for alice, false for bob; an error for a non-resource request (no resourceAttributes).
    const conditions = [condition('request.user != "bob"'), condition('request.resourceAttributes.resource == "deployments"')];
    const nonResource = (user: string): Attributes => ({ ...attrs('get', user), resourceRequest: false, path: '/healthz' });

    test('the request is the v1 spec without empty fields', () => {
      expect(matchRequestOf({ ...attrs('get'), namespace: '', user: { username: 'alice', uid: '', groups: [], extra: { k: ['v'], e: [] } } })).toEqual({
        user: 'alice',
        extra: { k: ['v'] },
        resourceAttributes: { verb: 'get', group: 'apps', version: 'v1', resource: 'deployments', subresource: 'scale', name: 'web' },
      });
      expect(evaluateMatchConditions(conditions, matchRequestOf(attrs('get')))).toEqual({ match: true });
      expect(evaluateMatchConditions(conditions, matchRequestOf(attrs('get', 'bob')))).toEqual({ match: false });
      // A false condition wins over another's error.
      expect(evaluateMatchConditions(conditions, matchRequestOf(nonResource('bob')))).toEqual({ match: false });
      expect(evaluateMatchConditions(conditions, matchRequestOf(nonResource('alice')))).toMatchObject({ match: 'error', error: expect.stringContaining('request.resourceAttributes.resource') });
      expect(evaluateMatchConditions([], matchRequestOf(nonResource('alice')))).toEqual({ match: true });
    });

    test.each([
      ['NoOpinion', 'all true', attrs('get'), 1, 'allow'],
      ['Deny', 'all true', attrs('get'), 1, 'allow'],
      ['NoOpinion', 'one false', attrs('get', 'bob'), 0, 'no-opinion'],
      ['Deny', 'one false', attrs('get', 'bob'), 0, 'no-opinion'],
      ['NoOpinion', 'an error and none false', nonResource('alice'), 0, 'no-opinion'],
      ['Deny', 'an error and none false', nonResource('alice'), 0, 'deny'],
    ] as const)('%s, %s', async (failurePolicy, _case, request, calls, decision) => {
      answer = () => decided({ allowed: true });
      const w = webhookAuthorizer({ configFile, version: 'v1', authorizedTtlMs: 0, unauthorizedTtlMs: 0, name: 'policy', failurePolicy, matchConditions: conditions });
      const out = await w(request);
      expect(seen).toHaveLength(calls);
      expect(out.decision).toBe(decision);
      if (decision === 'deny') expect(out.reason).toMatch(/^webhook policy: match condition failed: /);
    });

    test('Deny refuses on a failed call, an error status, a malformed answer and a timeout; none is cached', async () => {
      const w = webhookAuthorizer({ configFile, version: 'v1', authorizedTtlMs: 60_000, unauthorizedTtlMs: 60_000, timeoutMs: 300, name: 'strict', failurePolicy: 'Deny' });
      for (const [reply, reason] of [
        [() => ({ status: 500, body: 'x' }), 'webhook strict: answered HTTP 500'],
        [() => ({ status: 200, body: 'garbage' }), 'webhook strict: the answer is not a SubjectAccessReview with a status'],
        [() => ({ ...decided({ allowed: true }), delayMs: 1000 }), 'webhook strict: the webhook did not answer within 300 ms'],
      ] as const) {
        answer = reply;
        expect(await w(attrs('get', 'dave'))).toEqual({ decision: 'deny', reason });
      }
      answer = () => decided({ allowed: true });
      expect((await w(attrs('get', 'dave'))).decision).toBe('allow');
      const unreachable = webhookAuthorizer({ credentials: { server: 'https://127.0.0.1:1/authorize' }, version: 'v1', authorizedTtlMs: 0, unauthorizedTtlMs: 0, failurePolicy: 'Deny' });
      expect((await unreachable(attrs('get'))).decision).toBe('deny');
    });
  });
});
