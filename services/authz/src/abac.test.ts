import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createLogger } from '@svc/service-kit';
import { AbacPolicyError, abacAuthorizer, abacModeFor, abacRulesFor, loadAbacPolicyFile, parseAbacPolicies, type AbacPolicy } from './abac';
import { AuthorizationConfigError, chain, type Attributes } from './authorizer';

const FILE = '/etc/svc/policy.jsonl';
const v1 = (spec: Record<string, unknown>): string => JSON.stringify({ apiVersion: 'abac.authorization.svc.io/v1beta1', kind: 'Policy', spec });
const parseOne = (line: string): Omit<AbacPolicy, 'line'> => {
  const { policies } = parseAbacPolicies(line, FILE);
  expect(policies).toHaveLength(1);
  const { line: _line, ...rest } = policies[0] as AbacPolicy;
  return rest;
};

describe('ABAC policy file: parsing', () => {
  test('skips blank lines and # comments; counts lines from 1 and unversioned lines', () => {
    const text = ['# the policy', '', v1({ user: 'alice', namespace: '*', resource: '*', apiGroup: '*' }), '   ', '  # indented comment', '{"user":"bob","readonly":true}', ''].join('\n');
    const { policies, unversionedLines } = parseAbacPolicies(text, FILE);
    expect(policies.map((p) => [p.line, p.user])).toEqual([
      [3, 'alice'],
      [6, 'bob'],
    ]);
    expect(unversionedLines).toBe(1);
  });

  test('CRLF line ends and an empty file are fine', () => {
    expect(parseAbacPolicies(`${v1({ user: 'a' })}\r\n${v1({ group: 'g' })}\r\n`, FILE).policies).toHaveLength(2);
    expect(parseAbacPolicies('', FILE).policies).toEqual([]);
  });

  test('v1beta1 is taken as written, under either group name', () => {
    const spec = { user: 'alice', readonly: true, apiGroup: 'apps', resource: 'deployments', namespace: 'team', nonResourcePath: '/foo/*' };
    const expected = { user: 'alice', group: '', readonly: true, apiGroup: 'apps', resource: 'deployments', namespace: 'team', nonResourcePath: '/foo/*' };
    expect(parseOne(v1(spec))).toEqual(expected);
    expect(parseOne(JSON.stringify({ apiVersion: 'abac.authorization.kubernetes.io/v1beta1', kind: 'Policy', spec }))).toEqual(expected);
  });

  test('v1beta1: a * user or group becomes every authenticated user; upstream API group names become ours', () => {
    expect(parseOne(v1({ user: '*', resource: 'pods' }))).toMatchObject({ user: '', group: 'system:authenticated' });
    expect(parseOne(v1({ group: '*', user: 'ignored' }))).toMatchObject({ user: '', group: 'system:authenticated' });
    expect(parseOne(v1({ user: 'a', apiGroup: 'rbac.authorization.k8s.io' }))).toMatchObject({ apiGroup: 'rbac.authorization.svc.io' });
    expect(parseOne(v1({ user: 'a', readonly: null, namespace: null }))).toMatchObject({ readonly: false, namespace: '' });
  });

  test.each([
    ['an empty object: every authenticated user, everything', '{}', { user: '', group: 'system:authenticated', readonly: false, apiGroup: '*', resource: '*', namespace: '*', nonResourcePath: '*' }],
    ['a user only', '{"user":"alice"}', { user: 'alice', group: '', readonly: false, apiGroup: '*', resource: '*', namespace: '*', nonResourcePath: '*' }],
    ['user *', '{"user":"*","readonly":true}', { user: '', group: 'system:authenticated', readonly: true, apiGroup: '*', resource: '*', namespace: '*', nonResourcePath: '*' }],
    ['group * wins over a user', '{"user":"alice","group":"*"}', { user: '', group: 'system:authenticated', readonly: false, apiGroup: '*', resource: '*', namespace: '*', nonResourcePath: '*' }],
    ['a namespace: no non-resource paths', '{"group":"dev","namespace":"team"}', { user: '', group: 'dev', readonly: false, apiGroup: '*', resource: '*', namespace: 'team', nonResourcePath: '' }],
    ['a resource: every namespace', '{"user":"bob","resource":"pods"}', { user: 'bob', group: '', readonly: false, apiGroup: '*', resource: 'pods', namespace: '*', nonResourcePath: '' }],
    ['versioned v0', '{"apiVersion":"abac.authorization.svc.io/v0","kind":"Policy","user":"bob","resource":"pods","namespace":"x"}', { user: 'bob', group: '', readonly: false, apiGroup: '*', resource: 'pods', namespace: 'x', nonResourcePath: '' }],
  ])('v0 conversion: %s', (_name, line, expected) => {
    expect(parseOne(line)).toEqual(expected);
  });

  // Every refusal names the file, the line and the field.
  test.each([
    ['not JSON', '{"user": "a",', '', /policy\.jsonl, line 3: not valid JSON/],
    ['not an object', '["user"]', '', /line 3: a policy must be a JSON object/],
    ['an unknown v1beta1 spec field', v1({ user: 'a', verbs: ['get'] }), 'spec.verbs', /line 3: spec\.verbs: unknown field; known fields: user, group, readonly, apiGroup, resource, namespace, nonResourcePath/],
    ['a spec field at the top of a v1beta1 policy', JSON.stringify({ apiVersion: 'abac.authorization.svc.io/v1beta1', kind: 'Policy', user: 'a', spec: { user: 'a' } }), 'user', /line 3: user: unknown field \(a v1beta1 policy has it under spec: spec\.user\)/],
    ['a field of another case (the fields are exact)', v1({ User: 'a' }), 'spec.User', /line 3: spec\.User: unknown field/],
    ['an unknown v0 field', '{"user":"a","apiGroup":"apps"}', 'apiGroup', /line 3: apiGroup: unknown field; the unversioned form has only user, group, readonly, resource, namespace/],
    ['a spec without apiVersion and kind', '{"spec":{"user":"a"}}', 'spec', /line 3: spec: unknown field \(a policy with spec needs apiVersion "abac\.authorization\.svc\.io\/v1beta1" and kind "Policy"\)/],
    ['readonly as a string', v1({ user: 'a', readonly: 'yes' }), 'spec.readonly', /line 3: spec\.readonly: Invalid value: "yes": must be true or false/],
    ['v0 readonly as a number', '{"user":"a","readonly":1}', 'readonly', /line 3: readonly: Invalid value: 1: must be true or false/],
    ['a user that is not a string', v1({ user: ['a'] }), 'spec.user', /line 3: spec\.user: Invalid value: \["a"\]: must be a string/],
    ['a namespace that is not a string', '{"user":"a","namespace":5}', 'namespace', /line 3: namespace: Invalid value: 5: must be a string/],
    ['neither user nor group', v1({ resource: 'pods', namespace: '*' }), 'spec.user', /line 3: spec\.user: Required value: a policy must name spec\.user or spec\.group/],
    ['empty user and group', v1({ user: '', group: '' }), 'spec.user', /line 3: spec\.user: Required value/],
    ['no spec', '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy"}', 'spec', /line 3: spec: Required value/],
    ['a spec that is not an object', '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Policy","spec":"user=a"}', 'spec', /line 3: spec: Invalid value: must be an object/],
    ['an unknown apiVersion', '{"apiVersion":"abac.authorization.svc.io/v1","kind":"Policy","spec":{"user":"a"}}', 'apiVersion', /line 3: apiVersion: Unsupported value: "abac\.authorization\.svc\.io\/v1": supported values: "abac\.authorization\.svc\.io\/v1beta1"/],
    ['a kind without apiVersion', '{"kind":"Policy","spec":{"user":"a"}}', 'apiVersion', /line 3: apiVersion: Required value/],
    ['an apiVersion without kind', '{"apiVersion":"abac.authorization.svc.io/v1beta1","spec":{"user":"a"}}', 'kind', /line 3: kind: Required value: "Policy"/],
    ['another kind', '{"apiVersion":"abac.authorization.svc.io/v1beta1","kind":"Role","spec":{"user":"a"}}', 'kind', /line 3: kind: Unsupported value: "Role": supported values: "Policy"/],
    ['a non-resource path without a leading slash', v1({ user: 'a', nonResourcePath: 'healthz' }), 'spec.nonResourcePath', /line 3: spec\.nonResourcePath: Invalid value: "healthz": must be "\*" or a path starting with "\/"/],
    ['a * inside a non-resource path', v1({ user: 'a', nonResourcePath: '/apis/*/v1' }), 'spec.nonResourcePath', /line 3: spec\.nonResourcePath: Invalid value: "\/apis\/\*\/v1": "\*" is a wildcard only at the end/],
  ])('refused: %s', (_name, bad, field, message) => {
    const text = `# header\n${v1({ user: 'ok' })}\n${bad}\n${v1({ user: 'after' })}\n`;
    let caught: unknown;
    try {
      parseAbacPolicies(text, FILE);
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(AbacPolicyError);
    expect(caught).toBeInstanceOf(AuthorizationConfigError);
    const err = caught as AbacPolicyError;
    expect(err.message).toMatch(message);
    expect(err.message.startsWith(`${FILE}, line 3: `)).toBe(true);
    expect({ file: err.file, line: err.line, field: err.field }).toEqual({ file: FILE, line: 3, field });
  });

  test('a missing file names itself', () => {
    expect(() => loadAbacPolicyFile('/nonexistent/policy.jsonl')).toThrow('--authorization-policy-file: /nonexistent/policy.jsonl: ENOENT');
  });
});

describe('ABAC decisions', () => {
  const policyFile = [
    '# v1beta1',
    v1({ user: 'admin', namespace: '*', resource: '*', apiGroup: '*', nonResourcePath: '*' }), // line 2
    v1({ user: 'reader', readonly: true, namespace: '*', resource: '*', apiGroup: '*' }), // line 3
    v1({ user: 'alice', namespace: 'team', resource: 'pods', apiGroup: '' }), // line 4
    v1({ user: 'alice', namespace: 'team', resource: 'deployments', apiGroup: 'apps' }), // line 5
    v1({ group: 'devs', readonly: true, namespace: 'dev', resource: '*', apiGroup: '*' }), // line 6
    v1({ user: 'carol', group: 'ops', namespace: 'prod', resource: 'configmaps', apiGroup: '' }), // line 7
    v1({ group: 'system:unauthenticated', readonly: true, nonResourcePath: '/version' }), // line 8
    v1({ group: 'system:authenticated', readonly: true, nonResourcePath: '/apis/*' }), // line 9
    v1({ user: '*', readonly: true, nonResourcePath: '/healthz' }), // line 10
    v1({ user: 'nodes', namespace: '', resource: 'nodes', apiGroup: '' }), // line 11
    '{"user":"legacy","readonly":true}', // line 12: v0, everything read-only
    '{"user":"scoped","namespace":"ns1","resource":"secrets"}', // line 13: v0, any API group
    '{"group":"auditors","readonly":true,"resource":"events"}', // line 14: v0, every namespace
    v1({ user: 'bob', namespace: 'team', resource: 'configmaps', apiGroup: '' }), // line 15
  ].join('\n');
  const authorize = abacAuthorizer(parseAbacPolicies(policyFile, FILE).policies);

  const resource = (username: string, groups: string[], verb: string, apiGroup: string, res: string, namespace: string, subresource = ''): Attributes => ({
    user: { username, uid: '', groups, extra: {} },
    resourceRequest: true,
    verb,
    path: `/api/v1/namespaces/${namespace}/${res}`,
    apiGroup,
    apiVersion: 'v1',
    resource: res,
    subresource,
    namespace,
    name: '',
  });
  const nonResource = (username: string, groups: string[], verb: string, p: string): Attributes => ({
    user: { username, uid: '', groups, extra: {} },
    resourceRequest: false,
    verb,
    path: p,
    apiGroup: '',
    apiVersion: '',
    resource: '',
    subresource: '',
    namespace: '',
    name: '',
  });
  const AUTH = ['system:authenticated'];

  test.each<[string, Attributes, number | undefined]>([
    // user and wildcards
    ['admin may do anything anywhere', resource('admin', AUTH, 'delete', 'apps', 'deployments', 'x'), 2],
    ['admin may create cluster-scoped objects', resource('admin', AUTH, 'create', '', 'namespaces', ''), 2],
    ['admin may POST any non-resource path', nonResource('admin', AUTH, 'post', '/logs/x'), 2],
    ['another user name is not admin', resource('admin2', AUTH, 'get', '', 'pods', 'x'), undefined],
    // readonly
    ['reader may get', resource('reader', AUTH, 'get', '', 'secrets', 'x'), 3],
    ['reader may list', resource('reader', AUTH, 'list', 'apps', 'deployments', 'x'), 3],
    ['reader may watch', resource('reader', AUTH, 'watch', '', 'pods', ''), 3],
    ['reader may not create', resource('reader', AUTH, 'create', '', 'pods', 'x'), undefined],
    ['reader may not update', resource('reader', AUTH, 'update', '', 'pods', 'x'), undefined],
    ['reader may not patch', resource('reader', AUTH, 'patch', '', 'pods', 'x'), undefined],
    ['reader may not delete', resource('reader', AUTH, 'delete', '', 'pods', 'x'), undefined],
    ['reader may not deletecollection', resource('reader', AUTH, 'deletecollection', '', 'pods', 'x'), undefined],
    ['reader has no non-resource path', nonResource('reader', AUTH, 'get', '/metrics'), undefined],
    // namespace, resource, apiGroup exact
    ['alice: pods in team', resource('alice', AUTH, 'create', '', 'pods', 'team'), 4],
    ['alice: pods/log in team (subresources are not looked at)', resource('alice', AUTH, 'get', '', 'pods', 'team', 'log'), 4],
    ['alice: not pods in another namespace', resource('alice', AUTH, 'get', '', 'pods', 'other'), undefined],
    ['alice: not pods cluster-wide (a list across namespaces)', resource('alice', AUTH, 'list', '', 'pods', ''), undefined],
    ['alice: deployments of apps', resource('alice', AUTH, 'update', 'apps', 'deployments', 'team'), 5],
    ['alice: not deployments of another group', resource('alice', AUTH, 'update', 'extensions', 'deployments', 'team'), undefined],
    ['alice: not pods of a named group (apiGroup "" is the core group)', resource('alice', AUTH, 'get', 'metrics.svc.io', 'pods', 'team'), undefined],
    ['alice: not configmaps', resource('alice', AUTH, 'get', '', 'configmaps', 'team'), undefined],
    ['an empty namespace matches only cluster-scoped requests', resource('nodes', AUTH, 'update', '', 'nodes', ''), 11],
    ['... not namespaced ones', resource('nodes', AUTH, 'get', '', 'nodes', 'x'), undefined],
    // groups
    ['a member of devs may read dev', resource('dan', ['devs', ...AUTH], 'list', 'apps', 'deployments', 'dev'), 6],
    ['a member of devs may not write dev', resource('dan', ['devs', ...AUTH], 'create', '', 'pods', 'dev'), undefined],
    ['a non-member may not read dev', resource('eve', AUTH, 'get', '', 'pods', 'dev'), undefined],
    ['user and group must both match: carol in ops', resource('carol', ['ops'], 'create', '', 'configmaps', 'prod'), 7],
    ['user and group must both match: carol outside ops', resource('carol', AUTH, 'create', '', 'configmaps', 'prod'), undefined],
    ['user and group must both match: another member of ops', resource('frank', ['ops'], 'create', '', 'configmaps', 'prod'), undefined],
    // nonResourcePath
    ['anonymous may GET /version', nonResource('system:anonymous', ['system:unauthenticated'], 'get', '/version'), 8],
    ['anonymous may HEAD /version', nonResource('system:anonymous', ['system:unauthenticated'], 'head', '/version'), 8],
    ['anonymous may not POST /version', nonResource('system:anonymous', ['system:unauthenticated'], 'post', '/version'), undefined],
    ['anonymous may not GET /version/x (exact path)', nonResource('system:anonymous', ['system:unauthenticated'], 'get', '/version/x'), undefined],
    ['anonymous may not GET /apis', nonResource('system:anonymous', ['system:unauthenticated'], 'get', '/apis/apps'), undefined],
    ['authenticated users may GET under /apis/ (prefix)', nonResource('eve', AUTH, 'get', '/apis/apps/v1'), 9],
    ['the prefix /apis/* does not match /apis itself', nonResource('eve', AUTH, 'get', '/apis'), undefined],
    ['a user * policy: every authenticated user may GET /healthz', nonResource('eve', AUTH, 'get', '/healthz'), 10],
    ['a user * policy does not match anonymous requests', nonResource('system:anonymous', ['system:unauthenticated'], 'get', '/healthz'), undefined],
    ['a non-resource policy never matches a resource request', resource('system:anonymous', ['system:unauthenticated'], 'get', '', 'version', ''), undefined],
    ['a resource policy never matches a non-resource request', nonResource('alice', AUTH, 'get', '/api/v1/namespaces/team/pods'), undefined],
    // v0
    ['v0 user-only read-only: reads any resource in any group', resource('legacy', AUTH, 'list', 'apps', 'deployments', 'x'), 12],
    ['v0 user-only read-only: reads non-resource paths', nonResource('legacy', AUTH, 'get', '/metrics'), 12],
    ['v0 user-only read-only: no writes', resource('legacy', AUTH, 'create', '', 'pods', 'x'), undefined],
    ['v0 with namespace and resource: every API group', resource('scoped', AUTH, 'delete', 'whatever.example', 'secrets', 'ns1'), 13],
    ['v0 with namespace and resource: not another namespace', resource('scoped', AUTH, 'delete', '', 'secrets', 'ns2'), undefined],
    ['v0 with namespace and resource: no non-resource paths', nonResource('scoped', AUTH, 'get', '/version'), undefined],
    ['v0 resource only: every namespace', resource('gina', ['auditors'], 'watch', '', 'events', 'any'), 14],
    ['v0 resource only: no other resources', resource('gina', ['auditors'], 'get', '', 'pods', 'any'), undefined],
    // service accounts
    ['a service account by its user name', resource('system:serviceaccount:team:bob', AUTH, 'get', '', 'configmaps', 'team'), undefined],
    ['bob (a plain user) is not a service account named bob', resource('bob', AUTH, 'create', '', 'configmaps', 'team'), 15],
  ])('%s', async (_name, attrs, line) => {
    const d = await authorize(attrs);
    if (line === undefined) expect(d).toEqual({ decision: 'no-opinion', reason: '' });
    else expect(d).toEqual({ decision: 'allow', reason: `ABAC: allowed by policy line ${line}` });
  });

  test('in the chain, ABAC allows or passes the request to the next mode, and never denies', async () => {
    const denyRest = chain(['ABAC', 'AlwaysDeny'], { ABAC: authorize });
    expect((await denyRest(resource('reader', AUTH, 'get', '', 'pods', 'x'))).decision).toBe('allow');
    expect((await denyRest(resource('reader', AUTH, 'create', '', 'pods', 'x'))).decision).toBe('deny');
    const alone = chain(['ABAC'], { ABAC: authorize });
    expect(await alone(resource('reader', AUTH, 'create', '', 'pods', 'x'))).toEqual({ decision: 'no-opinion', reason: 'none of the authorization modes (ABAC) allowed it' });
  });
});

describe('ABAC and its flag come together', () => {
  const log = createLogger('authz-test', { level: 'error' });
  let dir = '';
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'abac-'));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('the mode without the file, and the file without the mode, are refused', () => {
    expect(() => abacModeFor(['ABAC', 'RBAC'], undefined, log)).toThrow('the ABAC authorization mode needs --authorization-policy-file');
    expect(() => abacModeFor(['ABAC'], '', log)).toThrow('the ABAC authorization mode needs --authorization-policy-file');
    expect(() => abacModeFor(['RBAC'], '/x.jsonl', log)).toThrow('--authorization-policy-file is only used by the ABAC authorization mode, which --authorization-mode (RBAC) does not name');
    expect(abacModeFor(['RBAC'], undefined, log)).toBeUndefined();
  });

  test('with both, the file is read once', async () => {
    const file = path.join(dir, 'policy.jsonl');
    fs.writeFileSync(file, `${v1({ user: 'alice', readonly: true, namespace: '*', resource: '*', apiGroup: '*' })}\n`);
    const mode = abacModeFor(['ABAC'], file, log);
    const authorize = mode?.authorize;
    expect(authorize).toBeDefined();
    fs.writeFileSync(file, '');
    const attrs: Attributes = { user: { username: 'alice', uid: '', groups: [], extra: {} }, resourceRequest: true, verb: 'list', path: '', apiGroup: '', apiVersion: 'v1', resource: 'pods', subresource: '', namespace: 'a', name: '' };
    expect((await authorize?.(attrs))?.decision).toBe('allow');
    expect(mode?.rulesFor(attrs.user, 'a')).toEqual([{ verbs: ['get', 'list', 'watch'], apiGroups: ['*'], resources: ['*'], resourceNames: [], nonResourceURLs: [] }]);
  });
});

describe('the rules ABAC lists for a user (SelfSubjectRulesReview)', () => {
  const policies = parseAbacPolicies(
    [
      v1({ user: 'alice', namespace: 'team', resource: 'configmaps', apiGroup: '' }),
      v1({ group: 'devs', readonly: true, namespace: '*', resource: 'deployments', apiGroup: 'apps' }),
      v1({ user: 'bob', namespace: 'other', resource: '*', apiGroup: '*' }),
      v1({ user: '*', readonly: true, nonResourcePath: '/version' }),
      '{"user":"carol"}',
    ].join('\n'),
    FILE,
  ).policies;
  const user = (username: string, groups: string[] = []) => ({ username, uid: '', groups: [...groups, 'system:authenticated'], extra: {} });
  const rule = (verbs: string[], apiGroup: string, resource: string) => ({ verbs, apiGroups: [apiGroup], resources: [resource], resourceNames: [], nonResourceURLs: [] });
  const path = (verbs: string[], url: string) => ({ verbs, apiGroups: [], resources: [], resourceNames: [], nonResourceURLs: [url] });

  test('resource rules of the matching policies in the namespace: read-only is get, list, watch; else every verb', () => {
    expect(abacRulesFor(policies, user('alice', ['devs']), 'team')).toEqual([rule(['*'], '', 'configmaps'), rule(['get', 'list', 'watch'], 'apps', 'deployments')]);
    expect(abacRulesFor(policies, user('alice'), 'elsewhere')).toEqual([]);
    expect(abacRulesFor(policies, user('bob'), 'other')).toEqual([rule(['*'], '*', '*')]);
  });

  test('a non-resource path is listed only where the policy’s namespace matches, as the original lists it', () => {
    expect(abacRulesFor(policies, user('dave'), '')).toEqual([path(['get', 'list', 'watch'], '/version')]);
    expect(abacRulesFor(policies, user('dave'), 'team')).toEqual([]);
    // An unversioned line naming only a user grants every resource in every namespace and every path.
    expect(abacRulesFor(policies, user('carol'), 'team')).toEqual([rule(['*'], '*', '*'), path(['*'], '*')]);
  });
});
