import { ApiError, type ApiObject } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { createLogger } from '@svc/service-kit';
import type { StorageClient } from '@svc/storage/client';
import type { WatchFanoutClient } from './client';
import { ObjectFeed, feedPrefixes, type FeedSink, type FeedSource } from './object-feed';

/**
 * The one feed RBAC's policy, the Node mode's graph and admission's
 * configurations are kept by, against
 * a storage and a watch-fanout in memory: a list at one revision, changes
 * under every prefix of its kinds, a relist after 410 or a change without
 * its object.
 */

const SOURCES: FeedSource[] = [
  { group: '', resource: 'pods', kind: 'Pod' },
  { group: 'rbac.authorization.svc.io', resource: 'roles', kind: 'Role' },
  { group: 'rbac.authorization.svc.io', resource: 'clusterroles', kind: 'ClusterRole' },
];

class RecordingSink implements FeedSink {
  readonly objects = new Map<string, string>();
  clears = 0;
  clear(): void {
    this.clears++;
    this.objects.clear();
  }
  apply(kind: string, obj: ApiObject, deleted = false): void {
    const key = `${kind}:${obj.metadata?.namespace ?? ''}/${obj.metadata?.name ?? ''}`;
    if (deleted) this.objects.delete(key);
    else this.objects.set(key, String(obj['v'] ?? ''));
  }
  get size(): Record<string, number> {
    return { objects: this.objects.size };
  }
}

interface Change {
  key: string;
  revision: number;
  type: watch.EventType;
  object?: Record<string, unknown>;
  truncated?: boolean;
}

/** Storage and watch-fanout in memory: stored objects by resource, and the change history. */
function peers(stored: Record<string, ApiObject[]>, revision: { value: number }, history: Change[], failures: { gone: number }) {
  const listed: string[] = [];
  const storage = {
    currentRevision: async () => revision.value,
    list: async (key: { group: string; resource: string }) => {
      listed.push(`${key.group}/${key.resource}`);
      return { items: stored[key.resource] ?? [], revision: revision.value, continueToken: '' };
    },
  } as unknown as StorageClient;
  const asked: string[] = [];
  const fanout = {
    head: async () => ({ revision: revision.value, oldestRevision: 1 }),
    async *catchUp(after: number, _until: number, prefix: string): AsyncGenerator<watch.ChangeEvent> {
      asked.push(prefix);
      if (failures.gone > 0) {
        failures.gone--;
        throw ApiError.gone('too old resource version');
      }
      for (const c of history.filter((h) => h.revision > after && h.key.startsWith(prefix))) {
        yield { type: c.type, key: c.key, revision: c.revision, prevRevision: 0, object: Buffer.from(c.object ? JSON.stringify(c.object) : ''), prevObject: Buffer.alloc(0), truncated: c.truncated ?? false };
      }
      yield { type: watch.EventType.EVENT_TYPE_PROGRESS, key: '', revision: revision.value, prevRevision: 0, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: false };
    },
  } as unknown as WatchFanoutClient;
  return { storage, fanout, listed, asked };
}

const log = createLogger('feed-test', { level: 'error' });
const pod = (name: string, v: string) => ({ metadata: { name, namespace: 'ns' }, v });

describe('the object feed', () => {
  test('the prefixes of its kinds: a named group once, a core resource alone', () => {
    expect(feedPrefixes(SOURCES)).toEqual(['/registry/pods/', '/registry/rbac.authorization.svc.io/']);
  });

  test('lists every kind at one revision, then applies changes under each prefix', async () => {
    const revision = { value: 10 };
    const history: Change[] = [];
    const p = peers({ pods: [pod('a', '1')], roles: [{ metadata: { name: 'r', namespace: 'ns' }, v: '1' }] }, revision, history, { gone: 0 });
    const sink = new RecordingSink();
    const feed = new ObjectFeed(sink, p.storage, p.fanout, { log, name: 'test state' }, SOURCES);
    await feed.step();
    expect(feed.ready).toBe(true);
    expect(p.listed).toEqual(['/pods', 'rbac.authorization.svc.io/roles', 'rbac.authorization.svc.io/clusterroles']);
    expect([...sink.objects]).toEqual([['Pod:ns/a', '1'], ['Role:ns/r', '1']]);

    history.push(
      { key: '/registry/pods/ns/a', revision: 11, type: watch.EventType.EVENT_TYPE_MODIFIED, object: pod('a', '2') },
      { key: '/registry/rbac.authorization.svc.io/clusterroles/c', revision: 12, type: watch.EventType.EVENT_TYPE_ADDED, object: { metadata: { name: 'c' }, v: '1' } },
      { key: '/registry/rbac.authorization.svc.io/roles/ns/r', revision: 13, type: watch.EventType.EVENT_TYPE_DELETED },
      // Not a kind of this feed.
      { key: '/registry/rbac.authorization.svc.io/rolebindings/ns/b', revision: 14, type: watch.EventType.EVENT_TYPE_ADDED, object: { metadata: { name: 'b' } } },
    );
    revision.value = 14;
    await feed.step();
    expect(p.asked).toEqual(['/registry/pods/', '/registry/rbac.authorization.svc.io/']);
    expect([...sink.objects]).toEqual([['Pod:ns/a', '2'], ['ClusterRole:/c', '1']]);
    expect(feed.position).toBe(14);
    // Nothing new: watch-fanout is not asked for changes.
    await feed.step();
    expect(p.asked).toHaveLength(2);
  });

  test('lists again when the history no longer reaches back (410)', async () => {
    const revision = { value: 5 };
    const stored: Record<string, ApiObject[]> = { pods: [pod('a', '1')] };
    const failures = { gone: 0 };
    const p = peers(stored, revision, [], failures);
    const sink = new RecordingSink();
    const feed = new ObjectFeed(sink, p.storage, p.fanout, { log, name: 'test state' }, SOURCES);
    await feed.step();
    stored['pods'] = [pod('b', '1')];
    revision.value = 50;
    failures.gone = 1;
    await feed.step();
    expect(sink.clears).toBe(2);
    expect([...sink.objects.keys()]).toEqual(['Pod:ns/b']);
    expect(feed.position).toBe(50);
  });

  test('a change that came without its object makes the next round list again', async () => {
    const revision = { value: 5 };
    const stored: Record<string, ApiObject[]> = { pods: [] };
    const history: Change[] = [{ key: '/registry/pods/ns/big', revision: 6, type: watch.EventType.EVENT_TYPE_ADDED, truncated: true }];
    const p = peers(stored, revision, history, { gone: 0 });
    const sink = new RecordingSink();
    const feed = new ObjectFeed(sink, p.storage, p.fanout, { log, name: 'test state' }, SOURCES);
    await feed.step();
    revision.value = 6;
    stored['pods'] = [pod('big', 'x')];
    await feed.step();
    expect(feed.ready).toBe(false);
    await feed.step();
    expect(feed.ready).toBe(true);
    expect([...sink.objects]).toEqual([['Pod:ns/big', 'x']]);
  });
});
