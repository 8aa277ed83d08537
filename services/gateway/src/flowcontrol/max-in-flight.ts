import type { UserInfo } from '@svc/apimachinery';
import type { RequestKind } from '../apiserver-metrics';

/**
 * The max-in-flight limit used when priority and fairness is off: requests
 * in flight counted by kind, each kind bounded by its own limit (0: none).
 */

export interface InFlightLimits {
  readOnly: number;
  mutating: number;
  /** Requests in flight now, by kind. */
  inFlight: Record<RequestKind, number>;
}

const PRIVILEGED_GROUP = 'system:masters';

export function inFlightLimits(readOnly: number, mutating: number): InFlightLimits {
  return { readOnly, mutating, inFlight: { readOnly: 0, mutating: 0 } };
}

/** Takes a slot of the request's kind: the function that frees it, or undefined when the kind is at its limit. */
export function enterLimit(limits: InFlightLimits, kind: RequestKind, user: UserInfo): (() => void) | undefined {
  const limit = kind === 'readOnly' ? limits.readOnly : limits.mutating;
  // system:masters is never refused (as the original), though it is counted.
  if (limit > 0 && limits.inFlight[kind] >= limit && !user.groups.includes(PRIVILEGED_GROUP)) return undefined;
  limits.inFlight[kind]++;
  let released = false;
  return () => {
    if (released) return;
    released = true;
    limits.inFlight[kind]--;
  };
}
