/**
 * The storage service: the only etcd client. `start(config)` runs it;
 * `StorageClient` is how the other services call it.
 */
export { start, type StorageConfig, type StorageHandle } from './server';
export { StorageClient, type StoredResult, type ListPage, type ListRequestOptions, type ReadAtOptions, type WriteOptions, type PreconditionOptions } from './client';
export { DEFAULT_ETCD_MAX_REQUEST_BYTES, EtcdStore, type ReadAt, type Preconditions, type ListOptions, type ListResult, type StoredObject, type WriteInput } from './etcd-store';
export { STORAGE_FLAGS } from './flags';
