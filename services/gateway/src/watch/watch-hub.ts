import { ApiError } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import type { Logger, TraceContext } from '@svc/service-kit';
import type { ChangeSubscriber, WatchFanoutClient } from '@svc/watch-fanout/client';
import { decodeChange, type Change } from './change';
import { deliverLinked, noteWriteTrace, writeTraceOf } from './delivery-trace';

/**
 * The gateway's end of the change bus. One subscription per process; events
 * are checked for continuity through `prev_revision` and a gap is filled from
 * watch-fanout's history before anything after it is dispatched, so every
 * watcher sees a gap-free, ordered stream or is closed (never a silent gap).
 * Each change is decoded once (see change.ts), when the first watcher it
 * concerns takes it, and every watcher receives the same instance.
 */
export interface HubWatcher {
  /** Key prefix this watcher wants. */
  prefix: string;
  /** Called in revision order with every matching change (shared by every watcher: read-only). */
  deliver(change: Change): void;
  /** The hub can no longer guarantee continuity: end the watch (the client re-lists). */
  expire(reason: ApiError): void;
  /** End the watch cleanly (the server is stopping): the client watches again from its last resourceVersion. */
  end(): void;
  /** The served resource a client's watch is of; it ends when that resource is no longer served. */
  resource?: ServedResource;
  /** The gateway's own watch (of the custom resource definitions): not counted against the client watch limit. */
  internal?: boolean;
  /** The trace context of the client's watch request (tracing on): its deliveries of traced writes are children of it. */
  traceContext?: TraceContext;
}

export interface ServedResource {
  group: string;
  version: string;
  plural: string;
}

const PROGRESS = watch.EventType.EVENT_TYPE_PROGRESS;

export class WatchHub {
  private head = 0;
  private ready = false;
  /** When the hub last knew it was current: it dispatched an event, or watch-fanout's head was not ahead of it. */
  private confirmedAt = 0;
  private progressTimer: NodeJS.Timeout | undefined;
  private readonly watchers = new Set<HubWatcher>();
  private clientWatchers = 0;
  private readonly pending: watch.ChangeEvent[] = [];
  private pumping = false;
  /** Readers waiting for the hub to reach a revision (consistent reads from the cache). */
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly fanout: WatchFanoutClient,
    private readonly log: Logger,
    private readonly catchUpTimeoutMs = 15000,
  ) {}

  /** Starts following the bus; the position comes from watch-fanout's head. */
  async attach(subscriber: ChangeSubscriber): Promise<void> {
    subscriber.listen((e, traceparent) => {
      if (traceparent) noteWriteTrace(e, traceparent);
      this.pending.push(e);
      void this.pump();
    });
    for (;;) {
      try {
        this.head = (await this.fanout.head({ timeoutMs: 5000 })).revision;
        break;
      } catch (err) {
        this.log.warn('watch-fanout not reachable yet', { err: (err as Error).message });
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    this.ready = true;
    this.confirmedAt = Date.now();
    void this.pump();
  }

  /**
   * Checks every `intervalMs` that the bus is not silently behind: when
   * watch-fanout's head is past what the hub dispatched and nothing arrived
   * for a whole interval (a lost subscription, a NATS restart), the missing
   * changes are fetched from watch-fanout's history (in order, through the
   * same queue as bus events), or the watches end with 410 when that fails.
   */
  startProgressCheck(intervalMs: number): void {
    let lastHead = this.head;
    this.progressTimer = setInterval(() => {
      if (!this.ready) return;
      const stuck = this.head === lastHead;
      lastHead = this.head;
      this.fanout.head({ timeoutMs: intervalMs }).then(
        ({ revision }) => {
          if (revision <= this.head) {
            this.confirmedAt = Date.now();
            return;
          }
          if (!stuck) return;
          this.log.warn('the change bus is behind watch-fanout; catching up from its history', { from: this.head, to: revision });
          this.pending.push({ type: PROGRESS, key: '', revision, prevRevision: revision, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: false });
          void this.pump();
        },
        () => undefined,
      );
    }, intervalMs);
    this.progressTimer.unref();
  }

  stop(): void {
    if (this.progressTimer) clearInterval(this.progressTimer);
  }

  /** Ends every watch cleanly, as a stopping server does. */
  endAll(): void {
    for (const w of [...this.watchers]) w.end();
    this.clearWatchers();
  }

  /** Milliseconds since the hub last knew it was current. */
  get staleMs(): number {
    return this.ready ? Date.now() - this.confirmedAt : Number.POSITIVE_INFINITY;
  }

  /** Revision up to which every change has been dispatched. */
  get revision(): number {
    return this.head;
  }

  get isReady(): boolean {
    return this.ready;
  }

  /** Watches of clients (what `--max-watches` limits); the gateway's own are not counted. */
  get watcherCount(): number {
    return this.clientWatchers;
  }

  /** Registers a watcher; returns the revision it is current from and a detach function. */
  register(w: HubWatcher): { from: number; detach: () => void } {
    if (!this.watchers.has(w)) {
      this.watchers.add(w);
      if (!w.internal) this.clientWatchers++;
    }
    return { from: this.head, detach: () => this.remove(w) };
  }

  /**
   * Ends, cleanly, the watches of a resource that is no longer served (its
   * custom resource definition was deleted or stopped serving the version),
   * as the original server ends them when it tears down the resource's
   * storage; a client that watches again gets a 404.
   */
  endWatchesOf(resource: ServedResource): number {
    let ended = 0;
    for (const w of [...this.watchers]) {
      const r = w.resource;
      if (!r || r.group !== resource.group || r.version !== resource.version || r.plural !== resource.plural) continue;
      this.remove(w);
      w.end();
      ended++;
    }
    return ended;
  }

  private remove(w: HubWatcher): void {
    if (this.watchers.delete(w) && !w.internal) this.clientWatchers--;
  }

  /** History from watch-fanout: changes after `after` up to `until` under `prefix`. */
  async catchUp(after: number, until: number, prefix: string): Promise<{ events: Change[]; upTo: number }> {
    const { events, upTo } = await this.fetchHistory(after, until, prefix);
    return { events: events.map(decodeChange), upTo };
  }

  /**
   * Resolves true once every change up to `revision` has been dispatched,
   * false when that takes longer than `timeoutMs` (or the hub is not
   * following the bus).
   */
  waitFor(revision: number, timeoutMs: number): Promise<boolean> {
    if (this.ready && this.head >= revision) return Promise.resolve(true);
    return new Promise((resolve) => {
      const check = (): void => {
        if (!this.ready || this.head < revision) return;
        clearTimeout(timer);
        this.waiters.delete(check);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.waiters.delete(check);
        resolve(false);
      }, timeoutMs);
      this.waiters.add(check);
    });
  }

  private async fetchHistory(after: number, until: number, prefix: string): Promise<{ events: watch.ChangeEvent[]; upTo: number }> {
    const events: watch.ChangeEvent[] = [];
    let upTo = after;
    for await (const e of this.fanout.catchUp(after, until, prefix, { timeoutMs: this.catchUpTimeoutMs })) {
      if (e.type === PROGRESS) upTo = Math.max(upTo, e.revision);
      else events.push(e);
    }
    return { events, upTo };
  }

  private async pump(): Promise<void> {
    if (this.pumping || !this.ready) return;
    this.pumping = true;
    try {
      while (this.pending.length > 0) {
        const e = this.pending.shift() as watch.ChangeEvent;
        await this.accept(e);
        if (this.waiters.size > 0) for (const w of [...this.waiters]) w();
      }
    } finally {
      this.pumping = false;
    }
  }

  private async accept(e: watch.ChangeEvent): Promise<void> {
    if (e.revision <= this.head) return; // already dispatched (e.g. through a catch-up)
    if (e.type === PROGRESS && e.prevRevision === 0) {
      // The publisher started a new history: continuity is lost for everyone.
      this.expireAll(ApiError.expired(`the change history was restarted at revision ${e.revision}`));
      this.head = e.revision;
      return;
    }
    if (e.prevRevision !== this.head) {
      try {
        const { events } = await this.fetchHistory(this.head, e.prevRevision, '');
        for (const missed of events) this.dispatch(missed);
        this.head = Math.max(this.head, e.prevRevision);
      } catch (err) {
        this.log.warn('could not fill a gap in the change stream', { from: this.head, to: e.prevRevision, err: (err as Error).message });
        this.expireAll(ApiError.expired(`changes between revisions ${this.head} and ${e.prevRevision} are no longer available`));
        this.head = e.prevRevision;
      }
    }
    if (e.type !== PROGRESS) {
      const full = e.truncated ? await this.fetchLarge(e) : e;
      if (full) this.dispatch(full);
      else this.expireMatching(e.key, ApiError.expired(`the change of ${e.key} at revision ${e.revision} could not be fetched`));
    }
    this.head = e.revision;
    this.confirmedAt = Date.now();
  }

  /** A change too large for the bus, whole from watch-fanout's history; undefined when it cannot be had. */
  private async fetchLarge(e: watch.ChangeEvent): Promise<watch.ChangeEvent | undefined> {
    try {
      const full = (await this.fetchHistory(e.prevRevision, e.revision, e.key)).events.find((x) => x.revision === e.revision);
      if (full && !full.truncated) return full;
      this.log.warn('a large change came back without its object', { revision: e.revision });
    } catch (err) {
      this.log.warn('could not fetch a large change', { revision: e.revision, err: (err as Error).message });
    }
    return undefined;
  }

  /** Ends the watches that would have received a change of `key`: they re-list rather than miss it. */
  private expireMatching(key: string, reason: ApiError): void {
    for (const w of [...this.watchers]) {
      if (!key.startsWith(w.prefix)) continue;
      // Removed before it is told: a watcher that registers again from `expire` (the watch cache) stays registered.
      this.remove(w);
      w.expire(reason);
    }
  }

  private clearWatchers(): void {
    this.watchers.clear();
    this.clientWatchers = 0;
  }

  private dispatch(e: watch.ChangeEvent): void {
    let change: Change | undefined;
    const write = writeTraceOf(e);
    for (const w of this.watchers) {
      if (!e.key.startsWith(w.prefix)) continue;
      change ??= decodeChange(e);
      if (write && !w.internal) deliverLinked(write, change, (c) => w.deliver(c), w.traceContext, w.resource?.plural ?? w.prefix);
      else w.deliver(change);
    }
  }

  private expireAll(reason: ApiError): void {
    const expired = [...this.watchers];
    // Cleared before they are told: a watcher that registers again from `expire` (the watch cache, the definitions' watch) stays registered.
    this.clearWatchers();
    for (const w of expired) w.expire(reason);
  }
}
