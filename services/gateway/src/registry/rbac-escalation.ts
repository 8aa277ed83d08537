import { ApiError, type ApiObject } from '@svc/apimachinery';
import type { Rule } from '@svc/authz/client';
import { RBAC_GROUP } from '@svc/kinds';
import { callOptionsWithin } from '../request-timeout';
import type { WriteContext } from './write-context';

/**
 * RBAC's own protection (SPEC section 5, "RBAC rules" 4 and 5): writing a
 * role grants nothing its writer does not already hold at the same scope,
 * unless the writer may `escalate` on roles (or clusterroles); writing a
 * binding needs every permission of the referenced role, unless the writer
 * may `bind` it. An aggregated ClusterRole can pull in any rule, so writing
 * one needs everything or `escalate`. A binding to a role that does not
 * exist grants nothing, so it needs nothing.
 */

const EVERYTHING: Rule[] = [
  { verbs: ['*'], apiGroups: ['*'], resources: ['*'], resourceNames: [], nonResourceURLs: [] },
  { verbs: ['*'], apiGroups: [], resources: [], resourceNames: [], nonResourceURLs: ['*'] },
];

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

function rulesIn(obj: ApiObject | undefined): Rule[] {
  const raw = Array.isArray(obj?.['rules']) ? (obj?.['rules'] as unknown[]) : [];
  return raw
    .filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null)
    .map((r) => ({ verbs: strings(r['verbs']), apiGroups: strings(r['apiGroups']), resources: strings(r['resources']), resourceNames: strings(r['resourceNames']), nonResourceURLs: strings(r['nonResourceURLs']) }));
}

function describe(rules: Rule[]): string {
  return rules
    .map((r) =>
      r.nonResourceURLs.length > 0
        ? `{NonResourceURLs:${JSON.stringify(r.nonResourceURLs)}, Verbs:${JSON.stringify(r.verbs)}}`
        : `{APIGroups:${JSON.stringify(r.apiGroups)}, Resources:${JSON.stringify(r.resources)}${r.resourceNames.length > 0 ? `, ResourceNames:${JSON.stringify(r.resourceNames)}` : ''}, Verbs:${JSON.stringify(r.verbs)}}`,
    )
    .join('\n');
}

export async function checkRbacEscalation(ctx: WriteContext, name: string, obj: ApiObject): Promise<void> {
  const { def, user } = ctx;
  const namespace = def.namespaced ? ctx.namespace : '';
  const opts = () => callOptionsWithin(ctx, ctx.deps.limits.backendTimeoutMs);
  const may = async (verb: string, resource: string, resourceName: string, ns: string): Promise<boolean> =>
    (await ctx.deps.authz.authorize({ user, resourceRequest: true, verb, path: '', apiGroup: RBAC_GROUP, apiVersion: 'v1', resource, subresource: '', namespace: ns, name: resourceName }, opts())).decision === 'allow';
  const refuse = (uncovered: Rule[], why = 'is attempting to grant RBAC permissions not currently held'): never => {
    throw ApiError.forbidden({ group: RBAC_GROUP, resource: def.plural }, name, `user ${JSON.stringify(user.username)} (groups=${JSON.stringify(user.groups)}) ${why}:\n${describe(uncovered)}`);
  };

  let rules: Rule[];
  if (def.kind === 'Role' || def.kind === 'ClusterRole') {
    if (await may('escalate', def.plural, name, namespace)) return;
    rules = obj['aggregationRule'] ? EVERYTHING : rulesIn(obj);
  } else {
    const ref = (obj['roleRef'] ?? {}) as Record<string, unknown>;
    const roleKind = ref['kind'] === 'Role' ? 'Role' : 'ClusterRole';
    const roleResource = roleKind === 'Role' ? 'roles' : 'clusterroles';
    const roleNamespace = roleKind === 'Role' ? namespace : '';
    const roleName = typeof ref['name'] === 'string' ? ref['name'] : '';
    // Asked in the binding's namespace, as the original server does: a RoleBinding's writer may be allowed to bind a ClusterRole there.
    if (await may('bind', roleResource, roleName, namespace)) return;
    let role: ApiObject | undefined;
    try {
      role = (await ctx.deps.storage.get({ group: RBAC_GROUP, resource: roleResource, namespace: roleNamespace, name: roleName }, {}, opts())).object;
    } catch (err) {
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
    rules = rulesIn(role);
  }
  if (rules.length === 0) return;
  const result = await ctx.deps.authz.covers(user, namespace, rules, opts());
  if (!result.covered) refuse(result.uncovered);
}
