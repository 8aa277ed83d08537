import type { ApiObject } from '@svc/apimachinery';

/**
 * The conditions a terminating namespace shows while its content goes away,
 * with the original controller's types, reasons and message shapes, so
 * `kubectl describe namespace` tells why a deletion is waiting.
 */
export interface DeletionProgress {
  /** Discovery failed: the message. */
  discoveryError?: string;
  /** Collections whose deletion failed, with why. */
  deleteErrors: string[];
  /** Objects left, by `resource.group`. */
  remaining: Map<string, number>;
  /** Objects left that carry each finalizer. */
  finalizers: Map<string, number>;
}

export interface NamespaceCondition {
  type: string;
  status: 'True' | 'False';
  lastTransitionTime: string;
  reason: string;
  message: string;
}

function listed(counts: Map<string, number>, what: (key: string, n: number) => string): string {
  return [...counts].sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => what(k, n)).join(', ');
}

export function deletionConditions(p: DeletionProgress): Array<Omit<NamespaceCondition, 'lastTransitionTime'>> {
  const c = (type: string, failing: boolean, reasons: [string, string], messages: [string, string]) => ({
    type,
    status: failing ? ('True' as const) : ('False' as const),
    reason: failing ? reasons[0] : reasons[1],
    message: failing ? messages[0] : messages[1],
  });
  return [
    c('NamespaceDeletionDiscoveryFailure', p.discoveryError !== undefined, ['DiscoveryFailed', 'ResourcesDiscovered'], [`Discovery failed for some groups: ${p.discoveryError ?? ''}`, 'All resources successfully discovered']),
    c('NamespaceDeletionGroupVersionParsingFailure', false, ['GroupVersionParsingFailed', 'ParsedGroupVersions'], ['', 'All legacy kube types successfully parsed']),
    c('NamespaceDeletionContentFailure', p.deleteErrors.length > 0, ['ContentDeletionFailed', 'ContentDeleted'], [`Failed to delete all resource types, ${p.deleteErrors.length} remaining: ${p.deleteErrors.join(', ')}`, 'All content successfully deleted, may be waiting on finalization']),
    c('NamespaceContentRemaining', p.remaining.size > 0, ['SomeResourcesRemain', 'ContentRemoved'], [`Some resources are remaining: ${listed(p.remaining, (k, n) => `${k} has ${n} resource instances`)}`, 'All content successfully removed']),
    c('NamespaceFinalizersRemaining', p.finalizers.size > 0, ['SomeFinalizersRemain', 'ContentHasNoFinalizers'], [`Some content in the namespace has finalizers remaining: ${listed(p.finalizers, (k, n) => `${k} in ${n} resource instances`)}`, 'All content-preserving finalizers finished']),
  ];
}

/**
 * The namespace's conditions after this pass: a condition keeps its
 * transition time unless its status changed. Undefined when nothing but
 * times would change (no write needed).
 */
export function mergeConditions(ns: ApiObject, next: Array<Omit<NamespaceCondition, 'lastTransitionTime'>>, now: string): NamespaceCondition[] | undefined {
  const current = (((ns['status'] as { conditions?: NamespaceCondition[] } | undefined)?.conditions ?? []) as NamespaceCondition[]).filter((x) => x && typeof x.type === 'string');
  const byType = new Map(current.map((x) => [x.type, x]));
  let changed = false;
  const merged = next.map((n) => {
    const old = byType.get(n.type);
    if (!old || old.status !== n.status || old.reason !== n.reason || old.message !== n.message) changed = true;
    return { ...n, lastTransitionTime: old && old.status === n.status ? old.lastTransitionTime : now };
  });
  const others = current.filter((x) => !next.some((n) => n.type === x.type));
  return changed ? [...others, ...merged] : undefined;
}
