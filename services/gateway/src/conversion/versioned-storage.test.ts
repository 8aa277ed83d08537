import type { ApiObject, ResourceDefinition, StoredKey } from '@svc/apimachinery';
import { customResourceDefinitions } from '@svc/kinds';
import type { StoredResult } from '@svc/storage/client';
import { storageFor, type ObjectStorage } from './versioned-storage';

/** Two versions, v1 stored; each defaults a field of its own, v2 deprecated. */
function thingDefs(): Record<string, ResourceDefinition> {
  const schema = (props: Record<string, unknown>) => ({ openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: props } } } });
  const crd: ApiObject = {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'things.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Cluster',
      names: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' },
      conversion: { strategy: 'None' },
      versions: [
        { name: 'v1', served: true, storage: true, schema: schema({ size: { type: 'integer' }, color: { type: 'string', default: 'red' } }) },
        { name: 'v2', served: true, storage: false, deprecated: true, schema: schema({ size: { type: 'integer' }, shape: { type: 'string', default: 'round' } }) },
      ],
    },
    status: { acceptedNames: { plural: 'things', singular: 'thing', kind: 'Thing', listKind: 'ThingList' }, conditions: [{ type: 'Established', status: 'True' }] },
  };
  return Object.fromEntries(customResourceDefinitions(crd).map((d) => [d.version, d]));
}

/** Storage as a map of what was written, answering like the storage service. */
class MemoryStorage implements ObjectStorage {
  readonly objects = new Map<string, ApiObject>();
  private revision = 1;
  private answer(obj: ApiObject): StoredResult {
    return { object: structuredClone(obj), revision: this.revision };
  }
  async get(key: StoredKey): Promise<StoredResult> {
    const obj = this.objects.get(key.name);
    if (!obj) throw new Error('not found');
    return this.answer(obj);
  }
  async list() {
    return { items: [...this.objects.values()].map((o) => structuredClone(o)), revision: this.revision, continueToken: '' };
  }
  async create(key: StoredKey, obj: ApiObject): Promise<StoredResult> {
    this.revision++;
    this.objects.set(key.name, { ...obj, metadata: { ...obj.metadata, resourceVersion: String(this.revision) } });
    return this.answer(this.objects.get(key.name) as ApiObject);
  }
  async update(key: StoredKey, obj: ApiObject): Promise<StoredResult> {
    return this.create(key, obj);
  }
  async delete(key: StoredKey): Promise<StoredResult> {
    const obj = await this.get(key);
    this.objects.delete(key.name);
    return obj;
  }
}

const key = (name: string): StoredKey => ({ group: 'example.com', resource: 'things', namespace: '', name });

describe('storage of a kind with several versions', () => {
  const defs = thingDefs();
  const v1 = defs['v1'] as ResourceDefinition;
  const v2 = defs['v2'] as ResourceDefinition;

  it('says which version stores and warns about the deprecated one', () => {
    expect(v2.storageVersioning?.storageVersion).toBe('v1');
    expect(v2.deprecationWarning).toBe('example.com/v2 Thing is deprecated');
    expect(v1.deprecationWarning).toBeUndefined();
  });

  it('writes in the storage version, pruned to its schema, and answers in the version written through', async () => {
    const storage = new MemoryStorage();
    const created = await storageFor(storage, v2).create(key('t1'), { apiVersion: 'example.com/v2', kind: 'Thing', metadata: { name: 't1' }, spec: { size: 1, shape: 'square' } });
    // v1 does not know v2's shape: it is not stored (a lossless conversion would keep it in an annotation).
    expect(storage.objects.get('t1')).toEqual({ apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name: 't1', resourceVersion: '2' }, spec: { size: 1 } });
    expect(created.object.apiVersion).toBe('example.com/v2');
  });

  it('reads through every version: converted, with the stored and the served version defaults, pruned to the served schema', async () => {
    const storage = new MemoryStorage();
    storage.objects.set('t1', { apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name: 't1' }, spec: { size: 1 } });
    expect((await storageFor(storage, v1).get(key('t1'))).object).toEqual({ apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name: 't1' }, spec: { size: 1, color: 'red' } });
    expect((await storageFor(storage, v2).get(key('t1'))).object).toEqual({ apiVersion: 'example.com/v2', kind: 'Thing', metadata: { name: 't1' }, spec: { size: 1, shape: 'round' } });
    const page = await storageFor(storage, v2).list({ group: 'example.com', resource: 'things', namespace: '' });
    expect(page.items.map((o) => [o.apiVersion, (o['spec'] as Record<string, unknown>)['shape']])).toEqual([['example.com/v2', 'round']]);
    // Reading never writes: the stored object is as it was.
    expect(storage.objects.get('t1')).toEqual({ apiVersion: 'example.com/v1', kind: 'Thing', metadata: { name: 't1' }, spec: { size: 1 } });
  });

  it('leaves kinds stored as served alone', () => {
    const storage = new MemoryStorage();
    const builtin = { ...v1, storageVersioning: undefined } as ResourceDefinition;
    expect(storageFor(storage, builtin)).toBe(storage);
  });
});
