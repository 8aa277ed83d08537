import { ApiError, type ApiObject, type StoredKey } from '@svc/apimachinery';
import type { StorageClient } from '@svc/storage/client';
import { storageParams } from './params';

const crd = (served: boolean, established = true): ApiObject => ({
  apiVersion: 'apiextensions.svc.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'limits.example.com' },
  spec: { group: 'example.com', scope: 'Cluster', names: { plural: 'limits', singular: 'limit', kind: 'Limit', listKind: 'LimitList' }, versions: [{ name: 'v1', served, storage: true }] },
  status: { conditions: [{ type: 'Established', status: established ? 'True' : 'False' }] },
});

/** Storage holding `objects` by key, counting reads. */
function fakeStorage(objects: Map<string, ApiObject>) {
  const reads: string[] = [];
  const keyOf = (k: Omit<StoredKey, 'name'> & { name?: string }) => `${k.group}/${k.resource}/${k.namespace}/${k.name ?? ''}`;
  const storage: Pick<StorageClient, 'get' | 'list'> = {
    async get(key) {
      reads.push(`get ${keyOf(key)}`);
      const object = objects.get(keyOf(key));
      if (!object) throw ApiError.notFound({ group: key.group, resource: key.resource }, key.name);
      return { object, revision: 1 };
    },
    async list(key) {
      reads.push(`list ${keyOf(key)}`);
      const prefix = keyOf(key);
      return { items: [...objects].filter(([k]) => k.startsWith(key.namespace ? prefix : prefix.slice(0, -1))).map(([, v]) => v), revision: 1, continueToken: '' };
    },
  };
  return { storage, reads };
}

describe('storageParams', () => {
  test('resolves built-in kinds, by our group name or the upstream one', async () => {
    const { storage } = fakeStorage(new Map());
    const params = storageParams(storage);
    await expect(params.resolve('v1', 'ConfigMap')).resolves.toEqual({ group: '', version: 'v1', resource: 'configmaps', namespaced: true });
    await expect(params.resolve('rbac.authorization.k8s.io/v1', 'ClusterRole')).resolves.toEqual({ group: 'rbac.authorization.svc.io', version: 'v1', resource: 'clusterroles', namespaced: false });
    await expect(params.resolve('v2', 'ConfigMap')).resolves.toBeUndefined();
  });

  test('resolves custom kinds from established definitions that serve the version', async () => {
    const objects = new Map([['apiextensions.svc.io/customresourcedefinitions//limits.example.com', crd(true)]]);
    const params = storageParams(fakeStorage(objects).storage, { ttlMs: 0 });
    await expect(params.resolve('example.com/v1', 'Limit')).resolves.toEqual({ group: 'example.com', version: 'v1', resource: 'limits', namespaced: false });
    objects.set('apiextensions.svc.io/customresourcedefinitions//limits.example.com', crd(false));
    await expect(params.resolve('example.com/v1', 'Limit')).resolves.toBeUndefined();
    objects.set('apiextensions.svc.io/customresourcedefinitions//limits.example.com', crd(true, false));
    await expect(params.resolve('example.com/v1', 'Limit')).resolves.toBeUndefined();
  });

  test('resolves custom kinds from definitions already followed, without listing them from storage', async () => {
    const { storage, reads } = fakeStorage(new Map());
    let definitions = [crd(true)];
    const params = storageParams(storage, { ttlMs: 0, definitions: () => definitions });
    await expect(params.resolve('example.com/v1', 'Limit')).resolves.toEqual({ group: 'example.com', version: 'v1', resource: 'limits', namespaced: false });
    definitions = [];
    await expect(params.resolve('example.com/v1', 'Limit')).resolves.toBeUndefined();
    expect(reads).toEqual([]);
  });

  test('a parameter read is remembered for the TTL; one not found is read again', async () => {
    const objects = new Map<string, ApiObject>([['/configmaps/team-a/limits', { metadata: { name: 'limits', namespace: 'team-a' }, data: { max: '1' } }]]);
    const { storage, reads } = fakeStorage(objects);
    const params = storageParams(storage, { ttlMs: 60_000 });
    const resource = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
    await params.get(resource, 'team-a', 'limits');
    await expect(params.get(resource, 'team-a', 'limits')).resolves.toMatchObject({ data: { max: '1' } });
    await expect(params.get(resource, 'team-a', 'absent')).resolves.toBeUndefined();
    objects.set('/configmaps/team-a/absent', { metadata: { name: 'absent', namespace: 'team-a' } });
    await expect(params.get(resource, 'team-a', 'absent')).resolves.toBeDefined();
    expect(reads).toEqual(['get /configmaps/team-a/limits', 'get /configmaps/team-a/absent', 'get /configmaps/team-a/absent']);
    await params.list(resource, 'team-a');
    await expect(params.list(resource, 'team-a')).resolves.toHaveLength(2);
    expect(reads.filter((r) => r.startsWith('list'))).toEqual(['list /configmaps/team-a/']);
  });
});
