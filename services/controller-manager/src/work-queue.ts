import { realClock, type Clock } from './clock';

/**
 * The controllers' work queue, as client-go's rate-limited work queue: a key
 * is queued at most once however often it is added, a key being worked on
 * is queued again only after its worker is done (so one key is never worked
 * on twice at a time), failures come back after a per-key exponential
 * backoff bounded by an overall token bucket, and `forget` clears a key's
 * failures once it succeeded.
 */

/** When an item may be retried. */
export interface RateLimiter {
  /** The delay before the item's next try; counts a failure. */
  when(item: string): number;
  /** The item succeeded: its failures are forgotten. */
  forget(item: string): void;
  /** Failures counted since the last `forget`. */
  retries(item: string): number;
}

/** `baseMs` after the first failure, doubling with each further one, never above `maxMs`. */
export class ItemExponentialFailureRateLimiter implements RateLimiter {
  private readonly failures = new Map<string, number>();

  constructor(
    private readonly baseMs = 5,
    private readonly maxMs = 1_000_000,
  ) {}

  when(item: string): number {
    const n = this.failures.get(item) ?? 0;
    this.failures.set(item, n + 1);
    // 2^n overflows long before the cap matters; stop doubling once past it.
    return n >= 60 ? this.maxMs : Math.min(this.baseMs * 2 ** n, this.maxMs);
  }

  forget(item: string): void {
    this.failures.delete(item);
  }

  retries(item: string): number {
    return this.failures.get(item) ?? 0;
  }
}

/** An overall bound: `qps` retries a second on average, bursts of up to `burst` (a token bucket). */
export class BucketRateLimiter implements RateLimiter {
  private tokens: number;
  private last: number;

  constructor(
    private readonly qps = 10,
    private readonly burst = 100,
    private readonly clock: Clock = realClock,
  ) {
    this.tokens = burst;
    this.last = clock.now();
  }

  when(): number {
    const now = this.clock.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    // Reserve a token; a negative balance is paid back by waiting.
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : Math.ceil((-this.tokens / this.qps) * 1000);
  }

  forget(): void {}

  retries(): number {
    return 0;
  }
}

/** The longest delay any of `limiters` asks for. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    this.limiters = limiters;
  }

  when(item: string): number {
    return Math.max(0, ...this.limiters.map((l) => l.when(item)));
  }

  forget(item: string): void {
    for (const l of this.limiters) l.forget(item);
  }

  retries(item: string): number {
    return Math.max(0, ...this.limiters.map((l) => l.retries(item)));
  }
}

/** client-go's default for controllers: 5 ms doubling to 1000 s per key, at most 10 retries a second overall (bursts of 100). */
export function defaultControllerRateLimiter(clock: Clock = realClock, maxBackoffMs = 1_000_000): RateLimiter {
  return new MaxOfRateLimiter(new ItemExponentialFailureRateLimiter(5, maxBackoffMs), new BucketRateLimiter(10, 100, clock));
}

export interface WorkQueueOptions {
  clock?: Clock;
  rateLimiter?: RateLimiter;
}

export class WorkQueue {
  private readonly clock: Clock;
  private readonly rateLimiter: RateLimiter;
  /** Keys ready to be handed out, in order. */
  private readonly queue: string[] = [];
  /** Keys that need work: queued, or added again while being worked on. */
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  /** Keys waiting for a delay, with when they are due and how to cancel it. */
  private readonly waiting = new Map<string, { at: number; cancel: () => void }>();
  private readonly getters: Array<(key: string | undefined) => void> = [];
  private shutting = false;

  constructor(options: WorkQueueOptions = {}) {
    this.clock = options.clock ?? realClock;
    this.rateLimiter = options.rateLimiter ?? defaultControllerRateLimiter(this.clock);
  }

  /** Queues `key` unless it already waits to be worked on. */
  add(key: string): void {
    if (this.shutting || this.dirty.has(key)) return;
    this.dirty.add(key);
    if (this.processing.has(key)) return;
    this.queue.push(key);
    this.handOut();
  }

  /** Queues `key` once `ms` have passed; an earlier pending time for the same key wins. */
  addAfter(key: string, ms: number): void {
    if (this.shutting) return;
    if (ms <= 0) {
      this.add(key);
      return;
    }
    const at = this.clock.now() + ms;
    const pending = this.waiting.get(key);
    if (pending && pending.at <= at) return;
    pending?.cancel();
    const cancel = this.clock.after(ms, () => {
      this.waiting.delete(key);
      this.add(key);
    });
    this.waiting.set(key, { at, cancel });
  }

  /** Queues `key` after the delay its failures earned. */
  addRateLimited(key: string): void {
    this.addAfter(key, this.rateLimiter.when(key));
  }

  /** `key` succeeded: its next failure starts the backoff over. */
  forget(key: string): void {
    this.rateLimiter.forget(key);
  }

  numRequeues(key: string): number {
    return this.rateLimiter.retries(key);
  }

  /** The next key to work on, once there is one; undefined once the queue shuts down. Call `done` after. */
  get(): Promise<string | undefined> {
    if (this.shutting) return Promise.resolve(undefined);
    const key = this.take();
    if (key !== undefined) return Promise.resolve(key);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** The worker is done with `key`; if it was added meanwhile, it is queued again. */
  done(key: string): void {
    this.processing.delete(key);
    if (this.dirty.has(key) && !this.shutting) {
      this.queue.push(key);
      this.handOut();
    }
  }

  /** Stops handing out keys: waiting getters get undefined, delays are cancelled, adds are ignored. */
  shutDown(): void {
    this.shutting = true;
    for (const w of this.waiting.values()) w.cancel();
    this.waiting.clear();
    for (const g of this.getters.splice(0)) g(undefined);
  }

  get shuttingDown(): boolean {
    return this.shutting;
  }

  /** Keys ready to be handed out. */
  get length(): number {
    return this.queue.length;
  }

  private take(): string | undefined {
    const key = this.queue.shift();
    if (key === undefined) return undefined;
    this.dirty.delete(key);
    this.processing.add(key);
    return key;
  }

  private handOut(): void {
    while (this.getters.length > 0 && this.queue.length > 0) {
      const getter = this.getters.shift() as (key: string | undefined) => void;
      getter(this.take());
    }
  }
}

/** What one sync asks for: nothing more, or another look after a delay (not a failure). */
export type SyncResult = void | { requeueAfterMs: number };

/**
 * One worker: takes keys until the queue shuts down; a key whose sync
 * succeeds is forgotten (and queued again after `requeueAfterMs` when asked),
 * one whose sync fails comes back rate-limited.
 */
export async function runWorker(queue: WorkQueue, sync: (key: string) => Promise<SyncResult>, onError: (key: string, err: Error) => void): Promise<void> {
  for (;;) {
    const key = await queue.get();
    if (key === undefined) return;
    try {
      const result = await sync(key);
      queue.forget(key);
      if (result) queue.addAfter(key, result.requeueAfterMs);
    } catch (err) {
      if (!queue.shuttingDown) {
        onError(key, err instanceof Error ? err : new Error(String(err)));
        queue.addRateLimited(key);
      }
    } finally {
      queue.done(key);
    }
  }
}

/** Runs `workers` workers over `queue`; resolves when all have returned (after `shutDown`). */
export function runWorkers(workers: number, queue: WorkQueue, sync: (key: string) => Promise<SyncResult>, onError: (key: string, err: Error) => void): Promise<void> {
  return Promise.all(Array.from({ length: Math.max(1, workers) }, () => runWorker(queue, sync, onError))).then(() => undefined);
}
