import type { ApiError, ApiObject } from '@svc/apimachinery';
import type { watch } from '@svc/proto';
import { start as startFanout, ChangeSubscriber, type WatchFanoutHandle } from '@svc/watch-fanout';
import { quietLogger, startBackends, until, type Backends, createNamespaces } from './helpers';

/** The leading watch-fanout replica compacts etcd history, one interval behind. */
describe('etcd compaction by the publisher', () => {
  let b: Backends;
  let client: Backends['client'];
  let fanout: WatchFanoutHandle;
  let subscriber: ChangeSubscriber;
  const seen: watch.ChangeEvent[] = [];
  const cm = (name: string, v: string): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'c' }, data: { v } });
  const key = (name: string) => ({ group: '', resource: 'configmaps', namespace: 'c', name });

  beforeAll(async () => {
    b = await startBackends('compact');
    await createNamespaces(b.client, ['c']);
    client = b.client;
    fanout = await startFanout({ listen: '127.0.0.1:0', internalTls: b.pki.files('watch-fanout'), etcdEndpoints: [b.etcd.endpoint], etcdTls: b.pki.files('watch-fanout'), natsUrl: b.nats.url, natsTls: b.pki.files('watch-fanout'), compactionIntervalMs: 300, logger: quietLogger() });
    subscriber = await ChangeSubscriber.connect(b.nats.url, quietLogger(), b.pki.files('gateway'));
    subscriber.listen((e) => seen.push(e));
    await until(() => fanout.publisher.isLeader);
  });

  afterAll(async () => {
    await subscriber?.close();
    await fanout?.close();
    await b?.stop();
  });

  test('old revisions become 410 Expired while current state and the watch path carry on', async () => {
    const v1 = await client.create(key('x'), cm('x', '1'));
    await client.update(key('x'), cm('x', '2'));
    await client.create(key('y'), cm('y', '1'));
    const page = await client.list({ group: '', resource: 'configmaps', namespace: 'c' }, { limit: 1 });
    // Reads at the old revision work until the compactor passes it.
    expect((await client.get(key('x'), { revision: v1.revision })).object.data).toEqual({ v: '1' });
    await client.create(key('z'), cm('z', '1'));
    // Compacting to N keeps N readable: wait until the list's revision is behind.
    await until(() => fanout.publisher.compactor.compactedTo > page.revision);

    const old = (await client.get(key('x'), { revision: v1.revision }).catch((e: unknown) => e)) as ApiError;
    expect(old.code).toBe(410);
    expect(old.reason).toBe('Expired');
    expect(page.continueToken).not.toBe('');
    const next = (await client.list({ group: '', resource: 'configmaps', namespace: 'c' }, { limit: 1, continueToken: page.continueToken }).catch((e: unknown) => e)) as ApiError;
    expect(next.code).toBe(410);

    // Nothing current is lost, and later changes still reach the bus.
    expect((await client.get(key('x'))).object.data).toEqual({ v: '2' });
    const v3 = await client.update(key('x'), cm('x', '3'));
    await until(() => seen.some((e) => e.revision === v3.revision));
    expect(fanout.publisher.isLeader).toBe(true);
  });
});
