import { ApiError, type ApiObject } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import type { ApiClient, WatchEvent } from './client';
import { GarbageCollector } from './garbage-collector';
import { SharedInformerFactory } from './informer';

/**
 * The collector against an in-memory API of ConfigMaps in one namespace
 * (every other collection is empty): a delete honours the propagation
 * policy and preconditions as the store does, and every change is streamed
 * to the watches of `/api/v1/configmaps`.
 */
const quiet = createLogger('test', { write: () => undefined });
const COLLECTION = '/api/v1/configmaps';
const BASE = '/api/v1/namespaces/team/configmaps/';

class FakeApi {
  readonly objects = new Map<string, ApiObject>();
  readonly calls: string[] = [];
  /** The preconditions each delete carried. */
  readonly preconditions = new Map<string, unknown>();
  private readonly watchers = new Set<(e: WatchEvent) => void>();
  private rv = 10;

  put(name: string, owners: Array<{ uid: string; block?: boolean }> = []): ApiObject {
    const obj: ApiObject = {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name, namespace: 'team', uid: `uid-${name}`, resourceVersion: String(++this.rv), ownerReferences: owners.map((o) => ({ apiVersion: 'v1', kind: 'ConfigMap', name: o.uid.replace('uid-', ''), uid: o.uid, ...(o.block ? { blockOwnerDeletion: true } : {}) })) },
    };
    this.write(name, obj, 'ADDED');
    return obj;
  }

  private write(name: string, obj: ApiObject, type: string): void {
    this.objects.set(name, obj);
    for (const w of this.watchers) w({ type, object: structuredClone(obj) });
  }

  private remove(name: string): void {
    const obj = this.objects.get(name) as ApiObject;
    this.objects.delete(name);
    for (const w of this.watchers) w({ type: 'DELETED', object: obj });
  }

  async request<T = ApiObject>(method: string, path: string, body?: unknown): Promise<T> {
    const bare = path.split('?')[0] as string;
    if (!bare.startsWith(BASE)) {
      if (method !== 'GET' || bare.includes('/namespaces/')) throw ApiError.notFound({ group: '', resource: 'x' }, bare);
      const items = bare === COLLECTION ? [...this.objects.values()] : [];
      return { metadata: { resourceVersion: String(this.rv) }, items } as T;
    }
    const name = bare.slice(BASE.length);
    this.calls.push(`${method} ${name}`);
    const current = this.objects.get(name);
    if (!current) throw ApiError.notFound({ group: '', resource: 'configmaps' }, name);
    if (method === 'GET') return structuredClone(current) as T;
    if (method === 'PUT') {
      const next = structuredClone(body) as ApiObject;
      next.metadata = { ...next.metadata, resourceVersion: String(++this.rv) };
      if (next.metadata.deletionTimestamp && (next.metadata.finalizers ?? []).length === 0) this.remove(name);
      else this.write(name, next, 'MODIFIED');
      return next as T;
    }
    const options = body as { propagationPolicy?: string; preconditions?: { uid?: string; resourceVersion?: string } };
    const pre = options.preconditions ?? {};
    this.preconditions.set(name, pre);
    if ((pre.uid && pre.uid !== current.metadata?.uid) || (pre.resourceVersion && pre.resourceVersion !== current.metadata?.resourceVersion)) {
      throw ApiError.conflict({ group: '', resource: 'configmaps' }, name, 'Precondition failed');
    }
    const finalizer = { Foreground: 'foregroundDeletion', Orphan: 'orphan' }[options.propagationPolicy ?? ''];
    if (!finalizer) {
      this.remove(name);
      return current as T;
    }
    const marked = { ...current, metadata: { ...current.metadata, finalizers: [finalizer], deletionTimestamp: '2026-01-01T00:00:00Z', resourceVersion: String(++this.rv) } };
    this.write(name, marked, 'MODIFIED');
    return marked as T;
  }

  watch(path: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    if (path.split('?')[0] === COLLECTION) this.watchers.add(onEvent);
    return new Promise((resolve) => signal.addEventListener('abort', () => (this.watchers.delete(onEvent), resolve()), { once: true }));
  }
}

async function until(probe: () => boolean, ms = 5000): Promise<void> {
  for (const deadline = Date.now() + ms; !probe(); await new Promise((r) => setTimeout(r, 10))) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
  }
}

describe('the garbage collector', () => {
  let api: FakeApi;
  let factory: SharedInformerFactory;
  let gc: GarbageCollector;

  beforeEach(async () => {
    api = new FakeApi();
    factory = new SharedInformerFactory(api, quiet, { resyncMs: 60_000 });
    gc = new GarbageCollector(api as unknown as ApiClient, factory, quiet, { workers: 4 });
    gc.start();
    factory.start();
    await until(() => gc.synced);
  });

  afterEach(async () => {
    await gc.stop();
    await factory.stop();
  });

  test('follows the served kinds, events excepted', () => {
    const kinds = gc.kinds.map((k) => `${k.group}/${k.plural}`);
    expect(kinds).toEqual(expect.arrayContaining(['/configmaps', '/secrets', '/namespaces', 'rbac.authorization.svc.io/clusterroles']));
    expect(kinds).not.toContain('/events');
  });

  test('a dependent whose owner is gone is deleted, conditionally on the version seen; one with a live owner loses only the dangling reference', async () => {
    api.put('owner');
    const orphan = api.put('alone', [{ uid: 'uid-missing' }]);
    api.put('both', [{ uid: 'uid-missing' }, { uid: 'uid-owner' }]);
    await until(() => !api.objects.has('alone') && api.objects.get('both')?.metadata?.ownerReferences?.length === 1);
    expect(api.objects.get('both')?.metadata?.ownerReferences?.map((r) => r.uid)).toEqual(['uid-owner']);
    expect(api.calls).toContain('DELETE alone');
    expect(api.preconditions.get('alone')).toEqual({ uid: 'uid-alone', resourceVersion: orphan.metadata?.resourceVersion });
    expect(api.objects.has('owner')).toBe(true);
  });

  test('deleting the owner in the background collects its dependents', async () => {
    api.put('owner');
    api.put('dep-1', [{ uid: 'uid-owner' }]);
    api.put('dep-2', [{ uid: 'uid-owner' }]);
    await until(() => gc.graph.size >= 3);
    await api.request('DELETE', `${BASE}owner`, {});
    await until(() => api.objects.size === 0);
  });

  test('foreground: the blocking dependent is deleted, then the owner loses its finalizer and goes', async () => {
    api.put('owner');
    api.put('blocker', [{ uid: 'uid-owner', block: true }]);
    await until(() => gc.graph.size >= 2);
    await api.request('DELETE', `${BASE}owner`, { propagationPolicy: 'Foreground' });
    await until(() => api.objects.size === 0);
    expect(api.calls.indexOf('DELETE blocker')).toBeLessThan(api.calls.lastIndexOf('PUT owner'));
  });

  test('orphan: the dependents lose their reference, then the owner goes', async () => {
    api.put('owner');
    api.put('kept', [{ uid: 'uid-owner' }]);
    await until(() => gc.graph.size >= 2);
    await api.request('DELETE', `${BASE}owner`, { propagationPolicy: 'Orphan' });
    await until(() => !api.objects.has('owner'));
    expect(api.objects.get('kept')?.metadata?.ownerReferences).toEqual([]);
  });

  test('an owner of a kind the server does not serve deletes nothing', async () => {
    const obj = api.put('strange');
    obj.metadata = { ...obj.metadata, ownerReferences: [{ apiVersion: 'nowhere.io/v1', kind: 'Ghost', name: 'g', uid: 'uid-g' }] };
    await api.request('PUT', `${BASE}strange`, obj);
    await until(() => gc.graph.get('uid-strange')?.owners.length === 1);
    await new Promise((r) => setTimeout(r, 200));
    expect(api.objects.has('strange')).toBe(true);
    expect(api.calls.filter((c) => c.startsWith('DELETE'))).toEqual([]);
  });
});
