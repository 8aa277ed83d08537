import { watch } from '@svc/proto';
import { createLogger } from '@svc/service-kit';
import type { ChangeListener, ChangeSubscriber, WatchFanoutClient } from '@svc/watch-fanout/client';
import { WatchHub, type HubWatcher, type ServedResource } from './watch-hub';

const hub = (): WatchHub => new WatchHub({} as WatchFanoutClient, createLogger('test', { write: () => undefined }));

function watcher(resource?: ServedResource, internal = false): HubWatcher & { ended: number } {
  const w = {
    prefix: '/registry/',
    ended: 0,
    deliver: () => undefined,
    expire: () => undefined,
    end: () => {
      w.ended++;
    },
    ...(resource ? { resource } : {}),
    ...(internal ? { internal } : {}),
  };
  return w;
}

const widgetsV1 = { group: 'example.com', version: 'v1', plural: 'widgets' };

describe('the watch hub', () => {
  it('counts client watches only: the gateway’s own watch of definitions is not limited', () => {
    const h = hub();
    h.register(watcher(undefined, true));
    const client = h.register(watcher(widgetsV1));
    expect(h.watcherCount).toBe(1);
    client.detach();
    client.detach();
    expect(h.watcherCount).toBe(0);
  });

  it('ends, once and cleanly, the watches of a resource that is no longer served, and no others', () => {
    const h = hub();
    const gone = [watcher(widgetsV1), watcher(widgetsV1)];
    const otherVersion = watcher({ ...widgetsV1, version: 'v2' });
    const internal = watcher(undefined, true);
    for (const w of [...gone, otherVersion, internal]) h.register(w);
    expect(h.endWatchesOf(widgetsV1)).toBe(2);
    expect(gone.map((w) => w.ended)).toEqual([1, 1]);
    expect([otherVersion.ended, internal.ended, h.watcherCount]).toEqual([0, 0, 1]);
    expect(h.endWatchesOf(widgetsV1)).toBe(0);
  });
});

describe('the watch hub when continuity is lost', () => {
  const PROGRESS = watch.EventType.EVENT_TYPE_PROGRESS;
  const event = (e: Partial<watch.ChangeEvent>): watch.ChangeEvent => ({ type: PROGRESS, key: '', revision: 0, prevRevision: 0, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: false, ...e });

  /** A hub following a fake bus from revision 10; `publish` hands it an event, `settled` waits until it has taken it. */
  async function following(fanout: Partial<WatchFanoutClient> = {}): Promise<{ h: WatchHub; publish: (e: watch.ChangeEvent) => void }> {
    let listener: ChangeListener = () => undefined;
    const h = new WatchHub({ head: () => Promise.resolve({ revision: 10, oldestRevision: 0 }), ...fanout } as WatchFanoutClient, createLogger('test', { write: () => undefined }));
    await h.attach({ listen: (l: ChangeListener) => (listener = l) } as unknown as ChangeSubscriber);
    return { h, publish: (e) => listener(e) };
  }

  /** A watcher that registers again when it is expired, as the watch cache and the definitions' watch do. */
  function rejoining(h: WatchHub): HubWatcher & { expired: number; delivered: number[] } {
    const w: HubWatcher & { expired: number; delivered: number[] } = {
      prefix: '/registry/',
      internal: true,
      expired: 0,
      delivered: [],
      deliver: (c) => w.delivered.push(c.revision),
      expire: () => {
        w.expired++;
        h.register(w);
      },
      end: () => undefined,
    };
    h.register(w);
    return w;
  }

  const settled = (h: WatchHub, revision: number): Promise<boolean> => h.waitFor(revision, 1000);

  it('keeps a watcher that registers again while the hub expires every watch (a new history)', async () => {
    const { h, publish } = await following();
    const w = rejoining(h);
    publish(event({ revision: 20, prevRevision: 0 }));
    expect(await settled(h, 20)).toBe(true);
    publish(event({ type: watch.EventType.EVENT_TYPE_ADDED, key: '/registry/configmaps/ns/a', revision: 21, prevRevision: 20, object: Buffer.from('{"metadata":{"name":"a","namespace":"ns","resourceVersion":"21"}}') }));
    expect(await settled(h, 21)).toBe(true);
    expect([w.expired, w.delivered]).toEqual([1, [21]]);
  });

  it('keeps a watcher that registers again while the hub expires the watches of one key (a large change it could not fetch)', async () => {
    const { h, publish } = await following({
      catchUp: async function* () {
        throw new Error('history unavailable');
      },
    });
    const w = rejoining(h);
    publish(event({ type: watch.EventType.EVENT_TYPE_ADDED, key: '/registry/configmaps/ns/big', revision: 11, prevRevision: 10, truncated: true }));
    expect(await settled(h, 11)).toBe(true);
    publish(event({ type: watch.EventType.EVENT_TYPE_ADDED, key: '/registry/configmaps/ns/a', revision: 12, prevRevision: 11, object: Buffer.from('{"metadata":{"name":"a","namespace":"ns","resourceVersion":"12"}}') }));
    expect(await settled(h, 12)).toBe(true);
    expect([w.expired, w.delivered]).toEqual([1, [12]]);
  });
});
