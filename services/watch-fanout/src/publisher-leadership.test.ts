import { EventEmitter } from 'node:events';
import type { Etcd3, IKeyValue } from 'etcd3';
import type { JetStreamManager, Msg, MsgHdrs, NatsConnection } from 'nats';
import { watch } from '@svc/proto';
import { createLogger } from '@svc/service-kit';
import { WRITE_TRACE_KEY } from '@svc/storage/write-trace';
import { decodeEvent, encodeEvent } from './bus';
import { Publisher } from './publisher';

/**
 * The publisher against an etcd and a bus in memory: etcd's watchers and
 * elections are driven by the test, the bus stores what it accepts in order
 * and refuses a publish that does not follow its last sequence (as
 * JetStream does with Nats-Expected-Last-Sequence).
 */
class FakeWatcher extends EventEmitter {
  /** Runs while the watcher is being cancelled (etcd may still deliver what it had sent). */
  onCancel: (() => void) | undefined;

  constructor(readonly start: number) {
    super();
  }

  cancel(): Promise<void> {
    this.onCancel?.();
    return Promise.resolve();
  }
}

function kv(revision: number): IKeyValue {
  return {
    key: Buffer.from(`/registry/configmaps/ns/o${revision}`),
    value: Buffer.from(JSON.stringify({ metadata: { name: `o${revision}`, namespace: 'ns' } })),
    create_revision: String(revision),
    mod_revision: String(revision),
    version: '1',
    lease: '0',
  };
}

/** One etcd watch response with the changes at these revisions. */
function changes(...revisions: number[]): { header: { revision: string }; events: Array<{ type: 'Put'; kv: IKeyValue }> } {
  return { header: { revision: String(Math.max(...revisions)) }, events: revisions.map((r) => ({ type: 'Put' as const, kv: kv(r) })) };
}

function world() {
  const watchers: FakeWatcher[] = [];
  const campaigns: EventEmitter[] = [];
  const etcd = {
    watch() {
      let start = 0;
      const builder = {
        prefix: () => builder,
        inRange: () => builder,
        withPreviousKV: () => builder,
        startRevision: (r: string) => {
          start = Number(r);
          return builder;
        },
        create: () => {
          const w = new FakeWatcher(start);
          watchers.push(w);
          return Promise.resolve(w);
        },
      };
      return builder;
    },
    kv: { range: () => Promise.resolve({ header: { revision: '0' } }) },
    election: () => ({
      campaign: () => {
        const c = Object.assign(new EventEmitter(), { resign: () => Promise.resolve() });
        campaigns.push(c);
        return c;
      },
    }),
  };
  /** What the bus holds, in sequence order. */
  const stream: watch.ChangeEvent[] = [];
  /** The `traceparent` header of each message the bus holds. */
  const traceparents: Array<string | undefined> = [];
  let acks: (err: Error | null, msg: Msg) => void = () => undefined;
  const nc = {
    subscribe: (_subject: string, opts: { callback: (err: Error | null, msg: Msg) => void }) => {
      acks = opts.callback;
      return { unsubscribe: () => undefined };
    },
    publish: (_subject: string, data: Uint8Array, opts: { reply: string; headers: MsgHdrs }) => {
      const expected = Number(opts.headers.get('Nats-Expected-Last-Sequence'));
      let answer: object;
      if (expected !== stream.length) answer = { error: { code: 400, description: `wrong last sequence: ${stream.length}` } };
      else {
        stream.push(decodeEvent(data));
        traceparents.push(opts.headers.get('traceparent') || undefined);
        answer = { seq: stream.length };
      }
      queueMicrotask(() => acks(null, { subject: opts.reply, data: Buffer.from(JSON.stringify(answer)) } as unknown as Msg));
    },
  };
  const jsm = {
    streams: {
      info: () => Promise.resolve({ state: { messages: stream.length, last_seq: stream.length } }),
      getMessage: (_name: string, q: { seq: number }) => Promise.resolve({ data: encodeEvent(stream[q.seq - 1] as watch.ChangeEvent) }),
    },
  };
  const publisher = new Publisher({
    etcd: etcd as unknown as Etcd3,
    nc: nc as unknown as NatsConnection,
    jsm: jsm as unknown as JetStreamManager,
    log: createLogger('test', { write: () => undefined }),
    id: 'test',
    maxPayload: 1024 * 1024,
    compactionIntervalMs: 0,
  });
  return { watchers, campaigns, stream, traceparents, publisher };
}

const until = async (condition: () => boolean): Promise<void> => {
  for (let i = 0; i < 300 && !condition(); i++) await new Promise((r) => setTimeout(r, 10));
  if (!condition()) throw new Error('condition not reached');
};

/** Every event on the bus follows the one before it (prev_revision), and the changes are these revisions. */
function busOf(stream: watch.ChangeEvent[]): { revisions: number[]; links: string[] } {
  const links: string[] = [];
  stream.forEach((e, i) => {
    const before = i === 0 ? 0 : (stream[i - 1] as watch.ChangeEvent).revision;
    if (i > 0 && e.prevRevision !== before) links.push(`${e.revision} follows ${e.prevRevision}, the bus had ${before}`);
  });
  return { revisions: stream.filter((e) => e.type !== watch.EventType.EVENT_TYPE_PROGRESS).map((e) => e.revision), links };
}

type World = ReturnType<typeof world>;

/** Elects the publisher in its `n`th campaign; answers the watch it then opens. */
async function elect(w: World, n: number): Promise<FakeWatcher> {
  await until(() => w.campaigns.length === n);
  (w.campaigns[n - 1] as EventEmitter).emit('elected');
  await until(() => w.watchers.length === n);
  return w.watchers[n - 1] as FakeWatcher;
}

/** The bus once the change at `last` is on it and the publisher stopped. */
async function busAfter(w: World, last: number): Promise<ReturnType<typeof busOf>> {
  await until(() => w.stream.at(-1)?.revision === last);
  await w.publisher.stop();
  return busOf(w.stream);
}

describe('the publisher across terms of leadership', () => {
  test('a change the old watcher delivers while it is being cancelled is not published ahead of the new term’s replay', async () => {
    const w = world();
    w.publisher.start();
    const first = await elect(w, 1);
    first.emit('data', changes(1, 2, 3));
    await until(() => w.stream.length === 4); // the history's start marker and three changes
    // The bus loses its last two messages (a NATS server killed before it wrote them to disk):
    // the next publish is refused and the publisher steps down. While its watch is cancelled,
    // etcd still delivers the change it had sent.
    w.stream.splice(2);
    first.onCancel = () => first.emit('data', changes(5));
    first.emit('data', changes(4));
    // Elected again: it publishes from where the bus ends, replaying etcd's history.
    const second = await elect(w, 2);
    expect(second.start).toBe(2);
    second.emit('data', changes(2, 3, 4, 5));
    second.emit('data', changes(6));
    expect(await busAfter(w, 6)).toEqual({ revisions: [1, 2, 3, 4, 5, 6], links: [] });
  });

  test('a watch whose stream broke is not followed further: the etcd client would resume it past changes it had not delivered', async () => {
    const w = world();
    w.publisher.start();
    const first = await elect(w, 1);
    first.emit('data', changes(1));
    await until(() => w.stream.length === 2);
    // The stream breaks while the watch catches up; the client re-creates it from the revision of
    // the last response's header (3), so 2 and 3 never come.
    first.emit('disconnected', new Error('14 UNAVAILABLE'));
    first.emit('data', changes(4));
    const second = await elect(w, 2);
    expect(second.start).toBe(2);
    second.emit('data', changes(2, 3, 4, 5));
    expect(await busAfter(w, 5)).toEqual({ revisions: [1, 2, 3, 4, 5], links: [] });
  });

  test("a traced write's record travels as the traceparent header of its change's message, and is not published itself", async () => {
    const w = world();
    w.publisher.start();
    const first = await elect(w, 1);
    const traceparent = `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`;
    const record: IKeyValue = { ...kv(2), key: Buffer.from(WRITE_TRACE_KEY), value: Buffer.from(traceparent), create_revision: '1' };
    // Storage's transaction put the change and the record at revision 2; revision 3 was not traced.
    first.emit('data', { header: { revision: '3' }, events: [{ type: 'Put', kv: kv(2) }, { type: 'Put', kv: record }, { type: 'Put', kv: kv(3) }] });
    expect(await busAfter(w, 3)).toEqual({ revisions: [2, 3], links: [] });
    expect(w.stream.map((e) => e.key)).toEqual(['', '/registry/configmaps/ns/o2', '/registry/configmaps/ns/o3']);
    expect(w.traceparents).toEqual([undefined, traceparent, undefined]);
  });
});
