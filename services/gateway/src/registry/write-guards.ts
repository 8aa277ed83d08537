import { ApiError, DEFAULT_NAMESPACE, type ApiObject, type ResourceDefinition } from '@svc/apimachinery';
import { RBAC_GROUP } from '@svc/kinds';
import { KUBERNETES_SERVICE_NAME } from '../service-ip';
import { checkRbacEscalation } from './rbac-escalation';
import type { WriteContext } from './write-context';

/**
 * Checks a kind adds to every create and update after admission, registered
 * here by kind instead of tested for inside the store: RBAC's escalation
 * and bind rules for roles and bindings; the ClusterIP of the
 * `default/kubernetes` Service, which no other Service may take. A guard
 * refuses with an ApiError.
 */
export type WriteGuard = (ctx: WriteContext, name: string, obj: ApiObject) => Promise<void>;

/**
 * No Service but `default/kubernetes` may hold its ClusterIP, as the
 * original's allocator has it allocated (its message for an address taken).
 */
const reservedClusterIP: WriteGuard = async (ctx, name, obj) => {
  const reserved = ctx.deps.kubernetesServiceIP;
  if (!reserved || (ctx.namespace === DEFAULT_NAMESPACE && name === KUBERNETES_SERVICE_NAME)) return;
  const spec = (obj['spec'] as Record<string, unknown> | undefined) ?? {};
  const clusterIPs = Array.isArray(spec['clusterIPs']) && spec['clusterIPs'].length > 0 ? (spec['clusterIPs'] as unknown[]) : [spec['clusterIP']];
  if (!clusterIPs.includes(reserved)) return;
  throw ApiError.invalid({ group: '', kind: 'Service' }, name, [
    { reason: 'FieldValueInvalid', field: 'spec.clusterIPs', message: `Invalid value: ${JSON.stringify(clusterIPs)}: failed to allocate IP ${reserved}: provided IP is already allocated` },
  ]);
};

const GUARDS = new Map<string, WriteGuard>([
  ['/Service', reservedClusterIP],
  [`${RBAC_GROUP}/Role`, checkRbacEscalation],
  [`${RBAC_GROUP}/ClusterRole`, checkRbacEscalation],
  [`${RBAC_GROUP}/RoleBinding`, checkRbacEscalation],
  [`${RBAC_GROUP}/ClusterRoleBinding`, checkRbacEscalation],
]);

export function writeGuardOf(def: Pick<ResourceDefinition, 'group' | 'kind'>): WriteGuard | undefined {
  return GUARDS.get(`${def.group}/${def.kind}`);
}
