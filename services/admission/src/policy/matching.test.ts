import type { ApiError, ApiObject } from '@svc/apimachinery';
import type { AdmissionAttributes } from '../plugins';
import { requestAttributes } from '../testing/attributes';
import { isAdmissionConfigurationResource, matchesResources, resourceRulesMatch, ruleMatches, type EquivalentResourceMapper, type MatchResources } from './matching';

const attrs = (over: Partial<AdmissionAttributes> = {}): AdmissionAttributes =>
  requestAttributes({
    kind: { group: 'apps.svc.io', version: 'v1', kind: 'Deployment' },
    resource: { group: 'apps.svc.io', version: 'v1', resource: 'deployments' },
    name: 'web',
    object: { metadata: { name: 'web', labels: { app: 'web' } } },
    ...over,
  });

const namespaces = new Map<string, ApiObject>([['team-a', { metadata: { name: 'team-a', labels: { env: 'prod' } } }]]);
const reader = { getNamespace: async (name: string) => namespaces.get(name) };

describe('ruleMatches', () => {
  const rule = { operations: ['CREATE', 'UPDATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] };

  test('every part of the rule must hold', () => {
    expect(ruleMatches({ ...rule, apiGroups: ['apps.svc.io'] }, attrs())).toBe(true);
    expect(ruleMatches({ ...rule, apiGroups: ['apps.svc.io'] }, attrs({ operation: 'DELETE' }))).toBe(false);
    expect(ruleMatches({ ...rule, apiGroups: ['apps.svc.io'], apiVersions: ['v2'] }, attrs())).toBe(false);
    expect(ruleMatches({ ...rule, apiGroups: ['apps.svc.io'], resources: ['pods'] }, attrs())).toBe(false);
    expect(ruleMatches({ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }, attrs())).toBe(true);
  });

  test('upstream group names read as ours', () => {
    const rbac = attrs({ resource: { group: 'rbac.authorization.svc.io', version: 'v1', resource: 'roles' } });
    expect(ruleMatches({ operations: ['*'], apiGroups: ['rbac.authorization.k8s.io'], apiVersions: ['v1'], resources: ['roles'] }, rbac)).toBe(true);
    // `apps` is not `apps.svc.io`: only the vendor's suffix is renamed.
    expect(ruleMatches(rule, attrs())).toBe(false);
  });

  test('subresources are named with a slash; * alone does not cover them, */* covers everything', () => {
    const status = attrs({ subresource: 'status' });
    const r = (resources: string[]) => ({ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources });
    expect(ruleMatches(r(['deployments']), status)).toBe(false);
    expect(ruleMatches(r(['*']), status)).toBe(false);
    expect(ruleMatches(r(['deployments/status']), status)).toBe(true);
    expect(ruleMatches(r(['deployments/*']), status)).toBe(true);
    expect(ruleMatches(r(['*/status']), status)).toBe(true);
    expect(ruleMatches(r(['*/*']), attrs())).toBe(true);
    expect(ruleMatches(r(['*/*']), status)).toBe(true);
  });

  test('scope: Namespaced excludes cluster-scoped requests and namespaces themselves', () => {
    const any = { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] };
    const ns = attrs({ resource: { group: '', version: 'v1', resource: 'namespaces' }, namespace: '', name: 'team-a' });
    const node = attrs({ resource: { group: '', version: 'v1', resource: 'nodes' }, namespace: '' });
    expect(ruleMatches({ ...any, scope: 'Namespaced' }, attrs())).toBe(true);
    expect(ruleMatches({ ...any, scope: 'Namespaced' }, ns)).toBe(false);
    expect(ruleMatches({ ...any, scope: 'Namespaced' }, node)).toBe(false);
    expect(ruleMatches({ ...any, scope: 'Cluster' }, ns)).toBe(true);
    expect(ruleMatches({ ...any, scope: 'Cluster' }, node)).toBe(true);
    expect(ruleMatches({ ...any, scope: 'Cluster' }, attrs())).toBe(false);
  });
});

describe('resourceRulesMatch', () => {
  const rules = [{ operations: ['*'], apiGroups: ['apps.svc.io'], apiVersions: ['v1beta1'], resources: ['deployments'], resourceNames: ['web', 'api'] }];
  const mapper: EquivalentResourceMapper = {
    equivalents: () => [
      { resource: { group: 'apps.svc.io', version: 'v1', resource: 'deployments' }, kind: { group: 'apps.svc.io', version: 'v1', kind: 'Deployment' } },
      { resource: { group: 'apps.svc.io', version: 'v1beta1', resource: 'deployments' }, kind: { group: 'apps.svc.io', version: 'v1beta1', kind: 'Deployment' } },
    ],
  };

  test('Exact matches only the version asked for; Equivalent matches another version and says which', () => {
    expect(resourceRulesMatch(rules, 'Exact', attrs(), mapper).matches).toBe(false);
    const m = resourceRulesMatch(rules, 'Equivalent', attrs(), mapper);
    expect(m).toEqual({ matches: true, resource: { group: 'apps.svc.io', version: 'v1beta1', resource: 'deployments' }, kind: { group: 'apps.svc.io', version: 'v1beta1', kind: 'Deployment' } });
  });

  test('resourceNames restrict by the request name', () => {
    expect(resourceRulesMatch(rules, 'Equivalent', attrs({ name: 'api' }), mapper).matches).toBe(true);
    expect(resourceRulesMatch(rules, 'Equivalent', attrs({ name: 'other' }), mapper).matches).toBe(false);
  });
});

describe('matchesResources', () => {
  const all = { operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] };
  const match = (criteria: MatchResources, a = attrs()) => matchesResources(criteria, a, reader);

  test('rules select and excluded rules take away', async () => {
    expect((await match({ resourceRules: [all] })).matches).toBe(true);
    expect((await match({ resourceRules: [all], excludeResourceRules: [{ ...all, resourceNames: ['web'] }] })).matches).toBe(false);
    expect((await match({ resourceRules: [all], excludeResourceRules: [{ ...all, resourceNames: ['other'] }] })).matches).toBe(true);
    // A binding's matchResources without rules selects every resource the policy does.
    expect((await match({})).matches).toBe(true);
  });

  test('the namespace selector reads the namespace, or a namespace object being written', async () => {
    expect((await match({ resourceRules: [all], namespaceSelector: { matchLabels: { env: 'prod' } } })).matches).toBe(true);
    expect((await match({ resourceRules: [all], namespaceSelector: { matchLabels: { env: 'dev' } } })).matches).toBe(false);
    const creating = attrs({ resource: { group: '', version: 'v1', resource: 'namespaces' }, namespace: '', name: 'new', object: { metadata: { name: 'new', labels: { env: 'dev' } } } });
    expect((await match({ resourceRules: [all], namespaceSelector: { matchLabels: { env: 'dev' } } }, creating)).matches).toBe(true);
    // Cluster-scoped objects other than namespaces are always selected.
    const node = attrs({ resource: { group: '', version: 'v1', resource: 'nodes' }, namespace: '' });
    expect((await match({ resourceRules: [all], namespaceSelector: { matchLabels: { env: 'dev' } } }, node)).matches).toBe(true);
  });

  test('a missing namespace is NotFound only for a request the rules select', async () => {
    const elsewhere = attrs({ namespace: 'gone' });
    const err = (await match({ resourceRules: [all], namespaceSelector: { matchLabels: { env: 'prod' } } }, elsewhere).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(404);
    expect(err.message).toBe('namespaces "gone" not found');
    const other = { ...all, resources: ['pods'] };
    expect((await match({ resourceRules: [other], namespaceSelector: { matchLabels: { env: 'prod' } } }, elsewhere)).matches).toBe(false);
  });

  test('the object selector selects by the new or the old object', async () => {
    const sel = { resourceRules: [all], objectSelector: { matchLabels: { app: 'db' } } };
    expect((await match(sel)).matches).toBe(false);
    expect((await match(sel, attrs({ operation: 'UPDATE', oldObject: { metadata: { labels: { app: 'db' } } } }))).matches).toBe(true);
    expect((await match(sel, attrs({ operation: 'DELETE', object: undefined, oldObject: { metadata: { labels: { app: 'db' } } } }))).matches).toBe(true);
  });

  test('a broken selector is an internal error for a selected request', async () => {
    const err = (await match({ resourceRules: [all], objectSelector: { matchExpressions: [{ key: 'a', operator: 'Bad' }] } }).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(500);
    expect(err.message).toContain('"Bad" is not a valid label selector operator');
  });
});

test('admission configurations themselves are exempt, by either group name', () => {
  expect(isAdmissionConfigurationResource({ kind: { group: 'admissionregistration.svc.io', version: 'v1', kind: 'ValidatingAdmissionPolicy' } })).toBe(true);
  expect(isAdmissionConfigurationResource({ kind: { group: 'admissionregistration.k8s.io', version: 'v1', kind: 'MutatingWebhookConfiguration' } })).toBe(true);
  expect(isAdmissionConfigurationResource({ kind: { group: '', version: 'v1', kind: 'ConfigMap' } })).toBe(false);
});
