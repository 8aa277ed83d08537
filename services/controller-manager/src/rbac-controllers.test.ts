import type { ApiObject } from '@svc/apimachinery';
import { aggregatedRules, selectorMatches } from './rbac-controllers';
import { AUTOUPDATE_ANNOTATION, defaultRbacObjects, reconcileDefault } from './rbac-defaults';

const role = (name: string, labels: Record<string, string>, rules: unknown[], aggregate?: Record<string, string>): ApiObject => ({
  kind: 'ClusterRole',
  metadata: { name, labels },
  rules,
  ...(aggregate ? { aggregationRule: { clusterRoleSelectors: [{ matchLabels: aggregate }] } } : {}),
});

describe('RBAC controllers', () => {
  test('label selectors: matchLabels and every expression operator', () => {
    const labels = { tier: 'web', env: 'prod' };
    expect(selectorMatches({}, labels)).toBe(true);
    expect(selectorMatches({ matchLabels: { tier: 'web' } }, labels)).toBe(true);
    expect(selectorMatches({ matchLabels: { tier: 'db' } }, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'env', operator: 'In', values: ['prod', 'stage'] }] }, labels)).toBe(true);
    expect(selectorMatches({ matchExpressions: [{ key: 'env', operator: 'NotIn', values: ['prod'] }] }, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'team', operator: 'Exists' }] }, labels)).toBe(false);
    expect(selectorMatches({ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] }, labels)).toBe(true);
    expect(selectorMatches({ matchExpressions: [{ key: 'team', operator: 'Bogus' }] }, labels)).toBe(false);
  });

  test('an aggregated role gets the rules of the roles it selects, deduplicated, in name order, never its own', () => {
    const r1 = { verbs: ['get'], apiGroups: [''], resources: ['pods'] };
    const r2 = { verbs: ['list'], apiGroups: [''], resources: ['pods'] };
    const all = [
      role('view', {}, [{ verbs: ['stale'] }], { 'aggregate-to-view': 'true' }),
      role('b-extra', { 'aggregate-to-view': 'true' }, [r2, r1]),
      role('a-base', { 'aggregate-to-view': 'true' }, [r1]),
      role('unrelated', {}, [{ verbs: ['delete'] }]),
    ];
    expect(aggregatedRules(all[0] as ApiObject, all)).toEqual([r1, r2]);
  });

  test('defaults are restored: missing rules and subjects come back, extra ones stay, opted-out objects are left alone', () => {
    const wanted = defaultRbacObjects().find((o) => o.kind === 'ClusterRoleBinding' && o.metadata?.name === 'system:basic-user') as ApiObject;
    const stripped: ApiObject = { ...wanted, metadata: { name: 'system:basic-user', resourceVersion: '7' }, subjects: [{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'extra' }] };
    const fixed = reconcileDefault(stripped, wanted);
    expect(fixed?.['subjects']).toEqual([{ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name: 'extra' }, { kind: 'Group', apiGroup: 'rbac.authorization.svc.io', name: 'system:authenticated' }]);
    expect(fixed?.metadata?.resourceVersion).toBe('7');
    expect(fixed?.metadata?.labels).toEqual({ 'svc.io/bootstrapping': 'rbac-defaults' });
    expect(reconcileDefault(fixed as ApiObject, wanted)).toBeUndefined();
    expect(reconcileDefault({ ...stripped, metadata: { ...stripped.metadata, annotations: { [AUTOUPDATE_ANNOTATION]: 'false' } } }, wanted)).toBeUndefined();
  });

  test('the defaults include the roles SPEC names, each labelled', () => {
    const names = defaultRbacObjects().filter((o) => o.kind === 'ClusterRole').map((o) => o.metadata?.name);
    expect(names).toEqual(expect.arrayContaining(['cluster-admin', 'admin', 'edit', 'view', 'system:basic-user', 'system:discovery', 'system:public-info-viewer', 'system:monitoring']));
    for (const o of defaultRbacObjects()) expect(o.metadata?.labels?.['svc.io/bootstrapping']).toBe('rbac-defaults');
  });
});
