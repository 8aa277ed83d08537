import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { ApiObject } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { startEtcd, startNats, type EtcdInstance, type NatsInstance } from '@svc/testenv';
import { start as startStorage, StorageClient, type StorageHandle } from '@svc/storage';
import { start as startFanout, WatchFanoutClient, type WatchFanoutHandle } from '@svc/watch-fanout';
import { quietLogger, until } from './helpers';

/** NATS goes away while writes continue: the history that watchers catch up from has no gap. */
describe('watch fan-out across a NATS restart', () => {
  let dir: string;
  let etcd: EtcdInstance;
  let nats: NatsInstance;
  let storage: StorageHandle;
  let client: StorageClient;
  let fanout: WatchFanoutHandle;
  const cm = (name: string): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'r' }, data: { k: name } });
  const key = (name: string) => ({ group: '', resource: 'configmaps', namespace: 'r', name });
  const natsDir = () => path.join(dir, 'nats');

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bus-restart-'));
    etcd = await startEtcd({ dataDir: path.join(dir, 'etcd'), logDir: dir });
    nats = await startNats({ storeDir: natsDir(), logDir: dir });
    storage = await startStorage({ listen: '127.0.0.1:0', etcdEndpoints: [etcd.endpoint], logger: quietLogger() });
    client = new StorageClient(storage.address);
    fanout = await startFanout({ listen: '127.0.0.1:0', etcdEndpoints: [etcd.endpoint], natsUrl: nats.url, logger: quietLogger() });
    await until(() => fanout.publisher.isLeader && fanout.history.completeFrom >= 0);
  });

  afterAll(async () => {
    await fanout?.close();
    client?.close();
    await storage?.close();
    await nats?.process.stop();
    await etcd?.process.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('changes written while NATS is down are published, in order, once it is back', async () => {
    const before = await client.create(key('before'), cm('before'));
    await until(() => fanout.history.head >= before.revision);

    await nats.process.stop();
    const during: number[] = [];
    for (let i = 0; i < 20; i++) during.push((await client.create(key(`during-${i}`), cm(`during-${i}`))).revision);
    nats = await startNats({ storeDir: natsDir(), logDir: dir, port: nats.port });
    const after = await client.create(key('after'), cm('after'));

    await until(() => fanout.history.head >= after.revision, 60000);
    const replica = new WatchFanoutClient(fanout.address);
    const events: watch.ChangeEvent[] = [];
    for await (const e of replica.catchUp(before.revision, after.revision, '/registry/configmaps/r/')) {
      if (e.type !== watch.EventType.EVENT_TYPE_PROGRESS) events.push(e);
    }
    replica.close();
    expect(events.map((e) => e.revision)).toEqual([...during, after.revision]);
    expect(events.every((e) => e.type === watch.EventType.EVENT_TYPE_ADDED)).toBe(true);
  });
});
