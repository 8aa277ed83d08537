import { createHash } from 'node:crypto';
import type { ResourceDefinition, ResourceRegistry } from '@svc/apimachinery';
import { groupVersion, sortByVersionPriority, upstreamGroupName } from '@svc/apimachinery';

/**
 * The legacy discovery documents, derived from the registry on every call so
 * kinds added at run time appear at once: `/api` (APIVersions), `/api/v1` and
 * `/apis/<group>/<version>` (APIResourceList), `/apis` (APIGroupList) and
 * `/apis/<group>` (APIGroup). Clients map kinds, short names and categories
 * to URLs from these.
 */

export interface ApiResource {
  name: string;
  singularName: string;
  namespaced: boolean;
  kind: string;
  verbs: string[];
  /** Group and version of `kind` when they differ from the list's (a subresource of another group's kind). */
  group?: string;
  version?: string;
  shortNames?: string[];
  categories?: string[];
  storageVersionHash?: string;
}

export interface ApiResourceList {
  kind: 'APIResourceList';
  apiVersion: 'v1';
  groupVersion: string;
  resources: ApiResource[];
}

export interface ServerAddressByClientCidr {
  clientCIDR: string;
  serverAddress: string;
}

export interface ApiVersions {
  kind: 'APIVersions';
  versions: string[];
  serverAddressByClientCIDRs: ServerAddressByClientCidr[];
}

export interface GroupVersionForDiscovery {
  groupVersion: string;
  version: string;
}

export interface ApiGroup {
  kind: 'APIGroup';
  apiVersion: 'v1';
  name: string;
  versions: GroupVersionForDiscovery[];
  preferredVersion: GroupVersionForDiscovery;
}

export interface ApiGroupList {
  kind: 'APIGroupList';
  apiVersion: 'v1';
  groups: ApiGroup[];
}

/** Opaque per-kind hash clients compare for equality (base64 of the first 8 bytes of a SHA-256). */
export function storageVersionHash(def: Pick<ResourceDefinition, 'group' | 'version' | 'kind'>): string {
  return createHash('sha256').update(`${def.group}/${def.version}/${def.kind}`).digest().subarray(0, 8).toString('base64');
}

/** `/api`: the versions of the core group; `serverAddress` is where clients reach this server. */
export function apiVersions(serverAddress = ''): ApiVersions {
  return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress }] };
}

/** The resources of one group version, subresources as `<plural>/<sub>` entries. */
export function apiResourceList(registry: ResourceRegistry, group: string, version: string): ApiResourceList {
  const resources: ApiResource[] = [];
  for (const def of registry.resourcesIn(group, version)) {
    const resource: ApiResource = {
      name: def.plural,
      singularName: def.singular,
      namespaced: def.namespaced,
      kind: def.kind,
      verbs: [...def.verbs],
    };
    if (def.shortNames.length > 0) resource.shortNames = [...def.shortNames];
    if (def.categories.length > 0) resource.categories = [...def.categories];
    // Reviews are never stored, so they have no storage version. Last, as the original's APIResource orders its fields.
    if (!def.virtual) resource.storageVersionHash = storageVersionHash(def);
    resources.push(resource);
    for (const sub of def.subresources) {
      // Keys in the original's field order: name, singularName, namespaced, group, version, kind, verbs.
      const group = sub.group !== undefined && sub.group !== def.group ? sub.group : undefined;
      const version = sub.version !== undefined && sub.version !== def.version ? sub.version : group !== undefined ? (sub.version ?? def.version) : undefined;
      resources.push({
        name: `${def.plural}/${sub.name}`,
        singularName: '',
        namespaced: def.namespaced,
        ...(group !== undefined ? { group } : {}),
        ...(version !== undefined ? { version } : {}),
        kind: sub.kind ?? def.kind,
        verbs: [...sub.verbs],
      });
    }
  }
  return { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: groupVersion({ group, version }), resources };
}

/**
 * A group's versions as discovery lists them: by version priority (GA before
 * beta before alpha, higher numbers first, other names last in lexical
 * order), as the original lists a custom resource's group, whatever order
 * the definition names them in. The first is the preferred version, which
 * clients use for a resource named without a version. Built-in groups are
 * registered in this order already.
 */
function discoveryVersions(versions: readonly GroupVersionForDiscovery[]): GroupVersionForDiscovery[] {
  return sortByVersionPriority(versions, (v) => v.version);
}

function versionsOf(registry: ResourceRegistry, group: string): GroupVersionForDiscovery[] {
  return discoveryVersions(
    registry
      .groupVersions()
      .filter((gv) => gv.group === group)
      .map((gv) => ({ groupVersion: groupVersion(gv), version: gv.version })),
  );
}

/** `/apis/<group>`: a named group, its versions by priority, the first preferred. */
export function apiGroup(registry: ResourceRegistry, group: string): ApiGroup {
  const versions = versionsOf(registry, group);
  const preferred = versions[0] ?? { groupVersion: `${group}/`, version: '' };
  return { kind: 'APIGroup', apiVersion: 'v1', name: group, versions, preferredVersion: preferred };
}

/** `/apis`: every named group (the core group is served at `/api`), from one pass over the group versions; each group as `/apis/<group>` shows it. */
export function apiGroupList(registry: ResourceRegistry): ApiGroupList {
  const byGroup = new Map<string, GroupVersionForDiscovery[]>();
  for (const gv of registry.groupVersions()) {
    if (gv.group === '') continue;
    const versions = byGroup.get(gv.group) ?? [];
    versions.push({ groupVersion: groupVersion(gv), version: gv.version });
    byGroup.set(gv.group, versions);
  }
  const groups = [...byGroup].map(([name, registered]): ApiGroup => {
    const versions = discoveryVersions(registered);
    return { kind: 'APIGroup', apiVersion: 'v1', name, versions, preferredVersion: versions[0] as GroupVersionForDiscovery };
  });
  return { kind: 'APIGroupList', apiVersion: 'v1', groups };
}

/**
 * Groups named after the vendor in the original API (`rbac.authorization.k8s.io`) are ours under
 * `svc.io`. Manifests written for the original (RBAC objects of a chart, CustomResourceDefinitions
 * from a generator) name the original group, and kubectl maps a manifest's apiVersion through
 * discovery before it sends anything; so discovery also lists each of our `*.svc.io` groups under
 * its upstream name, after all of ours (clients prefer the groups listed first, so a resource
 * named without a group resolves to ours). Requests through an upstream name are served as ours,
 * and answers name the group the client used.
 *
 * One group is listed under its upstream name first: RBAC. kubectl's typed RBAC commands
 * (`kubectl set subject rolebinding|clusterrolebinding`) resolve the bare resource name through
 * discovery and then decode the object with the types compiled into kubectl, which know only
 * `rbac.authorization.k8s.io`; with our name preferred they fail ("no kind is registered").
 * Preferring the upstream name makes every kubectl RBAC command work unchanged; the objects are the
 * same either way, and our name stays served and listed.
 */
const UPSTREAM_NAME_PREFERRED = new Set(['rbac.authorization.svc.io']);

function renamedGroup(group: ApiGroup, name: string): ApiGroup {
  const rename = (v: GroupVersionForDiscovery): GroupVersionForDiscovery => ({ groupVersion: `${name}/${v.version}`, version: v.version });
  return { ...group, name, versions: group.versions.map(rename), preferredVersion: rename(group.preferredVersion) };
}

/** `/apis` with every `*.svc.io` group listed a second time under its upstream name: last, or just before ours where the upstream name is preferred. */
export function withUpstreamGroupNames(list: ApiGroupList): ApiGroupList {
  const groups: ApiGroup[] = [];
  const aliases: ApiGroup[] = [];
  for (const group of list.groups) {
    const upstream = upstreamGroupName(group.name);
    if (upstream && UPSTREAM_NAME_PREFERRED.has(group.name)) groups.push(renamedGroup(group, upstream));
    else if (upstream) aliases.push(renamedGroup(group, upstream));
    groups.push(group);
  }
  return { ...list, groups: [...groups, ...aliases] };
}

/** A group's document, or a group version's resource list, under the name the client asked for. */
export function asRequestedGroup(group: ApiGroup, requested: string): ApiGroup;
export function asRequestedGroup(list: ApiResourceList, requested: string): ApiResourceList;
export function asRequestedGroup(doc: ApiGroup | ApiResourceList, requested: string): ApiGroup | ApiResourceList {
  if (doc.kind === 'APIGroup') return doc.name === requested ? doc : renamedGroup(doc, requested);
  const version = doc.groupVersion.slice(doc.groupVersion.indexOf('/') + 1);
  if (doc.groupVersion === `${requested}/${version}`) return doc;
  // Short names and categories stay with our name, so `kubectl get crd` or `get all` resolve once, without warnings.
  const resources = doc.resources.map(({ shortNames: _s, categories: _c, ...r }) => r);
  return { ...doc, groupVersion: `${requested}/${version}`, resources };
}
