import type { ResourceDefinition, ResourceRegistry } from '@svc/apimachinery';
import { groupVersion } from '@svc/apimachinery';

/**
 * Discovery documents, derived from the registry on every request so kinds
 * added at run time appear at once: `/api`, `/api/v1`, `/apis`,
 * `/apis/<group>`, `/apis/<group>/<version>`.
 */
export interface ApiResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  storageVersionHash?: string;
}

function storageVersionHash(def: ResourceDefinition): string {
  // Stable per group/version/kind, as clients only compare it for equality.
  let h = 0x811c9dc5;
  for (const ch of `${def.group}/${def.version}/${def.kind}`) h = Math.imul(h ^ ch.charCodeAt(0), 0x01000193) >>> 0;
  return Buffer.from(h.toString(16).padStart(8, '0')).toString('base64').slice(0, 11) + '=';
}

export function apiVersions(serverAddress: string) {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

export function apiResourceList(registry: ResourceRegistry, group: string, version: string) {
  const resources: ApiResource[] = [];
  for (const def of registry.resourcesIn(group, version)) {
    const r: ApiResource = { name: def.plural, singularName: def.singular, namespaced: def.namespaced, kind: def.kind, verbs: [...def.verbs], storageVersionHash: storageVersionHash(def) };
    if (def.shortNames.length > 0) r.shortNames = [...def.shortNames];
    if (def.categories.length > 0) r.categories = [...def.categories];
    resources.push(r);
    for (const sub of def.subresources) {
      resources.push({ name: `${def.plural}/${sub.name}`, singularName: '', namespaced: def.namespaced, kind: sub.kind ?? def.kind, verbs: [...sub.verbs] });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources };
}

function apiGroup(registry: ResourceRegistry, group: string) {
  const versions = registry
    .groupVersions()
    .filter((gv) => gv.group === group)
    .map((gv) => ({ groupVersion: groupVersion(gv), version: gv.version }));
  return { name: group, versions, preferredVersion: versions[0] };
}

export function apiGroupList(registry: ResourceRegistry) {
  const groups = [...new Set(registry.groupVersions().map((gv) => gv.group))].filter((g) => g !== '');
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: groups.map((g) => apiGroup(registry, g)) };
}

export function apiGroupDocument(registry: ResourceRegistry, group: string) {
  return { kind: 'APIGroup', apiVersion: 'v1', ...apiGroup(registry, group) };
}
