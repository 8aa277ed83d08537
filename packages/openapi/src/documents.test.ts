import { ResourceRegistry, upstreamGroupName, STANDARD_VERBS, isJsonObject, type JsonObject, type JsonValue, type ResourceDefinition } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import { apiGroup, apiGroupList, apiResourceList, apiVersions, asRequestedGroup, withUpstreamGroupNames } from './discovery';
import { OpenApiDocuments, openApiV2, openApiV3Discovery, openApiV3GroupVersion } from './documents';

function builtins(): ResourceRegistry {
  const registry = new ResourceRegistry();
  registerBuiltins(registry);
  return registry;
}

function widget(): ResourceDefinition {
  return {
    group: 'example.com',
    version: 'v1alpha1',
    kind: 'Widget',
    listKind: 'WidgetList',
    plural: 'widgets',
    singular: 'widget',
    shortNames: ['wd'],
    categories: [],
    namespaced: false,
    verbs: [...STANDARD_VERBS],
    subresources: [{ name: 'scale', verbs: ['get', 'update'], kind: 'Scale' }],
    schema: {
      type: 'object',
      properties: {
        apiVersion: { type: 'string' },
        kind: { type: 'string' },
        metadata: { type: 'object' },
        spec: { type: 'object', properties: { size: { type: 'integer' }, tags: { type: 'array', items: { type: 'string' }, 'x-svc-list-type': 'set' } } },
      },
    },
    printerColumns: [],
    strategy: {},
    openApiName: 'com.example.v1alpha1.Widget',
  };
}

function obj(value: JsonValue | undefined): JsonObject {
  if (!isJsonObject(value)) throw new Error(`not an object: ${JSON.stringify(value)}`);
  return value;
}

function get(root: JsonValue | undefined, ...path: string[]): JsonValue | undefined {
  let cur = root;
  for (const key of path) cur = isJsonObject(cur) ? cur[key] : undefined;
  return cur;
}

/** Every `$ref` in a document, with whether its target exists. */
function danglingRefs(doc: JsonObject, prefix: string, container: JsonObject): string[] {
  const out: string[] = [];
  const walk = (v: JsonValue | undefined): void => {
    if (Array.isArray(v)) v.forEach(walk);
    else if (isJsonObject(v)) {
      for (const [k, child] of Object.entries(v)) {
        if (k === '$ref' && typeof child === 'string' && !(child.startsWith(prefix) && child.slice(prefix.length) in container)) out.push(child);
        else walk(child);
      }
    }
  };
  walk(doc);
  return out;
}

function parameterNames(op: JsonValue | undefined): string[] {
  const params = get(op, 'parameters');
  return Array.isArray(params) ? params.map((p) => String(get(p, 'name'))) : [];
}

describe('openApiV2', () => {
  const doc = openApiV2(builtins());
  const definitions = obj(doc['definitions']);
  const paths = obj(doc['paths']);

  it('is a Swagger 2.0 document whose references all resolve', () => {
    expect(doc['swagger']).toBe('2.0');
    expect(danglingRefs(doc, '#/definitions/', definitions)).toEqual([]);
  });

  it('defines every kind, its list and the shared meta types', () => {
    for (const name of [
      'io.svc.api.core.v1.ConfigMap',
      'io.svc.api.core.v1.ConfigMapList',
      'io.svc.api.core.v1.Pod',
      'io.svc.api.coordination.v1.Lease',
      'io.svc.api.coordination.v1.LeaseList',
      'io.svc.apimachinery.pkg.apis.meta.v1.ObjectMeta',
      'io.svc.apimachinery.pkg.apis.meta.v1.ListMeta',
      'io.svc.apimachinery.pkg.apis.meta.v1.Time',
      'io.svc.apimachinery.pkg.apis.meta.v1.Status',
      'io.svc.apimachinery.pkg.apis.meta.v1.DeleteOptions',
      'io.svc.apimachinery.pkg.apis.meta.v1.Patch',
      'io.svc.apimachinery.pkg.apis.meta.v1.WatchEvent',
    ]) {
      expect(definitions).toHaveProperty([name]);
    }
    const gvk = [{ group: 'coordination.svc.io', kind: 'LeaseList', version: 'v1' }];
    expect(get(definitions, 'io.svc.api.coordination.v1.LeaseList', 'x-kubernetes-group-version-kind')).toEqual(gvk);
    expect(get(definitions, 'io.svc.api.coordination.v1.LeaseList', 'x-svc-group-version-kind')).toEqual(gvk);
    expect(get(definitions, 'io.svc.api.core.v1.ConfigMap', 'properties', 'metadata', '$ref')).toBe('#/definitions/io.svc.apimachinery.pkg.apis.meta.v1.ObjectMeta');
  });

  it('publishes merge markers under both names', () => {
    const containers = get(definitions, 'io.svc.api.core.v1.Pod', 'properties', 'spec', 'properties', 'containers');
    expect(containers).toMatchObject({
      'x-svc-patch-merge-key': 'name',
      'x-kubernetes-patch-merge-key': 'name',
      'x-svc-patch-strategy': 'merge',
      'x-kubernetes-patch-strategy': 'merge',
      'x-kubernetes-list-type': 'map',
      'x-kubernetes-list-map-keys': ['name'],
    });
    expect(get(containers, 'items', 'properties', 'ports')).toMatchObject({ 'x-kubernetes-list-map-keys': ['containerPort', 'protocol'] });
    expect(get(definitions, 'io.svc.apimachinery.pkg.apis.meta.v1.ObjectMeta', 'properties', 'finalizers')).toMatchObject({
      'x-kubernetes-list-type': 'set',
      'x-kubernetes-patch-strategy': 'merge',
    });
    expect(get(definitions, 'io.svc.api.core.v1.Service', 'properties', 'spec', 'properties', 'ports', 'items', 'properties', 'targetPort')).toMatchObject({
      type: 'string',
      format: 'int-or-string',
      'x-kubernetes-int-or-string': true,
    });
  });

  it('has a path for every resource shape of the spec', () => {
    expect(Object.keys(paths)).toEqual(
      expect.arrayContaining([
        '/api/v1/configmaps',
        '/api/v1/namespaces/{namespace}/configmaps',
        '/api/v1/namespaces/{namespace}/configmaps/{name}',
        '/api/v1/namespaces/{namespace}/pods/{name}/status',
        '/api/v1/namespaces',
        '/api/v1/namespaces/{name}',
        '/api/v1/namespaces/{name}/status',
        '/api/v1/namespaces/{name}/finalize',
        '/api/v1/nodes/{name}/status',
        '/apis/coordination.svc.io/v1/leases',
        '/apis/coordination.svc.io/v1/namespaces/{namespace}/leases',
        '/apis/coordination.svc.io/v1/namespaces/{namespace}/leases/{name}',
      ]),
    );
    expect(Object.keys(paths)).not.toContain('/api/v1/namespaces/{namespace}/namespaces');
  });

  it('describes operations with actions, kinds and the write parameters', () => {
    const collection = obj(paths['/api/v1/namespaces/{namespace}/configmaps']);
    const item = obj(paths['/api/v1/namespaces/{namespace}/configmaps/{name}']);
    expect(Object.fromEntries(Object.entries({ ...collection, ...item }).filter(([k]) => k !== 'parameters').map(([k, v]) => [k, get(v, 'x-kubernetes-action')]))).toEqual({
      get: 'get',
      post: 'post',
      delete: 'delete',
      put: 'put',
      patch: 'patch',
    });
    expect(get(collection, 'delete', 'x-kubernetes-action')).toBe('deletecollection');
    expect(get(collection, 'get', 'x-kubernetes-action')).toBe('list');
    expect(get(item, 'patch', 'x-kubernetes-group-version-kind')).toEqual({ group: '', kind: 'ConfigMap', version: 'v1' });
    expect(get(item, 'patch', 'operationId')).toBe('patchCoreV1NamespacedConfigMap');
    for (const op of [get(collection, 'post'), get(item, 'put'), get(item, 'patch')]) {
      expect(parameterNames(op)).toEqual(expect.arrayContaining(['dryRun', 'fieldManager', 'fieldValidation']));
    }
    expect(parameterNames(get(item, 'patch'))).toContain('force');
    expect(parameterNames(get(item, 'put'))).not.toContain('force');
    expect(get(item, 'patch', 'consumes')).toEqual([
      'application/apply-patch+yaml',
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/strategic-merge-patch+json',
    ]);
    expect(parameterNames(get(collection, 'get'))).toEqual(expect.arrayContaining(['watch', 'labelSelector', 'limit', 'continue', 'resourceVersion']));
    expect(parameterNames(item)).toEqual(['name', 'namespace', 'pretty']);
    expect(get(paths, '/api/v1/configmaps', 'get', 'operationId')).toBe('listCoreV1ConfigMapForAllNamespaces');
    expect(get(paths, '/api/v1/namespaces/{name}/finalize', 'put', 'operationId')).toBe('replaceCoreV1NamespaceFinalize');
    expect(get(paths, '/api/v1/namespaces/{namespace}/pods/{name}/status', 'get', 'operationId')).toBe('readCoreV1NamespacedPodStatus');
  });
});

describe('openApiV3GroupVersion', () => {
  const registry = builtins();
  const core = openApiV3GroupVersion(registry, '', 'v1');
  const schemas = obj(get(core, 'components', 'schemas'));

  it('holds the group version kinds and resolves every reference', () => {
    expect(core['openapi']).toBe('3.0.0');
    expect(danglingRefs(core, '#/components/schemas/', schemas)).toEqual([]);
    expect(schemas).toHaveProperty(['io.svc.api.core.v1.Pod']);
    expect(schemas).not.toHaveProperty(['io.svc.api.coordination.v1.Lease']);
    expect(Object.keys(obj(core['paths'])).every((p) => p.startsWith('/api/v1/'))).toBe(true);
    expect(get(schemas, 'io.svc.api.core.v1.Pod', 'properties', 'metadata')).toEqual({
      allOf: [{ $ref: '#/components/schemas/io.svc.apimachinery.pkg.apis.meta.v1.ObjectMeta' }],
      description: "Standard object's metadata.",
      default: {},
    });
  });

  it('declares the patch media types and write parameters on PATCH', () => {
    const patch = get(core, 'paths', '/api/v1/namespaces/{namespace}/configmaps/{name}', 'patch');
    expect(Object.keys(obj(get(patch, 'requestBody', 'content')))).toEqual([
      'application/apply-patch+yaml',
      'application/json-patch+json',
      'application/merge-patch+json',
      'application/strategic-merge-patch+json',
    ]);
    expect(parameterNames(patch)).toEqual(['dryRun', 'fieldManager', 'fieldValidation', 'force']);
    expect(get(patch, 'x-kubernetes-group-version-kind')).toEqual({ group: '', kind: 'ConfigMap', version: 'v1' });
    expect(get(patch, 'responses', '200', 'content', 'application/json', 'schema', '$ref')).toBe('#/components/schemas/io.svc.api.core.v1.ConfigMap');
  });

  it('publishes the named group alone in its own document', () => {
    const leases = openApiV3GroupVersion(registry, 'coordination.svc.io', 'v1');
    const leaseSchemas = obj(get(leases, 'components', 'schemas'));
    expect(danglingRefs(leases, '#/components/schemas/', leaseSchemas)).toEqual([]);
    expect(get(leaseSchemas, 'io.svc.api.coordination.v1.Lease', 'properties', 'spec', 'properties', 'holderIdentity', 'type')).toBe('string');
    expect(get(leases, 'paths', '/apis/coordination.svc.io/v1/namespaces/{namespace}/leases', 'get', 'operationId')).toBe('listCoordinationV1NamespacedLease');
    expect(get(leaseSchemas, 'io.svc.apimachinery.pkg.apis.meta.v1.DeleteOptions', 'x-kubernetes-group-version-kind')).toEqual(
      expect.arrayContaining([
        { group: '', kind: 'DeleteOptions', version: 'v1' },
        { group: 'coordination.svc.io', kind: 'DeleteOptions', version: 'v1' },
      ]),
    );
  });
});

describe('documents follow the registry', () => {
  it('lists served group versions in the v3 index with their hashes', () => {
    const registry = builtins();
    const index = openApiV3Discovery(registry, (group, version) => `${group || 'core'}-${version}`);
    expect(index).toEqual({
      paths: {
        'api/v1': { serverRelativeURL: '/openapi/v3/api/v1?hash=core-v1' },
        'apis/coordination.svc.io/v1': { serverRelativeURL: '/openapi/v3/apis/coordination.svc.io/v1?hash=coordination.svc.io-v1' },
        'apis/policy/v1': { serverRelativeURL: '/openapi/v3/apis/policy/v1?hash=policy-v1' },
        'apis/events.svc.io/v1': { serverRelativeURL: '/openapi/v3/apis/events.svc.io/v1?hash=events.svc.io-v1' },
        'apis/authentication.svc.io/v1': { serverRelativeURL: '/openapi/v3/apis/authentication.svc.io/v1?hash=authentication.svc.io-v1' },
        'apis/authentication.svc.io/v1beta1': { serverRelativeURL: '/openapi/v3/apis/authentication.svc.io/v1beta1?hash=authentication.svc.io-v1beta1' },
        'apis/rbac.authorization.svc.io/v1': { serverRelativeURL: '/openapi/v3/apis/rbac.authorization.svc.io/v1?hash=rbac.authorization.svc.io-v1' },
        'apis/authorization.svc.io/v1': { serverRelativeURL: '/openapi/v3/apis/authorization.svc.io/v1?hash=authorization.svc.io-v1' },
        'apis/admissionregistration.svc.io/v1': { serverRelativeURL: '/openapi/v3/apis/admissionregistration.svc.io/v1?hash=admissionregistration.svc.io-v1' },
        'apis/flowcontrol.svc.io/v1': { serverRelativeURL: '/openapi/v3/apis/flowcontrol.svc.io/v1?hash=flowcontrol.svc.io-v1' },
        'apis/apiextensions.svc.io/v1': { serverRelativeURL: '/openapi/v3/apis/apiextensions.svc.io/v1?hash=apiextensions.svc.io-v1' },
      },
    });
  });

  it('includes kinds added at run time, with a subresource of another kind', () => {
    const registry = builtins();
    registry.add(widget());
    const v2 = openApiV2(registry);
    expect(get(v2, 'paths', '/apis/example.com/v1alpha1/widgets/{name}', 'get', 'operationId')).toBe('readExampleComV1alpha1Widget');
    expect(get(v2, 'paths', '/apis/example.com/v1alpha1/widgets/{name}/scale', 'put', 'x-kubernetes-group-version-kind')).toEqual({
      group: 'example.com',
      kind: 'Scale',
      version: 'v1alpha1',
    });
    expect(get(v2, 'definitions', 'com.example.v1alpha1.Widget', 'properties', 'spec', 'properties', 'tags', 'x-kubernetes-list-type')).toBe('set');
    expect(get(v2, 'definitions', 'com.example.v1alpha1.WidgetList', 'x-kubernetes-group-version-kind')).toEqual([
      { group: 'example.com', kind: 'WidgetList', version: 'v1alpha1' },
    ]);
    expect(danglingRefs(v2, '#/definitions/', obj(v2['definitions']))).toEqual([]);
    const v3 = openApiV3GroupVersion(registry, 'example.com', 'v1alpha1');
    expect(Object.keys(obj(v3['paths']))).toEqual([
      '/apis/example.com/v1alpha1/widgets',
      '/apis/example.com/v1alpha1/widgets/{name}',
      '/apis/example.com/v1alpha1/widgets/{name}/scale',
    ]);
  });

  it('caches documents until the registry changes', () => {
    const registry = builtins();
    const docs = new OpenApiDocuments(registry, { version: 'v1.32.0-test' });
    const first = docs.v3('', 'v1');
    // The hash is a digest of what the document is made from: the same for equal registries, another after a change.
    expect(first?.hash).toMatch(/^[0-9A-F]{128}$/);
    const twin = new OpenApiDocuments(builtins(), { version: 'v1.32.0-test' });
    expect(twin.v3Hash('', 'v1')).toBe(first?.hash);
    expect(twin.v3Hash('', 'v1')).not.toBe(new OpenApiDocuments(builtins(), { version: 'v1.32.1-test' }).v3Hash('', 'v1'));
    twin.close();
    expect(docs.v3('', 'v1')).toBe(first);
    expect(docs.v2()).toBe(docs.v2());
    expect(get(docs.v2(), 'info', 'version')).toBe('v1.32.0-test');
    expect(docs.v3('example.com', 'v1alpha1')).toBeUndefined();
    registry.add(widget());
    expect(get(docs.v3Discovery(), 'paths', 'apis/example.com/v1alpha1', 'serverRelativeURL')).toBe(
      `/openapi/v3/apis/example.com/v1alpha1?hash=${docs.v3('example.com', 'v1alpha1')?.hash ?? ''}`,
    );
    expect(docs.v3('', 'v1')).not.toBe(first);
    // Adding a group version changes every document (their meta definitions name the served group versions).
    expect(docs.v3('', 'v1')?.hash).not.toBe(first?.hash);
    registry.remove('example.com', 'v1alpha1', 'widgets');
    expect(get(docs.v3Discovery(), 'paths', 'apis/example.com/v1alpha1')).toBeUndefined();
    docs.close();
  });
});

describe('discovery documents', () => {
  const registry = builtins();

  it('lists core resources with subresources, short names and categories', () => {
    const list = apiResourceList(registry, '', 'v1');
    expect(list).toMatchObject({ kind: 'APIResourceList', groupVersion: 'v1' });
    const byName = new Map(list.resources.map((r) => [r.name, r]));
    expect(byName.get('pods')).toMatchObject({ singularName: 'pod', namespaced: true, kind: 'Pod', shortNames: ['po'], categories: ['all'] });
    expect(byName.get('pods')?.verbs).toEqual(expect.arrayContaining(['create', 'get', 'list', 'watch', 'patch', 'update', 'delete', 'deletecollection']));
    expect(byName.get('pods/status')).toEqual({ name: 'pods/status', singularName: '', namespaced: true, kind: 'Pod', verbs: ['get', 'patch', 'update'] });
    expect(byName.get('namespaces/finalize')).toMatchObject({ namespaced: false, verbs: ['update'] });
    expect(byName.get('configmaps')?.storageVersionHash).toMatch(/^[A-Za-z0-9+/]{11}=$/);
  });

  it('orders each resource\'s keys as the original\'s APIResource fields: storageVersionHash after shortNames and categories, group and version before kind', () => {
    const pods = apiResourceList(registry, '', 'v1').resources.find((r) => r.name === 'pods');
    expect(Object.keys(pods ?? {})).toEqual(['name', 'singularName', 'namespaced', 'kind', 'verbs', 'shortNames', 'categories', 'storageVersionHash']);
    const token = apiResourceList(registry, '', 'v1').resources.find((r) => r.name === 'serviceaccounts/token');
    expect(Object.keys(token ?? {})).toEqual(['name', 'singularName', 'namespaced', 'group', 'version', 'kind', 'verbs']);
    expect(token).toMatchObject({ group: 'authentication.svc.io', version: 'v1', kind: 'TokenRequest' });
  });

  it('lists our svc.io groups a second time under their upstream names, after ours (RBAC just before ours), without short names or categories', () => {
    const list = withUpstreamGroupNames(apiGroupList(registry));
    const names = list.groups.map((g) => g.name);
    const ours = apiGroupList(registry).groups.map((g) => g.name);
    // kubectl's typed RBAC commands need the upstream name preferred; every other group keeps ours first.
    const rbac = ours.indexOf('rbac.authorization.svc.io');
    expect(names.slice(0, ours.length + 1)).toEqual([...ours.slice(0, rbac), 'rbac.authorization.k8s.io', ...ours.slice(rbac)]);
    expect(names.indexOf('coordination.k8s.io')).toBeGreaterThan(ours.length);
    expect(names.filter((n) => n === 'rbac.authorization.k8s.io')).toHaveLength(1);
    expect(names).toEqual(expect.arrayContaining(['rbac.authorization.k8s.io', 'apiextensions.k8s.io', 'coordination.k8s.io']));
    const alias = list.groups.find((g) => g.name === 'rbac.authorization.k8s.io');
    expect(alias?.preferredVersion).toEqual({ groupVersion: 'rbac.authorization.k8s.io/v1', version: 'v1' });
    expect(upstreamGroupName('example.com')).toBeUndefined();
    const roles = asRequestedGroup(apiResourceList(registry, 'apiextensions.svc.io', 'v1'), 'apiextensions.k8s.io');
    expect(roles.groupVersion).toBe('apiextensions.k8s.io/v1');
    const crds = roles.resources.find((r) => r.name === 'customresourcedefinitions');
    expect(crds).toBeDefined();
    expect(crds?.shortNames).toBeUndefined();
    expect(apiResourceList(registry, 'apiextensions.svc.io', 'v1').resources.find((r) => r.name === 'customresourcedefinitions')?.shortNames).toEqual(['crd', 'crds']);
    expect(asRequestedGroup(apiGroup(registry, 'rbac.authorization.svc.io'), 'rbac.authorization.k8s.io').versions).toEqual([{ groupVersion: 'rbac.authorization.k8s.io/v1', version: 'v1' }]);
  });

  it('lists named groups and the core versions', () => {
    expect(apiGroupList(registry)).toEqual({
      kind: 'APIGroupList',
      apiVersion: 'v1',
      groups: [
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: 'coordination.svc.io',
          versions: [{ groupVersion: 'coordination.svc.io/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'coordination.svc.io/v1', version: 'v1' },
        },
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: 'policy',
          versions: [{ groupVersion: 'policy/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'policy/v1', version: 'v1' },
        },
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: 'authentication.svc.io',
          versions: [
            { groupVersion: 'authentication.svc.io/v1', version: 'v1' },
            { groupVersion: 'authentication.svc.io/v1beta1', version: 'v1beta1' },
          ],
          preferredVersion: { groupVersion: 'authentication.svc.io/v1', version: 'v1' },
        },
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: 'rbac.authorization.svc.io',
          versions: [{ groupVersion: 'rbac.authorization.svc.io/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'rbac.authorization.svc.io/v1', version: 'v1' },
        },
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: 'authorization.svc.io',
          versions: [{ groupVersion: 'authorization.svc.io/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'authorization.svc.io/v1', version: 'v1' },
        },
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: 'admissionregistration.svc.io',
          versions: [{ groupVersion: 'admissionregistration.svc.io/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'admissionregistration.svc.io/v1', version: 'v1' },
        },
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: 'events.svc.io',
          versions: [{ groupVersion: 'events.svc.io/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'events.svc.io/v1', version: 'v1' },
        },
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: 'flowcontrol.svc.io',
          versions: [{ groupVersion: 'flowcontrol.svc.io/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'flowcontrol.svc.io/v1', version: 'v1' },
        },
        {
          kind: 'APIGroup',
          apiVersion: 'v1',
          name: 'apiextensions.svc.io',
          versions: [{ groupVersion: 'apiextensions.svc.io/v1', version: 'v1' }],
          preferredVersion: { groupVersion: 'apiextensions.svc.io/v1', version: 'v1' },
        },
      ],
    });
    expect(apiGroup(registry, 'coordination.svc.io').preferredVersion.version).toBe('v1');
    expect(apiVersions('127.0.0.1:6443')).toEqual({
      kind: 'APIVersions',
      versions: ['v1'],
      serverAddressByClientCIDRs: [{ clientCIDR: '0.0.0.0/0', serverAddress: '127.0.0.1:6443' }],
    });
    expect(apiResourceList(registry, 'coordination.svc.io', 'v1').groupVersion).toBe('coordination.svc.io/v1');
  });

  it('lists a custom group\'s versions by priority, whatever order they were registered in, the first preferred', () => {
    const custom = builtins();
    for (const version of ['foo', 'v1', 'v1alpha1', 'v2', 'v1beta1', 'v1beta2']) custom.add({ ...widget(), version, openApiName: `com.example.${version}.Widget` });
    const want = ['v2', 'v1', 'v1beta2', 'v1beta1', 'v1alpha1', 'foo'].map((version) => ({ groupVersion: `example.com/${version}`, version }));
    expect(apiGroup(custom, 'example.com')).toEqual({ kind: 'APIGroup', apiVersion: 'v1', name: 'example.com', versions: want, preferredVersion: want[0] });
    const listed = apiGroupList(custom).groups.find((g) => g.name === 'example.com');
    expect(listed).toEqual(apiGroup(custom, 'example.com'));
    // Built-in groups are listed as before.
    expect(apiGroupList(custom).groups.filter((g) => g.name !== 'example.com')).toEqual(apiGroupList(registry).groups);
  });

  it('lists reviews as create-only and the token subresource with its own group', () => {
    expect(apiResourceList(registry, 'authentication.svc.io', 'v1').resources).toEqual([
      { name: 'tokenreviews', singularName: 'tokenreview', namespaced: false, kind: 'TokenReview', verbs: ['create'] },
      { name: 'selfsubjectreviews', singularName: 'selfsubjectreview', namespaced: false, kind: 'SelfSubjectReview', verbs: ['create'] },
    ]);
    const token = apiResourceList(registry, '', 'v1').resources.find((r) => r.name === 'serviceaccounts/token');
    expect(token).toEqual({ name: 'serviceaccounts/token', singularName: '', namespaced: true, kind: 'TokenRequest', group: 'authentication.svc.io', version: 'v1', verbs: ['create'] });
  });

  it('documents the token subresource with the TokenRequest definition', () => {
    const v3 = openApiV3GroupVersion(registry, '', 'v1');
    const post = get(v3, 'paths', '/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token', 'post');
    expect(get(post, 'x-kubernetes-group-version-kind')).toEqual({ group: 'authentication.svc.io', kind: 'TokenRequest', version: 'v1' });
    expect(get(v3, 'components', 'schemas', 'io.svc.api.authentication.v1.TokenRequest', 'properties', 'spec', 'properties', 'expirationSeconds', 'format')).toBe('int64');
    const reviews = openApiV3GroupVersion(registry, 'authentication.svc.io', 'v1');
    expect(Object.keys(obj(reviews['paths'])).sort()).toEqual(['/apis/authentication.svc.io/v1/selfsubjectreviews', '/apis/authentication.svc.io/v1/tokenreviews']);
    expect(get(reviews, 'components', 'schemas', 'io.svc.api.authentication.v1.TokenReviewList')).toBeUndefined();
  });
});
