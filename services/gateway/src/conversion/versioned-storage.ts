import { checkAgainstSchema, groupVersion, type ApiObject, type ResourceDefinition, type StorageVersioning, type StoredKey } from '@svc/apimachinery';
import type { CallOptions } from '@svc/service-kit';
import type { ListPage, ListRequestOptions, PreconditionOptions, ReadAtOptions, StoredResult, WriteOptions } from '@svc/storage/client';
import type { ObjectStorage } from '../registry/storage-interface';
import { converterFor, type ObjectConverter, type WebhookConverterOptions } from './converter';

export type { ObjectStorage } from '../registry/storage-interface';

/** Reads stored objects as a served version sees them, and writes them in the storage version. */
export class VersionedObjects {
  private readonly servedVersion: string;
  private readonly storageVersion: string;

  constructor(
    private readonly def: ResourceDefinition,
    private readonly versioning: StorageVersioning,
    private readonly converter: ObjectConverter,
  ) {
    this.servedVersion = groupVersion(def);
    this.storageVersion = groupVersion({ group: (def.storedAs ?? def).group, version: versioning.storageVersion });
  }

  /** Stored objects (not changed) as the served version shows them. */
  async fromStorage(objects: readonly ApiObject[]): Promise<ApiObject[]> {
    const defaulted = objects.map((o) => {
      const copy = structuredClone(o);
      this.versioning.applyVersionDefaults(copy);
      return copy;
    });
    const converted = await this.converter.convert(defaulted, this.servedVersion);
    return converted.map((o) => {
      const pruned = checkAgainstSchema(o, this.def.schema).pruned as ApiObject;
      this.def.strategy.applyDefaults?.(pruned);
      return pruned;
    });
  }

  /** An object of the served version as it is stored: converted, and pruned to the storage version's schema. */
  async toStorage(obj: ApiObject): Promise<ApiObject> {
    const [converted] = await this.converter.convert([obj], this.storageVersion);
    const schema = this.versioning.schemaOf(this.storageVersion);
    return schema ? (checkAgainstSchema(converted, schema).pruned as ApiObject) : (converted as ApiObject);
  }
}

/**
 * The storage of one served version of a kind stored in another version
 * (custom resources), decorating the storage interface as the upstream CRD
 * handler's storage codec does: an object is converted to the storage
 * version and pruned to its schema before it is written, and whatever
 * storage answers is read as upstream decodes it: the defaults of the
 * version it was stored in, conversion to the served version, pruning of
 * what the served version's schema does not know, then (so a field the
 * served version defaults is never missing, whatever the conversion did)
 * the served version's defaults.
 */
class VersionedStorage implements ObjectStorage {
  constructor(
    private readonly storage: ObjectStorage,
    private readonly objects: VersionedObjects,
  ) {}

  private async read(result: StoredResult): Promise<StoredResult> {
    const [object] = await this.objects.fromStorage([result.object]);
    // Staleness (encryption at rest) is about the stored value, whichever version it is read as.
    return { object: object as ApiObject, revision: result.revision, ...(result.stale ? { stale: true } : {}) };
  }

  async get(key: StoredKey, at?: ReadAtOptions, opts?: CallOptions): Promise<StoredResult> {
    return this.read(await this.storage.get(key, at, opts));
  }

  async list(key: Omit<StoredKey, 'name'>, options?: ListRequestOptions, opts?: CallOptions): Promise<ListPage> {
    const { items, revision, continueToken, remainingItemCount } = await this.storage.list(key, options, opts);
    const page: ListPage = { items: await this.objects.fromStorage(items), revision, continueToken };
    if (remainingItemCount !== undefined) page.remainingItemCount = remainingItemCount;
    return page;
  }

  async create(key: StoredKey, obj: ApiObject, opts?: WriteOptions): Promise<StoredResult> {
    return this.read(await this.storage.create(key, await this.objects.toStorage(obj), opts));
  }

  async update(key: StoredKey, obj: ApiObject, pre?: PreconditionOptions, opts?: WriteOptions): Promise<StoredResult> {
    return this.read(await this.storage.update(key, await this.objects.toStorage(obj), pre, opts));
  }

  async delete(key: StoredKey, pre?: PreconditionOptions, opts?: WriteOptions): Promise<StoredResult> {
    return this.read(await this.storage.delete(key, pre, opts));
  }
}

/** How stored objects of `def` are presented, or undefined when they are stored as served. */
export function versionedObjects(def: ResourceDefinition, options?: WebhookConverterOptions): VersionedObjects | undefined {
  const versioning = def.storageVersioning;
  return versioning ? new VersionedObjects(def, versioning, converterFor(versioning.conversion, options)) : undefined;
}

/** The storage of one served version: `storage` itself, or a converting view of it. */
export function storageFor(storage: ObjectStorage, def: ResourceDefinition, options?: WebhookConverterOptions): ObjectStorage {
  const objects = versionedObjects(def, options);
  return objects ? new VersionedStorage(storage, objects) : storage;
}
