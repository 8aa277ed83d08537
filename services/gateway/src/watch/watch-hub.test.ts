import { createLogger } from '@svc/service-kit';
import type { WatchFanoutClient } from '@svc/watch-fanout/client';
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
