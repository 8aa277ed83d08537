import { collectionPrefix, encodeContinue, matchesSelectors, objectKey, type ApiObject, type FieldSelector, type LabelSelector, type StoredKey } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { EncodedListPage, ListRequestOptions } from '@svc/storage/client';
import { Change, SharedObject } from '../watch/change';
import type { HubWatcher, WatchHub } from '../watch/watch-hub';
import { JoinedJson } from './joined-json';

/**
 * The watch cache of one resource (every namespace of one group and
 * resource), as the original server's cacher keeps one: filled by one list
 * and kept current from the change stream the gateway already follows. It
 * holds every object (as shared, encoded-once instances) and a window of
 * the most recent changes, from which it can show the collection as it was
 * at any revision the window covers (so the pages of a list all come from
 * one snapshot) and from which watches resume without asking watch-fanout.
 *
 * Its state is complete up to `revision`: every change up to the hub's
 * position has been applied (the cache is one of the hub's watchers, and
 * the hub dispatches in revision order without gaps).
 */
export interface CacheLimits {
  /** Changes kept for snapshots and watch resumption. */
  windowChanges: number;
  /** Items read from storage per request while filling the cache. */
  loadBatch: number;
  /** Bytes of list items' JSON the cache keeps joined for lists (see JoinedJson); 0: none. */
  joinedJsonBytes: number;
}

export type CacheState = 'loading' | 'ready' | 'stopped';

/** A page of the collection from the cache: the shared objects and what the list's metadata says. */
export interface CachedPage {
  objects: SharedObject[];
  /** No selector left objects out: they follow each other in the collection. */
  consecutive: boolean;
  revision: number;
  continueToken: string;
  remainingItemCount?: number;
}

/** How the cache fills itself: a page of storage's list at one revision. */
export type ListSource = (key: Omit<StoredKey, 'name'>, options: ListRequestOptions) => Promise<EncodedListPage>;

/** The first index of `sorted` whose key is not less than `key`. */
function lowerBound(sorted: readonly string[], key: string): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((sorted[mid] as string) < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

export class ResourceCache {
  private readonly objects = new Map<string, SharedObject>();
  /** The keys of `objects` in storage's order, rebuilt when keys come or go. */
  private sorted: string[] | undefined;
  /** Recent changes, oldest first; the window holds every change after `windowFrom`. */
  private window: Change[] = [];
  private windowFrom = 0;
  private applied = 0;
  private status: CacheState = 'loading';
  private buffered: Change[] = [];
  private detach: (() => void) | undefined;
  private readonly watcher: HubWatcher;
  private loads = 0;
  /** The JSON of consecutive objects joined once for the lists that write them. */
  readonly joined: JoinedJson;

  constructor(
    readonly resource: { group: string; resource: string },
    private readonly hub: WatchHub,
    private readonly source: ListSource,
    private readonly log: Logger,
    private readonly limits: CacheLimits,
  ) {
    this.watcher = {
      prefix: collectionPrefix({ ...resource, namespace: '' }),
      deliver: (c) => this.onChange(c),
      expire: (reason) => {
        this.log.warn('watch cache: the change stream lost continuity; filling it again', { resource: this.prefix, reason: reason.message });
        this.restart();
      },
      end: () => this.stop(),
      internal: true,
    };
    this.joined = new JoinedJson(limits.joinedJsonBytes);
  }

  get prefix(): string {
    return this.watcher.prefix;
  }

  get state(): CacheState {
    return this.status;
  }

  /** The revision the cache's state is complete up to (0 while it is not ready). */
  get revision(): number {
    return this.status === 'ready' ? Math.max(this.applied, this.hub.revision) : 0;
  }

  get size(): number {
    return this.objects.size;
  }

  /** Starts following the stream and fills the cache. */
  start(): void {
    this.restart();
  }

  stop(): void {
    this.status = 'stopped';
    this.detach?.();
    this.detach = undefined;
    this.objects.clear();
    this.sorted = undefined;
    this.window = [];
    this.buffered = [];
    this.joined.clear();
  }

  private restart(): void {
    if (this.status === 'stopped') return;
    this.status = 'loading';
    this.detach?.();
    this.buffered = [];
    this.detach = this.hub.register(this.watcher).detach;
    const load = ++this.loads;
    void this.load(load);
  }

  private async load(load: number): Promise<void> {
    let wait = 250;
    while (load === this.loads && this.status === 'loading') {
      try {
        const objects = new Map<string, SharedObject>();
        let revision = 0;
        let continueToken = '';
        do {
          const page = await this.source({ ...this.resource, namespace: '' }, { limit: this.limits.loadBatch, ...(continueToken ? { continueToken } : {}) });
          revision ||= page.revision;
          for (const json of page.items) {
            const obj = JSON.parse(json.toString('utf8')) as ApiObject;
            const key = objectKey({ ...this.resource, namespace: obj.metadata?.namespace ?? '', name: obj.metadata?.name ?? '' });
            objects.set(key, new SharedObject(key, json, Number(obj.metadata?.resourceVersion ?? 0) || 0));
          }
          continueToken = page.continueToken;
        } while (continueToken);
        if (load !== this.loads || this.status !== 'loading') return;
        this.objects.clear();
        this.joined.clear();
        for (const [k, v] of objects) this.objects.set(k, v);
        this.sorted = undefined;
        this.window = [];
        this.windowFrom = revision;
        this.applied = revision;
        this.status = 'ready';
        for (const c of this.buffered.splice(0)) this.apply(c);
        this.log.info('watch cache filled', { resource: this.prefix, objects: this.objects.size, revision });
        return;
      } catch (err) {
        this.log.warn('watch cache: could not list; retrying', { resource: this.prefix, err: (err as Error).message });
        await new Promise((r) => setTimeout(r, wait));
        wait = Math.min(wait * 2, 5000);
      }
    }
  }

  private onChange(c: Change): void {
    if (this.status === 'loading') this.buffered.push(c);
    else if (this.status === 'ready') this.apply(c);
  }

  private apply(c: Change): void {
    if (c.revision <= this.applied) return;
    const had = this.objects.has(c.key);
    if (c.type === 'DELETED' || !c.object) {
      this.objects.delete(c.key);
      this.joined.forget(c.key);
      if (had && this.sorted) this.sorted.splice(lowerBound(this.sorted, c.key), 1);
    } else {
      this.objects.set(c.key, c.object);
      if (!had && this.sorted) this.sorted.splice(lowerBound(this.sorted, c.key), 0, c.key);
    }
    this.window.push(c);
    if (this.window.length > this.limits.windowChanges * 1.25) {
      const drop = this.window.length - this.limits.windowChanges;
      this.windowFrom = (this.window[drop - 1] as Change).revision;
      this.window = this.window.slice(drop);
    }
    this.applied = c.revision;
  }

  private sortedKeys(): string[] {
    this.sorted ??= [...this.objects.keys()].sort();
    return this.sorted;
  }

  /** One object as the cache holds it now. */
  object(key: string): SharedObject | undefined {
    return this.objects.get(key);
  }

  /**
   * The changes after `after` up to the cache's revision under `prefix`, or
   * undefined when the window no longer reaches back to `after`.
   */
  changesAfter(after: number, prefix: string): Change[] | undefined {
    if (this.status !== 'ready' || after < this.windowFrom) return undefined;
    const from = this.firstAfter(after);
    const out: Change[] = [];
    for (let i = from; i < this.window.length; i++) {
      const c = this.window[i] as Change;
      if (c.key.startsWith(prefix)) out.push(c);
    }
    return out;
  }

  private firstAfter(revision: number): number {
    let lo = 0;
    let hi = this.window.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if ((this.window[mid] as Change).revision <= revision) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /**
   * A page of the collection under `prefix` as it was at `revision` (the
   * cache's revision, or an older one the window covers), starting at the
   * key `start` (relative to `prefix`), selected by the selectors. Undefined
   * when the cache cannot show that revision.
   */
  page(prefix: string, revision: number, start: string, limit: number, labels: LabelSelector, fields: FieldSelector): CachedPage | undefined {
    const current = this.revision;
    if (this.status !== 'ready' || revision > current || revision < this.windowFrom) return undefined;
    const view = revision >= this.applied ? this.currentView() : this.pastView(revision);
    if (!view) return undefined;
    const filtering = !labels.empty || !fields.empty;
    const want = limit > 0 ? limit : Number.POSITIVE_INFINITY;
    const objects: SharedObject[] = [];
    const { keys, at } = view;
    let i = lowerBound(keys, prefix + start);
    let last = '';
    let more = false;
    for (; i < keys.length; i++) {
      const key = keys[i] as string;
      if (!key.startsWith(prefix)) break;
      const obj = at(key);
      if (!obj) continue;
      if (filtering && !matchesSelectors(obj.object, labels, fields)) continue;
      if (objects.length >= want) {
        more = true;
        break;
      }
      objects.push(obj);
      last = key;
    }
    const page: CachedPage = { objects, consecutive: !filtering, revision, continueToken: '' };
    if (more) {
      page.continueToken = encodeContinue(revision, last.slice(prefix.length) + '\u0000');
      if (!filtering) {
        let remaining = 0;
        for (; i < keys.length && (keys[i] as string).startsWith(prefix); i++) if (at(keys[i] as string)) remaining++;
        page.remainingItemCount = remaining;
      }
    }
    return page;
  }

  private currentView(): { keys: string[]; at: (key: string) => SharedObject | undefined } {
    return { keys: this.sortedKeys(), at: (key) => this.objects.get(key) };
  }

  /** The collection at an older revision: the current state with the window's later changes undone. */
  private pastView(revision: number): { keys: string[]; at: (key: string) => SharedObject | undefined } | undefined {
    const undone = new Map<string, SharedObject | null>();
    for (let i = this.window.length - 1; i >= 0; i--) {
      const c = this.window[i] as Change;
      if (c.revision <= revision) break;
      if (c.type !== 'ADDED' && !c.prev) return undefined;
      undone.set(c.key, c.type === 'ADDED' ? null : (c.prev as SharedObject));
    }
    const current = this.sortedKeys();
    const extra = [...undone.keys()].filter((k) => !this.objects.has(k) && undone.get(k));
    const keys = extra.length > 0 ? [...current, ...extra].sort() : current;
    return {
      keys,
      at: (key) => {
        const past = undone.get(key);
        if (past === null) return undefined;
        return past ?? this.objects.get(key);
      },
    };
  }
}
