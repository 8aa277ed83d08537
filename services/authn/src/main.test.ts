import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';

/**
 * The service process itself: a configuration it must refuse ends it at
 * start with an error that names the file and the field (or the flags).
 */
describe('authn refuses to start', () => {
  let pki: TestPki;
  let tlsFlags: string[] = [];

  beforeAll(() => {
    pki = makeTestPki('authn-main-ca');
    pki.tlsFor('authn');
    tlsFlags = [`--internal-ca-file=${path.join(pki.dir, 'ca.crt')}`, `--internal-cert-file=${path.join(pki.dir, 'authn.crt')}`, `--internal-key-file=${path.join(pki.dir, 'authn.key')}`, '--listen=127.0.0.1:0'];
  });
  afterAll(() => pki.remove());

  const start = (args: string[]) => spawnSync(process.execPath, [path.join(__dirname, 'main.js'), ...tlsFlags, ...args], { encoding: 'utf8', timeout: 30000, env: { ...process.env, SVC_LOG_LEVEL: 'info' } });
  const configFile = (name: string, body: string): string => {
    const file = path.join(pki.dir, name);
    fs.writeFileSync(file, `apiVersion: apiserver.config.svc.io/v1beta1\nkind: AuthenticationConfiguration\n${body}`);
    return file;
  };

  test.each([
    ['--authentication-config with an --oidc-* flag', () => [`--authentication-config=${configFile('ok.yaml', 'jwt: []\n')}`, '--oidc-issuer-url=https://issuer.example', '--oidc-client-id=x'], '--authentication-config and --oidc-issuer-url may not be used together'],
    ['--authentication-config with only --oidc-groups-claim', () => [`--authentication-config=${configFile('ok.yaml', 'jwt: []\n')}`, '--oidc-groups-claim=groups'], '--authentication-config and --oidc-groups-claim may not be used together'],
    ['anonymous in the file with an explicit --anonymous-auth', () => [`--authentication-config=${configFile('anon.yaml', 'anonymous: {enabled: true}\n')}`, '--anonymous-auth=false'], 'anon.yaml: anonymous: Forbidden: may not be set together with --anonymous-auth'],
    ['an invalid file', () => [`--authentication-config=${configFile('bad.yaml', "jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {expression: 'claims.sub +'}}\n")}`], 'bad.yaml: jwt[0].claimMappings.username.expression: Invalid value: compilation failed'],
    ['a missing file', () => [`--authentication-config=${path.join(pki.dir, 'missing.yaml')}`], 'missing.yaml: ENOENT'],
    ['an OIDC issuer without a client id', () => ['--oidc-issuer-url=https://issuer.example'], '--oidc-client-id is required with --oidc-issuer-url'],
    ['an HMAC signing algorithm', () => ['--oidc-issuer-url=https://issuer.example', '--oidc-client-id=x', '--oidc-signing-algs=RS256,HS256'], '--oidc-signing-algs: \\"HS256\\" is not supported'],
    ['alg none', () => ['--oidc-issuer-url=https://issuer.example', '--oidc-client-id=x', '--oidc-signing-algs=none'], '--oidc-signing-algs: \\"none\\" is not supported'],
  ])('%s', (_name, args, message) => {
    const res = start(args());
    expect(res.status).toBe(1);
    expect(res.stderr).toContain('"msg":"start failed"');
    expect(res.stderr).toContain(message);
  });
});
