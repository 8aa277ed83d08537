import type { ApiObject } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { start as startFanout, WatchFanoutClient, type WatchFanoutHandle } from '@svc/watch-fanout';
import { quietLogger, startBackends, until, type Backends, createNamespaces } from './helpers';

/** NATS goes away while writes continue: the history that watchers catch up from has no gap. */
describe('watch fan-out across a NATS restart', () => {
  let b: Backends;
  let fanout: WatchFanoutHandle;
  const cm = (name: string): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'r' }, data: { k: name } });
  const key = (name: string) => ({ group: '', resource: 'configmaps', namespace: 'r', name });

  beforeAll(async () => {
    b = await startBackends('bus-restart');
    await createNamespaces(b.client, ['r']);
    fanout = await startFanout({ listen: '127.0.0.1:0', internalTls: b.pki.files('watch-fanout'), etcdEndpoints: [b.etcd.endpoint], etcdTls: b.pki.files('watch-fanout'), natsUrl: b.nats.url, natsTls: b.pki.files('watch-fanout'), logger: quietLogger() });
    await until(() => fanout.publisher.isLeader && fanout.history.completeFrom >= 0);
  });

  afterAll(async () => {
    await fanout?.close();
    await b?.stop();
  });

  test('changes written while NATS is down are published, in order, once it is back', async () => {
    const before = await b.client.create(key('before'), cm('before'));
    await until(() => fanout.history.head >= before.revision);

    await b.stopNats();
    const during: number[] = [];
    for (let i = 0; i < 20; i++) during.push((await b.client.create(key(`during-${i}`), cm(`during-${i}`))).revision);
    await b.startNats();
    const after = await b.client.create(key('after'), cm('after'));

    await until(() => fanout.history.head >= after.revision, 60000);
    const replica = new WatchFanoutClient(fanout.address, b.pki.tls('gateway'));
    const events: watch.ChangeEvent[] = [];
    for await (const e of replica.catchUp(before.revision, after.revision, '/registry/configmaps/r/')) {
      if (e.type !== watch.EventType.EVENT_TYPE_PROGRESS) events.push(e);
    }
    replica.close();
    expect(events.map((e) => e.revision)).toEqual([...during, after.revision]);
    expect(events.every((e) => e.type === watch.EventType.EVENT_TYPE_ADDED)).toBe(true);
  });
});
