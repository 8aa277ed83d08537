import type { ApiObject, ResourceDefinition } from '@svc/apimachinery';
import { RBAC_GROUP } from '@svc/kinds';
import { checkRbacEscalation } from './rbac-escalation';
import type { WriteContext } from './write-context';

/**
 * Checks a kind adds to every create and update after admission, registered
 * here by kind instead of tested for inside the store: RBAC's escalation
 * and bind rules for roles and bindings. A guard refuses with an ApiError.
 */
export type WriteGuard = (ctx: WriteContext, name: string, obj: ApiObject) => Promise<void>;

const GUARDS = new Map<string, WriteGuard>([
  [`${RBAC_GROUP}/Role`, checkRbacEscalation],
  [`${RBAC_GROUP}/ClusterRole`, checkRbacEscalation],
  [`${RBAC_GROUP}/RoleBinding`, checkRbacEscalation],
  [`${RBAC_GROUP}/ClusterRoleBinding`, checkRbacEscalation],
]);

export function writeGuardOf(def: Pick<ResourceDefinition, 'group' | 'kind'>): WriteGuard | undefined {
  return GUARDS.get(`${def.group}/${def.kind}`);
}
