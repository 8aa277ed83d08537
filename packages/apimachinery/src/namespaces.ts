import { ApiError, type GroupResource } from './errors';
import { NODE_LEASE_NAMESPACE } from './node-identity';
import type { ApiObject } from './types';

/**
 * The namespaces the system creates and relies on, and the one rule of a
 * namespace's lifecycle that admission and storage both enforce: content is
 * created only in a namespace that exists and is not terminating.
 */
export const DEFAULT_NAMESPACE = 'default';
/** The controllers' and the system's own objects (service accounts, leases, bootstrap tokens). */
export const SYSTEM_NAMESPACE = 'svc-system';
/** Objects every client may read (`cluster-info`). */
export const PUBLIC_NAMESPACE = 'svc-public';

/** Namespaces that exist from the start (the gateway creates them). */
export const SYSTEM_NAMESPACES: readonly string[] = [DEFAULT_NAMESPACE, SYSTEM_NAMESPACE, PUBLIC_NAMESPACE, NODE_LEASE_NAMESPACE];
/** Namespaces that may never be deleted. */
export const IMMORTAL_NAMESPACES: readonly string[] = [DEFAULT_NAMESPACE, SYSTEM_NAMESPACE, PUBLIC_NAMESPACE];

export const NAMESPACE_ACTIVE = 'Active';
export const NAMESPACE_TERMINATING = 'Terminating';

/** A namespace on its way out: deletion requested, or its phase says so. */
export function namespaceTerminating(ns: ApiObject): boolean {
  const status = ns['status'];
  const phase = status !== null && typeof status === 'object' ? (status as { phase?: unknown }).phase : undefined;
  return !!ns.metadata?.deletionTimestamp || phase === NAMESPACE_TERMINATING;
}

/** The refusal of new content in a terminating namespace (403, as the original answers it). */
export function namespaceTerminatingError(gr: GroupResource, name: string, namespace: string): ApiError {
  return ApiError.forbidden(gr, name, `unable to create new content in namespace ${namespace} because it is being terminated`);
}
