import { ApiError, canonicalGroup, type ApiObject, type OwnerReference } from '@svc/apimachinery';
import type { AuthorizationCheck, AuthorizationDecision } from '@svc/cel';
import { builtinResources, crdConditionTrue, servedNames } from '@svc/kinds';
import type { AdmissionAttributes, AdmissionPlugin } from './plugins';

/**
 * OwnerReferencesPermissionEnforcement, as the original plugin: changing
 * an object's ownerReferences on update needs permission to delete the
 * object (creating it needs nothing more: its creator could have left it
 * out); setting `blockOwnerDeletion: true` on a reference (new, or turned
 * on) needs permission to `update` the owner's `finalizers` subresource,
 * for every resource the owner's kind is served at, in the object's
 * namespace for a namespaced owner. An owner kind the server does not
 * serve cannot be checked, so blocking it is refused.
 */

export const OWNER_REFERENCES_PERMISSION_ENFORCEMENT = 'OwnerReferencesPermissionEnforcement';

/** A resource a kind is served at. */
export interface OwnerResource {
  resource: string;
  namespaced: boolean;
}

/** The resources of group/version/kind (none when it is not served). */
export type OwnerKindResolver = (group: string, version: string, kind: string) => OwnerResource[];

type Authorize = (check: AuthorizationCheck) => Promise<AuthorizationDecision>;

function refsOf(obj: ApiObject | undefined): OwnerReference[] {
  return obj?.metadata?.ownerReferences ?? [];
}

function sameRefs(a: OwnerReference[], b: OwnerReference[]): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/** References that block their owner's deletion now and did not before (by uid). */
function newlyBlocking(obj: ApiObject | undefined, old: ApiObject | undefined): OwnerReference[] {
  const before = new Set(refsOf(old).filter((r) => r.blockOwnerDeletion === true).map((r) => r.uid));
  return refsOf(obj).filter((r) => r.blockOwnerDeletion === true && !before.has(r.uid));
}

function splitApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? { group: '', version: apiVersion } : { group: canonicalGroup(apiVersion.slice(0, slash)), version: apiVersion.slice(slash + 1) };
}

function describe(d: AuthorizationDecision): string {
  return `${d.reason}, ${d.error ?? '<nil>'}`;
}

export function ownerReferencesPermissionEnforcement(authorize: Authorize, resolve: OwnerKindResolver): AdmissionPlugin {
  return {
    name: OWNER_REFERENCES_PERMISSION_ENFORCEMENT,
    async validate(attrs: AdmissionAttributes): Promise<void> {
      if (attrs.operation !== 'CREATE' && attrs.operation !== 'UPDATE') return;
      const refs = refsOf(attrs.object);
      if (attrs.operation === 'CREATE' ? refs.length === 0 : sameRefs(refs, refsOf(attrs.oldObject))) return;
      const gr = { group: attrs.resource.group, resource: attrs.resource.resource };
      const base = { user: attrs.userInfo, resourceRequest: true, path: '' };
      if (attrs.operation === 'UPDATE') {
        const d = await authorize({ ...base, verb: 'delete', apiGroup: attrs.resource.group, apiVersion: attrs.resource.version, resource: attrs.resource.resource, subresource: attrs.subresource, namespace: attrs.namespace, name: attrs.name });
        if (d.decision !== 'allow') throw ApiError.forbidden(gr, attrs.name, `cannot set an ownerRef on a resource you can't delete: ${describe(d)}`);
      }
      for (const ref of newlyBlocking(attrs.object, attrs.oldObject)) {
        const { group, version } = splitApiVersion(ref.apiVersion ?? '');
        const resources = resolve(group, version, ref.kind ?? '');
        if (resources.length === 0) {
          throw ApiError.forbidden(gr, attrs.name, `cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion ${ref.apiVersion} Kind ${ref.kind}: no matches for kind "${ref.kind}" in version "${ref.apiVersion}"`);
        }
        for (const owner of resources) {
          const d = await authorize({ ...base, verb: 'update', apiGroup: group, apiVersion: version, resource: owner.resource, subresource: 'finalizers', namespace: owner.namespaced ? attrs.namespace : '', name: ref.name ?? '' });
          if (d.decision !== 'allow') throw ApiError.forbidden(gr, attrs.name, `cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: ${describe(d)}`);
        }
      }
    },
  };
}

let builtins: Map<string, OwnerResource[]> | undefined;

/**
 * Owner kinds the server serves: the built-in kinds and the kinds of the
 * established custom resource definitions `crds` gives (read at each call,
 * so a new definition is known at once).
 */
export function servedOwnerKinds(crds: () => readonly ApiObject[]): OwnerKindResolver {
  return (group, version, kind) => {
    if (!builtins) {
      builtins = new Map();
      for (const d of builtinResources().filter((r) => !r.virtual)) {
        const key = `${d.group}/${d.version}/${d.kind}`;
        builtins.set(key, [...(builtins.get(key) ?? []), { resource: d.plural, namespaced: d.namespaced }]);
      }
    }
    const found = [...(builtins.get(`${group}/${version}/${kind}`) ?? [])];
    for (const crd of crds()) {
      const spec = (crd['spec'] ?? {}) as { group?: string; scope?: string; versions?: Array<{ name?: string; served?: boolean }> };
      const names = servedNames(crd);
      if (spec.group !== group || names?.kind !== kind || !crdConditionTrue(crd, 'Established')) continue;
      if ((spec.versions ?? []).some((v) => v.name === version && v.served === true)) found.push({ resource: names.plural, namespaced: spec.scope === 'Namespaced' });
    }
    return found;
  };
}
