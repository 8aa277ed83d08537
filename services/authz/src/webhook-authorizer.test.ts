import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { makeTestPki, webhookKubeconfig, type TestPki } from '@svc/service-kit/dist/test-pki';
import { chain, parseModes, type Attributes } from './authorizer';
import { webhookAuthorizer } from './webhook-authorizer';

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
});
