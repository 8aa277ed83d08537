import { ApiError } from '@svc/apimachinery';
import { watch } from '@svc/proto';

/**
 * The history window: every published change of the last few minutes, in
 * revision order, bounded by age and by bytes (whichever drops more). It is
 * complete from `completeFrom` on: a catch-up after any revision at or past
 * that point misses nothing; one before it is answered 410 Expired (the
 * client re-lists). Time is injected so tests control it.
 */
export interface HistoryEntry {
  event: watch.ChangeEvent;
  /** When the entry was appended, ms since the epoch. */
  at: number;
}

export type AppendOutcome = 'appended' | 'duplicate' | 'reset';

/** What an entry costs to hold: its bytes plus a fixed overhead for the objects around them. */
function sizeOf(event: watch.ChangeEvent): number {
  return event.object.length + event.prevObject.length + event.key.length + 128;
}

export class History {
  private entries: HistoryEntry[] = [];
  private heldBytes = 0;
  /** Every change after this revision is in `entries` (0 = nothing known yet). */
  private complete = 0;
  private last = 0;
  private readonly waiters = new Set<() => void>();

  constructor(
    private readonly windowMs: number,
    private readonly now: () => number = Date.now,
    private readonly maxBytes = Number.POSITIVE_INFINITY,
  ) {}

  /** Bytes the entries hold (as `sizeOf` counts them). */
  get bytes(): number {
    return this.heldBytes;
  }

  /** Revision after which history is complete; -1 before anything is known. */
  get completeFrom(): number {
    return this.last === 0 && this.complete === 0 ? -1 : this.complete;
  }

  /** Newest revision the history is complete up to. */
  get head(): number {
    return this.last;
  }

  get size(): number {
    return this.entries.length;
  }

  /**
   * Adds the next published event. An event whose prev_revision does not
   * link to the head starts the history afresh (a reset published by a new
   * leader, or the first event this replica sees).
   */
  append(event: watch.ChangeEvent): AppendOutcome {
    if (event.revision <= this.last) return 'duplicate';
    let outcome: AppendOutcome = 'appended';
    if (this.last === 0 || event.prevRevision !== this.last) {
      this.entries = [];
      this.heldBytes = 0;
      this.complete = event.type === watch.EventType.EVENT_TYPE_PROGRESS && event.prevRevision === 0 ? event.revision : event.prevRevision;
      outcome = this.last === 0 ? 'appended' : 'reset';
    }
    if (event.type !== watch.EventType.EVENT_TYPE_PROGRESS) {
      this.entries.push({ event, at: this.now() });
      this.heldBytes += sizeOf(event);
    }
    this.last = event.revision;
    this.prune();
    for (const w of this.waiters) w();
    return outcome;
  }

  /** Drops entries older than the window or past the byte bound; history stays complete after the last one dropped. */
  prune(): void {
    const cutoff = this.now() - this.windowMs;
    let drop = 0;
    while (drop < this.entries.length && ((this.entries[drop] as HistoryEntry).at < cutoff || this.heldBytes > this.maxBytes)) {
      this.heldBytes -= sizeOf((this.entries[drop] as HistoryEntry).event);
      drop++;
    }
    if (drop > 0) {
      this.complete = (this.entries[drop - 1] as HistoryEntry).event.revision;
      this.entries = this.entries.slice(drop);
    }
  }

  /**
   * Events with after < revision <= until (until 0 = head) whose key starts
   * with `prefix`, or 410 when `after` is older than the window.
   */
  range(after: number, until: number, prefix: string): watch.ChangeEvent[] {
    this.prune();
    if (this.completeFrom < 0 || after < this.complete) {
      throw ApiError.expired(`too old resource version: ${after} (${Math.max(this.complete, 0)})`);
    }
    const upTo = until > 0 ? until : this.last;
    const out: watch.ChangeEvent[] = [];
    // Binary search for the first entry after `after`.
    let lo = 0;
    let hi = this.entries.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.entries[mid] as HistoryEntry).event.revision <= after) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < this.entries.length; i++) {
      const e = (this.entries[i] as HistoryEntry).event;
      if (e.revision > upTo) break;
      if (e.key.startsWith(prefix)) out.push(e);
    }
    return out;
  }

  /** Resolves once the head reaches `revision`, or rejects with 504 after `timeoutMs`. */
  waitFor(revision: number, timeoutMs: number, signal?: AbortSignal): Promise<void> {
    if (this.last >= revision) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const done = (): void => {
        clearTimeout(timer);
        this.waiters.delete(check);
        signal?.removeEventListener('abort', onAbort);
      };
      const check = (): void => {
        if (this.last >= revision) {
          done();
          resolve();
        }
      };
      const onAbort = (): void => {
        done();
        reject(ApiError.timeout('catch-up cancelled'));
      };
      const timer = setTimeout(() => {
        done();
        reject(ApiError.tooLargeResourceVersion(revision, this.last));
      }, timeoutMs);
      this.waiters.add(check);
      signal?.addEventListener('abort', onAbort);
    });
  }
}
