import type { ApiObject, StoredKey } from '@svc/apimachinery';
import type { CallOptions } from '@svc/service-kit';
import type { ListPage, ListRequestOptions, PreconditionOptions, ReadAtOptions, StoredResult, WriteOptions } from '@svc/storage/client';

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
}
