import { ApiError, type ApiObject } from '@svc/apimachinery';
import type { StorageClient } from '@svc/storage/client';
import { storageNamespaces } from './server';

/** Storage that answers each get when told to, with the namespace as it is then. */
function storage(): { client: StorageClient; gets: () => number; answer: () => void; state: Map<string, ApiObject> } {
  const state = new Map<string, ApiObject>();
  const waiting: Array<() => void> = [];
  let gets = 0;
  const client = {
    get: async (key: { name: string }) => {
      gets++;
      await new Promise<void>((resolve) => waiting.push(resolve));
      const ns = state.get(key.name);
      if (!ns) throw ApiError.notFound({ group: '', resource: 'namespaces' }, key.name);
      return { object: structuredClone(ns), revision: 1 };
    },
  } as unknown as StorageClient;
  return {
    client,
    gets: () => gets,
    answer: () => {
      for (const resolve of waiting.splice(0)) resolve();
    },
    state,
  };
}

const active = (name: string): ApiObject => ({ metadata: { name }, status: { phase: 'Active' } });
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('storageNamespaces', () => {
  it('reads a namespace once for the lookups that arrive while it is read, and then remembers it', async () => {
    const s = storage();
    s.state.set('a', active('a'));
    const reader = storageNamespaces(s.client, 60000);
    const lookups = [reader.getNamespace('a'), reader.getNamespace('a'), reader.getNamespace('a')];
    s.answer();
    expect((await Promise.all(lookups)).map((ns) => ns?.metadata?.name)).toEqual(['a', 'a', 'a']);
    expect(s.gets()).toBe(1);
    await reader.getNamespace('a');
    expect(s.gets()).toBe(1);
  });

  it('reads again for a lookup that joined a read answering missing or terminating', async () => {
    const s = storage();
    const reader = storageNamespaces(s.client, 60000);
    const first = reader.getNamespace('late');
    const joined = reader.getNamespace('late');
    // Created between the first read and the joined lookup's own read.
    s.answer();
    await expect(first).resolves.toBeUndefined();
    s.state.set('late', active('late'));
    await settle();
    s.answer();
    await expect(joined).resolves.toMatchObject({ metadata: { name: 'late' } });
    expect(s.gets()).toBe(2);
  });

  it('shares nothing without a cache', async () => {
    const s = storage();
    s.state.set('a', active('a'));
    const reader = storageNamespaces(s.client, 0);
    const lookups = [reader.getNamespace('a'), reader.getNamespace('a')];
    s.answer();
    await Promise.all(lookups);
    expect(s.gets()).toBe(2);
  });
});
