import * as fs from 'node:fs';
import * as path from 'node:path';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest, tokenRequest } from './http';

/**
 * Service-account tokens end to end: `kubectl create token` (a protobuf
 * TokenRequest), the token used by kubectl, @kubernetes/client-node and
 * python3-kubernetes, TokenReview and SelfSubjectReview, bound tokens
 * revoked with their pod, and forged or misused tokens refused with 401.
 */
describe('service-account tokens', () => {
  let env: Environment;
  const fixtures = path.resolve(__dirname, '..', '..', 'fixtures');
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input === undefined ? {} : { input });
  const asToken = (token: string, args: string[]) => {
    const file = path.join(env.dir, `token-${Math.random().toString(36).slice(2)}.kubeconfig`);
    fs.writeFileSync(file, tokenKubeconfig(env.url, env.pki.caCert, token), { mode: 0o600 });
    return run('kubectl', ['--kubeconfig', file, ...args]);
  };
  const createToken = async (args: string[]): Promise<string> => {
    const res = await kubectl(['create', 'token', ...args]);
    if (res.code !== 0) throw new Error(`kubectl create token ${args.join(' ')}: ${res.stderr}`);
    return res.stdout.trim();
  };
  const whoami = async (token: string): Promise<Record<string, unknown>> => {
    const res = await asToken(token, ['auth', 'whoami', '-o', 'json']);
    if (res.code !== 0) throw new Error(`kubectl auth whoami: ${res.stderr}`);
    return (JSON.parse(res.stdout) as { status: { userInfo: Record<string, unknown> } }).status.userInfo;
  };

  beforeAll(async () => {
    env = await startEnvironment({ authorizationMode: 'AlwaysAllow' });
    await until(async () => ((await adminRequest(env, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).status === 200 ? true : undefined), 20000);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('kubectl create token, then kubectl with the token: whoami names the account and its groups', async () => {
    const token = await createToken(['default']);
    expect(token.split('.')).toHaveLength(3);
    const user = await whoami(token);
    expect(user).toMatchObject({ username: 'system:serviceaccount:default:default', groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'] });
    expect(user['uid']).toBe(((await adminRequest(env, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).json()['metadata'] as { uid: string }).uid);
    const listed = await asToken(token, ['get', 'configmaps', '-o', 'name']);
    expect(listed.code).toBe(0);
  });

  // kubectl validates a kind without a patch operation (a review) on the
  // client, from the OpenAPI v2 document in protobuf: with its default
  // validation a well-formed review goes through and an unknown field is
  // refused before anything is sent.
  test('a TokenReview (kubectl create -f) says whether a token authenticates and for which audiences', async () => {
    const token = await createToken(['default', '--audience=vault', '--audience=https://svc.default.svc']);
    const review = (spec: Record<string, unknown>) => JSON.stringify({ apiVersion: 'authentication.svc.io/v1', kind: 'TokenReview', spec });
    const ok = await kubectl(['create', '-f', '-', '-o', 'json'], review({ token, audiences: ['vault', 'other'] }));
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ kind: 'TokenReview', status: { authenticated: true, audiences: ['vault'], user: { username: 'system:serviceaccount:default:default' } } });
    const wrongAudience = JSON.parse((await kubectl(['create', '-f', '-', '-o', 'json'], review({ token, audiences: ['other'] }))).stdout) as { status: { authenticated: boolean; error: string } };
    const unknownField = await kubectl(['create', '-f', '-', '-o', 'json'], review({ token, audiencez: ['other'] }));
    expect(unknownField.code).not.toBe(0);
    expect(unknownField.stderr).toContain('unknown field "audiencez" in io.svc.api.authentication.v1.TokenReview.spec');
    expect(wrongAudience.status.authenticated).toBe(false);
    expect(wrongAudience.status.error).toMatch(/audiences/);
    // The token is not echoed into errors, and an empty token is a 400 naming the field.
    expect(wrongAudience.status.error).not.toContain(token);
    const empty = await adminRequest(env, 'POST', '/apis/authentication.svc.io/v1/tokenreviews', review({ token: '' }));
    expect(empty.status).toBe(400);
    expect(empty.json()['message']).toMatch(/spec\.token/);
    const v1beta1 = await adminRequest(env, 'POST', '/apis/authentication.svc.io/v1beta1/tokenreviews', JSON.stringify({ apiVersion: 'authentication.svc.io/v1beta1', kind: 'TokenReview', spec: { token } }));
    expect(v1beta1.status).toBe(201);
    expect(v1beta1.json()).toMatchObject({ apiVersion: 'authentication.svc.io/v1beta1', status: { authenticated: true } });
  });

  test('a token for another audience does not authenticate to this server', async () => {
    const token = await createToken(['default', '--audience=vault']);
    const res = await asToken(token, ['get', 'configmaps']);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toMatch(/Unauthorized/);
  });

  test('a token bound to a pod carries the pod and stops working when the pod is deleted', async () => {
    expect((await kubectl(['create', 'serviceaccount', 'robot'])).code).toBe(0);
    const pod = JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'worker' }, spec: { serviceAccountName: 'robot', containers: [{ name: 'c', image: 'busybox' }] } });
    expect((await kubectl(['create', '-f', '-'], pod)).code).toBe(0);
    const token = await createToken(['robot', '--bound-object-kind=Pod', '--bound-object-name=worker']);
    const user = await whoami(token);
    expect(user).toMatchObject({ username: 'system:serviceaccount:default:robot', extra: { 'authentication.svc.io/pod-name': ['worker'] } });
    // A pod of another account cannot be bound, nor can a missing one.
    const mismatch = await kubectl(['create', 'token', 'default', '--bound-object-kind=Pod', '--bound-object-name=worker']);
    expect(mismatch.stderr).toMatch(/different serviceaccount name/);
    const missing = await kubectl(['create', 'token', 'robot', '--bound-object-kind=Pod', '--bound-object-name=nobody']);
    expect(missing.stderr).toMatch(/pods "nobody" not found/);
    expect((await kubectl(['delete', 'pod', 'worker', '--wait=false'])).code).toBe(0);
    await until(async () => ((await tokenRequest(env, 'GET', '/api/v1/namespaces/default/configmaps', token)).status === 401 ? true : undefined), 30000);
  });

  test('deleting the account revokes its tokens', async () => {
    expect((await kubectl(['create', 'serviceaccount', 'short-lived'])).code).toBe(0);
    const token = await createToken(['short-lived']);
    expect((await tokenRequest(env, 'GET', '/api/v1/namespaces/default/configmaps', token)).status).toBe(200);
    expect((await kubectl(['delete', 'serviceaccount', 'short-lived'])).code).toBe(0);
    await until(async () => ((await tokenRequest(env, 'GET', '/api/v1/namespaces/default/configmaps', token)).status === 401 ? true : undefined), 30000);
    const res = await tokenRequest(env, 'GET', '/api/v1/namespaces/default/configmaps', token);
    expect(res.json()).toMatchObject({ kind: 'Status', code: 401, reason: 'Unauthorized' });
  });

  test('TokenRequest bad input: lifetimes out of bounds, a missing account, a wrong kind or binding get a Status naming the problem', async () => {
    const post = (name: string, body: Record<string, unknown>) => adminRequest(env, 'POST', `/api/v1/namespaces/default/serviceaccounts/${name}/token`, JSON.stringify({ apiVersion: 'authentication.svc.io/v1', kind: 'TokenRequest', ...body }));
    const short = await post('default', { spec: { expirationSeconds: 599 } });
    expect(short.status).toBe(422);
    expect(short.json()).toMatchObject({ reason: 'Invalid', details: { causes: [{ field: 'spec.expirationSeconds' }] } });
    expect((await post('default', { spec: { expirationSeconds: 2 ** 33 } })).status).toBe(422);
    // A value of the wrong type is a decoding error (400), as upstream, naming the field.
    const mistyped = await post('default', { spec: { expirationSeconds: 'soon' } });
    expect(mistyped.status).toBe(400);
    expect(mistyped.json()).toMatchObject({ details: { causes: [{ field: 'spec.expirationSeconds' }] } });
    expect((await post('nobody', { spec: {} })).status).toBe(404);
    const wrongKind = await post('default', { kind: 'TokenReview', spec: {} });
    expect(wrongKind.status).toBe(400);
    const node = await post('default', { spec: { boundObjectRef: { kind: 'Node', apiVersion: 'v1', name: 'n1' } } });
    expect(node.status).toBe(400);
    expect(node.json()['message']).toMatch(/spec\.boundObjectRef/);
    expect((await post('default', { spec: { audiences: 'everyone' } })).status).toBe(400);
    expect((await adminRequest(env, 'GET', '/api/v1/namespaces/default/serviceaccounts/default/token')).status).toBe(405);
    // A dry run checks everything and issues nothing.
    const dry = await adminRequest(env, 'POST', '/api/v1/namespaces/default/serviceaccounts/default/token?dryRun=All', JSON.stringify({ spec: {} }));
    expect(dry.status).toBe(201);
    expect((dry.json()['status'] as { token: string }).token).toBe('');
    // The account is untouched by all of it.
    expect((await adminRequest(env, 'GET', '/api/v1/namespaces/default/serviceaccounts/default')).status).toBe(200);
  });

  test('forged, truncated and oversized tokens get 401', async () => {
    const token = await createToken(['default']);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString()) as Record<string, unknown>;
    const none = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload}.`;
    const elevated = `${header}.${Buffer.from(JSON.stringify({ ...claims, sub: 'system:serviceaccount:svc-system:admin' })).toString('base64url')}.${signature}`;
    for (const bad of [none, elevated, token.slice(0, -10), `${token}x`, 'x'.repeat(20000)]) {
      const res = await tokenRequest(env, 'GET', '/api/v1/namespaces/default/configmaps', bad);
      expect(res.status).toBe(401);
      expect(res.body).not.toContain(payload);
    }
  });

  test('@kubernetes/client-node with a token: SelfSubjectReview and TokenReview', async () => {
    const token = await createToken(['default']);
    const file = path.join(env.dir, 'client-node-token.kubeconfig');
    fs.writeFileSync(file, tokenKubeconfig(env.url, env.pki.caCert, token), { mode: 0o600 });
    const tokenFile = path.join(env.dir, 'client-node.token');
    fs.writeFileSync(tokenFile, token, { mode: 0o600 });
    const res = await run(process.execPath, [path.join(fixtures, 'client-node-token.mjs'), file, tokenFile], { timeoutMs: 40000 });
    expect(res.stderr).toBe('');
    expect(JSON.parse(res.stdout)).toEqual({
      self: { username: 'system:serviceaccount:default:default', uid: expect.any(String), groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'], extra: expect.any(Object) },
      review: { authenticated: true, username: 'system:serviceaccount:default:default' },
      configmaps: true,
    });
  });

  test("Debian's python3-kubernetes: TokenRequest as the admin, then the token as a client", async () => {
    const res = await run('/usr/bin/python3', [path.join(fixtures, 'python-token.py'), env.kubeconfigPath, 'default', 'default'], { timeoutMs: 40000 });
    if (res.code !== 0) throw new Error(res.stderr);
    const out = JSON.parse(res.stdout) as { expires: string; configmaps: boolean; review: Record<string, unknown>; forged: unknown };
    const lifetime = (Date.parse(out.expires) - Date.now()) / 1000;
    expect(lifetime).toBeGreaterThan(800);
    expect(lifetime).toBeLessThanOrEqual(900);
    expect(out.configmaps).toBe(true);
    expect(out.review).toEqual({ authenticated: true, username: 'system:serviceaccount:default:default', groups: ['system:serviceaccounts', 'system:serviceaccounts:default', 'system:authenticated'] });
    expect(out.forged).toBe(401);
  });

  test('reviews are in discovery and OpenAPI, and the token subresource names its kind', async () => {
    const resources = (await kubectl(['api-resources', '--api-group=authentication.svc.io', '-o', 'name'])).stdout.trim().split('\n').sort();
    expect(resources).toEqual(['selfsubjectreviews.authentication.svc.io', 'tokenreviews.authentication.svc.io']);
    const core = (await adminRequest(env, 'GET', '/api/v1')).json() as { resources: Array<Record<string, unknown>> };
    expect(core.resources.find((r) => r['name'] === 'serviceaccounts/token')).toMatchObject({ kind: 'TokenRequest', group: 'authentication.svc.io', version: 'v1', verbs: ['create'] });
    const explain = await kubectl(['explain', 'tokenreviews.spec.audiences', '--api-version=authentication.svc.io/v1']);
    expect(explain.code).toBe(0);
    expect(explain.stdout).toMatch(/audiences/);
  });
});
