import { createHash } from 'node:crypto';
import type { ResourceRegistry } from '@svc/apimachinery';
import { canonicalGroup } from '@svc/apimachinery';
import { apiGroupList, apiResourceList, apiVersions, asRequestedGroup, withUpstreamGroupNames, type ApiResourceList } from './discovery';

/**
 * Aggregated discovery (`apidiscovery.svc.io/v2` APIGroupDiscoveryList): every
 * group, version and resource of `/api` or of `/apis` in one document, so a
 * client learns the whole API in one request instead of one per group
 * version. It is made from the legacy documents (the same group and version
 * order as `/apis`, the same resources as `/apis/<group>/<version>`, the
 * upstream group names listed after ours), so the two can never disagree.
 */

/** `core`: the document served at `/api` (the core group); `named`: at `/apis`. */
export type DiscoveryScope = 'core' | 'named';

export const DISCOVERY_GROUP = 'apidiscovery.svc.io';
export const DISCOVERY_KIND = 'APIGroupDiscoveryList';

export interface GroupVersionKindRef {
  group: string;
  version: string;
  kind: string;
}

export interface ApiSubresourceDiscovery {
  subresource: string;
  responseKind: GroupVersionKindRef;
  verbs: string[];
}

export interface ApiResourceDiscovery {
  resource: string;
  responseKind: GroupVersionKindRef;
  scope: 'Namespaced' | 'Cluster';
  singularResource: string;
  verbs: string[];
  shortNames?: string[];
  categories?: string[];
  subresources?: ApiSubresourceDiscovery[];
}

export interface ApiVersionDiscovery {
  version: string;
  resources: ApiResourceDiscovery[];
  /** `Stale` would mark a group version whose resources could not be read; every one here is served by this server, so `Current`. */
  freshness: 'Current' | 'Stale';
}

export interface ApiGroupDiscovery {
  /** Only `name` is set, and not for the core group. */
  metadata: { name?: string };
  versions: ApiVersionDiscovery[];
}

export interface ApiGroupDiscoveryList {
  kind: typeof DISCOVERY_KIND;
  /** `<group>/<version>` as the client named them (`apidiscovery.k8s.io/v2` for unchanged clients). */
  apiVersion: string;
  metadata: Record<string, never>;
  items: ApiGroupDiscovery[];
}

/**
 * A legacy resource list as aggregated discovery lists it: each
 * `<plural>/<sub>` entry becomes a subresource of its resource. The kind is
 * carried over as the list has it (group and version empty when they are the
 * list's own), as the original server converts its lists.
 */
export function discoveryResources(list: ApiResourceList): ApiResourceDiscovery[] {
  const resources: ApiResourceDiscovery[] = [];
  const byName = new Map<string, ApiResourceDiscovery>();
  const kindOf = (r: { group?: string; version?: string; kind: string }): GroupVersionKindRef => ({ group: r.group ?? '', version: r.version ?? '', kind: r.kind });
  for (const r of list.resources) {
    const scope = r.namespaced ? 'Namespaced' : 'Cluster';
    const slash = r.name.indexOf('/');
    if (slash < 0) {
      const resource: ApiResourceDiscovery = { resource: r.name, responseKind: kindOf(r), scope, singularResource: r.singularName, verbs: [...r.verbs] };
      if (r.shortNames) resource.shortNames = [...r.shortNames];
      if (r.categories) resource.categories = [...r.categories];
      resources.push(resource);
      byName.set(r.name, resource);
      continue;
    }
    const parentName = r.name.slice(0, slash);
    let parent = byName.get(parentName);
    if (!parent) {
      // A subresource whose resource is not listed still needs a parent entry to hang from.
      parent = { resource: parentName, responseKind: { group: '', version: '', kind: '' }, scope, singularResource: '', verbs: [] };
      resources.push(parent);
      byName.set(parentName, parent);
    }
    (parent.subresources ??= []).push({ subresource: r.name.slice(slash + 1), responseKind: kindOf(r), verbs: [...r.verbs] });
  }
  return resources;
}

function versionDiscovery(list: ApiResourceList, version: string): ApiVersionDiscovery {
  return { version, resources: discoveryResources(list), freshness: 'Current' };
}

/**
 * The groups of a scope, in the order and with the versions the legacy
 * documents list them: `/api` has the core group (no name) and its
 * versions; `/apis` every named group as `/apis` orders them, each version
 * with the resources `/apis/<group>/<version>` lists.
 */
export function discoveryGroups(registry: ResourceRegistry, scope: DiscoveryScope): ApiGroupDiscovery[] {
  if (scope === 'core') {
    return [{ metadata: {}, versions: apiVersions().versions.map((v) => versionDiscovery(apiResourceList(registry, '', v), v)) }];
  }
  const ours = apiGroupList(registry);
  const served = new Set(ours.groups.map((g) => g.name));
  // A group listed under its upstream name has our group's resources; each list is built once.
  const lists = new Map<string, ApiResourceList>();
  const listOf = (group: string, version: string): ApiResourceList => {
    const key = `${group}/${version}`;
    let list = lists.get(key);
    if (!list) {
      list = apiResourceList(registry, group, version);
      lists.set(key, list);
    }
    return list;
  };
  return withUpstreamGroupNames(ours).groups.map((group) => {
    const source = served.has(group.name) ? group.name : canonicalGroup(group.name);
    return {
      metadata: { name: group.name },
      versions: group.versions.map((v) => versionDiscovery(asRequestedGroup(listOf(source, v.version), group.name), v.version)),
    };
  });
}

/** The list as a client receives it, under the discovery group and version it asked for. */
export function apiGroupDiscoveryList(items: ApiGroupDiscovery[], group = DISCOVERY_GROUP, version = 'v2'): ApiGroupDiscoveryList {
  return { kind: DISCOVERY_KIND, apiVersion: `${group}/${version}`, metadata: {}, items };
}

/** One scope's groups and their ETag: a hash of the groups alone, so every encoding and version of the list has the same one (clients vary their caches by Accept). */
export interface AggregatedDiscoveryDocument {
  readonly items: ApiGroupDiscovery[];
  readonly etag: string;
}

export function discoveryETag(items: ApiGroupDiscovery[]): string {
  return createHash('sha512').update(JSON.stringify(items)).digest('hex').toUpperCase();
}

/**
 * The aggregated documents of a registry, built on first use and dropped
 * when the registry changes (a custom resource definition is added, changed
 * or removed). A document object is never changed: a new one replaces it,
 * so what callers derive from one (its encodings) can be kept beside it.
 */
export class AggregatedDiscovery {
  private readonly documents = new Map<DiscoveryScope, AggregatedDiscoveryDocument>();
  private readonly unsubscribe: () => void;

  constructor(private readonly registry: ResourceRegistry) {
    this.unsubscribe = registry.onChange(() => this.documents.clear());
  }

  document(scope: DiscoveryScope): AggregatedDiscoveryDocument {
    let doc = this.documents.get(scope);
    if (!doc) {
      const items = discoveryGroups(this.registry, scope);
      doc = { items, etag: discoveryETag(items) };
      this.documents.set(scope, doc);
    }
    return doc;
  }

  /** Stops following registry changes. */
  close(): void {
    this.unsubscribe();
  }
}
