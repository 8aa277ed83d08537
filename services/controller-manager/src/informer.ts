import { ApiError, type ApiObject, type Status } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { ApiClient, WatchEvent } from './client';
import { realClock, sleep, type Clock } from './clock';

/**
 * Shared informers, as client-go's: one list-watch per collection (and
 * selector) for the whole process, a local store of what it holds, and
 * event handlers that every controller interested in the collection adds.
 * The informer lists, watches from the list's resourceVersion, and lists
 * again when the watch ends (its timeout, which is the resync period, a
 * restart, a 410 Gone): every re-list hands every object to the handlers
 * again (as an update), so controllers look at everything once a period.
 * Failures are retried with a backoff that doubles up to a bound and resets
 * once a watch ran for a while.
 */

export interface ListResult {
  resourceVersion: string;
  items: ApiObject[];
}

/** Where an informer's objects come from; the API through `apiListWatch`, a fake in tests. */
export interface ListWatchSource {
  list(): Promise<ListResult>;
  /** Streams events after `resourceVersion`; resolves when the server ends the watch, rejects when it fails, returns once `signal` aborts. */
  watch(resourceVersion: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void>;
}

/** A collection of the API (`/api/v1/namespaces`, with an optional `fieldSelector=...` query), watched for `timeoutSeconds` at a time. */
export function apiListWatch(client: Pick<ApiClient, 'request' | 'watch'>, collection: string, opts: { query?: string; timeoutSeconds: number }): ListWatchSource {
  const extra = opts.query ? `&${opts.query}` : '';
  return {
    async list() {
      const list = await client.request<{ metadata?: { resourceVersion?: string }; items?: ApiObject[] }>('GET', `${collection}${opts.query ? `?${opts.query}` : ''}`);
      return { resourceVersion: list.metadata?.resourceVersion ?? '', items: list.items ?? [] };
    },
    watch(resourceVersion, onEvent, signal) {
      const timeout = Math.max(1, Math.round(opts.timeoutSeconds));
      return client.watch(`${collection}?watch=true&allowWatchBookmarks=true&timeoutSeconds=${timeout}&resourceVersion=${encodeURIComponent(resourceVersion)}${extra}`, onEvent, signal);
    },
  };
}

/** What a controller is told; an update also comes for every object at each re-list. */
export interface InformerEventHandler {
  onAdd?(obj: ApiObject): void;
  onUpdate?(oldObj: ApiObject, newObj: ApiObject): void;
  onDelete?(obj: ApiObject): void;
}

/** The store key of an object: `namespace/name`, or `name` for a cluster-scoped one. */
export function objectKey(obj: ApiObject): string {
  const ns = obj.metadata?.namespace;
  return ns ? `${ns}/${obj.metadata?.name ?? ''}` : (obj.metadata?.name ?? '');
}

export interface InformerOptions {
  clock?: Clock;
  /** First retry delay after a failure (default 500 ms), doubled after each further one. */
  initialBackoffMs?: number;
  /** The bound of the retry delay (default 30 s). */
  maxBackoffMs?: number;
  /** A watch that lasted at least this long (default 1 s) ended normally; a shorter one counts as a failure. */
  minWatchMs?: number;
}

export class SharedInformer {
  private readonly store = new Map<string, ApiObject>();
  private readonly handlers: InformerEventHandler[] = [];
  private readonly abort = new AbortController();
  private readonly clock: Clock;
  private synced = false;
  private loop: Promise<void> | undefined;

  constructor(
    /** What it informs about, for logs. */
    readonly description: string,
    private readonly source: ListWatchSource,
    private readonly log: Logger,
    private readonly opts: InformerOptions = {},
  ) {
    this.clock = opts.clock ?? realClock;
  }

  /** Adds a handler; it is told about every object already in the store at once, as client-go does. */
  addEventHandler(handler: InformerEventHandler): void {
    this.handlers.push(handler);
    for (const obj of this.store.values()) this.dispatch([handler], (h) => h.onAdd?.(obj));
  }

  /** The first list has been delivered to the handlers. */
  hasSynced(): boolean {
    return this.synced;
  }

  get(key: string): ApiObject | undefined {
    return this.store.get(key);
  }

  list(): ApiObject[] {
    return [...this.store.values()];
  }

  get started(): boolean {
    return this.loop !== undefined;
  }

  run(): void {
    this.loop ??= this.listAndWatch();
  }

  async stop(): Promise<void> {
    this.abort.abort();
    await this.loop;
  }

  private async listAndWatch(): Promise<void> {
    let failures = 0;
    const backoff = async (): Promise<void> => {
      failures++;
      const initial = this.opts.initialBackoffMs ?? 500;
      const delay = Math.min(initial * 2 ** Math.min(failures - 1, 30), this.opts.maxBackoffMs ?? 30_000);
      await sleep(this.clock, delay, this.abort.signal);
    };
    while (!this.abort.signal.aborted) {
      let resourceVersion: string;
      try {
        const listed = await this.source.list();
        if (this.abort.signal.aborted) break;
        this.replace(listed.items);
        resourceVersion = listed.resourceVersion;
      } catch (err) {
        if (this.abort.signal.aborted) break;
        this.log.warn('list failed; retrying', { informer: this.description, err: (err as Error).message, failures: failures + 1 });
        await backoff();
        continue;
      }
      const watchAbort = new AbortController();
      const stopWatch = (): void => watchAbort.abort();
      this.abort.signal.addEventListener('abort', stopWatch, { once: true });
      const startedAt = this.clock.now();
      let ended: { gone: boolean; err?: Error } = { gone: false };
      try {
        await this.source.watch(
          resourceVersion,
          (e) => {
            if (watchAbort.signal.aborted) return;
            if (e.type === 'ERROR') {
              const status = e.object as unknown as Status;
              ended = { gone: status.code === 410, ...(status.code === 410 ? {} : { err: new Error(status.message ?? 'watch error') }) };
              watchAbort.abort();
              return;
            }
            this.apply(e);
          },
          watchAbort.signal,
        );
      } catch (err) {
        const gone = err instanceof ApiError && err.code === 410;
        ended = { gone, ...(gone ? {} : { err: err as Error }) };
      } finally {
        this.abort.signal.removeEventListener('abort', stopWatch);
      }
      if (this.abort.signal.aborted) break;
      if (ended.err) {
        this.log.warn('watch failed; listing again', { informer: this.description, err: ended.err.message, failures: failures + 1 });
        await backoff();
      } else if (this.clock.now() - startedAt < (this.opts.minWatchMs ?? 1000)) {
        // Ended at once (a 410 for a revision already compacted, a server going away): do not spin.
        if (ended.gone) this.log.info('watch expired (410); listing again', { informer: this.description });
        await backoff();
      } else {
        failures = 0;
      }
    }
  }

  /** A fresh list: new objects are added, known ones updated, missing ones deleted. */
  private replace(items: ApiObject[]): void {
    const seen = new Set<string>();
    for (const obj of items) {
      const key = objectKey(obj);
      seen.add(key);
      const old = this.store.get(key);
      this.store.set(key, obj);
      this.dispatch(this.handlers, (h) => (old ? h.onUpdate?.(old, obj) : h.onAdd?.(obj)));
    }
    for (const [key, old] of [...this.store]) {
      if (seen.has(key)) continue;
      this.store.delete(key);
      this.dispatch(this.handlers, (h) => h.onDelete?.(old));
    }
    this.synced = true;
  }

  private apply(e: WatchEvent): void {
    if (e.type !== 'ADDED' && e.type !== 'MODIFIED' && e.type !== 'DELETED') return;
    const key = objectKey(e.object);
    const old = this.store.get(key);
    if (e.type === 'DELETED') {
      this.store.delete(key);
      this.dispatch(this.handlers, (h) => h.onDelete?.(e.object));
      return;
    }
    this.store.set(key, e.object);
    this.dispatch(this.handlers, (h) => (old ? h.onUpdate?.(old, e.object) : h.onAdd?.(e.object)));
  }

  private dispatch(handlers: InformerEventHandler[], call: (h: InformerEventHandler) => void): void {
    for (const h of handlers) {
      try {
        call(h);
      } catch (err) {
        this.log.error('event handler failed', { informer: this.description, err: (err as Error).message });
      }
    }
  }
}

/**
 * One informer per collection and query for the whole process, as client-go's
 * SharedInformerFactory: controllers ask for the informers they need before
 * `start`, and two controllers asking for the same collection share its one
 * watch. All of them list and watch with the factory's client.
 */
export class SharedInformerFactory {
  private readonly informers = new Map<string, SharedInformer>();
  private running = false;

  constructor(
    private readonly client: Pick<ApiClient, 'request' | 'watch'>,
    private readonly log: Logger,
    private readonly opts: { resyncMs: number } & InformerOptions,
  ) {}

  /** The informer of `collection` (with `query`, e.g. a field selector); started at once when the factory already runs. */
  informerFor(collection: string, query?: string): SharedInformer {
    const key = query ? `${collection}?${query}` : collection;
    let informer = this.informers.get(key);
    if (!informer) {
      const source = apiListWatch(this.client, collection, { timeoutSeconds: this.opts.resyncMs / 1000, ...(query ? { query } : {}) });
      informer = new SharedInformer(key, source, this.log, this.opts);
      this.informers.set(key, informer);
      if (this.running) informer.run();
    }
    return informer;
  }

  /** What the informers watch, for logs and tests. */
  get collections(): string[] {
    return [...this.informers.keys()];
  }

  start(): void {
    this.running = true;
    for (const i of this.informers.values()) i.run();
  }

  async stop(): Promise<void> {
    this.running = false;
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
  }
}
