import type { ApiObject, ResourceStrategy } from '@svc/apimachinery';
import { keepStatus, resetStatus } from './status';

/**
 * `metadata.generation`: 1 on create, one more on every update that changes
 * the desired state. Metadata never counts; status does not count when it is
 * written through its own subresource.
 */
function desiredState(obj: ApiObject, statusSeparate: boolean): string {
  const rest: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(obj)) {
    if (key === 'metadata' || key === 'apiVersion' || key === 'kind') continue;
    if (statusSeparate && key === 'status') continue;
    rest[key] = value;
  }
  return canonicalJson(rest);
}

/** JSON with object keys sorted, so key order never counts as a change. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export function nextGeneration(obj: ApiObject, old: ApiObject, statusSeparate: boolean): number {
  const current = old.metadata?.generation ?? 1;
  return desiredState(obj, statusSeparate) === desiredState(old, statusSeparate) ? current : current + 1;
}

/**
 * Create and update hooks of a kind whose status is written through its
 * subresource: status starts empty and is kept on updates of the main
 * resource, generation starts at 1 and counts changes of the desired state.
 */
export function statusAndGenerationHooks(): Pick<ResourceStrategy, 'prepareForCreate' | 'prepareForUpdate'> {
  return {
    prepareForCreate(obj) {
      resetStatus(obj);
      obj.metadata = { ...(obj.metadata ?? {}), generation: 1 };
    },
    prepareForUpdate(obj, old) {
      keepStatus(obj, old);
      obj.metadata = { ...(obj.metadata ?? {}), generation: nextGeneration(obj, old, true) };
    },
  };
}
