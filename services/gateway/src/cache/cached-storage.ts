import { ApiError, collectionPrefix, decodeContinue, objectKey, parseFieldSelector, parseLabelSelector, type ApiObject, type ContinuePosition, type StoredKey } from '@svc/apimachinery';
import type { CallOptions, Logger } from '@svc/service-kit';
import type { ListPage, ListRequestOptions, PreconditionOptions, ReadAtOptions, StorageClient, StoredResult, WriteOptions } from '@svc/storage/client';
import type { ObjectStorage, SharedListPage } from '../registry/storage-interface';
import type { Change, SharedObject } from '../watch/change';
import type { WatchHub } from '../watch/watch-hub';
import { ResourceCache, type CacheLimits, type CachedPage } from './resource-cache';

/**
 * The storage interface with a watch cache in front of it (the original
 * server's cacher decorating its storage): the store and the handlers call
 * it as they call storage, and reads are answered from memory when the
 * cache can give the answer storage would give:
 *
 * - `resourceVersion=0` (any state): from the cache as it is;
 * - not older than a revision: from the cache once it has reached it;
 * - a consistent list (no resourceVersion): storage is asked for its
 *   current revision, and the cache answers once it has reached that
 *   revision (waiting at most `consistentReadWaitMs`, then storage
 *   answers);
 * - a consistent get: storage, as the original server reads it. Asking
 *   storage its revision costs the same round trip as the get, and right
 *   after a write the cache would still be waiting for the change;
 * - the later pages of a list: from the snapshot of the first page, while
 *   the cache's window of changes reaches back to it;
 * - an exact revision: storage.
 *
 * Whatever the cache cannot answer storage answers, so a cache that is
 * filling, behind, or lost its stream never serves stale data to a
 * consistent read. Writes go to storage; the cache learns of them from the
 * change stream like every other gateway's cache.
 */
export interface CacheOptions extends CacheLimits {
  /** How long a consistent list waits for the cache to reach storage's revision before storage answers it. */
  consistentReadWaitMs: number;
  /** A hub that has not known itself current for this long (the bus is down) is not waited for: storage answers at once. */
  staleStreamMs: number;
}

export const DEFAULT_CACHE_OPTIONS: CacheOptions = { windowChanges: 10_000, loadBatch: 5_000, joinedJsonBytes: 64 * 1024 * 1024, consistentReadWaitMs: 3_000, staleStreamMs: 10_000 };

/** A stored object from the cache: a copy of its own when read, the shared bytes when forwarded as they are. */
class CachedResult implements StoredResult {
  private parsed: ApiObject | undefined;

  constructor(private readonly shared: SharedObject) {}

  get revision(): number {
    return this.shared.revision;
  }

  get object(): ApiObject {
    this.parsed ??= this.shared.copy();
    return this.parsed;
  }

  get json(): Buffer | undefined {
    return this.parsed ? undefined : this.shared.json;
  }
}

/** A list page from the cache: the shared objects, and copies of their own for callers that read `items`. */
function listPageOf(cache: ResourceCache, page: CachedPage): SharedListPage {
  let items: ApiObject[] | undefined;
  const out: SharedListPage = {
    get items(): ApiObject[] {
      items ??= page.objects.map((o) => o.copy());
      return items;
    },
    set items(value: ApiObject[]) {
      items = value;
    },
    revision: page.revision,
    continueToken: page.continueToken,
    shared: page.objects,
    sharedJson: () => cache.joined.fragments(page.objects, page.consecutive),
  };
  if (page.remainingItemCount !== undefined) out.remainingItemCount = page.remainingItemCount;
  return out;
}

export class CachedStorage implements ObjectStorage {
  private readonly caches = new Map<string, ResourceCache>();
  private stopped = false;

  constructor(
    private readonly storage: StorageClient,
    private readonly hub: WatchHub,
    private readonly log: Logger,
    private readonly options: CacheOptions = DEFAULT_CACHE_OPTIONS,
  ) {}

  /**
   * The cache of a resource when it is ready. The first read of a resource
   * starts its cache (storage answers meanwhile); nothing is cached before
   * the gateway follows the change stream.
   */
  cacheOf(key: Pick<StoredKey, 'group' | 'resource'>): ResourceCache | undefined {
    if (this.stopped || !this.hub.isReady) return undefined;
    const id = collectionPrefix({ group: key.group, resource: key.resource, namespace: '' });
    let cache = this.caches.get(id);
    if (!cache) {
      cache = new ResourceCache({ group: key.group, resource: key.resource }, this.hub, (k, o) => this.storage.listEncoded(k, o, { timeoutMs: 60_000 }), this.log, this.options);
      this.caches.set(id, cache);
      cache.start();
    }
    return cache.state === 'ready' ? cache : undefined;
  }

  /** Objects held by each ready cache, by resource as the original's metrics name it (`pods`, `deployments.apps`). */
  objectCounts(): Map<string, number> {
    const counts = new Map<string, number>();
    for (const cache of this.caches.values()) {
      if (cache.state !== 'ready') continue;
      const { group, resource } = cache.resource;
      counts.set(group ? `${resource}.${group}` : resource, cache.size);
    }
    return counts;
  }

  stop(): void {
    this.stopped = true;
    for (const c of this.caches.values()) c.stop();
    this.caches.clear();
  }

  /**
   * The cache once it has reached `revision` (waiting at most `waitMs`), or
   * undefined (storage answers).
   */
  private async cacheAt(key: Pick<StoredKey, 'group' | 'resource'>, revision: number, waitMs: number): Promise<ResourceCache | undefined> {
    const cache = this.cacheOf(key);
    if (!cache) return undefined;
    if (cache.revision >= revision) return cache;
    if (waitMs <= 0 || this.hub.staleMs > this.options.staleStreamMs || !(await this.hub.waitFor(revision, waitMs))) return undefined;
    return cache.state === 'ready' && cache.revision >= revision ? cache : undefined;
  }

  /** The cache that can answer a read at `at` (after asking storage how current it must be), or undefined. */
  private async cacheFor(key: Pick<StoredKey, 'group' | 'resource'>, at: ReadAtOptions, waitMs: number, opts?: CallOptions): Promise<ResourceCache | undefined> {
    if ((at.revision ?? 0) > 0) return undefined;
    if (at.any) return this.cacheOf(key);
    if ((at.minRevision ?? 0) > 0) return this.cacheAt(key, at.minRevision ?? 0, waitMs);
    if (!this.cacheOf(key)) return undefined;
    const current = await this.storage.currentRevision(opts);
    return this.cacheAt(key, current, waitMs);
  }

  async get(key: StoredKey, at: ReadAtOptions = {}, opts?: CallOptions): Promise<StoredResult> {
    const cache = at.any || (at.minRevision ?? 0) > 0 ? await this.cacheFor(key, at, this.options.consistentReadWaitMs, opts) : undefined;
    if (!cache) return this.storage.get(key, at, opts);
    const shared = cache.object(objectKey(key));
    if (!shared) throw ApiError.notFound({ group: key.group, resource: key.resource }, key.name);
    return new CachedResult(shared);
  }

  async list(key: Omit<StoredKey, 'name'>, options: ListRequestOptions = {}, opts?: CallOptions): Promise<ListPage> {
    const page = await this.listFromCache(key, options, opts);
    return page ?? this.storage.list(key, options, opts);
  }

  private async listFromCache(key: Omit<StoredKey, 'name'>, options: ListRequestOptions, opts?: CallOptions): Promise<SharedListPage | undefined> {
    const prefix = collectionPrefix(key);
    const labels = parseLabelSelector(options.labelSelector);
    const fields = parseFieldSelector(options.fieldSelector);
    const limit = options.limit ?? 0;
    if (options.continueToken) {
      // A token that is not one goes to storage, which refuses it with the reason.
      const token = readContinue(options.continueToken);
      const cache = token ? this.cacheOf(key) : undefined;
      if (!token || !cache) return undefined;
      const page = cache.page(prefix, token.rv, token.start, limit, labels, fields);
      return page ? listPageOf(cache, page) : undefined;
    }
    const cache = await this.cacheFor(key, options.at ?? {}, this.options.consistentReadWaitMs, opts);
    if (!cache) return undefined;
    const page = cache.page(prefix, cache.revision, '', limit, labels, fields);
    return page ? listPageOf(cache, page) : undefined;
  }

  changesAfter(key: Omit<StoredKey, 'name'>, after: number, prefix: string): readonly Change[] | undefined {
    return this.cacheOf(key)?.changesAfter(after, prefix);
  }

  create(key: StoredKey, obj: ApiObject, opts?: WriteOptions): Promise<StoredResult> {
    return this.storage.create(key, obj, opts);
  }

  update(key: StoredKey, obj: ApiObject, pre?: PreconditionOptions, opts?: WriteOptions): Promise<StoredResult> {
    return this.storage.update(key, obj, pre, opts);
  }

  delete(key: StoredKey, pre?: PreconditionOptions, opts?: WriteOptions): Promise<StoredResult> {
    return this.storage.delete(key, pre, opts);
  }
}

/** The position a continue token names, or undefined when it is not a valid one. */
function readContinue(raw: string): ContinuePosition | undefined {
  try {
    return decodeContinue(raw);
  } catch {
    return undefined;
  }
}
