/**
 * Time as the controllers see it: the work queue's delays, the informers'
 * backoff and the leader elector's renewals all go through a `Clock`, so
 * unit tests move time forward instead of waiting for it.
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once `ms` have passed; the returned function cancels the call. */
  after(ms: number, fn: () => void): () => void;
}

export const realClock: Clock = {
  now: () => Date.now(),
  after(ms, fn) {
    const timer = setTimeout(fn, Math.max(0, ms));
    // Pending delays never keep the process alive on their own.
    timer.unref();
    return () => clearTimeout(timer);
  },
};

/** Resolves after `ms` on `clock`, or as soon as `signal` aborts. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const onAbort = (): void => {
      cancel();
      resolve();
    };
    const cancel = clock.after(ms, () => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    });
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
