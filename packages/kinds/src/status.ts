import type { ApiObject } from '@svc/apimachinery';
import { asRecord, cloneJson, isRecord } from './object-access';

/**
 * Status handling shared by the kinds with a `status` subresource: through
 * the main resource a client sets the desired state only; status is written
 * through the subresource. The registry strategy covers the main resource;
 * `prepareSubresourceUpdate` is for the store to call on subresource writes.
 */

/** On create through the main resource: status starts empty, or at the given initial value. */
export function resetStatus(obj: ApiObject, initial?: Record<string, unknown>): void {
  if (initial === undefined) delete obj['status'];
  else obj['status'] = cloneJson(initial);
}

/** On update through the main resource: the stored status stays. */
export function keepStatus(obj: ApiObject, old: ApiObject): void {
  if (old['status'] === undefined) delete obj['status'];
  else obj['status'] = cloneJson(old['status']);
}

const TYPE_AND_METADATA = new Set(['apiVersion', 'kind', 'metadata']);

/**
 * On update through the `status` subresource: everything but status and
 * metadata is carried over from the stored object, so a status writer cannot
 * change the desired state.
 */
export function prepareStatusSubresourceUpdate(obj: ApiObject, old: ApiObject): void {
  for (const key of Object.keys(obj)) if (key !== 'status' && !TYPE_AND_METADATA.has(key)) delete obj[key];
  for (const [key, value] of Object.entries(old)) if (key !== 'status' && !TYPE_AND_METADATA.has(key)) obj[key] = cloneJson(value);
}

/**
 * On update through a namespace's `finalize` subresource: only
 * `spec.finalizers` is taken from the request.
 */
export function prepareFinalizeSubresourceUpdate(obj: ApiObject, old: ApiObject): void {
  const finalizers = asRecord(obj['spec'])?.['finalizers'];
  for (const key of Object.keys(obj)) if (!TYPE_AND_METADATA.has(key)) delete obj[key];
  for (const [key, value] of Object.entries(old)) if (!TYPE_AND_METADATA.has(key)) obj[key] = cloneJson(value);
  const spec = isRecord(obj['spec']) ? obj['spec'] : {};
  if (finalizers === undefined) delete spec['finalizers'];
  else spec['finalizers'] = cloneJson(finalizers);
  obj['spec'] = spec;
}

/**
 * Prepares an update written through a subresource of a built-in kind, in
 * place of the main resource's `prepareForUpdate`: `status` takes only the
 * status, `finalize` only `spec.finalizers`. Returns false for subresources
 * this does not know (the caller decides).
 */
export function prepareSubresourceUpdate(subresource: string, obj: ApiObject, old: ApiObject): boolean {
  switch (subresource) {
    case 'status':
      prepareStatusSubresourceUpdate(obj, old);
      return true;
    case 'finalize':
      prepareFinalizeSubresourceUpdate(obj, old);
      return true;
    default:
      return false;
  }
}
