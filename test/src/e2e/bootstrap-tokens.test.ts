import { createHmac, timingSafeEqual } from 'node:crypto';
import * as https from 'node:https';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest, tokenRequest } from './http';

/**
 * Bootstrap tokens (SPEC sections 2, 3 and 5): a token Secret in svc-system
 * authenticates as system:bootstrap:<id>; the signer publishes a detached JWS
 * of the cluster-info kubeconfig per signing token, which a joining client
 * verifies holding only the token; the cleaner deletes expired tokens (and
 * the signer drops their signatures).
 */
describe('bootstrap tokens', () => {
  let env: Environment;

  const b64 = (s: string) => Buffer.from(s).toString('base64');
  const tokenSecret = (id: string, secret: string, extra: Record<string, string> = {}) =>
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: `bootstrap-token-${id}`, namespace: 'svc-system' },
      type: 'bootstrap.svc.io/token',
      data: Object.fromEntries(Object.entries({ 'token-id': id, 'token-secret': secret, 'usage-bootstrap-authentication': 'true', 'usage-bootstrap-signing': 'true', ...extra }).map(([k, v]) => [k, b64(v)])),
    });
  const createToken = async (id: string, secret: string, extra: Record<string, string> = {}) => {
    const res = await adminRequest(env, 'POST', '/api/v1/namespaces/svc-system/secrets', tokenSecret(id, secret, extra));
    expect(res.status).toBe(201);
  };

  /** GET without credentials and without trusting the server yet, as a joining client does first. */
  const anonymousGet = (urlPath: string): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      https
        .get(`${env.url}${urlPath}`, { rejectUnauthorized: false, agent: false }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        })
        .on('error', reject);
    });
  const clusterInfo = async (): Promise<Record<string, string> | undefined> => {
    const res = await anonymousGet('/api/v1/namespaces/svc-public/configmaps/cluster-info');
    return res.status === 200 ? ((JSON.parse(res.body) as { data: Record<string, string> }).data ?? {}) : undefined;
  };

  /** What a joining client does: rebuild the JWS with the kubeconfig as payload and check the HMAC keyed with the token. */
  function verifiesDetached(jws: string, content: string, token: string): boolean {
    const [header, payload, signature] = jws.split('.') as [string, string, string];
    if (payload !== '' || signature === undefined) return false;
    const decoded = JSON.parse(Buffer.from(header, 'base64url').toString()) as { alg: string; kid: string };
    if (decoded.alg !== 'HS256' || decoded.kid !== token.split('.')[0]) return false;
    const expected = createHmac('sha256', token).update(`${header}.${Buffer.from(content).toString('base64url')}`).digest();
    const got = Buffer.from(signature, 'base64url');
    return got.length === expected.length && timingSafeEqual(got, expected);
  }

  beforeAll(async () => {
    // Anonymous reads of cluster-info need an authorizer that allows them; policy for that is RBAC's.
    env = await startEnvironment({ authorizationMode: 'AlwaysAllow', anonymousAuth: true });
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('a bootstrap token authenticates as system:bootstrap:<id> with its extra groups (kubectl --token)', async () => {
    await createToken('abcdef', '0123456789abcdef', { 'auth-extra-groups': 'system:bootstrappers:worker,system:bootstrappers:ingress', expiration: new Date(Date.now() + 3600_000).toISOString().replace(/\.\d+Z$/, 'Z') });
    const file = path.join(env.dir, 'bootstrap.kubeconfig');
    fs.writeFileSync(file, tokenKubeconfig(env.url, env.pki.caCert, 'abcdef.0123456789abcdef'), { mode: 0o600 });
    const res = await run('kubectl', ['--kubeconfig', file, 'auth', 'whoami', '-o', 'json']);
    expect(res.stderr).toBe('');
    expect((JSON.parse(res.stdout) as { status: { userInfo: unknown } }).status.userInfo).toEqual({
      username: 'system:bootstrap:abcdef',
      groups: ['system:bootstrappers', 'system:bootstrappers:worker', 'system:bootstrappers:ingress', 'system:authenticated'],
    });
  });

  test('a wrong secret, an expired token, a token not for authentication or a malformed Secret get 401', async () => {
    await createToken('noauth', '0123456789abcdef', { 'usage-bootstrap-authentication': 'false' });
    await createToken('expird', '0123456789abcdef', { expiration: '2020-01-01T00:00:00Z' });
    await createToken('badgrp', '0123456789abcdef', { 'auth-extra-groups': 'system:masters' });
    for (const token of ['abcdef.0123456789abcdee', 'noauth.0123456789abcdef', 'expird.0123456789abcdef', 'badgrp.0123456789abcdef', 'zzzzzz.0123456789abcdef']) {
      const res = await tokenRequest(env, 'GET', '/api/v1/namespaces/default/configmaps', token);
      expect(res.status).toBe(401);
      expect(res.body).not.toContain('0123456789abcde');
    }
  });

  test('cluster-info is readable without credentials and carries a signature a joining client verifies', async () => {
    const data = await until(async () => {
      const d = await clusterInfo();
      return d && d['jws-kubeconfig-abcdef'] ? d : undefined;
    }, 20000);
    const content = data['kubeconfig'] as string;
    expect(content).toContain(`server: ${env.url}`);
    expect(content).toContain(`certificate-authority-data: ${fs.readFileSync(env.pki.caCert).toString('base64')}`);
    expect(verifiesDetached(data['jws-kubeconfig-abcdef'] as string, content, 'abcdef.0123456789abcdef')).toBe(true);
    // Only the holder of the token can produce it: another secret, or changed content, does not verify.
    expect(verifiesDetached(data['jws-kubeconfig-abcdef'] as string, content, 'abcdef.0123456789abcdee')).toBe(false);
    expect(verifiesDetached(data['jws-kubeconfig-abcdef'] as string, content.replace('https://', 'http://'), 'abcdef.0123456789abcdef')).toBe(false);
    // Tokens that may not sign, or have expired, have no signature.
    expect(data['jws-kubeconfig-expird']).toBeUndefined();
  });

  test('the cleaner deletes a token when it expires, and the signer drops its signature', async () => {
    const expiration = new Date(Date.now() + 4000).toISOString().replace(/\.\d+Z$/, 'Z');
    await createToken('shortl', '0123456789abcdef', { expiration });
    await until(async () => ((await clusterInfo())?.['jws-kubeconfig-shortl'] ? true : undefined), 20000);
    await until(async () => ((await adminRequest(env, 'GET', '/api/v1/namespaces/svc-system/secrets/bootstrap-token-shortl')).status === 404 ? true : undefined), 30000);
    await until(async () => ((await clusterInfo())?.['jws-kubeconfig-shortl'] === undefined ? true : undefined), 20000);
    // The expired token created earlier is gone too; the valid one stays, signed.
    expect((await adminRequest(env, 'GET', '/api/v1/namespaces/svc-system/secrets/bootstrap-token-expird')).status).toBe(404);
    expect((await adminRequest(env, 'GET', '/api/v1/namespaces/svc-system/secrets/bootstrap-token-abcdef')).status).toBe(200);
    expect((await clusterInfo())?.['jws-kubeconfig-abcdef']).toBeDefined();
  });

  test('a hand-edited signature is put right', async () => {
    const cm = (await adminRequest(env, 'GET', '/api/v1/namespaces/svc-public/configmaps/cluster-info')).json() as { data: Record<string, string> };
    cm.data['jws-kubeconfig-abcdef'] = 'forged..signature';
    cm.data['jws-kubeconfig-ghost1'] = 'left..over';
    expect((await adminRequest(env, 'PUT', '/api/v1/namespaces/svc-public/configmaps/cluster-info', JSON.stringify(cm))).status).toBe(200);
    const fixed = await until(async () => {
      const d = await clusterInfo();
      return d && d['jws-kubeconfig-abcdef'] !== 'forged..signature' && d['jws-kubeconfig-ghost1'] === undefined ? d : undefined;
    }, 20000);
    expect(verifiesDetached(fixed['jws-kubeconfig-abcdef'] as string, fixed['kubeconfig'] as string, 'abcdef.0123456789abcdef')).toBe(true);
  });
});
