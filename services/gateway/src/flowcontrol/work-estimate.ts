import type { RequestInfo } from '../request-info';

/**
 * The seats a request takes, as the original estimates them: one for most
 * requests (writes included); a list takes one seat per hundred objects the
 * resource holds (the watch cache scans them all, whatever the limit), at
 * most ten and at most what its level allows one request; a resource whose
 * count is not known takes one. The count is the watch cache's object count
 * of the resource (what `apiserver_storage_objects` reports).
 */

const OBJECTS_PER_SEAT = 100;
export const MAXIMUM_LIST_SEATS = 10;

/** The number of objects of a resource (`resource` or `resource.group`), undefined when not known. */
export type ObjectCountFn = (group: string, resource: string) => number | undefined;

export function estimateSeats(info: Pick<RequestInfo, 'isResourceRequest' | 'verb' | 'apiGroup' | 'resource' | 'name'>, count: ObjectCountFn): number {
  if (!info.isResourceRequest || info.verb !== 'list' || info.name !== '') return 1;
  const stored = count(info.apiGroup, info.resource);
  if (stored === undefined) return 1;
  return Math.min(MAXIMUM_LIST_SEATS, Math.max(1, Math.ceil(stored / OBJECTS_PER_SEAT)));
}

/**
 * Object counts from a source that is costly to read every time (a map
 * built over every cache), read again at most every `maxAgeMs`.
 */
export function snapshotCounts(read: () => ReadonlyMap<string, number>, maxAgeMs = 1000, now: () => number = () => performance.now()): ObjectCountFn {
  let counts: ReadonlyMap<string, number> = new Map();
  let readAt = -Infinity;
  return (group, resource) => {
    const t = now();
    if (t - readAt >= maxAgeMs) {
      counts = read();
      readAt = t;
    }
    return counts.get(group ? `${resource}.${group}` : resource);
  };
}
