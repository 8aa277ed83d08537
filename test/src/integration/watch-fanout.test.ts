import { type ApiObject } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { freePort } from '@svc/testenv';
import { start as startFanout, ChangeSubscriber, WatchFanoutClient, type WatchFanoutHandle } from '@svc/watch-fanout';
import { quietLogger, startBackends, until, type Backends, createNamespaces } from './helpers';

/** Two watch-fanout replicas on real etcd and NATS: one publishes, both serve catch-up. */
describe('watch fan-out on etcd and NATS', () => {
  let b: Backends;
  let client: Backends['client'];
  let replicas: WatchFanoutHandle[];
  let subscriber: ChangeSubscriber;
  const seen: watch.ChangeEvent[] = [];
  const cm = (name: string, data: Record<string, string> = {}): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'w' }, data });
  const key = (name: string) => ({ group: '', resource: 'configmaps', namespace: 'w', name });

  beforeAll(async () => {
    b = await startBackends('fanout');
    await createNamespaces(b.client, ['w']);
    client = b.client;
    replicas = [];
    for (const id of ['a', 'b']) {
      replicas.push(await startFanout({ listen: '127.0.0.1:0', internalTls: b.pki.files('watch-fanout'), etcdEndpoints: [b.etcd.endpoint], etcdTls: b.pki.files('watch-fanout'), natsUrl: b.nats.url, natsTls: b.pki.files('watch-fanout'), id, logger: quietLogger() }));
    }
    subscriber = await ChangeSubscriber.connect(b.nats.url, quietLogger(), b.pki.files('gateway'));
    subscriber.listen((e) => seen.push(e));
    await until(() => replicas.some((r) => r.publisher.isLeader) && replicas.every((r) => r.history.completeFrom >= 0));
  });

  afterAll(async () => {
    await subscriber?.close();
    for (const r of replicas ?? []) await r.close();
    await b?.stop();
  });

  test('exactly one replica publishes', () => {
    expect(replicas.filter((r) => r.publisher.isLeader)).toHaveLength(1);
  });

  test('every change reaches subscribers once, in revision order, linked by prev_revision', async () => {
    const a = await client.create(key('a'), cm('a', { v: '1' }));
    const b = await client.update(key('a'), cm('a', { v: '2' }));
    const c = await client.delete(key('a'));
    await until(() => seen.some((e) => e.revision === c.revision));
    const mine = seen.filter((e) => e.key === '/registry/configmaps/w/a');
    expect(mine.map((e) => [e.type, e.revision])).toEqual([
      [watch.EventType.EVENT_TYPE_ADDED, a.revision],
      [watch.EventType.EVENT_TYPE_MODIFIED, b.revision],
      [watch.EventType.EVENT_TYPE_DELETED, c.revision],
    ]);
    expect(mine[1]?.prevRevision).toBe(a.revision);
    const deleted = JSON.parse(Buffer.from(mine[2]?.object ?? []).toString()) as ApiObject;
    expect(deleted.metadata?.resourceVersion).toBe(String(c.revision));
    expect(deleted.data).toEqual({ v: '2' });
  });

  test('both replicas serve the same catch-up, ending with a progress event', async () => {
    const first = await client.create(key('c1'), cm('c1'));
    const second = await client.create(key('c2'), cm('c2'));
    await until(() => replicas.every((r) => r.history.head >= second.revision));
    for (const r of replicas) {
      const fanout = new WatchFanoutClient(r.address, b.pki.tls('gateway'));
      const events: watch.ChangeEvent[] = [];
      for await (const e of fanout.catchUp(first.revision - 1, 0, '/registry/configmaps/w/c')) events.push(e);
      fanout.close();
      expect(events.map((e) => e.revision)).toEqual([first.revision, second.revision, second.revision]);
      expect(events[2]?.type).toBe(watch.EventType.EVENT_TYPE_PROGRESS);
    }
  });

  test('a client given several replicas skips one that is down, for head and catch-up', async () => {
    const down = `127.0.0.1:${await freePort()}`;
    const fanout = new WatchFanoutClient(`${down},${replicas[0]?.address ?? ''}`, b.pki.tls('gateway'));
    try {
      for (let i = 0; i < 2; i++) {
        const head = (await fanout.head({ timeoutMs: 5000 })).revision;
        expect(head).toBeGreaterThan(0);
        const events: watch.ChangeEvent[] = [];
        for await (const e of fanout.catchUp(head, 0, '/registry/none/')) events.push(e);
        expect(events.at(-1)?.type).toBe(watch.EventType.EVENT_TYPE_PROGRESS);
      }
    } finally {
      fanout.close();
    }
  });

  test('a catch-up from before the window is 410 Expired', async () => {
    const fanout = new WatchFanoutClient(replicas[0]?.address ?? '', b.pki.tls('gateway'));
    const err = await (async () => {
      for await (const _ of fanout.catchUp(1, 0, '')) void _;
    })().catch((e: unknown) => e);
    fanout.close();
    expect(err).toMatchObject({ code: 410, reason: 'Expired' });
  });

  test('an object larger than a bus message still reaches watchers through catch-up', async () => {
    const big = 'x'.repeat(1200 * 1024);
    const created = await client.create(key('big'), cm('big', { big }));
    await until(() => seen.some((e) => e.revision === created.revision));
    const onBus = seen.find((e) => e.revision === created.revision);
    expect(onBus?.truncated).toBe(true);
    const fanout = new WatchFanoutClient(replicas[1]?.address ?? '', b.pki.tls('gateway'));
    const events: watch.ChangeEvent[] = [];
    for await (const e of fanout.catchUp(onBus?.prevRevision ?? 0, created.revision, onBus?.key ?? '')) events.push(e);
    fanout.close();
    const full = JSON.parse(Buffer.from(events[0]?.object ?? []).toString()) as ApiObject;
    expect((full.data as Record<string, string>)['big']).toHaveLength(big.length);
  });

  test('when the leader stops, the other replica takes over without a gap', async () => {
    const leader = replicas.find((r) => r.publisher.isLeader) as WatchFanoutHandle;
    const follower = replicas.find((r) => r !== leader) as WatchFanoutHandle;
    await leader.close();
    replicas = [follower];
    const during = await client.create(key('failover'), cm('failover'));
    await until(() => follower.publisher.isLeader, 20000);
    await until(() => seen.some((e) => e.revision === during.revision), 20000);
    const ordered = seen.filter((e) => e.type !== watch.EventType.EVENT_TYPE_PROGRESS);
    for (let i = 1; i < ordered.length; i++) expect(ordered[i]?.prevRevision).toBe(ordered[i - 1]?.revision);
  });
});
