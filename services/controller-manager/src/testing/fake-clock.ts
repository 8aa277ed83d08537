import type { Clock } from '../clock';

/**
 * A clock for unit tests: time stands still until `advance` moves it, firing
 * the calls that fall due in order and letting the promises they settle run
 * before moving on.
 */
export class FakeClock implements Clock {
  private time: number;
  private nextId = 0;
  private readonly pending = new Map<number, { at: number; fn: () => void }>();

  constructor(start = Date.UTC(2026, 0, 1)) {
    this.time = start;
  }

  now(): number {
    return this.time;
  }

  after(ms: number, fn: () => void): () => void {
    const id = this.nextId++;
    this.pending.set(id, { at: this.time + Math.max(0, ms), fn });
    return () => this.pending.delete(id);
  }

  /** Calls waiting to fire. */
  get waiting(): number {
    return this.pending.size;
  }

  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    await settle();
    for (;;) {
      const due = [...this.pending.entries()].filter(([, p]) => p.at <= end).sort((a, b) => a[1].at - b[1].at || a[0] - b[0])[0];
      if (!due) break;
      this.pending.delete(due[0]);
      this.time = Math.max(this.time, due[1].at);
      due[1].fn();
      await settle();
    }
    this.time = end;
    await settle();
  }
}

/** Lets queued promise callbacks and immediates run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((r) => setImmediate(r));
}
