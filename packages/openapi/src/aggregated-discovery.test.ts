import { ResourceRegistry, STANDARD_VERBS, type ResourceDefinition } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import { AggregatedDiscovery, apiGroupDiscoveryList, discoveryETag, discoveryGroups, discoveryResources, type ApiResourceDiscovery } from './aggregated-discovery';
import { apiGroupList, apiResourceList, asRequestedGroup, withUpstreamGroupNames, type ApiResource, type ApiResourceList } from './discovery';

function builtins(): ResourceRegistry {
  const registry = new ResourceRegistry();
  registerBuiltins(registry);
  return registry;
}

function gadget(version: string): ResourceDefinition {
  return {
    group: 'gadgets.example.com',
    version,
    kind: 'Gadget',
    listKind: 'GadgetList',
    plural: 'gadgets',
    singular: 'gadget',
    shortNames: ['gd'],
    categories: ['all'],
    namespaced: true,
    verbs: [...STANDARD_VERBS],
    subresources: [
      { name: 'status', verbs: ['get', 'patch', 'update'] },
      { name: 'scale', verbs: ['get', 'patch', 'update'], kind: 'Scale', group: 'autoscaling', version: 'v1' },
    ],
    schema: { type: 'object' },
    printerColumns: [],
    strategy: {},
    openApiName: `com.example.gadgets.${version}.Gadget`,
  };
}

/** What a client makes of an aggregated resource list: the legacy entries, as client-go converts them back. */
function asLegacy(resources: ApiResourceDiscovery[]): Array<Partial<ApiResource>> {
  const out: Array<Partial<ApiResource>> = [];
  for (const r of resources) {
    const kind = (k: { group: string; version: string; kind: string }) => ({ ...(k.group ? { group: k.group } : {}), ...(k.version ? { version: k.version } : {}), kind: k.kind });
    out.push({ name: r.resource, namespaced: r.scope === 'Namespaced', ...kind(r.responseKind), verbs: r.verbs, ...(r.shortNames ? { shortNames: r.shortNames } : {}), ...(r.categories ? { categories: r.categories } : {}) });
    for (const s of r.subresources ?? []) out.push({ name: `${r.resource}/${s.subresource}`, namespaced: r.scope === 'Namespaced', ...kind(s.responseKind), verbs: s.verbs });
  }
  return out;
}

/** The legacy list without what aggregated discovery does not carry (storage version hashes, subresources' empty singular names). */
function comparable(list: ApiResourceList): Array<Partial<ApiResource>> {
  return list.resources.map(({ storageVersionHash: _h, singularName: _s, ...rest }) => rest);
}

describe('aggregated discovery documents', () => {
  const registry = builtins();

  test('/api: the core group, unnamed, with its one version and every resource of /api/v1', () => {
    const groups = discoveryGroups(registry, 'core');
    expect(groups).toHaveLength(1);
    expect(groups[0]?.metadata).toEqual({});
    expect(groups[0]?.versions.map((v) => [v.version, v.freshness])).toEqual([['v1', 'Current']]);
    const resources = groups[0]?.versions[0]?.resources ?? [];
    expect(asLegacy(resources)).toEqual(comparable(apiResourceList(registry, '', 'v1')));
    const pods = resources.find((r) => r.resource === 'pods');
    expect(pods).toEqual({
      resource: 'pods',
      responseKind: { group: '', version: '', kind: 'Pod' },
      scope: 'Namespaced',
      singularResource: 'pod',
      verbs: [...STANDARD_VERBS],
      shortNames: ['po'],
      categories: ['all'],
      subresources: [
        { subresource: 'status', responseKind: { group: '', version: '', kind: 'Pod' }, verbs: ['get', 'patch', 'update'] },
        { subresource: 'eviction', responseKind: { group: 'policy', version: 'v1', kind: 'Eviction' }, verbs: ['create'] },
      ],
    });
    const namespaces = resources.find((r) => r.resource === 'namespaces');
    expect(namespaces?.scope).toBe('Cluster');
    // A subresource answering with another group's kind names it.
    const token = resources.find((r) => r.resource === 'serviceaccounts')?.subresources?.find((s) => s.subresource === 'token');
    expect(token).toEqual({ subresource: 'token', responseKind: { group: 'authentication.svc.io', version: 'v1', kind: 'TokenRequest' }, verbs: ['create'] });
  });

  test('/apis: the groups and versions of the legacy /apis in its order, upstream names last (RBAC first), each version with its legacy resources', () => {
    const groups = discoveryGroups(registry, 'named');
    const legacy = withUpstreamGroupNames(apiGroupList(registry)).groups;
    expect(groups.map((g) => g.metadata.name)).toEqual(legacy.map((g) => g.name));
    expect(groups.map((g) => g.versions.map((v) => v.version))).toEqual(legacy.map((g) => g.versions.map((v) => v.version)));
    const names = groups.map((g) => g.metadata.name ?? '');
    expect(names.indexOf('coordination.k8s.io')).toBeGreaterThan(Math.max(...names.filter((n) => n.endsWith('.svc.io')).map((n) => names.indexOf(n))));
    expect(names.indexOf('rbac.authorization.k8s.io')).toBe(names.indexOf('rbac.authorization.svc.io') - 1);
    for (const group of groups) {
      const name = group.metadata.name ?? '';
      const ours = name.endsWith('.k8s.io') ? name.replace(/\.k8s\.io$/, '.svc.io') : name;
      for (const version of group.versions) {
        expect(version.freshness).toBe('Current');
        expect(asLegacy(version.resources)).toEqual(comparable(asRequestedGroup(apiResourceList(registry, ours, version.version), name)));
      }
    }
    // Upstream names resolve no short names or categories, as in the legacy documents.
    const upstreamRbac = groups.find((g) => g.metadata.name === 'rbac.authorization.k8s.io');
    expect(upstreamRbac?.versions[0]?.resources.length).toBeGreaterThan(0);
    expect(upstreamRbac?.versions[0]?.resources.some((r) => r.shortNames || r.categories)).toBe(false);
  });

  test('a subresource whose resource is not listed hangs from a parent entry without a kind', () => {
    const list: ApiResourceList = { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: 'x/v1', resources: [{ name: 'things/status', singularName: '', namespaced: false, kind: 'Thing', verbs: ['get'] }] };
    expect(discoveryResources(list)).toEqual([
      { resource: 'things', responseKind: { group: '', version: '', kind: '' }, scope: 'Cluster', singularResource: '', verbs: [], subresources: [{ subresource: 'status', responseKind: { group: '', version: '', kind: 'Thing' }, verbs: ['get'] }] },
    ]);
  });

  test('the list is named by the group and version asked for', () => {
    const items = discoveryGroups(registry, 'core');
    expect(apiGroupDiscoveryList(items)).toEqual({ kind: 'APIGroupDiscoveryList', apiVersion: 'apidiscovery.svc.io/v2', metadata: {}, items });
    expect(apiGroupDiscoveryList(items, 'apidiscovery.k8s.io', 'v2beta1').apiVersion).toBe('apidiscovery.k8s.io/v2beta1');
  });
});

describe('AggregatedDiscovery', () => {
  test('keeps each document until the registry changes, and lists a custom resource from when it is added until it is removed', () => {
    const registry = builtins();
    const discovery = new AggregatedDiscovery(registry);
    const before = discovery.document('named');
    const core = discovery.document('core');
    expect(discovery.document('named')).toBe(before);
    expect(before.etag).toBe(discoveryETag(before.items));
    expect(before.etag).toMatch(/^[0-9A-F]{128}$/);
    expect(before.items.some((g) => g.metadata.name === 'gadgets.example.com')).toBe(false);

    registry.add(gadget('v1beta1'));
    registry.add(gadget('v1'));
    const after = discovery.document('named');
    expect(after).not.toBe(before);
    expect(after.etag).not.toBe(before.etag);
    // Custom groups come after the built-in ones and before the upstream names, as in /apis; GA before beta.
    const names = after.items.map((g) => g.metadata.name);
    expect(names.indexOf('gadgets.example.com')).toBe(names.indexOf('apiextensions.svc.io') + 1);
    const gadgets = after.items.find((g) => g.metadata.name === 'gadgets.example.com');
    expect(gadgets?.versions.map((v) => v.version)).toEqual(['v1', 'v1beta1']);
    expect(gadgets?.versions[0]?.resources).toEqual([
      {
        resource: 'gadgets',
        responseKind: { group: '', version: '', kind: 'Gadget' },
        scope: 'Namespaced',
        singularResource: 'gadget',
        verbs: [...STANDARD_VERBS],
        shortNames: ['gd'],
        categories: ['all'],
        subresources: [
          { subresource: 'status', responseKind: { group: '', version: '', kind: 'Gadget' }, verbs: ['get', 'patch', 'update'] },
          { subresource: 'scale', responseKind: { group: 'autoscaling', version: 'v1', kind: 'Scale' }, verbs: ['get', 'patch', 'update'] },
        ],
      },
    ]);
    // The core document is rebuilt too, to the same content and so the same ETag.
    expect(discovery.document('core')).not.toBe(core);
    expect(discovery.document('core').etag).toBe(core.etag);

    registry.remove('gadgets.example.com', 'v1', 'gadgets');
    registry.remove('gadgets.example.com', 'v1beta1', 'gadgets');
    expect(discovery.document('named').etag).toBe(before.etag);

    discovery.close();
    const kept = discovery.document('named');
    registry.add(gadget('v1'));
    expect(discovery.document('named')).toBe(kept);
  });
});
