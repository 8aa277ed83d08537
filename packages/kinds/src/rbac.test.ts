import type { ApiObject, ResourceDefinition } from '@svc/apimachinery';
import { rbacDefinitions } from './rbac';

const defs = new Map(rbacDefinitions().map((d) => [d.kind, d]));
const validate = (kind: string, obj: ApiObject) => (defs.get(kind) as ResourceDefinition).strategy.validate?.(obj) ?? [];
const fields = (kind: string, obj: ApiObject) => validate(kind, obj).map((c) => `${c.field}: ${c.message}`);

describe('RBAC kinds', () => {
  test('valid roles and bindings pass', () => {
    expect(validate('Role', { rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'pods/log'], resourceNames: ['web'] }] })).toEqual([]);
    expect(validate('ClusterRole', { rules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/metrics/*'] }] })).toEqual([]);
    expect(validate('ClusterRole', { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.svc.io/aggregate-to-view': 'true' } }] } })).toEqual([]);
    const subjects = [
      { kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'alice' },
      { kind: 'Group', apiGroup: 'rbac.authorization.k8s.io', name: 'dev' },
      { kind: 'ServiceAccount', name: 'robot', namespace: 'ci' },
    ];
    expect(validate('RoleBinding', { subjects, roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'view' } })).toEqual([]);
    expect(validate('ClusterRoleBinding', { subjects, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'view' } })).toEqual([]);
  });

  test('invalid rules name the rule and the field', () => {
    expect(fields('Role', { rules: [{ verbs: [], apiGroups: [''], resources: ['pods'] }] })).toEqual(['rules[0].verbs: Required value: verbs must contain at least one value']);
    expect(fields('Role', { rules: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }] })).toEqual(['rules[0].nonResourceURLs: Invalid value: ["/healthz"]: namespaced rules cannot apply to non-resource URLs']);
    expect(fields('ClusterRole', { rules: [{ verbs: ['get'], apiGroups: [''], resources: ['pods'], nonResourceURLs: ['/x'] }] })).toEqual([
      'rules[0].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs',
    ]);
    expect(fields('ClusterRole', { rules: [{ verbs: ['get'] }, { verbs: ['get'], apiGroups: ['apps'] }] })).toEqual([
      'rules[0].apiGroups: Required value: resource rules must supply at least one api group',
      'rules[0].resources: Required value: resource rules must supply at least one resource',
      'rules[1].resources: Required value: resource rules must supply at least one resource',
    ]);
    expect(fields('Role', { rules: [{ verbs: 'get' }] })[0]).toMatch(/^rules\[0\]\.verbs: Invalid value/);
    expect(fields('ClusterRole', { aggregationRule: { clusterRoleSelectors: [] } })).toEqual(['aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector required if aggregationRule is non-nil']);
  });

  test('invalid bindings name the field', () => {
    expect(fields('RoleBinding', { subjects: [] })).toEqual(['roleRef: Required value']);
    expect(fields('ClusterRoleBinding', { roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'x' } })).toEqual(['roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"']);
    expect(fields('RoleBinding', { roleRef: { apiGroup: 'apps', kind: 'Role', name: '' } })).toEqual(['roleRef.apiGroup: Unsupported value: "apps": supported values: "rbac.authorization.svc.io"', 'roleRef.name: Required value']);
    expect(
      fields('ClusterRoleBinding', {
        roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'view' },
        subjects: [{ kind: 'Robot', name: 'r' }, { kind: 'ServiceAccount', name: 'sa' }, { kind: 'User', name: 'u' }],
      }),
    ).toEqual([
      'subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"',
      'subjects[1].namespace: Required value',
      'subjects[2].apiGroup: Unsupported value: "": supported values: "rbac.authorization.svc.io"',
    ]);
  });

  test('a service account subject needs a valid service account name', () => {
    const roleRef = { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'r' };
    expect(fields('RoleBinding', { roleRef, subjects: [{ kind: 'ServiceAccount', name: 'Bad Name' }] })).toEqual([
      expect.stringMatching(/^subjects\[0\]\.name: Invalid value: "Bad Name": a lowercase RFC 1123 subdomain must consist of/),
    ]);
    // Users and groups are any string.
    expect(fields('RoleBinding', { roleRef, subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'Bad Name' }] })).toEqual([]);
  });

  test('aggregation selectors are valid label selectors', () => {
    expect(fields('ClusterRole', { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'bad key!': 'x' } }] } })).toEqual([
      expect.stringMatching(/^aggregationRule\.clusterRoleSelectors\[0\]\.matchLabels: Invalid value: "bad key!": /),
    ]);
    expect(fields('ClusterRole', { aggregationRule: { clusterRoleSelectors: [{ matchExpressions: [{ key: 'a', operator: 'Bogus' }] }] } })).toEqual([
      expect.stringMatching(/^aggregationRule\.clusterRoleSelectors\[0\]\.matchExpressions\[0\]\.operator: Unsupported value: "Bogus"/),
    ]);
  });

  test('roleRef cannot change; subjects can', () => {
    const def = defs.get('RoleBinding') as ResourceDefinition;
    const old = { roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'a' }, subjects: [] };
    expect(def.strategy.validateUpdate?.({ ...old, subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'x' }] }, old)).toEqual([]);
    expect(def.strategy.validateUpdate?.({ ...old, roleRef: { ...old.roleRef, name: 'b' } }, old)?.map((c) => c.message)).toEqual(['Invalid value: {"apiGroup":"rbac.authorization.svc.io","kind":"Role","name":"b"}: cannot change roleRef']);
  });

  test('a roleRef written in another key order, or naming the group by its upstream name, is the same roleRef', () => {
    const def = defs.get('RoleBinding') as ResourceDefinition;
    const old = { roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'Role', name: 'a' }, subjects: [] };
    // As a manifest often lists them: kind, name, apiGroup.
    expect(def.strategy.validateUpdate?.({ ...old, roleRef: { kind: 'Role', name: 'a', apiGroup: 'rbac.authorization.svc.io' } }, old)).toEqual([]);
    expect(def.strategy.validateUpdate?.({ ...old, roleRef: { name: 'a', kind: 'Role', apiGroup: 'rbac.authorization.k8s.io' } }, old)).toEqual([]);
    expect(def.strategy.validateUpdate?.(old, { ...old, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'a' } })).toEqual([]);
    expect(def.strategy.validateUpdate?.({ ...old, roleRef: { kind: 'ClusterRole', name: 'a', apiGroup: 'rbac.authorization.k8s.io' } }, old)?.map((c) => c.field)).toEqual(['roleRef']);
    expect(def.strategy.validateUpdate?.({ ...old, roleRef: { apiGroup: 'apps', kind: 'Role', name: 'a' } }, old)?.map((c) => c.field)).toEqual(expect.arrayContaining(['roleRef']));
  });
});
