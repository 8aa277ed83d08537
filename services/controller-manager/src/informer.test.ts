import { ApiError, type ApiObject } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import type { WatchEvent } from './client';
import { FakeClock, settle } from './testing/fake-clock';
import { objectKey, SharedInformer, SharedInformerFactory, type InformerEventHandler, type ListResult, type ListWatchSource } from './informer';

const quiet = createLogger('test', { write: () => undefined });
const obj = (name: string, rv: string, namespace?: string): ApiObject => ({ metadata: { name, resourceVersion: rv, ...(namespace ? { namespace } : {}) } });

/** A list-watch the test drives: each list answers the next prepared result, each watch stays open until ended. */
class FakeSource implements ListWatchSource {
  lists: Array<ListResult | Error> = [];
  listCalls = 0;
  watches: string[] = [];
  private current: { onEvent: (e: WatchEvent) => void; end: (err?: Error) => void } | undefined;

  async list(): Promise<ListResult> {
    this.listCalls++;
    const next = this.lists.shift() ?? new Error('no list prepared');
    if (next instanceof Error) throw next;
    return next;
  }

  watch(resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    this.watches.push(resourceVersion);
    return new Promise((resolve, reject) => {
      const end = (err?: Error): void => {
        this.current = undefined;
        if (err) reject(err);
        else resolve();
      };
      this.current = { onEvent, end };
      signal.addEventListener('abort', () => end(), { once: true });
    });
  }

  get watching(): boolean {
    return this.current !== undefined;
  }

  emit(type: string, object: ApiObject): void {
    this.current?.onEvent({ type, object });
  }

  end(err?: Error): void {
    this.current?.end(err);
  }
}

function recorder(): { handler: InformerEventHandler; events: string[] } {
  const events: string[] = [];
  const name = (o: ApiObject): string => `${objectKey(o)}@${o.metadata?.resourceVersion ?? ''}`;
  return {
    events,
    handler: {
      onAdd: (o) => events.push(`add ${name(o)}`),
      onUpdate: (old, o) => events.push(`update ${name(old)} -> ${name(o)}`),
      onDelete: (o) => events.push(`delete ${name(o)}`),
    },
  };
}

describe('shared informer', () => {
  let clock: FakeClock;
  let source: FakeSource;
  let informer: SharedInformer;

  beforeEach(() => {
    clock = new FakeClock();
    source = new FakeSource();
    informer = new SharedInformer('things', source, quiet, { clock });
  });

  afterEach(async () => {
    await informer.stop();
  });

  test('lists, then watches from the list revision; the store follows events; hasSynced after the first list', async () => {
    const { handler, events } = recorder();
    informer.addEventHandler(handler);
    source.lists.push({ resourceVersion: '10', items: [obj('a', '5', 'ns1'), obj('b', '7')] });
    expect(informer.hasSynced()).toBe(false);
    informer.run();
    await settle();
    expect(informer.hasSynced()).toBe(true);
    expect(source.watches).toEqual(['10']);
    expect(informer.get('ns1/a')?.metadata?.resourceVersion).toBe('5');
    source.emit('ADDED', obj('c', '11'));
    source.emit('MODIFIED', obj('b', '12'));
    source.emit('BOOKMARK', obj('', '13'));
    source.emit('DELETED', obj('a', '14', 'ns1'));
    expect(events).toEqual(['add ns1/a@5', 'add b@7', 'add c@11', 'update b@7 -> b@12', 'delete ns1/a@14']);
    expect(informer.list().map(objectKey).sort()).toEqual(['b', 'c']);
  });

  test('a 410 ends the watch and lists again; the re-list updates what stayed, adds what is new, deletes what went', async () => {
    const { handler, events } = recorder();
    informer.addEventHandler(handler);
    source.lists.push({ resourceVersion: '10', items: [obj('a', '5'), obj('b', '7')] }, { resourceVersion: '20', items: [obj('b', '15'), obj('d', '18')] });
    informer.run();
    await settle();
    events.length = 0;
    await clock.advance(5000);
    source.emit('ERROR', { kind: 'Status', apiVersion: 'v1', status: 'Failure', code: 410, reason: 'Expired', message: 'too old resource version' } as unknown as ApiObject);
    await settle();
    expect(source.listCalls).toBe(2);
    expect(source.watches).toEqual(['10', '20']);
    expect(events).toEqual(['update b@7 -> b@15', 'add d@18', 'delete a@5']);
  });

  test('a 410 answer to the watch request lists again too', async () => {
    source.lists.push({ resourceVersion: '10', items: [] }, { resourceVersion: '30', items: [obj('x', '29')] });
    informer.run();
    await settle();
    await clock.advance(2000);
    source.end(new ApiError(410, 'Expired', 'too old resource version'));
    await settle();
    expect(source.watches).toEqual(['10', '30']);
    expect(informer.get('x')).toBeDefined();
  });

  test('failures are retried after a backoff that doubles; a closed watch that ran a while lists again at once', async () => {
    source.lists.push(new Error('refused'), new Error('refused'), { resourceVersion: '1', items: [] }, { resourceVersion: '2', items: [] });
    informer.run();
    await settle();
    expect(source.listCalls).toBe(1);
    await clock.advance(499);
    expect(source.listCalls).toBe(1);
    await clock.advance(1);
    expect(source.listCalls).toBe(2);
    await clock.advance(999);
    expect(source.listCalls).toBe(2);
    await clock.advance(1);
    expect(source.listCalls).toBe(3);
    expect(informer.hasSynced()).toBe(true);
    // The watch's timeout: it ran for a while, so the next list is immediate.
    await clock.advance(30_000);
    source.end();
    await settle();
    expect(source.listCalls).toBe(4);
    expect(source.watches).toEqual(['1', '2']);
  });

  test('a watch that ends at once counts as a failure (no busy loop)', async () => {
    source.lists.push({ resourceVersion: '1', items: [] }, { resourceVersion: '2', items: [] });
    informer.run();
    await settle();
    source.end();
    await settle();
    expect(source.listCalls).toBe(1);
    await clock.advance(500);
    expect(source.listCalls).toBe(2);
  });

  test('every handler gets every event; one added late is told what the store holds first; a failing one does not stop the others', async () => {
    const first = recorder();
    const second = recorder();
    informer.addEventHandler({ onAdd: () => { throw new Error('broken handler'); } });
    informer.addEventHandler(first.handler);
    source.lists.push({ resourceVersion: '3', items: [obj('a', '1')] });
    informer.run();
    await settle();
    informer.addEventHandler(second.handler);
    source.emit('ADDED', obj('b', '4'));
    expect(first.events).toEqual(['add a@1', 'add b@4']);
    expect(second.events).toEqual(['add a@1', 'add b@4']);
  });
});

describe('shared informer factory', () => {
  test('one informer per collection and query, shared by whoever asks; started with the factory or at once after', async () => {
    const calls: string[] = [];
    const client = {
      request: async <T>(method: string, path: string): Promise<T> => {
        calls.push(`${method} ${path}`);
        return { metadata: { resourceVersion: '1' }, items: [] } as T;
      },
      watch: (path: string, _onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> => {
        calls.push(`WATCH ${path}`);
        return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
      },
    };
    const factory = new SharedInformerFactory(client, quiet, { resyncMs: 30_000, clock: new FakeClock() });
    const a = factory.informerFor('/api/v1/namespaces');
    const b = factory.informerFor('/api/v1/namespaces');
    const filtered = factory.informerFor('/api/v1/serviceaccounts', 'fieldSelector=metadata.name%3Ddefault');
    expect(a).toBe(b);
    expect(factory.collections).toEqual(['/api/v1/namespaces', '/api/v1/serviceaccounts?fieldSelector=metadata.name%3Ddefault']);
    await settle();
    expect(calls).toEqual([]);
    factory.start();
    await settle();
    const late = factory.informerFor('/apis/rbac.authorization.svc.io/v1/clusterroles');
    await settle();
    expect(a.hasSynced() && filtered.hasSynced() && late.hasSynced()).toBe(true);
    expect(calls.filter((c) => c.startsWith('GET'))).toEqual([
      'GET /api/v1/namespaces',
      'GET /api/v1/serviceaccounts?fieldSelector=metadata.name%3Ddefault',
      'GET /apis/rbac.authorization.svc.io/v1/clusterroles',
    ]);
    expect(calls.filter((c) => c.startsWith('WATCH'))).toEqual([
      'WATCH /api/v1/namespaces?watch=true&allowWatchBookmarks=true&timeoutSeconds=30&resourceVersion=1',
      'WATCH /api/v1/serviceaccounts?watch=true&allowWatchBookmarks=true&timeoutSeconds=30&resourceVersion=1&fieldSelector=metadata.name%3Ddefault',
      'WATCH /apis/rbac.authorization.svc.io/v1/clusterroles?watch=true&allowWatchBookmarks=true&timeoutSeconds=30&resourceVersion=1',
    ]);
    await factory.stop();
  });
});
