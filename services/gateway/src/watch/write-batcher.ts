import type { Writable } from 'node:stream';

/**
 * Holds the writes of many watch sockets and lets them go together: a
 * socket is corked at its first write and uncorked at the end of the event
 * loop's turn, or, when more than `fanOut` sockets wait (a change that
 * reaches many watchers), at the next tick of one timer shared by every
 * watch, so the events that reach a watcher within one interval leave as
 * one TLS record and one system call. With a thousand watchers each change
 * would otherwise be a thousand writes, and a write, not the event's
 * encoding, is what a watch costs (the bench's profile). A few watchers are
 * not delayed; the interval bounds the delay a large fan-out adds (0: never
 * past the turn).
 */
export class WriteBatcher {
  private readonly held = new Set<Writable>();
  private timer: NodeJS.Timeout | undefined;
  private immediate: NodeJS.Immediate | undefined;

  constructor(
    private readonly intervalMs: number,
    private readonly fanOut = 100,
  ) {}

  /** Corks `socket` until the next flush (once per interval however often it is called). */
  hold(socket: Writable): void {
    if (this.held.has(socket)) return;
    socket.cork();
    this.held.add(socket);
    this.schedule();
  }

  /** Lets every held socket's writes go now. */
  flush(): void {
    this.timer = undefined;
    this.immediate = undefined;
    const sockets = [...this.held];
    this.held.clear();
    for (const s of sockets) if (!s.destroyed) s.uncork();
  }

  /** Stops the timer and lets everything held go (the gateway is stopping). */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    if (this.immediate) clearImmediate(this.immediate);
    this.flush();
  }

  private schedule(): void {
    if (this.timer || this.immediate) return;
    this.immediate = setImmediate(() => {
      this.immediate = undefined;
      if (this.intervalMs <= 0 || this.held.size <= this.fanOut) {
        this.flush();
        return;
      }
      this.timer = setTimeout(() => this.flush(), this.intervalMs);
      this.timer.unref();
    });
  }
}
