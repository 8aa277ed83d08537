import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { connect, type NatsConnection } from 'nats';
import { startNats, type NatsInstance } from '@svc/testenv';
import { AckedPublisher, STREAM_NAME, SUBJECT_PREFIX, ensureStream } from '@svc/watch-fanout';

/** The publisher's acknowledged publishes against a real JetStream stream. */
describe('acknowledged publishes on NATS JetStream', () => {
  let dir: string;
  let nats: NatsInstance;
  let nc: NatsConnection;
  let bus: AckedPublisher;
  const subject = `${SUBJECT_PREFIX}.configmaps.core`;
  const data = (s: string) => Buffer.from(s);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bus-'));
    nats = await startNats({ storeDir: path.join(dir, 'nats'), logDir: dir });
    nc = await connect({ servers: nats.url });
    await ensureStream(await nc.jetstreamManager(), 60_000);
    bus = new AckedPublisher(nc, 2000);
  });

  afterAll(async () => {
    bus?.close();
    await nc?.close();
    await nats?.process.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stores messages in order and acknowledges each with its sequence', async () => {
    const acks = await Promise.all(Array.from({ length: 100 }, (_, i) => bus.publish(subject, data(`m${i}`), `rev-${i + 1}`, i)));
    expect(acks.map((a) => a.seq)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    expect(acks.every((a) => !a.duplicate)).toBe(true);
    const jsm = await nc.jetstreamManager();
    const last = await jsm.streams.getMessage(STREAM_NAME, { seq: 100 });
    expect(Buffer.from(last.data).toString()).toBe('m99');
  });

  it('rejects a publish that does not follow the expected sequence, and stores nothing', async () => {
    await expect(bus.publish(subject, data('stale'), 'rev-stale', 5)).rejects.toThrow(/wrong last sequence/i);
    const info = await (await nc.jetstreamManager()).streams.info(STREAM_NAME);
    expect(info.state.last_seq).toBe(100);
  });

  it('reports a repeated message id as a duplicate', async () => {
    const ack = await bus.publish(subject, data('again'), 'rev-100', 100);
    expect(ack).toEqual({ seq: 100, duplicate: true });
  });

  it('fails a publish no stream takes', async () => {
    await expect(bus.publish('nowhere.at.all', data('x'), 'x-1', 0)).rejects.toThrow(/refused|acknowledgement/);
  });
});
