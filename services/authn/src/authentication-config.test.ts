import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createLogger } from '@svc/service-kit';
import { makeTestPki } from '@svc/service-kit/testing/pki';
import { AUTHENTICATION_CONFIG_VERSIONS, parseAuthenticationConfig } from './authentication-config';
import { JwtMethods } from './jwt-methods';

const doc = (body: string, version = 'apiserver.config.svc.io/v1beta1') => `apiVersion: ${version}\nkind: AuthenticationConfiguration\n${body}`;
const issuerAt = (fields: string, mappings = "{username: {claim: sub, prefix: ''}}", extra = '') => doc(`jwt:\n- issuer: {url: https://a.example, audiences: [x]${fields}}\n  claimMappings: ${mappings}\n${extra}`);

describe('the authentication configuration file', () => {
  test('every supported version is read; JSON is YAML', () => {
    for (const version of AUTHENTICATION_CONFIG_VERSIONS) expect(parseAuthenticationConfig(doc("jwt:\n- issuer: {url: https://a.example, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n", version), 'a.yaml').jwt).toHaveLength(1);
    const json = JSON.stringify({ apiVersion: 'apiserver.config.svc.io/v1', kind: 'AuthenticationConfiguration', jwt: [{ issuer: { url: 'https://a.example', audiences: ['x'] }, claimMappings: { username: { claim: 'sub', prefix: '' } } }] });
    expect(parseAuthenticationConfig(json, 'a.json').jwt[0]).toMatchObject({ url: 'https://a.example', audiences: ['x'], username: { claim: 'sub', prefix: '' } });
    expect(parseAuthenticationConfig(doc(''), 'a.yaml')).toEqual({ jwt: [] });
  });

  test('anonymous with path conditions', () => {
    expect(parseAuthenticationConfig(doc('anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /readyz\n'), 'a.yaml').anonymous).toEqual({ enabled: true, paths: ['/livez', '/readyz'] });
    expect(parseAuthenticationConfig(doc('anonymous: {enabled: false}\n'), 'a.yaml').anonymous).toEqual({ enabled: false });
  });

  test('an email username from an expression is accepted when email_verified is checked in the expression, an extra mapping or a claim rule', () => {
    const email = "{username: {expression: 'claims.email'}}";
    expect(() => parseAuthenticationConfig(issuerAt('', "{username: {expression: 'claims.email_verified ? claims.email : \"\"'}}"), 'a.yaml')).not.toThrow();
    expect(() => parseAuthenticationConfig(issuerAt('', email, "  claimValidationRules:\n  - expression: 'claims.email_verified == true'\n"), 'a.yaml')).not.toThrow();
    expect(() => parseAuthenticationConfig(issuerAt('', "{username: {expression: 'claims.email'}, extra: [{key: acme.io/v, valueExpression: 'string(claims.email_verified)'}]}"), 'a.yaml')).not.toThrow();
    // An index expression is not how the original recognises the claim.
    expect(() => parseAuthenticationConfig(issuerAt('', email, "  claimValidationRules:\n  - expression: 'claims[\"email_verified\"] == true'\n"), 'a.yaml')).toThrow('jwt[0].claimMappings.username.expression: Invalid value');
  });

  test.each([
    ['an unknown field', issuerAt('', "{username: {claim: sub, prefix: ''}, usernames: {}}"), 'jwt[0].claimMappings.usernames: unknown field'],
    ['an unknown top-level field', doc('jwts: []\n'), 'a.yaml: jwts: unknown field'],
    ['a uid prefix', issuerAt('', "{username: {claim: sub, prefix: ''}, uid: {claim: id, prefix: x}}"), 'jwt[0].claimMappings.uid.prefix: unknown field'],
    ['claim and expression together', issuerAt('', "{username: {claim: sub, expression: claims.sub}}"), "jwt[0].claimMappings.username: Invalid value: claim and expression can't both be set"],
    ['a prefix with an expression', issuerAt('', "{username: {expression: claims.sub, prefix: x}}"), 'jwt[0].claimMappings.username.prefix: Invalid value: may not be specified when expression is set'],
    ['a groups claim without a prefix', issuerAt('', "{username: {claim: sub, prefix: ''}, groups: {claim: g}}"), 'jwt[0].claimMappings.groups.prefix: Required value'],
    ['a claims expression that reads user', issuerAt('', "{username: {expression: 'user.username'}}"), "jwt[0].claimMappings.username.expression: Invalid value: compilation failed: undeclared reference to 'user'"],
    ['a user rule that reads claims', issuerAt('', undefined, "  userValidationRules:\n  - expression: 'claims.sub != \"\"'\n"), "jwt[0].userValidationRules[0].expression: Invalid value: compilation failed: undeclared reference to 'claims'"],
    ['a claim rule with a message', issuerAt('', undefined, '  claimValidationRules:\n  - {claim: hd, requiredValue: a, message: m}\n'), 'jwt[0].claimValidationRules[0].message: Invalid value: may not be specified when claim is set'],
    ['a duplicate claim rule', issuerAt('', undefined, '  claimValidationRules:\n  - {claim: hd, requiredValue: a}\n  - {claim: hd, requiredValue: b}\n'), 'jwt[0].claimValidationRules[1].claim: Duplicate value: "hd"'],
    ['a duplicate claim rule expression', issuerAt('', undefined, "  claimValidationRules:\n  - {expression: 'claims.a'}\n  - {expression: 'claims.a'}\n"), 'jwt[0].claimValidationRules[1].expression: Duplicate value'],
    ['a duplicate user rule', issuerAt('', undefined, "  userValidationRules:\n  - {expression: 'true'}\n  - {expression: 'true'}\n"), 'jwt[0].userValidationRules[1].expression: Duplicate value'],
    ['a claim rule expression that does not compile', issuerAt('', undefined, "  claimValidationRules:\n  - {expression: 'claims.a =='}\n"), 'jwt[0].claimValidationRules[0].expression: Invalid value: compilation failed'],
    ['an extra expression that does not compile', issuerAt('', "{username: {claim: sub, prefix: ''}, extra: [{key: acme.io/a, valueExpression: '(('}]}"), 'jwt[0].claimMappings.extra[0].valueExpression: Invalid value: compilation failed'],
    ['an extra key without a domain', issuerAt('', "{username: {claim: sub, prefix: ''}, extra: [{key: foo, valueExpression: claims.a}]}"), 'jwt[0].claimMappings.extra[0].key: Invalid value: "foo": must be a domain-prefixed path'],
    ['an uppercase extra key', issuerAt('', "{username: {claim: sub, prefix: ''}, extra: [{key: Acme.io/a, valueExpression: claims.a}]}"), 'jwt[0].claimMappings.extra[0].key: Invalid value: "Acme.io/a": must be lowercase'],
    ['a duplicate extra key', issuerAt('', "{username: {claim: sub, prefix: ''}, extra: [{key: acme.io/a, valueExpression: claims.a}, {key: acme.io/a, valueExpression: claims.b}]}"), 'jwt[0].claimMappings.extra[1].key: Duplicate value'],
    ['an extra key of a subdomain of k8s.io', issuerAt('', "{username: {claim: sub, prefix: ''}, extra: [{key: authentication.k8s.io/a, valueExpression: claims.a}]}"), 'the domain is reserved'],
    ['an extra key of kubernetes.io', issuerAt('', "{username: {claim: sub, prefix: ''}, extra: [{key: kubernetes.io/a, valueExpression: claims.a}]}"), 'the domain is reserved'],
    ['an extra key of a subdomain of svc.io', issuerAt('', "{username: {claim: sub, prefix: ''}, extra: [{key: authentication.svc.io/a, valueExpression: claims.a}]}"), 'the domain is reserved'],
    ['an extra mapping without an expression', issuerAt('', "{username: {claim: sub, prefix: ''}, extra: [{key: acme.io/a}]}"), 'jwt[0].claimMappings.extra[0].valueExpression: Required value'],
    ['a discovery URL equal to the URL', issuerAt(', discoveryURL: "https://a.example/"'), 'jwt[0].issuer.discoveryURL: Invalid value: discoveryURL must be different from URL'],
    ['a plain http discovery URL', issuerAt(', discoveryURL: "http://b.example/.well-known/openid-configuration"'), 'jwt[0].issuer.discoveryURL: Invalid value'],
    ['an issuer URL with a query', doc("jwt:\n- issuer: {url: 'https://a.example?x=1', audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n"), 'jwt[0].issuer.url: Invalid value'],
    ['a single audience with another policy', issuerAt(', audienceMatchPolicy: MatchAll'), 'jwt[0].issuer.audienceMatchPolicy: Invalid value: "MatchAll": audienceMatchPolicy must be empty or MatchAny for single audience'],
    ['no audiences', doc("jwt:\n- issuer: {url: https://a.example}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n"), 'jwt[0].issuer.audiences: Required value'],
    ['a duplicate audience', doc("jwt:\n- issuer: {url: https://a.example, audiences: [x, x], audienceMatchPolicy: MatchAny}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n"), 'jwt[0].issuer.audiences[1]: Duplicate value: "x"'],
    ['a CA that is not a certificate', issuerAt(', certificateAuthority: "not a certificate"'), 'jwt[0].issuer.certificateAuthority: Invalid value: "<omitted>"'],
    ['a corrupt CA certificate', issuerAt(', certificateAuthority: "-----BEGIN CERTIFICATE-----\\nAAAA\\n-----END CERTIFICATE-----"'), 'jwt[0].issuer.certificateAuthority: Invalid value: "<omitted>": a certificate does not parse'],
    ['an egress selector', issuerAt(', egressSelectorType: controlplane'), 'jwt[0].issuer.egressSelectorType: Forbidden'],
    ['duplicate discovery URLs', doc("jwt:\n- issuer: {url: https://a.example, discoveryURL: https://d.example/x, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n- issuer: {url: https://b.example, discoveryURL: https://d.example/x, audiences: [x]}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n"), 'jwt[1].issuer.discoveryURL: Duplicate value'],
    ['anonymous conditions while disabled', doc('anonymous: {enabled: false, conditions: [{path: /livez}]}\n'), 'anonymous.conditions: Invalid value: enabled should be set to true when conditions are defined'],
    ['a relative anonymous path', doc('anonymous: {enabled: true, conditions: [{path: livez}]}\n'), 'anonymous.conditions[0].path: Invalid value'],
    ['an unsupported version', doc('', 'apiserver.config.k8s.io/v1'), 'apiVersion: Unsupported value'],
  ])('%s is refused naming the file and the field', (_name, text, message) => {
    expect(() => parseAuthenticationConfig(text, 'a.yaml')).toThrow(message);
    expect(() => parseAuthenticationConfig(text, 'a.yaml')).toThrow(/^a\.yaml: /);
  });

  test('every problem of a file is reported at once', () => {
    const text = doc("jwt:\n- issuer: {url: http://a.example, audiences: []}\n  claimMappings: {username: {claim: sub}}\n");
    expect(() => parseAuthenticationConfig(text, 'a.yaml')).toThrow(/jwt\[0\]\.issuer\.url: .*; jwt\[0\]\.issuer\.audiences: .*; jwt\[0\]\.claimMappings\.username\.prefix: Required value/);
  });

  test('a certificate authority that parses is accepted', () => {
    const pki = makeTestPki('authn-config-ca');
    try {
      const ca = fs.readFileSync(path.join(pki.dir, 'ca.crt'), 'utf8');
      const text = doc(`jwt:\n- issuer:\n    url: https://a.example\n    audiences: [x]\n    certificateAuthority: |\n${ca.trim().split('\n').map((l) => `      ${l}`).join('\n')}\n  claimMappings: {username: {claim: sub, prefix: ''}}\n`);
      expect(parseAuthenticationConfig(text, 'a.yaml').jwt[0]?.certificateAuthority).toContain('BEGIN CERTIFICATE');
    } finally {
      pki.remove();
    }
  });

  test('anonymous in the file with an explicit --anonymous-auth is refused at start and on reload', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'authn-config-'));
    try {
      const file = path.join(dir, 'auth.yaml');
      fs.writeFileSync(file, doc('anonymous: {enabled: true}\n'));
      const explicit = new JwtMethods(createLogger('authn-test'), { anonymousAuthExplicit: true });
      expect(() => explicit.read(file)).toThrow(`${file}: anonymous: Forbidden: may not be set together with --anonymous-auth`);
      const implicit = new JwtMethods(createLogger('authn-test'), { anonymousAuthExplicit: false });
      expect(implicit.read(file).anonymous).toEqual({ enabled: true });
      fs.writeFileSync(file, issuerAt(''));
      expect(() => new JwtMethods(createLogger('authn-test'), { serviceAccountIssuers: ['https://a.example'] }).read(file)).toThrow('jwt[0].issuer.url: Invalid value: "https://a.example": may not be the service account issuer');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('anonymous path conditions decide per path; without conditions every path is anonymous', () => {
    const methods = new JwtMethods(createLogger('authn-test'));
    methods.apply(parseAuthenticationConfig(doc('anonymous:\n  enabled: true\n  conditions: [{path: /livez}]\n'), 'a.yaml'));
    expect([methods.anonymousAllowed('/livez'), methods.anonymousAllowed('/api'), methods.anonymousAllowed(undefined)]).toEqual([true, false, false]);
    methods.apply(parseAuthenticationConfig(doc('anonymous: {enabled: true}\n'), 'a.yaml'));
    expect(methods.anonymousAllowed('/api')).toBe(true);
    methods.apply(parseAuthenticationConfig(doc('anonymous: {enabled: false}\n'), 'a.yaml'));
    expect(methods.anonymousAllowed('/livez')).toBe(false);
  });
});
