import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { UserInfo } from '@svc/apimachinery';
import { compilePolicy, loadPolicyFile, parsePolicy, PolicyError, type AuditAttributes, type Policy } from './policy';

const alice: UserInfo = { username: 'alice', uid: 'a', groups: ['dev', 'system:authenticated'], extra: {} };
const bob: UserInfo = { username: 'bob', uid: 'b', groups: ['ops', 'system:authenticated'], extra: {} };

function resource(over: Partial<AuditAttributes> = {}): AuditAttributes {
  return { user: alice, verb: 'get', isResourceRequest: true, path: '/api/v1/namespaces/default/pods/p', apiGroup: '', resource: 'pods', subresource: '', namespace: 'default', name: 'p', ...over };
}

function nonResource(path: string, over: Partial<AuditAttributes> = {}): AuditAttributes {
  return { user: alice, verb: 'get', isResourceRequest: false, path, apiGroup: '', resource: '', subresource: '', namespace: '', name: '', ...over };
}

const levelOf = (policy: Policy, attrs: AuditAttributes): string => compilePolicy(policy).evaluate(attrs).level;

describe('audit policy matching', () => {
  test('no rule matches: None', () => {
    expect(levelOf({ rules: [{ level: 'Metadata', users: ['bob'] }] }, resource())).toBe('None');
  });

  test('the first rule that matches wins', () => {
    const policy: Policy = { rules: [{ level: 'None', verbs: ['get'] }, { level: 'RequestResponse' }] };
    expect(levelOf(policy, resource())).toBe('None');
    expect(levelOf(policy, resource({ verb: 'create' }))).toBe('RequestResponse');
  });

  test('users and userGroups; a request without a user matches neither', () => {
    expect(levelOf({ rules: [{ level: 'Request', users: ['alice'] }] }, resource())).toBe('Request');
    expect(levelOf({ rules: [{ level: 'Request', users: ['alice'] }] }, resource({ user: bob }))).toBe('None');
    expect(levelOf({ rules: [{ level: 'Request', userGroups: ['ops'] }] }, resource({ user: bob }))).toBe('Request');
    expect(levelOf({ rules: [{ level: 'Request', userGroups: ['ops'] }] }, resource())).toBe('None');
    expect(levelOf({ rules: [{ level: 'Request', userGroups: ['ops'] }] }, resource({ user: undefined }))).toBe('None');
    expect(levelOf({ rules: [{ level: 'Request', verbs: ['get'] }] }, resource({ user: undefined }))).toBe('Request');
  });

  test('resources: group, subresources, wildcards, resourceNames', () => {
    const rule = (resources: string[], resourceNames?: string[], group = ''): Policy => ({ rules: [{ level: 'Metadata', resources: [{ group, resources, ...(resourceNames ? { resourceNames } : {}) }] }] });
    expect(levelOf(rule(['pods']), resource())).toBe('Metadata');
    expect(levelOf(rule(['pods']), resource({ subresource: 'log' }))).toBe('None');
    expect(levelOf(rule(['pods/log']), resource({ subresource: 'log' }))).toBe('Metadata');
    expect(levelOf(rule(['pods/log']), resource())).toBe('None');
    expect(levelOf(rule(['*/log']), resource({ resource: 'widgets', subresource: 'log' }))).toBe('Metadata');
    expect(levelOf(rule(['pods/*']), resource({ subresource: 'status' }))).toBe('Metadata');
    expect(levelOf(rule(['pods/*']), resource())).toBe('Metadata');
    expect(levelOf(rule(['*']), resource({ resource: 'secrets' }))).toBe('Metadata');
    expect(levelOf(rule(['pods'], ['p']), resource())).toBe('Metadata');
    expect(levelOf(rule(['pods'], ['q']), resource())).toBe('None');
    expect(levelOf(rule(['deployments'], undefined, 'apps'), resource({ apiGroup: 'apps', resource: 'deployments' }))).toBe('Metadata');
    expect(levelOf(rule(['deployments'], undefined, 'apps'), resource({ resource: 'deployments' }))).toBe('None');
    // A group without resources: every resource of the group.
    expect(levelOf({ rules: [{ level: 'Metadata', resources: [{ group: 'apps' }] }] }, resource({ apiGroup: 'apps', resource: 'replicasets' }))).toBe('Metadata');
    // Resource rules never match a non-resource request.
    expect(levelOf(rule(['*']), nonResource('/api'))).toBe('None');
  });

  test('namespaces: the empty string is the cluster scope', () => {
    expect(levelOf({ rules: [{ level: 'Request', namespaces: ['kube-system'] }] }, resource({ namespace: 'kube-system' }))).toBe('Request');
    expect(levelOf({ rules: [{ level: 'Request', namespaces: ['kube-system'] }] }, resource())).toBe('None');
    expect(levelOf({ rules: [{ level: 'Request', namespaces: [''] }] }, resource({ namespace: '', resource: 'nodes' }))).toBe('Request');
  });

  test('nonResourceURLs: exact, trailing *, never a resource request', () => {
    const policy: Policy = { rules: [{ level: 'None', nonResourceURLs: ['/healthz*', '/version', '/apis/*'] }, { level: 'Metadata' }] };
    expect(levelOf(policy, nonResource('/healthz'))).toBe('None');
    expect(levelOf(policy, nonResource('/healthz/etcd'))).toBe('None');
    expect(levelOf(policy, nonResource('/version'))).toBe('None');
    expect(levelOf(policy, nonResource('/version/x'))).toBe('Metadata');
    expect(levelOf(policy, nonResource('/apis/apps'))).toBe('None');
    expect(levelOf(policy, nonResource('/apis'))).toBe('Metadata');
    expect(levelOf(policy, resource({ path: '/healthz' }))).toBe('Metadata');
  });

  test('omitStages: the policy’s and the rule’s together; omitManagedFields: the rule’s over the policy’s', () => {
    const evaluator = compilePolicy({
      omitStages: ['RequestReceived'],
      omitManagedFields: true,
      rules: [
        { level: 'Request', verbs: ['create'], omitStages: ['ResponseStarted'], omitManagedFields: false },
        { level: 'Metadata', verbs: ['get'] },
      ],
    });
    const create = evaluator.evaluate(resource({ verb: 'create' }));
    expect([...create.omitStages].sort()).toEqual(['RequestReceived', 'ResponseStarted']);
    expect(create.omitManagedFields).toBe(false);
    const get = evaluator.evaluate(resource());
    expect([...get.omitStages]).toEqual(['RequestReceived']);
    expect(get.omitManagedFields).toBe(true);
  });
});

describe('audit policy files', () => {
  const good = `apiVersion: audit.svc.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
  - level: None
    nonResourceURLs: ["/healthz*"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "serviceaccounts/token"]
  - level: RequestResponse
    omitManagedFields: true
`;

  test('a policy is read with its rules', () => {
    const policy = parsePolicy(good, 'p.yaml');
    expect(policy.omitStages).toEqual(['RequestReceived']);
    expect(policy.rules.map((r) => r.level)).toEqual(['None', 'Metadata', 'RequestResponse']);
    expect(policy.rules[1]?.resources).toEqual([{ group: '', resources: ['secrets', 'serviceaccounts/token'] }]);
  });

  test('the original group name is read too', () => {
    expect(parsePolicy(good.replace('audit.svc.io/v1', 'audit.k8s.io/v1'), 'p.yaml').rules).toHaveLength(3);
  });

  const problem = (text: string): string => {
    try {
      parsePolicy(text, 'policy.yaml');
    } catch (err) {
      expect(err).toBeInstanceOf(PolicyError);
      return (err as Error).message;
    }
    throw new Error('the policy was accepted');
  };

  test('an unknown level names the file, line and field', () => {
    expect(problem(good.replace('level: Metadata', 'level: Everything'))).toBe(
      'audit policy policy.yaml: line 7: rules[1].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse"',
    );
  });

  test('an unknown field names its line', () => {
    expect(problem(good.replace('    omitManagedFields: true', '    omitManagedFields: true\n    verbz: [get]'))).toBe('audit policy policy.yaml: line 13: rules[2].verbz: unknown field');
    expect(problem(good.replace('kind: Policy', 'kind: Policy\nrulez: []'))).toBe('audit policy policy.yaml: line 3: rulez: unknown field');
    expect(problem(good.replace('        resources: ["secrets"', '        resourcez: ["x"]\n        resources: ["secrets"'))).toMatch(/line 10: rules\[1\]\.resources\[0\]\.resourcez: unknown field/);
  });

  test('a bad stage, at the policy and in a rule', () => {
    expect(problem(good.replace('omitStages: [RequestReceived]', 'omitStages: [RequestRecieved]'))).toMatch(/line 3: omitStages\[0\]: Unsupported value: "RequestRecieved"/);
    expect(problem(good.replace('  - level: None\n', '  - level: None\n    omitStages: [Done]\n'))).toMatch(/line 6: rules\[0\]\.omitStages\[0\]: Unsupported value: "Done"/);
  });

  test('a missing level, a bad kind, wrong types, a URL without its slash', () => {
    expect(problem('apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n  - verbs: [get]\n')).toMatch(/line 4: rules\[0\]\.level: Required value/);
    expect(problem(good.replace('kind: Policy', 'kind: Config'))).toMatch(/kind: Unsupported value: "Config"/);
    expect(problem(good.replace('omitManagedFields: true', 'omitManagedFields: "yes"'))).toMatch(/line 12: rules\[2\]\.omitManagedFields: Invalid value: must be true or false/);
    expect(problem(good.replace('"/healthz*"', '"healthz"'))).toMatch(/rules\[0\]\.nonResourceURLs\[0\]: Invalid value: "healthz": non-resource URL rules must begin with a '\/'/);
  });

  test('a file that does not parse, and one that is missing, name the file', () => {
    expect(problem('rules: [\n  - level')).toBe('audit policy policy.yaml: line 2, column 3: missed comma between flow collection entries');
    expect(() => loadPolicyFile('/nonexistent/policy.yaml')).toThrow(/audit policy \/nonexistent\/policy\.yaml: .*ENOENT/);
  });

  test('the policy committed for `make up`, compose and the manifests reads and audits as documented', () => {
    const file = path.join(__dirname, '../../../../deploy/audit-policy.yaml');
    const evaluator = loadPolicyFile(file);
    const level = (attrs: AuditAttributes): string => evaluator.evaluate(attrs).level;
    expect(level(resource({ resource: 'secrets', verb: 'create' }))).toBe('Metadata');
    expect(level(resource({ resource: 'configmaps', verb: 'update' }))).toBe('Metadata');
    expect(level(resource({ resource: 'serviceaccounts', subresource: 'token', verb: 'create' }))).toBe('Metadata');
    expect(level(resource({ apiGroup: 'authentication.svc.io', resource: 'tokenreviews', verb: 'create', namespace: '' }))).toBe('Metadata');
    expect(level(resource({ apiGroup: 'authorization.svc.io', resource: 'subjectaccessreviews', verb: 'create', namespace: '' }))).toBe('Metadata');
    expect(level(resource({ resource: 'events', verb: 'list' }))).toBe('None');
    expect(level(resource({ resource: 'events', verb: 'create' }))).toBe('Request');
    expect(level(resource({ verb: 'create' }))).toBe('Request');
    expect(level(resource({ verb: 'patch' }))).toBe('Request');
    expect(level(resource({ verb: 'list' }))).toBe('Metadata');
    for (const p of ['/healthz', '/livez', '/readyz/etcd', '/version', '/openapi/v2', '/api', '/apis', '/apis/apps/v1']) expect(level(nonResource(p))).toBe('None');
    expect(level(nonResource('/metrics'))).toBe('Metadata');
    expect([...evaluator.evaluate(resource({ verb: 'create' })).omitStages]).toEqual(['RequestReceived']);
  });

  test('a policy file on disk is loaded and compiled', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'audit-policy-'));
    const file = path.join(dir, 'p.yaml');
    fs.writeFileSync(file, good);
    expect(loadPolicyFile(file).evaluate(nonResource('/healthz')).level).toBe('None');
    expect(loadPolicyFile(file).evaluate(resource({ resource: 'secrets' })).level).toBe('Metadata');
  });
});
