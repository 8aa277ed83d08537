import { deletionConditions, mergeConditions } from './namespace-conditions';

describe('namespace deletion conditions', () => {
  const quiet = { deleteErrors: [], remaining: new Map<string, number>(), finalizers: new Map<string, number>() };

  it('are all False when everything went', () => {
    const conditions = deletionConditions(quiet);
    expect(conditions.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['NamespaceDeletionDiscoveryFailure', 'False', 'ResourcesDiscovered'],
      ['NamespaceDeletionGroupVersionParsingFailure', 'False', 'ParsedGroupVersions'],
      ['NamespaceDeletionContentFailure', 'False', 'ContentDeleted'],
      ['NamespaceContentRemaining', 'False', 'ContentRemoved'],
      ['NamespaceFinalizersRemaining', 'False', 'ContentHasNoFinalizers'],
    ]);
  });

  it('name what remains, by resource.group and by finalizer, sorted', () => {
    const conditions = deletionConditions({
      deleteErrors: ['widgets.example.com: boom'],
      remaining: new Map([['leases.coordination.svc.io', 2], ['configmaps.', 1]]),
      finalizers: new Map([['example.com/keep', 3]]),
    });
    const byType = new Map(conditions.map((c) => [c.type, c]));
    expect(byType.get('NamespaceContentRemaining')).toMatchObject({ status: 'True', reason: 'SomeResourcesRemain', message: 'Some resources are remaining: configmaps. has 1 resource instances, leases.coordination.svc.io has 2 resource instances' });
    expect(byType.get('NamespaceFinalizersRemaining')).toMatchObject({ status: 'True', message: 'Some content in the namespace has finalizers remaining: example.com/keep in 3 resource instances' });
    expect(byType.get('NamespaceDeletionContentFailure')).toMatchObject({ status: 'True', message: 'Failed to delete all resource types, 1 remaining: widgets.example.com: boom' });
  });

  it('keep transition times while a status holds, and ask for no write when nothing changed', () => {
    const first = mergeConditions({}, deletionConditions(quiet), 't1');
    expect(first?.every((c) => c.lastTransitionTime === 't1')).toBe(true);
    const ns = { status: { phase: 'Terminating', conditions: first } };
    expect(mergeConditions(ns, deletionConditions(quiet), 't2')).toBeUndefined();
    const next = mergeConditions(ns, deletionConditions({ ...quiet, remaining: new Map([['configmaps.', 1]]) }), 't3');
    expect(next?.find((c) => c.type === 'NamespaceContentRemaining')?.lastTransitionTime).toBe('t3');
    expect(next?.find((c) => c.type === 'NamespaceDeletionDiscoveryFailure')?.lastTransitionTime).toBe('t1');
  });
});
