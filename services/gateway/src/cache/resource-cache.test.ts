import { decodeContinue, parseFieldSelector, parseLabelSelector, type ApiObject } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { createLogger } from '@svc/service-kit';
import type { EncodedListPage, ListRequestOptions, StorageClient } from '@svc/storage/client';
import type { ChangeSubscriber, WatchFanoutClient } from '@svc/watch-fanout/client';
import { WatchHub } from '../watch/watch-hub';
import { CachedStorage } from './cached-storage';
import { ResourceCache } from './resource-cache';

/**
 * The watch cache against a real hub fed by hand (the bus and watch-fanout
 * replaced by a listener and a head), with a list source that answers what
 * the test says storage holds.
 */
const log = createLogger('test', { write: () => undefined });
const PREFIX = '/registry/configmaps/';
const everything = { labels: parseLabelSelector(''), fields: parseFieldSelector('') };

function cm(ns: string, name: string, rv: number, data: Record<string, string> = {}, labels?: Record<string, string>): ApiObject {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, resourceVersion: String(rv), ...(labels ? { labels } : {}) }, data };
}

const bytes = (o: ApiObject | undefined): Buffer => (o ? Buffer.from(JSON.stringify(o)) : Buffer.alloc(0));

class Bus {
  head = 0;
  private listener: ((e: watch.ChangeEvent) => void) | undefined;
  readonly hub = new WatchHub({ head: async () => ({ revision: this.head }) } as unknown as WatchFanoutClient, log);

  async attach(): Promise<void> {
    await this.hub.attach({ listen: (l: (e: watch.ChangeEvent) => void) => (this.listener = l) } as unknown as ChangeSubscriber);
  }

  /** A publisher's marker of a new history: continuity is lost. */
  restartHistory(revision: number): void {
    this.listener?.({ type: watch.EventType.EVENT_TYPE_PROGRESS, key: '', revision, prevRevision: 0, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: false });
    this.head = revision;
  }

  /** Publishes a change of `obj` (its resourceVersion is the change's revision). */
  change(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: ApiObject, prev?: ApiObject): void {
    const revision = Number(obj.metadata?.resourceVersion);
    const t = { ADDED: watch.EventType.EVENT_TYPE_ADDED, MODIFIED: watch.EventType.EVENT_TYPE_MODIFIED, DELETED: watch.EventType.EVENT_TYPE_DELETED }[type];
    const key = `${PREFIX}${obj.metadata?.namespace}/${obj.metadata?.name}`;
    this.listener?.({ type: t, key, revision, prevRevision: this.head, object: bytes(obj), prevObject: bytes(prev), truncated: false });
    this.head = revision;
  }
}

async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}

function source(objects: ApiObject[], revision: number, calls: ListRequestOptions[] = []) {
  return async (_key: unknown, options: ListRequestOptions): Promise<EncodedListPage> => {
    calls.push(options);
    return { items: objects.map((o) => bytes(o)), revision, continueToken: '' };
  };
}

const names = (objs: readonly { object: ApiObject }[]): string[] => objs.map((o) => `${o.object.metadata?.namespace}/${o.object.metadata?.name}@${o.object.metadata?.resourceVersion}`);

async function readyCache(bus: Bus, objects: ApiObject[], revision: number, windowChanges = 100): Promise<ResourceCache> {
  bus.head = revision;
  await bus.attach();
  const cache = new ResourceCache({ group: '', resource: 'configmaps' }, bus.hub, source(objects, revision), log, { windowChanges, loadBatch: 1000, joinedJsonBytes: 1 << 20 });
  cache.start();
  await settle();
  expect(cache.state).toBe('ready');
  return cache;
}

describe('the watch cache of a resource', () => {
  it('is filled by a list and kept current from the stream, in storage’s key order', async () => {
    const bus = new Bus();
    const cache = await readyCache(bus, [cm('b', 'x', 5), cm('a', 'y', 7)], 10);
    bus.change('ADDED', cm('a', 'a', 11));
    bus.change('MODIFIED', cm('b', 'x', 12, { k: 'v' }), cm('b', 'x', 5));
    bus.change('DELETED', cm('a', 'y', 13), cm('a', 'y', 7));
    await settle();
    const page = cache.page(PREFIX, cache.revision, '', 0, everything.labels, everything.fields);
    expect(names(page?.objects ?? [])).toEqual(['a/a@11', 'b/x@12']);
    expect(cache.revision).toBe(13);
    expect(cache.page(`${PREFIX}b/`, cache.revision, '', 0, everything.labels, everything.fields)?.objects.length).toBe(1);
  });

  it('applies what arrived while it was listing, and only what the list did not already hold', async () => {
    const bus = new Bus();
    bus.head = 10;
    await bus.attach();
    let release: () => void = () => undefined;
    const gate = new Promise<void>((r) => (release = r));
    const cache = new ResourceCache(
      { group: '', resource: 'configmaps' },
      bus.hub,
      async () => {
        await gate;
        // Storage was read at 11: it holds the change at 11 but not the one at 12.
        return { items: [bytes(cm('a', 'x', 11))], revision: 11, continueToken: '' };
      },
      log,
      { windowChanges: 100, loadBatch: 1000, joinedJsonBytes: 1 << 20 },
    );
    cache.start();
    bus.change('ADDED', cm('a', 'x', 11));
    bus.change('MODIFIED', cm('a', 'x', 12, { k: '2' }), cm('a', 'x', 11));
    await settle();
    expect(cache.state).toBe('loading');
    release();
    await settle();
    expect(names(cache.page(PREFIX, cache.revision, '', 0, everything.labels, everything.fields)?.objects ?? [])).toEqual(['a/x@12']);
    expect(cache.changesAfter(11, PREFIX)?.map((c) => c.revision)).toEqual([12]);
  });

  it('writes lists from joined runs that follow every change, and forgets the runs of deleted objects', async () => {
    const bus = new Bus();
    const stored = Array.from({ length: 600 }, (_, i) => cm('a', `n${String(i).padStart(4, '0')}`, i + 1));
    const cache = await readyCache(bus, stored, 600);
    const listed = (): string => {
      const page = cache.page(PREFIX, cache.revision, '', 0, everything.labels, everything.fields);
      return `[${[...cache.joined.fragments(page?.objects ?? [], page?.consecutive ?? false)].map((b) => b.toString()).join(',')}]`;
    };
    const current = new Map(stored.map((o) => [o.metadata?.name ?? '', o]));
    const expected = (): string => JSON.stringify([...current.keys()].sort().map((k) => current.get(k)));
    expect(listed()).toBe(expected());
    expect(cache.joined.size).toBeGreaterThan(0);
    const runs = cache.joined.size;
    const changed = cm('a', 'n0300', 601, { k: 'changed' });
    bus.change('MODIFIED', changed, stored[300]);
    bus.change('ADDED', cm('a', 'n0300x', 602));
    current.set('n0300', changed);
    current.set('n0300x', cm('a', 'n0300x', 602));
    // Every object deleted: its run goes with it.
    for (let i = 0; i < 600; i++) {
      if (i === 300) continue;
      bus.change('DELETED', cm('a', `n${String(i).padStart(4, '0')}`, 603 + i), stored[i]);
      current.delete(`n${String(i).padStart(4, '0')}`);
      if (i === 100) {
        await settle();
        expect(listed()).toBe(expected());
      }
    }
    await settle();
    expect(listed()).toBe(expected());
    expect(runs).toBeGreaterThan(1);
    expect(cache.joined.size).toBeLessThanOrEqual(1);
  });

  it('pages from one snapshot: later pages show the collection as the first page saw it', async () => {
    const bus = new Bus();
    const cache = await readyCache(bus, [cm('a', '1', 2), cm('a', '2', 3), cm('a', '3', 4), cm('a', '4', 5)], 5);
    const first = cache.page(PREFIX, cache.revision, '', 2, everything.labels, everything.fields);
    expect(names(first?.objects ?? [])).toEqual(['a/1@2', 'a/2@3']);
    expect(first?.remainingItemCount).toBe(2);
    const token = decodeContinue(first?.continueToken ?? '');
    expect(token?.rv).toBe(5);
    // After the first page: 3 changes, 4 goes, 5 comes.
    bus.change('MODIFIED', cm('a', '3', 6, { k: 'v' }), cm('a', '3', 4));
    bus.change('DELETED', cm('a', '4', 7), cm('a', '4', 5));
    bus.change('ADDED', cm('a', '5', 8));
    await settle();
    const second = cache.page(PREFIX, token?.rv ?? 0, token?.start ?? '', 2, everything.labels, everything.fields);
    expect(names(second?.objects ?? [])).toEqual(['a/3@4', 'a/4@5']);
    expect(second?.continueToken).toBe('');
    // The current state is the newer one.
    expect(names(cache.page(PREFIX, cache.revision, '', 0, everything.labels, everything.fields)?.objects ?? [])).toEqual(['a/1@2', 'a/2@3', 'a/3@6', 'a/5@8']);
  });

  it('cannot show a revision its window no longer reaches, nor a future one', async () => {
    const bus = new Bus();
    const cache = await readyCache(bus, [cm('a', '1', 2)], 2, 2);
    for (let rv = 3; rv <= 8; rv++) bus.change('MODIFIED', cm('a', '1', rv), cm('a', '1', rv - 1));
    await settle();
    expect(cache.page(PREFIX, 2, '', 0, everything.labels, everything.fields)).toBeUndefined();
    expect(cache.changesAfter(2, PREFIX)).toBeUndefined();
    expect(cache.page(PREFIX, 9, '', 0, everything.labels, everything.fields)).toBeUndefined();
    expect(names(cache.page(PREFIX, 7, '', 0, everything.labels, everything.fields)?.objects ?? [])).toEqual(['a/1@7']);
  });

  it('selects by label and field as storage does, and counts remaining items only without selectors', async () => {
    const bus = new Bus();
    const cache = await readyCache(bus, [cm('a', '1', 2, {}, { app: 'x' }), cm('a', '2', 3, {}, { app: 'y' }), cm('b', '3', 4, {}, { app: 'x' })], 4);
    const page = cache.page(PREFIX, 4, '', 1, parseLabelSelector('app=x'), parseFieldSelector(''));
    expect(names(page?.objects ?? [])).toEqual(['a/1@2']);
    expect(page?.remainingItemCount).toBeUndefined();
    expect(page?.continueToken).not.toBe('');
    const byNamespace = cache.page(PREFIX, 4, '', 0, parseLabelSelector(''), parseFieldSelector('metadata.namespace=b'));
    expect(names(byNamespace?.objects ?? [])).toEqual(['b/3@4']);
  });

  it('fills itself again when the stream loses continuity', async () => {
    const bus = new Bus();
    bus.head = 5;
    await bus.attach();
    let stored = [cm('a', '1', 5)];
    let revision = 5;
    const cache = new ResourceCache({ group: '', resource: 'configmaps' }, bus.hub, async () => ({ items: stored.map((o) => bytes(o)), revision, continueToken: '' }), log, { windowChanges: 100, loadBatch: 1000, joinedJsonBytes: 1 << 20 });
    cache.start();
    await settle();
    stored = [cm('a', '2', 9)];
    revision = 9;
    // A new history on the bus: the hub ends every watch, the cache's included.
    bus.restartHistory(9);
    await settle();
    expect(cache.state).toBe('ready');
    expect(names(cache.page(PREFIX, cache.revision, '', 0, everything.labels, everything.fields)?.objects ?? [])).toEqual(['a/2@9']);
    // It follows the stream again after the reset.
    bus.change('ADDED', cm('a', '3', 10));
    await settle();
    expect(names(cache.page(PREFIX, cache.revision, '', 0, everything.labels, everything.fields)?.objects ?? [])).toEqual(['a/2@9', 'a/3@10']);
  });
});

describe('storage behind the watch cache', () => {
  function storageWith(objects: ApiObject[], revision: number) {
    const calls: string[] = [];
    const client = {
      listEncoded: async (_k: unknown, o: ListRequestOptions) => {
        calls.push(`fill${o.continueToken ? ' continue' : ''}`);
        return { items: objects.map((x) => bytes(x)), revision, continueToken: '' };
      },
      list: async (_k: unknown, o: ListRequestOptions) => {
        calls.push(`list ${JSON.stringify(o.at ?? {})}`);
        return { items: objects, revision, continueToken: '' };
      },
      get: async () => {
        calls.push('get');
        return { object: objects[0], revision };
      },
      currentRevision: async () => {
        calls.push('currentRevision');
        return revision;
      },
    };
    return { client: client as unknown as StorageClient, calls, setRevision: (r: number) => (revision = r) };
  }

  /** Storage holding one ConfigMap at revision 3, behind a cache that a first read has filled. */
  async function filled(consistentReadWaitMs: number, name = '') {
    const bus = new Bus();
    bus.head = 3;
    await bus.attach();
    const s = storageWith([cm('a', '1', 3)], 3);
    const cached = new CachedStorage(s.client, bus.hub, log, { windowChanges: 100, loadBatch: 1000, joinedJsonBytes: 1 << 20, consistentReadWaitMs, staleStreamMs: 60_000 });
    const key = { group: '', resource: 'configmaps', namespace: 'a', name };
    // The first read starts the cache; storage answers it.
    await cached.list(key, { at: { any: true } });
    await settle();
    return { bus, s, cached, key };
  }

  it('answers resourceVersion=0 from memory, a consistent list once the cache reached storage’s revision, an exact one from storage', async () => {
    const { bus, s, cached, key } = await filled(1000);
    expect(s.calls.sort()).toEqual(['fill', 'list {"any":true}']);
    s.calls.length = 0;

    const any = await cached.list(key, { at: { any: true } });
    expect(any.items.map((o) => o.metadata?.name)).toEqual(['1']);
    expect(s.calls).toEqual([]);

    // A write storage has made, not yet seen by the cache: the consistent list waits for it.
    s.setRevision(4);
    const consistent = cached.list(key, {});
    await settle();
    bus.change('ADDED', cm('a', '2', 4));
    const page = await consistent;
    expect(page.items.map((o) => o.metadata?.name)).toEqual(['1', '2']);
    expect(page.revision).toBe(4);
    expect(s.calls).toEqual(['currentRevision']);

    s.calls.length = 0;
    await cached.list(key, { at: { revision: 3 } });
    expect(s.calls).toEqual(['list {"revision":3}']);
    cached.stop();
  });

  it('falls back to storage when the cache cannot catch up in time, never answering a consistent read from behind', async () => {
    const { s, cached, key } = await filled(20);
    s.calls.length = 0;
    s.setRevision(50);
    await cached.list(key, {});
    expect(s.calls).toEqual(['currentRevision', 'list {}']);
    cached.stop();
  });

  it('reads an object from memory at resourceVersion=0 (404 when it is not there) and a consistent get from storage', async () => {
    const { s, cached, key } = await filled(20, '1');
    s.calls.length = 0;
    const hit = await cached.get(key, { any: true });
    expect(hit.json?.toString()).toBe(JSON.stringify(cm('a', '1', 3)));
    expect(hit.object.metadata?.name).toBe('1');
    await expect(cached.get({ ...key, name: 'missing' }, { any: true })).rejects.toMatchObject({ code: 404 });
    expect(s.calls).toEqual([]);
    await cached.get(key, {});
    expect(s.calls).toEqual(['get']);
    cached.stop();
  });
});
