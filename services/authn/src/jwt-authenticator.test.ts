import { createHmac, createPublicKey, type JsonWebKey } from 'node:crypto';
import * as https from 'node:https';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { createLogger, parseFlags } from '@svc/service-kit';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';
import { parseAuthenticationConfig } from './authentication-config';
import { AUTHN_FLAGS, authenticationConfigFile, oidcSettings } from './flags';
import { jwtAuthenticator } from './jwt-authenticator';
import { JwtMethods } from './jwt-methods';
import { startTestIssuer, type TestIssuer } from './testing/oidc-issuer';

const REQUIRED = ['--internal-ca-file=ca.crt', '--internal-cert-file=authn.crt', '--internal-key-file=authn.key'];

describe('JWT authenticators against an issuer on loopback HTTPS', () => {
  let pki: TestPki;
  let issuer: TestIssuer;
  let caFile = '';

  beforeAll(async () => {
    pki = makeTestPki('oidc-ca');
    issuer = await startTestIssuer(pki.tlsFor('issuer'));
    await issuer.addKey();
    caFile = path.join(pki.dir, 'ca.crt');
  });
  afterAll(async () => {
    await issuer.close();
    pki.remove();
  });

  const oidc = (extra: string[] = []) => {
    const settings = oidcSettings(parseFlags([...REQUIRED, `--oidc-issuer-url=${issuer.url}`, '--oidc-client-id=svc', `--oidc-ca-file=${caFile}`, ...extra], AUTHN_FLAGS));
    if (!settings) throw new Error('no settings');
    return jwtAuthenticator(settings, 'oidc');
  };

  test('an ID token authenticates: username prefixed with the issuer, groups from the groups claim', async () => {
    const auth = oidc(['--oidc-groups-claim=groups', '--oidc-groups-prefix=oidc:']);
    const token = await issuer.sign({ sub: 'alice', aud: 'svc', groups: ['dev', 'ops'] });
    expect(await auth.authenticateToken(token, ['api'])).toEqual({
      status: 'authenticated',
      audiences: ['api'],
      user: { username: `${issuer.url}#alice`, uid: '', groups: ['oidc:dev', 'oidc:ops'], extra: {} },
    });
  });

  test('username claims and prefixes: email unprefixed and verified, "-" for none, an explicit prefix', async () => {
    const email = oidc(['--oidc-username-claim=email']);
    expect(await email.authenticateToken(await issuer.sign({ sub: 'x', aud: 'svc', email: 'a@example.com', email_verified: true }), [])).toMatchObject({ user: { username: 'a@example.com' } });
    expect(await email.authenticateToken(await issuer.sign({ sub: 'x', aud: 'svc', email: 'b@example.com', email_verified: false }), [])).toEqual({ status: 'rejected', error: 'oidc: email not verified' });
    expect(await oidc(['--oidc-username-prefix=-']).authenticateToken(await issuer.sign({ sub: 'carol', aud: 'svc' }), [])).toMatchObject({ user: { username: 'carol' } });
    expect(await oidc(['--oidc-username-prefix=corp:']).authenticateToken(await issuer.sign({ sub: 'dave', aud: 'svc' }), [])).toMatchObject({ user: { username: 'corp:dave' } });
  });

  test('key rotation: a token of a new key is accepted after the keys are fetched again; a removed key no longer verifies', async () => {
    const auth = oidc();
    expect((await auth.authenticateToken(await issuer.sign({ sub: 'a', aud: 'svc' }), [])).status).toBe('authenticated');
    const newKid = await issuer.addKey();
    const before = issuer.jwksFetches;
    await new Promise((r) => setTimeout(r, 1100));
    expect((await auth.authenticateToken(await issuer.sign({ sub: 'b', aud: 'svc' }, { kid: newKid }), [])).status).toBe('authenticated');
    expect(issuer.jwksFetches).toBe(before + 1);
    // A key the issuer has withdrawn: its tokens no longer verify once the keys are fetched again.
    const withdrawn = await issuer.addKey();
    const token = await issuer.sign({ sub: 'c', aud: 'svc' }, { kid: withdrawn });
    issuer.removeKey(withdrawn);
    await new Promise((r) => setTimeout(r, 1100));
    expect(await auth.authenticateToken(token, [])).toEqual({ status: 'rejected', error: expect.stringMatching(/^oidc: /) });
  });

  test.each([
    ['the wrong audience', async () => issuer.sign({ sub: 'a', aud: 'other' }), /aud/],
    ['an expired token', async () => issuer.sign({ sub: 'a', aud: 'svc' }, { expiresInSeconds: -10 }), /exp/],
    ['a missing required claim', async () => issuer.sign({ sub: 'a', aud: 'svc' }), /required claim hd/],
    ['a wrong required claim', async () => issuer.sign({ sub: 'a', aud: 'svc', hd: 'evil.com' }), /required claim hd/],
    ['no username claim', async () => issuer.sign({ aud: 'svc', hd: 'example.com' }), /claim "sub" is missing/],
    [
      'alg none',
      async () => {
        const t = await issuer.sign({ sub: 'a', aud: 'svc', hd: 'example.com' });
        return `${Buffer.from(JSON.stringify({ alg: 'none' })).toString('base64url')}.${t.split('.')[1] ?? ''}.`;
      },
      /./,
    ],
    [
      "HS256 keyed with the issuer's own public key (PEM and JWK forms)",
      async () => {
        const jwk = (JSON.parse(await get(`${issuer.url}/keys`)) as { keys: Array<JsonWebKey & { kid: string }> }).keys[0];
        if (!jwk) throw new Error('no key');
        const header = Buffer.from(JSON.stringify({ alg: 'HS256', kid: jwk.kid })).toString('base64url');
        const payload = (await issuer.sign({ sub: 'a', aud: 'svc', hd: 'example.com' })).split('.')[1] ?? '';
        const pem = createPublicKey({ key: jwk, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
        return `${header}.${payload}.${createHmac('sha256', pem).update(`${header}.${payload}`).digest('base64url')}`;
      },
      /./,
    ],
    ['a token issued in the future', async () => issuer.sign({ sub: 'a', aud: 'svc', hd: 'example.com', iat: Math.floor(Date.now() / 1000) + 3600 }), /"iat" claim timestamp check failed/],
    ['a token not yet valid', async () => issuer.sign({ sub: 'a', aud: 'svc', hd: 'example.com', nbf: Math.floor(Date.now() / 1000) + 3600 }), /"nbf" claim timestamp check failed/],
    ['a token without exp', async () => issuer.sign({ sub: 'a', aud: 'svc', hd: 'example.com' }, { expiresInSeconds: null }), /exp/],
    ['a required claim that is not a string', async () => issuer.sign({ sub: 'a', aud: 'svc', hd: ['example.com'] } as never), /required claim hd/],
  ])('%s is rejected', async (_name, make, why) => {
    const out = await oidc(['--oidc-required-claim=hd=example.com']).authenticateToken(await make(), []);
    expect(out).toEqual({ status: 'rejected', error: expect.stringMatching(why) });
  });

  test('a token valid within the clock skew is accepted (nbf a minute ahead); an email username whose email_verified is not true is refused', async () => {
    const auth = oidc();
    expect((await auth.authenticateToken(await issuer.sign({ sub: 'a', aud: 'svc', nbf: Math.floor(Date.now() / 1000) + 60 }), [])).status).toBe('authenticated');
    const email = oidc(['--oidc-username-claim=email']);
    expect(await email.authenticateToken(await issuer.sign({ sub: 'x', aud: 'svc', email: 'c@example.com', email_verified: 'true' }), [])).toEqual({ status: 'rejected', error: 'oidc: email not verified' });
    expect(await email.authenticateToken(await issuer.sign({ sub: 'x', aud: 'svc', email: 'd@example.com' }), [])).toMatchObject({ user: { username: 'd@example.com' } });
  });

  test('the groups claim may be one string; a groups claim of another type is refused; signing algorithms are enforced', async () => {
    const auth = oidc(['--oidc-groups-claim=role']);
    expect(await auth.authenticateToken(await issuer.sign({ sub: 'a', aud: 'svc', role: 'admin' }), [])).toMatchObject({ user: { groups: ['admin'] } });
    expect(await auth.authenticateToken(await issuer.sign({ sub: 'a', aud: 'svc', role: 7 }), [])).toEqual({ status: 'rejected', error: expect.stringMatching(/claim "role" is not a string or a list of strings/) });
    // Tokens signed with RS256 while only ES256 is accepted.
    const es = oidc(['--oidc-signing-algs=ES256']);
    expect(await es.authenticateToken(await issuer.sign({ sub: 'a', aud: 'svc' }), [])).toEqual({ status: 'rejected', error: expect.stringMatching(/^oidc: /) });
  });

  test('a verified token is cached until its exp: later uses need no key, and after exp it is refused', async () => {
    const auth = oidc();
    const kid = await issuer.addKey();
    const token = await issuer.sign({ sub: 'short', aud: 'svc' }, { kid, expiresInSeconds: 2 });
    expect((await auth.authenticateToken(token, [])).status).toBe('authenticated');
    issuer.removeKey(kid);
    const fetches = issuer.jwksFetches;
    expect((await auth.authenticateToken(token, [])).status).toBe('authenticated');
    expect(issuer.jwksFetches).toBe(fetches);
    await new Promise((r) => setTimeout(r, 2100));
    expect(await auth.authenticateToken(token, [])).toEqual({ status: 'rejected', error: expect.stringMatching(/exp/) });
  });

  test('tokens naming unknown key ids fetch the keys at most once a second', async () => {
    const auth = oidc();
    await auth.authenticateToken(await issuer.sign({ sub: 'warm', aud: 'svc' }), []);
    await new Promise((r) => setTimeout(r, 1100));
    const before = issuer.jwksFetches;
    const good = await issuer.sign({ sub: 'a', aud: 'svc' });
    const forged = Array.from({ length: 30 }, (_, i) => {
      const [, payload, signature] = good.split('.');
      return `${Buffer.from(JSON.stringify({ alg: 'RS256', kid: `unknown-${i}` })).toString('base64url')}.${payload ?? ''}.${signature ?? ''}`;
    });
    const outcomes = await Promise.all(forged.map((t) => auth.authenticateToken(t, [])));
    expect(outcomes.every((o) => o.status === 'rejected')).toBe(true);
    expect(issuer.jwksFetches - before).toBeLessThanOrEqual(2);
  });

  test('an issuer that cannot be reached, or whose certificate is not trusted, rejects its tokens and is not asked again within a second', async () => {
    const untrusted = jwtAuthenticator({ url: issuer.url, audiences: ['svc'], algorithms: ['RS256'], claimValidationRules: [], username: { claim: 'sub', prefix: '' }, requireVerifiedEmail: true, extra: [], userValidationRules: [] }, 'oidc');
    const token = await issuer.sign({ sub: 'a', aud: 'svc' });
    expect(await untrusted.authenticateToken(token, [])).toEqual({ status: 'rejected', error: expect.stringMatching(/^oidc: the issuer's keys could not be fetched: /) });
    const started = Date.now();
    expect(await untrusted.authenticateToken(token, [])).toEqual({ status: 'rejected', error: expect.stringMatching(/could not be fetched/) });
    expect(Date.now() - started).toBeLessThan(100);
  });

  test('a discovery document naming another issuer is refused', async () => {
    const other = await startTestIssuer(pki.tlsFor('issuer'), '/other');
    try {
      const ca = fs.readFileSync(caFile, 'utf8');
      const auth = jwtAuthenticator({ url: issuer.url, discoveryUrl: `${other.url}/.well-known/openid-configuration`, certificateAuthority: ca, audiences: ['svc'], algorithms: ['RS256'], claimValidationRules: [], username: { claim: 'sub', prefix: '' }, requireVerifiedEmail: true, extra: [], userValidationRules: [] }, 'jwt');
      expect(await auth.authenticateToken(await issuer.sign({ sub: 'a', aud: 'svc' }), [])).toEqual({ status: 'rejected', error: expect.stringMatching(/the discovered issuer ".*\/other" is not https:\/\/127\.0\.0\.1:\d+"?/) });
    } finally {
      await other.close();
    }
  });

  test('tokens of another issuer, opaque and oversized tokens are left to the other methods', async () => {
    const auth = oidc();
    expect(await auth.authenticateToken(await issuer.sign({ sub: 'a', aud: 'svc', iss: 'https://elsewhere' }), [])).toEqual({ status: 'not-mine' });
    expect(await auth.authenticateToken('opaque', [])).toEqual({ status: 'not-mine' });
    expect(await auth.authenticateToken(`a.${'b'.repeat(20000)}.c`, [])).toEqual({ status: 'not-mine' });
  });

  const configDoc = (body: string) => `apiVersion: apiserver.config.svc.io/v1beta1\nkind: AuthenticationConfiguration\n${body}`;
  const jwtEntry = (mappings: string, extra = '') =>
    configDoc(`jwt:
- issuer:
    url: ${issuer.url}
    certificateAuthority: |
${fs.readFileSync(caFile, 'utf8').split('\n').map((l) => `      ${l}`).join('\n')}
    audiences: [svc, other]
    audienceMatchPolicy: MatchAny
${extra}  claimMappings:
${mappings}
`);

  test('the configuration file: CEL claim rules, username, groups, uid and extra mappings, user rules', async () => {
    const config = parseAuthenticationConfig(
      jwtEntry(
        `    username:\n      expression: '"corp:" + claims.sub'\n    groups:\n      expression: 'claims.roles.map(r, "role:" + r)'\n    uid:\n      claim: uid\n    extra:\n    - key: acme.io/team\n      valueExpression: claims.team\n`,
        `  claimValidationRules:\n  - expression: 'claims.tenant == "acme"'\n    message: wrong tenant\n  userValidationRules:\n  - expression: '!user.username.startsWith("corp:system")'\n    message: reserved name\n`,
      ),
      'auth.yaml',
    );
    const auth = jwtAuthenticator(config.jwt[0] as never, 'jwt');
    const ok = await auth.authenticateToken(await issuer.sign({ sub: 'erin', aud: 'other', tenant: 'acme', roles: ['a', 'b'], uid: 'u-1', team: 'blue' }), []);
    expect(ok).toEqual({ status: 'authenticated', audiences: [], user: { username: 'corp:erin', uid: 'u-1', groups: ['role:a', 'role:b'], extra: { 'acme.io/team': ['blue'] } } });
    expect(await auth.authenticateToken(await issuer.sign({ sub: 'erin', aud: 'svc', tenant: 'evil', roles: [] }), [])).toEqual({ status: 'rejected', error: `jwt: claim validation expression 'claims.tenant == "acme"' failed: wrong tenant` });
    expect(await auth.authenticateToken(await issuer.sign({ sub: 'system:x', aud: 'svc', tenant: 'acme', roles: [], team: 'red', uid: 'u-2' }), [])).toEqual({ status: 'rejected', error: expect.stringMatching(/^jwt: user validation expression .* failed: reserved name$/) });
    expect((await auth.authenticateToken(await issuer.sign({ sub: 'erin', aud: 'svc', tenant: 'acme' }), [])).status).toBe('rejected');
    // A uid claim that is missing fails, as in the original.
    expect(await auth.authenticateToken(await issuer.sign({ sub: 'erin', aud: 'svc', tenant: 'acme', roles: [], team: 'x' }), [])).toEqual({ status: 'rejected', error: 'jwt: uid claim "uid" is missing or not a string' });
  });

  test('expression results: empty strings and null are no values; a username that is not a string, or an expression over the cost budget, rejects the token', async () => {
    const config = parseAuthenticationConfig(
      jwtEntry(
        `    username:
      expression: 'claims.sub'
    groups:
      expression: 'claims.roles'
    extra:
    - key: acme.io/team
      valueExpression: 'has(claims.team) ? claims.team : null'
    - key: acme.io/empty
      valueExpression: '""'
`,
        `  claimValidationRules:
  - expression: 'claims.list.all(a, claims.list.all(b, claims.list.exists(c, a + b == c)))'
    message: never fails
`,
      ),
      'auth.yaml',
    );
    const auth = jwtAuthenticator(config.jwt[0] as never, 'jwt');
    expect(await auth.authenticateToken(await issuer.sign({ sub: 'gina', aud: 'svc', roles: ['a', '', 'b'], list: [] }), [])).toEqual({ status: 'authenticated', audiences: [], user: { username: 'gina', uid: '', groups: ['a', 'b'], extra: {} } });
    expect(await auth.authenticateToken(await issuer.sign({ sub: 7, aud: 'svc', roles: [], list: [] } as never), [])).toEqual({ status: 'rejected', error: 'jwt: username expression must return a string' });
    const list = Array.from({ length: 300 }, (_, i) => `${i}`);
    expect(await auth.authenticateToken(await issuer.sign({ sub: 'gina', aud: 'svc', roles: [], list }), [])).toEqual({ status: 'rejected', error: expect.stringMatching(/^jwt: claim validation expression failed: operation cancelled: actual cost limit exceeded/) });
  });

  test("the server's audiences: a request for other audiences is not these tokens'; the result names the requested audiences that are the server's", async () => {
    const methods = new JwtMethods(createLogger('authn-test', { write: () => undefined }), { apiAudiences: ['api', 'api2'] });
    const settings = oidcSettings(parseFlags([...REQUIRED, `--oidc-issuer-url=${issuer.url}`, '--oidc-client-id=svc', `--oidc-ca-file=${caFile}`], AUTHN_FLAGS));
    if (!settings) throw new Error('no settings');
    methods.setIssuers([settings], 'oidc');
    const token = await issuer.sign({ sub: 'a', aud: 'svc' });
    expect(await methods.authenticateToken(token, ['other'])).toEqual({ status: 'not-mine' });
    expect(await methods.authenticateToken(token, ['api2', 'other'])).toMatchObject({ status: 'authenticated', audiences: ['api2'] });
    expect(await methods.authenticateToken(token, ['api', 'api2'])).toMatchObject({ status: 'authenticated', audiences: ['api', 'api2'] });
  });

  test('a verified token is logged with its username, never with the token', async () => {
    const lines: string[] = [];
    const methods = new JwtMethods(createLogger('authn-test', { write: (l) => lines.push(l) }));
    const settings = oidcSettings(parseFlags([...REQUIRED, `--oidc-issuer-url=${issuer.url}`, '--oidc-client-id=svc', `--oidc-ca-file=${caFile}`, '--oidc-username-prefix=oidc:'], AUTHN_FLAGS));
    if (!settings) throw new Error('no settings');
    methods.setIssuers([settings], 'oidc');
    const token = await issuer.sign({ sub: 'henry', aud: 'svc' });
    expect((await methods.authenticateToken(token, [])).status).toBe('authenticated');
    expect(lines.map((l) => JSON.parse(l) as Record<string, unknown>)).toEqual([expect.objectContaining({ msg: 'token verified', username: 'oidc:henry', issuer: issuer.url })]);
    expect(lines.join('\n')).not.toContain(token.split('.')[2]);
  });

  test.each([
    ['a missing username mapping', configDoc(`jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {}\n`), 'jwt[0].claimMappings.username: Required value'],
    ['a claim without a prefix', configDoc(`jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub}}\n`), 'jwt[0].claimMappings.username.prefix: Required value'],
    ['a plain http issuer', configDoc(`jwt:\n- issuer: {url: http://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n`), 'jwt[0].issuer.url: Invalid value'],
    ['two audiences without MatchAny', configDoc(`jwt:\n- issuer: {url: https://a.example, audiences: [x, y]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n`), 'jwt[0].issuer.audienceMatchPolicy: Invalid value: "": audienceMatchPolicy must be MatchAny for multiple audiences'],
    ['a broken expression', configDoc(`jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {expression: 'claims.sub +'}}\n`), 'jwt[0].claimMappings.username.expression: Invalid value: compilation failed'],
    ['email without email_verified', configDoc(`jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {expression: 'claims.email'}}\n`), 'claims.email_verified must be used'],
    ['a reserved extra key', configDoc(`jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}, extra: [{key: svc.io/x, valueExpression: claims.sub}]}\n`), 'jwt[0].claimMappings.extra[0].key: Invalid value: "svc.io/x": the domain is reserved'],
    ['duplicate issuers', configDoc(`jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n`), 'jwt[1].issuer.url: Duplicate value'],
    ['the service-account issuer', configDoc(`jwt:\n- issuer: {url: https://svc.default.svc, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n`), 'may not be the service account issuer'],
    ['too many issuers', configDoc(`jwt:\n${Array.from({ length: 65 }, (_, i) => `- issuer: {url: https://i${i}.example, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n`).join('')}`), 'jwt: Too many: 65: must have at most 64 items'],
    ['the wrong kind', 'apiVersion: apiserver.config.svc.io/v1beta1\nkind: AuthorizationConfiguration\n', 'kind: Unsupported value'],
    ['not YAML', 'jwt: [', 'auth.yaml: '],
  ])('%s is refused naming the file and the field', (_name, doc, message) => {
    expect(() => parseAuthenticationConfig(doc, 'auth.yaml', ['https://svc.default.svc'])).toThrow(message);
    expect(() => parseAuthenticationConfig(doc, 'auth.yaml', ['https://svc.default.svc'])).toThrow(/^auth\.yaml: /);
  });

  test('a changed file is picked up; an invalid one is refused and the last good one stays', async () => {
    const file = path.join(pki.dir, 'auth.yaml');
    const version = (prefix: string) => jwtEntry(`    username:\n      claim: sub\n      prefix: '${prefix}'\n`);
    fs.writeFileSync(file, version('v1:'));
    const methods = new JwtMethods(createLogger('authn-test'));
    methods.apply(parseAuthenticationConfig(fs.readFileSync(file, 'utf8'), file));
    methods.watch(file, 50);
    try {
      const token = await issuer.sign({ sub: 'frank', aud: 'svc' });
      expect(await methods.authenticateToken(token, [])).toMatchObject({ user: { username: 'v1:frank' } });
      fs.writeFileSync(file, version('v2:'));
      await waitFor(async () => ((await methods.authenticateToken(token, [])) as { user?: { username: string } }).user?.username === 'v2:frank');
      fs.writeFileSync(file, `${version('v3:')}\n  bogus: [`);
      await new Promise((r) => setTimeout(r, 400));
      expect(await methods.authenticateToken(token, [])).toMatchObject({ user: { username: 'v2:frank' } });
    } finally {
      methods.close();
    }
  });

  test('flags: the file and --oidc-* flags are refused together; OIDC flags need an issuer, a client id, asymmetric algorithms', () => {
    expect(() => authenticationConfigFile(parseFlags([...REQUIRED, '--authentication-config=a.yaml', '--oidc-issuer-url=https://x'], AUTHN_FLAGS))).toThrow('--authentication-config and --oidc-issuer-url may not be used together');
    expect(() => oidcSettings(parseFlags([...REQUIRED, '--oidc-client-id=x'], AUTHN_FLAGS))).toThrow('--oidc-client-id needs --oidc-issuer-url');
    expect(() => oidcSettings(parseFlags([...REQUIRED, '--oidc-issuer-url=https://x'], AUTHN_FLAGS))).toThrow('--oidc-client-id is required');
    expect(() => oidcSettings(parseFlags([...REQUIRED, '--oidc-issuer-url=http://x', '--oidc-client-id=x'], AUTHN_FLAGS))).toThrow('must be an https URL');
    expect(() => oidcSettings(parseFlags([...REQUIRED, '--oidc-issuer-url=https://x', '--oidc-client-id=x', '--oidc-signing-algs=HS256'], AUTHN_FLAGS))).toThrow('"HS256" is not supported');
    expect(() => oidcSettings(parseFlags([...REQUIRED, '--oidc-issuer-url=https://x', '--oidc-client-id=x', '--oidc-required-claim=novalue'], AUTHN_FLAGS))).toThrow('is not key=value');
  });
});

function get(url: string): Promise<string> {
  return new Promise((resolve, reject) => {
    https
      .get(url, { rejectUnauthorized: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      })
      .on('error', reject);
  });
}

async function waitFor(probe: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 50));
  }
}
