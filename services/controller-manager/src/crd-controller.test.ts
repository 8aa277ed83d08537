import type { ApiObject } from '@svc/apimachinery';
import { desiredCrdStatus, namesConflict } from './crd-controller';

function crd(name: string, names: Record<string, unknown>, status?: Record<string, unknown>): ApiObject {
  return {
    metadata: { name: `${String(names['plural'])}.example.com`, uid: name },
    spec: { group: 'example.com', scope: 'Namespaced', names, versions: [{ name: 'v1', served: true, storage: true }, { name: 'v2', served: true, storage: false }] },
    ...(status ? { status } : {}),
  };
}

const widgets = { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList', shortNames: ['wd'] };
const now = new Date('2026-01-02T03:04:05Z');

describe('custom resource definition status', () => {
  it('accepts free names, establishes the definition and records the storage version', () => {
    const status = desiredCrdStatus(crd('a', widgets), [], now);
    expect(status['acceptedNames']).toEqual({ ...widgets, categories: [] });
    expect(status['storedVersions']).toEqual(['v1']);
    expect(status['conditions']).toEqual([
      { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found', lastTransitionTime: '2026-01-02T03:04:05Z' },
      { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted', lastTransitionTime: '2026-01-02T03:04:05Z' },
    ]);
  });

  it('refuses names another definition of the group accepted, naming the conflict', () => {
    const accepted = crd('a', widgets, { acceptedNames: widgets });
    const cases: Array<[Record<string, unknown>, string, string]> = [
      // Two definitions of a group never share a plural (it is in their names); a singular may clash.
      [{ plural: 'gizmos', singular: 'widget', kind: 'Gizmo', listKind: 'GizmoList', shortNames: [] }, 'SingularConflict', '"widget" is already in use'],
      [{ plural: 'gizmos', singular: 'gizmo', kind: 'Gizmo', listKind: 'GizmoList', shortNames: ['wd'] }, 'ShortNamesConflict', '"wd" is already in use'],
      [{ plural: 'gizmos', singular: 'gizmo', kind: 'Widget', listKind: 'GizmoList', shortNames: [] }, 'KindConflict', '"Widget" is already in use'],
    ];
    for (const [names, reason, message] of cases) {
      const status = desiredCrdStatus(crd('b', names), [accepted], now);
      const conditions = status['conditions'] as Array<Record<string, string>>;
      expect(conditions.find((c) => c['type'] === 'NamesAccepted')).toEqual(expect.objectContaining({ status: 'False', reason, message }));
      expect(conditions.find((c) => c['type'] === 'Established')).toEqual(expect.objectContaining({ status: 'False', reason: 'NotAccepted' }));
      expect(status['acceptedNames']).toBeUndefined();
    }
  });

  it('refuses names of a built-in kind of the group', () => {
    const clash = crd('c', { plural: 'leases', singular: 'lease', kind: 'Lease', listKind: 'LeaseList', shortNames: [] });
    (clash['spec'] as Record<string, unknown>)['group'] = 'coordination.svc.io';
    const conditions = desiredCrdStatus(clash, [], now)['conditions'] as Array<Record<string, string>>;
    expect(conditions[0]).toEqual(expect.objectContaining({ type: 'NamesAccepted', status: 'False', reason: 'PluralConflict' }));
  });

  it('ignores definitions of other groups and keeps transition times of unchanged conditions', () => {
    const elsewhere = crd('x', { ...widgets, plural: 'gizmos' }, { acceptedNames: { ...widgets, plural: 'gizmos' } });
    (elsewhere['spec'] as Record<string, unknown>)['group'] = 'other.com';
    const conditions = desiredCrdStatus(crd('a', widgets), [elsewhere], now)['conditions'] as Array<Record<string, string>>;
    expect(conditions[0]).toEqual(expect.objectContaining({ type: 'NamesAccepted', status: 'True' }));
    expect(namesConflict({ ...widgets, categories: [] }, [{ ...widgets, categories: [] }])).toEqual({ reason: 'PluralConflict', message: '"widgets" is already in use' });
    const first = desiredCrdStatus(crd('a', widgets), [], now);
    const again = desiredCrdStatus(crd('a', widgets, first), [], new Date('2026-02-01T00:00:00Z'));
    expect(again['conditions']).toEqual(first['conditions']);
    expect(again['storedVersions']).toEqual(['v1']);
  });
});
