import { createLogger } from '@svc/service-kit';
import { DropCounter, droppedAuditEvents } from './drops';
import { BatchingBackend, eventListBody, type BatchOptions } from './webhook-backend';

const quiet = createLogger('test', { write: () => undefined });

const OPTIONS: BatchOptions = { bufferSize: 100, maxBatchSize: 3, maxBatchWaitMs: 30_000, maxInFlight: 1, maxAttempts: 3, initialBackoffMs: 1000 };

/** A webhook that records each EventList's items and answers when told. */
function fakeWebhook() {
  const batches: number[][] = [];
  const pending: Array<{ resolve: () => void; reject: (e: Error) => void }> = [];
  return {
    batches,
    pending,
    send: (body: string): Promise<void> => {
      const list = JSON.parse(body) as { kind: string; apiVersion: string; items: Array<{ n: number }> };
      expect(list.kind).toBe('EventList');
      expect(list.apiVersion).toBe('audit.svc.io/v1');
      batches.push(list.items.map((i) => i.n));
      return new Promise<void>((resolve, reject) => pending.push({ resolve, reject }));
    },
  };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('the audit webhook batcher', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  test('an EventList body holds the events as given', () => {
    expect(JSON.parse(eventListBody(['{"n":1}', '{"n":2}']))).toEqual({ kind: 'EventList', apiVersion: 'audit.svc.io/v1', metadata: {}, items: [{ n: 1 }, { n: 2 }] });
  });

  test('a batch leaves as soon as it is full', () => {
    const hook = fakeWebhook();
    const backend = new BatchingBackend(hook.send, { ...OPTIONS, maxInFlight: 4 }, new DropCounter('wh-a', quiet));
    for (let n = 1; n <= 7; n++) backend.write(`{"n":${n}}`);
    expect(hook.batches).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    expect(backend.buffered).toBe(1);
  });

  test('a partial batch leaves after the maximum wait from its first event', () => {
    const hook = fakeWebhook();
    const backend = new BatchingBackend(hook.send, OPTIONS, new DropCounter('wh-b', quiet));
    backend.write('{"n":1}');
    jest.advanceTimersByTime(20_000);
    backend.write('{"n":2}');
    expect(hook.batches).toEqual([]);
    jest.advanceTimersByTime(10_000);
    expect(hook.batches).toEqual([[1, 2]]);
  });

  test('with every sending slot taken events wait in the buffer; a full buffer drops and counts them', async () => {
    const hook = fakeWebhook();
    const backend = new BatchingBackend(hook.send, { ...OPTIONS, bufferSize: 4 }, new DropCounter('wh-c', quiet));
    const taken = [1, 2, 3, 4, 5, 6, 7, 8, 9].map((n) => backend.write(`{"n":${n}}`));
    // 1-3 are under way (one slot); 4-7 fill the buffer; 8 and 9 are dropped.
    expect(taken).toEqual([true, true, true, true, true, true, true, false, false]);
    expect(droppedAuditEvents('wh-c')).toBe(2);
    expect(hook.batches).toEqual([[1, 2, 3]]);
    hook.pending.shift()?.resolve();
    await settle();
    expect(hook.batches).toEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    hook.pending.shift()?.resolve();
    await settle();
    // What waited for the slot longer than the wait goes without waiting again.
    jest.advanceTimersByTime(30_000);
    expect(hook.batches[2]).toEqual([7]);
  });

  test('a failing batch is retried with a growing backoff, then dropped and counted', async () => {
    const hook = fakeWebhook();
    const backend = new BatchingBackend(hook.send, OPTIONS, new DropCounter('wh-d', quiet));
    for (let n = 1; n <= 3; n++) backend.write(`{"n":${n}}`);
    hook.pending.shift()?.reject(new Error('connection refused'));
    await settle();
    jest.advanceTimersByTime(999);
    expect(hook.batches).toHaveLength(1);
    jest.advanceTimersByTime(1);
    await settle();
    expect(hook.batches).toHaveLength(2);
    hook.pending.shift()?.reject(new Error('connection refused'));
    await settle();
    jest.advanceTimersByTime(1500);
    await settle();
    expect(hook.batches).toHaveLength(3);
    hook.pending.shift()?.reject(new Error('connection refused'));
    await settle();
    expect(droppedAuditEvents('wh-d')).toBe(3);
    expect(hook.batches).toEqual([
      [1, 2, 3],
      [1, 2, 3],
      [1, 2, 3],
    ]);
  });

  test('close sends what is buffered and waits for it', async () => {
    const hook = fakeWebhook();
    const backend = new BatchingBackend(hook.send, { ...OPTIONS, maxInFlight: 4 }, new DropCounter('wh-e', quiet));
    backend.write('{"n":1}');
    const closed = backend.close();
    expect(hook.batches).toEqual([[1]]);
    let done = false;
    void closed.then(() => (done = true));
    await settle();
    expect(done).toBe(false);
    hook.pending.shift()?.resolve();
    await closed;
    expect(backend.write('{"n":2}')).toBe(false);
  });
});
