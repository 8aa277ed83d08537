import { FakeClock, settle } from './testing/fake-clock';
import { BucketRateLimiter, defaultControllerRateLimiter, ItemExponentialFailureRateLimiter, runWorkers, WorkQueue } from './work-queue';

describe('work queue', () => {
  test('a key added many times is handed out once, in the order keys came', async () => {
    const queue = new WorkQueue({ clock: new FakeClock() });
    for (const k of ['a', 'b', 'a', 'c', 'b']) queue.add(k);
    expect(queue.length).toBe(3);
    expect([await queue.get(), await queue.get(), await queue.get()]).toEqual(['a', 'b', 'c']);
    expect(queue.length).toBe(0);
  });

  test('a key added while being worked on comes back once, only after done', async () => {
    const queue = new WorkQueue({ clock: new FakeClock() });
    queue.add('a');
    const key = await queue.get();
    queue.add('a');
    queue.add('a');
    expect(queue.length).toBe(0);
    queue.done(key as string);
    expect(queue.length).toBe(1);
    expect(await queue.get()).toBe('a');
    queue.done('a');
    expect(queue.length).toBe(0);
  });

  test('a waiting getter gets the next key added', async () => {
    const queue = new WorkQueue({ clock: new FakeClock() });
    const next = queue.get();
    queue.add('x');
    expect(await next).toBe('x');
  });

  test('per-key backoff: 5 ms doubling, up to the bound; forget starts over', () => {
    const limiter = new ItemExponentialFailureRateLimiter(5, 1_000_000);
    const delays = Array.from({ length: 5 }, () => limiter.when('a'));
    expect(delays).toEqual([5, 10, 20, 40, 80]);
    expect(limiter.when('b')).toBe(5);
    expect(limiter.retries('a')).toBe(5);
    for (let i = 0; i < 100; i++) limiter.when('a');
    expect(limiter.when('a')).toBe(1_000_000);
    limiter.forget('a');
    expect(limiter.retries('a')).toBe(0);
    expect(limiter.when('a')).toBe(5);
  });

  test('the overall bucket allows a burst, then spaces retries by its rate', async () => {
    const clock = new FakeClock();
    const bucket = new BucketRateLimiter(10, 3, clock);
    expect([bucket.when(), bucket.when(), bucket.when()]).toEqual([0, 0, 0]);
    expect(bucket.when()).toBe(100);
    expect(bucket.when()).toBe(200);
    await clock.advance(1000);
    expect(bucket.when()).toBe(0);
  });

  test('rate-limited keys come back after their backoff on the injected clock', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue({ clock, rateLimiter: defaultControllerRateLimiter(clock) });
    const seen: number[] = [];
    const start = clock.now();
    queue.addRateLimited('k');
    queue.addRateLimited('k');
    // The earlier of two pending times wins.
    expect(queue.length).toBe(0);
    await clock.advance(4);
    expect(queue.length).toBe(0);
    await clock.advance(1);
    expect(queue.length).toBe(1);
    const key = await queue.get();
    seen.push(clock.now() - start);
    queue.done(key as string);
    expect(queue.numRequeues('k')).toBe(2);
    queue.addRateLimited('k');
    await clock.advance(19);
    expect(queue.length).toBe(0);
    await clock.advance(1);
    expect(queue.length).toBe(1);
    queue.forget('k');
    expect(queue.numRequeues('k')).toBe(0);
    expect(seen).toEqual([5]);
  });

  test('workers: success forgets, failure retries with growing delays, a requeue asks for a later look', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue({ clock });
    const attempts: Array<[string, number]> = [];
    const t0 = clock.now();
    let failuresLeft = 3;
    const errors: string[] = [];
    const workers = runWorkers(
      2,
      queue,
      async (key) => {
        attempts.push([key, clock.now() - t0]);
        if (key === 'flaky' && failuresLeft-- > 0) throw new Error('boom');
        if (key === 'slow' && attempts.filter(([k]) => k === 'slow').length === 1) return { requeueAfterMs: 1000 };
        return undefined;
      },
      (key, err) => errors.push(`${key}: ${err.message}`),
    );
    queue.add('flaky');
    queue.add('slow');
    await clock.advance(2000);
    expect(attempts).toEqual([
      ['flaky', 0],
      ['slow', 0],
      ['flaky', 5],
      ['flaky', 15],
      ['flaky', 35],
      ['slow', 1000],
    ]);
    expect(errors).toEqual(['flaky: boom', 'flaky: boom', 'flaky: boom']);
    expect(queue.numRequeues('flaky')).toBe(0);
    queue.shutDown();
    await workers;
  });

  test('shut down: getters get undefined, pending delays are dropped, adds are ignored', async () => {
    const clock = new FakeClock();
    const queue = new WorkQueue({ clock });
    const waiting = queue.get();
    queue.addAfter('later', 1000);
    expect(clock.waiting).toBe(1);
    queue.shutDown();
    expect(await waiting).toBeUndefined();
    expect(clock.waiting).toBe(0);
    queue.add('x');
    expect(queue.length).toBe(0);
    expect(await queue.get()).toBeUndefined();
    expect(queue.shuttingDown).toBe(true);
    await settle();
  });
});
