import * as fs from 'node:fs';
import * as path from 'node:path';
import { startTestIssuer, type TestIssuer } from '@svc/authn/testing/oidc-issuer';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { tokenRequest } from './http';

/**
 * OpenID Connect through the whole system, configured by an
 * AuthenticationConfiguration file: an issuer served by this test on
 * loopback HTTPS, ID tokens used by kubectl, a CEL username mapping, a
 * claim rule, and a change of the file taking effect without a restart.
 */
describe('OpenID Connect with the authentication configuration file', () => {
  let env: Environment;
  let pki: TestPki;
  let issuer: TestIssuer;
  let configFile = '';

  const config = (usernamePrefix: string): string => {
    const ca = fs.readFileSync(path.join(pki.dir, 'ca.crt'), 'utf8');
    return [
      'apiVersion: apiserver.config.svc.io/v1beta1',
      'kind: AuthenticationConfiguration',
      'jwt:',
      '- issuer:',
      `    url: ${issuer.url}`,
      '    audiences: [svc-cluster]',
      '    certificateAuthority: |',
      ...ca.trim().split('\n').map((l) => `      ${l}`),
      '  claimValidationRules:',
      `  - expression: 'claims.tenant == "acme"'`,
      '    message: tokens of other tenants are not accepted',
      '  claimMappings:',
      '    username:',
      `      expression: '"${usernamePrefix}" + claims.sub'`,
      '    groups:',
      '      claim: groups',
      "      prefix: 'oidc:'",
      '',
    ].join('\n');
  };
  const whoami = async (token: string): Promise<{ code: number; user?: Record<string, unknown>; stderr: string }> => {
    const file = path.join(env.dir, `oidc-${Math.random().toString(36).slice(2)}.kubeconfig`);
    fs.writeFileSync(file, tokenKubeconfig(env.url, env.pki.caCert, token), { mode: 0o600 });
    const res = await run('kubectl', ['--kubeconfig', file, 'auth', 'whoami', '-o', 'json']);
    return res.code === 0 ? { code: 0, user: (JSON.parse(res.stdout) as { status: { userInfo: Record<string, unknown> } }).status.userInfo, stderr: '' } : { code: res.code, stderr: res.stderr };
  };

  beforeAll(async () => {
    pki = makeTestPki('oidc-ca');
    issuer = await startTestIssuer(pki.tlsFor('issuer'));
    await issuer.addKey();
    configFile = path.join(pki.dir, 'authentication.yaml');
    fs.writeFileSync(configFile, config('acme:'));
    env = await startEnvironment({ authorizationMode: 'AlwaysAllow', serviceArgs: { authn: [`--authentication-config=${configFile}`] } });
  });

  afterAll(async () => {
    await env?.stop(true);
    await issuer?.close();
    pki?.remove();
  });

  test('kubectl with an ID token is the mapped user; tokens failing a rule, for another audience or expired are Unauthorized', async () => {
    const good = await whoami(await issuer.sign({ sub: 'alice', aud: 'svc-cluster', tenant: 'acme', groups: ['dev'] }));
    expect(good.user).toEqual({ username: 'acme:alice', groups: ['oidc:dev', 'system:authenticated'] });
    for (const claims of [
      { sub: 'bob', aud: 'svc-cluster', tenant: 'evil' },
      { sub: 'bob', aud: 'other-cluster', tenant: 'acme' },
    ]) {
      const res = await whoami(await issuer.sign(claims));
      expect(res.code).not.toBe(0);
      expect(res.stderr).toMatch(/Unauthorized/);
    }
    const expired = await tokenRequest(env, 'GET', '/api/v1/namespaces', await issuer.sign({ sub: 'bob', aud: 'svc-cluster', tenant: 'acme' }, { expiresInSeconds: -60 }));
    expect(expired.status).toBe(401);
  });

  test('a changed configuration file takes effect without a restart; a broken one is refused and logged', async () => {
    fs.writeFileSync(configFile, config('corp:'));
    const token = await issuer.sign({ sub: 'carol', aud: 'svc-cluster', tenant: 'acme', groups: [] });
    await until(async () => ((await whoami(token)).user?.['username'] === 'corp:carol' ? true : undefined), 20000);
    fs.writeFileSync(configFile, `${config('broken:')}  bogus: [\n`);
    const log = path.join(env.dir, 'logs', 'authn.log');
    await until(() => (fs.readFileSync(log, 'utf8').includes('authentication configuration refused') ? true : undefined), 20000);
    const again = await issuer.sign({ sub: 'dave', aud: 'svc-cluster', tenant: 'acme', groups: [] });
    expect((await whoami(again)).user?.['username']).toBe('corp:dave');
    expect(fs.readFileSync(log, 'utf8')).not.toContain(again);
  });
});
