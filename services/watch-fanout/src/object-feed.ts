import { ApiError, REGISTRY_PREFIX, parseObjectKey, type ApiObject } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import type { Logger } from '@svc/service-kit';
import type { StorageClient } from '@svc/storage/client';
import type { WatchFanoutClient } from './client';

/**
 * Keeps in-memory state (RBAC's policy, the Node mode's graph, admission's
 * webhook configurations and policies) equal to
 * stored objects of a few kinds: one list of every kind at a single
 * revision, then the changes after it from watch-fanout's history, asked for
 * whenever its head moves (checked every `pollMs`). A change is in force
 * within that interval plus one call. When the history no longer reaches
 * back far enough (410), or a change came without its object, everything is
 * listed again. One loop serves all the kinds of a feed, however many key
 * prefixes they live under.
 */

/** A stored kind a feed follows. */
export interface FeedSource {
  group: string;
  resource: string;
  kind: string;
}

/** What a feed keeps up to date. */
export interface FeedSink {
  /** Forgets everything (a full list follows). */
  clear(): void;
  /** Applies a stored object (`deleted` for a DELETED event: only its name and namespace are set). */
  apply(kind: string, obj: ApiObject, deleted?: boolean): void;
  /** Counts for the log line of a full load. */
  readonly size: Record<string, number>;
}

const PAGE = 500;

/** The key prefixes that hold `sources`: a named group's as a whole, a core resource's alone. */
export function feedPrefixes(sources: FeedSource[]): string[] {
  return [...new Set(sources.map((s) => (s.group ? `${REGISTRY_PREFIX}${s.group}/` : `${REGISTRY_PREFIX}${s.resource}/`)))];
}

export interface ObjectFeedOptions {
  pollMs?: number;
  log: Logger;
  /** What the feed keeps, for its log lines ('RBAC policy', 'node graph'). */
  name: string;
}

export class ObjectFeed {
  private revision = 0;
  private synced = false;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private readonly kinds: Map<string, string>;
  private readonly prefixes: string[];
  private readonly name: string;

  constructor(
    private readonly sink: FeedSink,
    private readonly storage: StorageClient,
    private readonly fanout: WatchFanoutClient,
    private readonly opts: ObjectFeedOptions,
    private readonly sources: FeedSource[],
  ) {
    this.kinds = new Map(sources.map((s) => [`${s.group}/${s.resource}`, s.kind]));
    this.prefixes = feedPrefixes(sources);
    this.name = opts.name;
  }

  /** Whether the state has been read once (the sink is usable). */
  get ready(): boolean {
    return this.synced;
  }

  /** The revision the state is complete up to. */
  get position(): number {
    return this.revision;
  }

  start(): void {
    let failures = 0;
    const tick = (): void => {
      if (this.stopped) return;
      this.running = this.step()
        .then(() => {
          if (failures > 0) this.opts.log.info(`${this.name} updates resumed`, { failures });
          failures = 0;
        })
        .catch((err: unknown) => {
          // The first failure of a run is a warning; the rest of it (a peer still starting, say) is debug detail.
          if (failures++ === 0) this.opts.log.warn(`${this.name} update failed; retrying`, { err: (err as Error).message });
          else this.opts.log.debug(`${this.name} update failed again`, { err: (err as Error).message, failures });
        })
        .finally(() => {
          if (!this.stopped) this.timer = setTimeout(tick, this.opts.pollMs ?? 200);
        });
    };
    tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    await this.running;
  }

  /** Lists everything at one revision. */
  private async relist(): Promise<void> {
    const revision = await this.storage.currentRevision({ timeoutMs: 10000 });
    const objects: Array<[string, ApiObject]> = [];
    for (const { group, resource, kind } of this.sources) {
      let continueToken = '';
      do {
        const page = await this.storage.list({ group, resource, namespace: '' }, { at: { revision }, limit: PAGE, continueToken }, { timeoutMs: 30000 });
        for (const item of page.items) objects.push([kind, item]);
        continueToken = page.continueToken;
      } while (continueToken !== '');
    }
    this.sink.clear();
    for (const [kind, obj] of objects) this.sink.apply(kind, obj);
    this.revision = revision;
    this.synced = true;
    this.opts.log.info(`${this.name} loaded`, { revision, ...this.sink.size });
  }

  /** One round: list if never listed, else apply the changes since the last revision. */
  async step(): Promise<void> {
    if (!this.synced) return this.relist();
    const head = await this.fanout.head({ timeoutMs: 5000 });
    if (head.revision <= this.revision) return;
    try {
      // Each prefix is read up to the head of the replica that answers; the
      // state is complete up to the least of them (a change read twice is
      // applied twice, to the same result).
      let reached = Number.MAX_SAFE_INTEGER;
      for (const prefix of this.prefixes) reached = Math.min(reached, await this.catchUp(prefix));
      if (this.synced) this.revision = Math.max(this.revision, reached);
    } catch (err) {
      if (err instanceof ApiError && err.code === 410) {
        this.opts.log.warn(`${this.name} fell behind the change history; listing again`, { revision: this.revision });
        return this.relist();
      }
      throw err;
    }
  }

  /** Applies the changes under `prefix` after the current revision; the revision it reached. */
  private async catchUp(prefix: string): Promise<number> {
    let reached = this.revision;
    for await (const e of this.fanout.catchUp(this.revision, 0, prefix, { timeoutMs: 30000 })) {
      if (e.type !== watch.EventType.EVENT_TYPE_PROGRESS) this.applyEvent(e);
      reached = Math.max(reached, e.revision);
    }
    return reached;
  }

  private applyEvent(e: watch.ChangeEvent): void {
    const key = parseObjectKey(e.key);
    const kind = key ? this.kinds.get(`${key.group}/${key.resource}`) : undefined;
    if (!key || !kind) return;
    if (e.type === watch.EventType.EVENT_TYPE_DELETED) {
      this.sink.apply(kind, { metadata: { name: key.name, ...(key.namespace ? { namespace: key.namespace } : {}) } }, true);
      return;
    }
    if (e.truncated || e.object.length === 0) {
      // Too large for the bus and not in the history: read everything again.
      this.synced = false;
      return;
    }
    this.sink.apply(kind, JSON.parse(Buffer.from(e.object).toString('utf8')) as ApiObject);
  }
}
