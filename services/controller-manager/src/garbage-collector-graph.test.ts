import type { ApiObject } from '@svc/apimachinery';
import { groupOf, kindPath, nodeOf, OwnerGraph, sameOwners, type GcKind } from './garbage-collector-graph';

const configMaps: GcKind = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true };
const roles: GcKind = { group: 'rbac.authorization.svc.io', version: 'v1', kind: 'ClusterRole', plural: 'clusterroles', namespaced: false };

const obj = (name: string, owners: Array<[string, boolean?]> = [], extra: Record<string, unknown> = {}): ApiObject => ({
  metadata: { name, namespace: 'team', uid: `uid-${name}`, resourceVersion: '7', ownerReferences: owners.map(([uid, block]) => ({ apiVersion: 'v1', kind: 'ConfigMap', name: uid, uid, ...(block !== undefined ? { blockOwnerDeletion: block } : {}) })), ...extra },
});

describe('the owner graph', () => {
  test('a node keeps only what the collector needs, its deletion state from the finalizers', () => {
    const node = nodeOf(configMaps, obj('a', [['o1', true]], { deletionTimestamp: '2026-01-01T00:00:00Z', finalizers: ['foregroundDeletion', 'x'] }));
    expect(node).toEqual({ kind: configMaps, namespace: 'team', name: 'a', resourceVersion: '7', owners: [{ uid: 'o1', apiVersion: 'v1', kind: 'ConfigMap', name: 'o1', block: true }], deleting: true, foreground: true, orphan: false });
    expect(nodeOf(roles, obj('r')).namespace).toBe('');
  });

  test('dependents are indexed by owner uid, whether or not the owner was seen, and follow updates and removals', () => {
    const g = new OwnerGraph();
    g.upsert('uid-a', nodeOf(configMaps, obj('a', [['o1', true], ['o2']])));
    g.upsert('uid-b', nodeOf(configMaps, obj('b', [['o1']])));
    expect(g.dependentsOf('o1').sort()).toEqual(['uid-a', 'uid-b']);
    expect(g.blockingDependentsOf('o1')).toEqual(['uid-a']);
    g.upsert('uid-a', nodeOf(configMaps, obj('a', [['o2']])));
    expect(g.dependentsOf('o1')).toEqual(['uid-b']);
    expect(g.blockingDependentsOf('o1')).toEqual([]);
    g.remove('uid-b');
    expect(g.dependentsOf('o1')).toEqual([]);
    expect(g.dependentsOf('o2')).toEqual(['uid-a']);
    expect(g.size).toBe(1);
    expect(g.remove('uid-missing')).toBeUndefined();
  });

  test('owners compare as sets, blocking included', () => {
    const a = nodeOf(configMaps, obj('a', [['o1', true], ['o2']])).owners;
    expect(sameOwners(a, [...a].reverse())).toBe(true);
    expect(sameOwners(a, nodeOf(configMaps, obj('a', [['o1'], ['o2']])).owners)).toBe(false);
    expect(sameOwners(a, a.slice(1))).toBe(false);
  });

  test('paths and groups', () => {
    expect(kindPath(configMaps, '')).toBe('/api/v1/configmaps');
    expect(kindPath(configMaps, 'team', 'a b')).toBe('/api/v1/namespaces/team/configmaps/a%20b');
    expect(kindPath(roles, 'team', 'r')).toBe('/apis/rbac.authorization.svc.io/v1/clusterroles/r');
    expect(groupOf('v1')).toBe('');
    expect(groupOf('rbac.authorization.k8s.io/v1')).toBe('rbac.authorization.svc.io');
    expect(groupOf('example.com/v1')).toBe('example.com');
  });
});
