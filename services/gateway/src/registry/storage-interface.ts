import type { ApiObject, StoredKey } from '@svc/apimachinery';
import type { CallOptions } from '@svc/service-kit';
import type { ListPage, ListRequestOptions, PreconditionOptions, ReadAtOptions, StoredResult, WriteOptions } from '@svc/storage/client';
import type { Change, SharedObject } from '../watch/change';

/**
 * The one storage interface the generic store calls: get, list, create,
 * update (compare-and-swap) and delete of objects by key, in the version the
 * store serves. The storage service's client implements it; the version
 * conversion of custom resources decorates it (conversion/versioned-storage),
 * and a cache can decorate it the same way without the store or the handlers
 * knowing.
 */
export interface ObjectStorage {
  get(key: StoredKey, at?: ReadAtOptions, opts?: CallOptions): Promise<StoredResult>;
  list(key: Omit<StoredKey, 'name'>, options?: ListRequestOptions, opts?: CallOptions): Promise<ListPage>;
  create(key: StoredKey, obj: ApiObject, opts?: WriteOptions): Promise<StoredResult>;
  update(key: StoredKey, obj: ApiObject, pre?: PreconditionOptions, opts?: WriteOptions): Promise<StoredResult>;
  delete(key: StoredKey, pre?: PreconditionOptions, opts?: WriteOptions): Promise<StoredResult>;
  /**
   * The changes of a collection after `after`, in order, from what a cache
   * holds in memory; undefined when it does not reach back that far (a
   * watch then asks watch-fanout's history).
   */
  changesAfter?(key: Omit<StoredKey, 'name'>, after: number, prefix: string): readonly Change[] | undefined;
}

/**
 * A list page from the watch cache: besides `items` (copies the caller
 * owns, made when first read), the shared objects themselves, whose bytes
 * a response or a watch forwards without parsing or encoding them again.
 */
export interface SharedListPage extends ListPage {
  readonly shared: readonly SharedObject[];
  /** The items' JSON as fragments of one or more items joined by commas, in order (the cache keeps the joined runs between lists). */
  sharedJson(): Iterable<Buffer>;
}

/** The items' stored JSON as comma-joined fragments, for a page from the cache; undefined for another. */
export function sharedJsonOf(page: ListPage): Iterable<Buffer> | undefined {
  return 'shared' in page ? (page as SharedListPage).sharedJson() : undefined;
}

/** The shared objects of a page that has them (a page from the cache, not converted). */
export function sharedObjectsOf(page: ListPage): readonly SharedObject[] | undefined {
  return 'shared' in page ? (page as SharedListPage).shared : undefined;
}
