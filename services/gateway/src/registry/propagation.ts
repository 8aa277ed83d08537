import type { ApiObject } from '@svc/apimachinery';

/**
 * The finalizers a delete leaves on an object for the garbage collector, as
 * the original server's store sets them: `orphan` when the dependents are to
 * be orphaned (propagationPolicy Orphan, or the legacy
 * `orphanDependents: true`), `foregroundDeletion` when they are to be
 * deleted first (Foreground), neither for Background. A delete that names
 * no policy keeps what an earlier delete set, else the kind's default
 * (Background for every kind here).
 */

export const FOREGROUND_FINALIZER = 'foregroundDeletion';
export const ORPHAN_FINALIZER = 'orphan';

export interface PropagationOptions {
  propagationPolicy?: string;
  orphanDependents?: boolean;
}

/** The object with the finalizers the delete asks for; the same object when they do not change. */
export function withPropagationFinalizers(obj: ApiObject, options: PropagationOptions): ApiObject {
  const finalizers = obj.metadata?.finalizers ?? [];
  const had = (f: string): boolean => finalizers.includes(f);
  let orphan: boolean;
  let foreground: boolean;
  if (options.orphanDependents !== undefined) {
    orphan = options.orphanDependents;
    foreground = false;
  } else if (options.propagationPolicy !== undefined) {
    orphan = options.propagationPolicy === 'Orphan';
    foreground = options.propagationPolicy === 'Foreground';
  } else {
    orphan = had(ORPHAN_FINALIZER);
    foreground = had(FOREGROUND_FINALIZER);
  }
  if (orphan === had(ORPHAN_FINALIZER) && foreground === had(FOREGROUND_FINALIZER)) return obj;
  const next = finalizers.filter((f) => f !== ORPHAN_FINALIZER && f !== FOREGROUND_FINALIZER);
  if (orphan) next.push(ORPHAN_FINALIZER);
  if (foreground) next.push(FOREGROUND_FINALIZER);
  const { finalizers: _dropped, ...rest } = obj.metadata ?? {};
  return { ...obj, metadata: next.length > 0 ? { ...rest, finalizers: next } : rest };
}
