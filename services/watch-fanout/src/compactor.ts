import type { Etcd3 } from 'etcd3';
import { REGISTRY_PREFIX } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';

/**
 * Keeps etcd's history bounded, as the original server's compactor does:
 * at every interval it compacts to the revision it noted one interval
 * earlier, so etcd keeps at least one interval of history (reads at an
 * older revision, and continue tokens from before it, get 410 Expired).
 * It never compacts past what the publisher has put on the bus, so the
 * publisher can always resume from etcd. Runs only on the leading replica.
 */
export class Compactor {
  private timer: NodeJS.Timeout | undefined;
  /** The head revision seen at the previous tick: the next compaction target. */
  private noted = 0;
  private lastCompacted = 0;

  constructor(
    private readonly etcd: Etcd3,
    private readonly intervalMs: number,
    private readonly log: Logger,
    /** The newest revision the bus has acknowledged. */
    private readonly published: () => number,
  ) {}

  start(): void {
    if (this.intervalMs <= 0 || this.timer) return;
    this.noted = 0;
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** The revision etcd was last compacted to by this replica (0 if never). */
  get compactedTo(): number {
    return this.lastCompacted;
  }

  private async tick(): Promise<void> {
    try {
      const target = Math.min(this.noted, this.published());
      if (target > this.lastCompacted) {
        try {
          await this.etcd.kv.compact({ revision: target });
          this.log.info('compacted etcd history', { revision: target });
        } catch (err) {
          // Another compactor (or an operator) got there first: nothing to do.
          if (!/compacted/.test((err as Error).message)) throw err;
        }
        this.lastCompacted = target;
      }
      this.noted = Number((await this.etcd.kv.range({ key: Buffer.from(REGISTRY_PREFIX), count_only: true })).header.revision);
    } catch (err) {
      this.log.warn('etcd compaction failed; retrying at the next interval', { err });
    }
  }
}
