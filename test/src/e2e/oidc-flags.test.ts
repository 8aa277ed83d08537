import * as fs from 'node:fs';
import * as path from 'node:path';
import { startTestIssuer, type TestIssuer } from '@svc/authn/testing/oidc-issuer';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';

/**
 * OpenID Connect through the whole system, configured by the `--oidc-*`
 * flags: an issuer served by this test on loopback HTTPS, ID tokens given to
 * kubectl with `--token` (the kubeconfig has no user credentials) and to
 * @kubernetes/client-node, a key rotation at the issuer, and the tokens the
 * server must refuse.
 */
describe('OpenID Connect with the --oidc-* flags', () => {
  let env: Environment;
  let pki: TestPki;
  let issuer: TestIssuer;
  let kubeconfig = '';

  beforeAll(async () => {
    pki = makeTestPki('oidc-flags-ca');
    issuer = await startTestIssuer(pki.tlsFor('issuer'));
    await issuer.addKey();
    env = await startEnvironment({
      authorizationMode: 'AlwaysAllow',
      serviceArgs: {
        authn: [
          `--oidc-issuer-url=${issuer.url}`,
          '--oidc-client-id=svc-cluster',
          `--oidc-ca-file=${path.join(pki.dir, 'ca.crt')}`,
          '--oidc-username-claim=email',
          '--oidc-groups-claim=groups',
          '--oidc-groups-prefix=oidc:',
          '--oidc-required-claim=hd=example.com',
        ],
      },
    });
    kubeconfig = path.join(env.dir, 'no-user.kubeconfig');
    const ca = fs.readFileSync(env.pki.caCert).toString('base64');
    fs.writeFileSync(
      kubeconfig,
      ['apiVersion: v1', 'kind: Config', 'clusters:', '- name: svc', '  cluster:', `    server: ${env.url}`, `    certificate-authority-data: ${ca}`, 'contexts:', '- name: svc', '  context: {cluster: svc}', 'current-context: svc', ''].join('\n'),
    );
  });

  afterAll(async () => {
    await env?.stop(true);
    await issuer?.close();
    pki?.remove();
  });

  const kubectl = (token: string, ...args: string[]) => run('kubectl', ['--kubeconfig', kubeconfig, `--token=${token}`, ...args]);
  const authnLog = (): string => fs.readFileSync(path.join(env.dir, 'logs', 'authn.log'), 'utf8');
  const claims = (email: string, extra: Record<string, unknown> = {}) => ({ sub: `id-${email}`, email, email_verified: true, hd: 'example.com', aud: 'svc-cluster', groups: ['dev'], ...extra });

  test('kubectl --token with a valid ID token is answered; the authn log names the user, never the token', async () => {
    const token = await issuer.sign(claims('alice@example.com'));
    const res = await kubectl(token, 'get', 'namespaces', '-o', 'name');
    expect(res.stderr).toBe('');
    expect(res.stdout).toContain('namespace/default');
    const line = await until(() => authnLog().split('\n').find((l) => l.includes('"msg":"token verified"') && l.includes('alice@example.com')));
    expect(JSON.parse(line)).toMatchObject({ authenticator: 'oidc', issuer: issuer.url, username: 'alice@example.com' });
    expect(authnLog()).not.toContain(token);
  });

  test('kubectl auth whoami shows the mapped user: the email unprefixed, groups prefixed', async () => {
    const res = await kubectl(await issuer.sign(claims('bob@example.com', { groups: ['ops', 'dev'] })), 'auth', 'whoami', '-o', 'json');
    expect(res.code).toBe(0);
    expect((JSON.parse(res.stdout) as { status: { userInfo: unknown } }).status.userInfo).toEqual({ username: 'bob@example.com', groups: ['oidc:ops', 'oidc:dev', 'system:authenticated'] });
  });

  test('expired, wrong audience, missing required claim, unverified email, alg none and another issuer are Unauthorized', async () => {
    const good = await issuer.sign(claims('carol@example.com'));
    const [header, payload] = good.split('.');
    const unsigned = `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${payload ?? ''}.`;
    const tokens = [
      await issuer.sign(claims('carol@example.com'), { expiresInSeconds: -60 }),
      await issuer.sign(claims('carol@example.com', { aud: 'another-cluster' })),
      await issuer.sign(claims('carol@example.com', { hd: 'evil.example' })),
      await issuer.sign(claims('carol@example.com', { email_verified: false })),
      unsigned,
      await issuer.sign(claims('carol@example.com', { iss: 'https://elsewhere.example' })),
      `${header ?? ''}.${payload ?? ''}.${'A'.repeat(20_000)}`,
    ];
    for (const token of tokens) {
      const res = await kubectl(token, 'get', 'namespaces');
      expect(res.code).not.toBe(0);
      expect(res.stderr).toContain('error: You must be logged in to the server (Unauthorized)');
    }
    expect(authnLog()).not.toContain(payload ?? 'unreachable');
  });

  test('key rotation: a token of a new key is accepted; once the old key is withdrawn its new tokens are not', async () => {
    const oldKid = await issuer.addKey();
    const oldToken = await issuer.sign(claims('dave@example.com'), { kid: oldKid });
    expect((await kubectl(oldToken, 'get', 'namespaces', '-o', 'name')).code).toBe(0);
    const newKid = await issuer.addKey();
    issuer.removeKey(oldKid);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await kubectl(await issuer.sign(claims('erin@example.com'), { kid: newKid }), 'get', 'namespaces', '-o', 'name')).code).toBe(0);
    // The withdrawn key's signature on a token the server has not seen no longer verifies.
    const removed = await issuer.addKey();
    const late = await issuer.sign(claims('frank@example.com'), { kid: removed });
    issuer.removeKey(removed);
    await new Promise((r) => setTimeout(r, 1100));
    expect((await kubectl(late, 'get', 'namespaces')).stderr).toContain('Unauthorized');
  });

  test('@kubernetes/client-node with the ID token as its bearer token', async () => {
    const token = await issuer.sign(claims('gina@example.com'));
    const script = [
      "import * as k8s from '@kubernetes/client-node';",
      'const [server, caFile, token] = process.argv.slice(1);',
      'const kc = new k8s.KubeConfig();',
      "kc.loadFromOptions({ clusters: [{ name: 'svc', server, caFile }], users: [{ name: 'oidc', token }], contexts: [{ name: 'svc', cluster: 'svc', user: 'oidc' }], currentContext: 'svc' });",
      'const core = kc.makeApiClient(k8s.CoreV1Api);',
      'const list = await core.listNamespace();',
      'let refused;',
      "try { kc.users[0].token = 'x.y.z'; await kc.makeApiClient(k8s.CoreV1Api).listNamespace(); } catch (err) { refused = err.code; }",
      'console.log(JSON.stringify({ names: list.items.map((n) => n.metadata.name), refused }));',
    ].join('\n');
    const res = await run(process.execPath, ['--input-type=module', '-e', script, env.url, env.pki.caCert, token], { timeoutMs: 40000 });
    expect(res.stderr).toBe('');
    const out = JSON.parse(res.stdout) as { names: string[]; refused: number };
    expect(out.names).toContain('default');
    expect(out.refused).toBe(401);
  });
});
