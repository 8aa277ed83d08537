import type { ApiObject, StoredKey } from '@svc/apimachinery';
import { storage } from '@svc/proto';
import { CallStream, callUnary, type CallOptions, channelTo, type InternalTls, boundMethod } from '@svc/service-kit';

/** Options and results of the storage client; objects in and out as parsed JSON. */
export interface ReadAtOptions {
  /** Exactly this revision. */
  revision?: number;
  /** A state not older than this revision. */
  minRevision?: number;
  /**
   * Any state the server holds (resourceVersion "0"): a cache may answer
   * from what it has without asking storage how current it is. Storage
   * itself reads the latest state.
   */
  any?: boolean;
}

export interface StoredResult {
  readonly object: ApiObject;
  readonly revision: number;
  /**
   * The object's JSON exactly as storage answered it, for a caller that
   * forwards it unchanged. Present only while `object` has not been read
   * (so it cannot have been changed since).
   */
  readonly json?: Buffer;
  /**
   * Get only: etcd holds the object as another key or provider than the
   * encryption configuration's first wrote it; an update that changes
   * nothing is written all the same (key rotation rewrites it).
   */
  readonly stale?: boolean;
}

export interface ListPage {
  items: ApiObject[];
  revision: number;
  continueToken: string;
  remainingItemCount?: number;
}

/** A page whose items are their JSON as storage holds them. */
export interface EncodedListPage {
  items: Buffer[];
  revision: number;
  continueToken: string;
  remainingItemCount?: number;
}

export interface ListRequestOptions {
  at?: ReadAtOptions;
  limit?: number;
  continueToken?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface WriteOptions extends CallOptions {
  dryRun?: boolean;
}

export interface PreconditionOptions {
  revision?: number;
  uid?: string;
}

function parse(bytes: Uint8Array): ApiObject {
  return JSON.parse(Buffer.from(bytes).toString('utf8')) as ApiObject;
}

/** A storage answer whose object is parsed on first use. */
class Answer implements StoredResult {
  private parsed: ApiObject | undefined;
  stale?: boolean;

  constructor(
    private readonly bytes: Uint8Array,
    readonly revision: number,
  ) {}

  get object(): ApiObject {
    this.parsed ??= parse(this.bytes);
    return this.parsed;
  }

  get json(): Buffer | undefined {
    return this.parsed ? undefined : Buffer.from(this.bytes.buffer, this.bytes.byteOffset, this.bytes.byteLength);
  }
}

function encode(obj: ApiObject): Buffer {
  return Buffer.from(JSON.stringify(obj));
}

/**
 * Typed client of the storage service. Get, create, update, delete and
 * currentRevision travel on the service's Calls stream; list is unary.
 */
export class StorageClient {
  private readonly client: storage.StorageClient;
  private readonly calls: CallStream;

  constructor(address: string, tls: InternalTls) {
    this.client = new storage.StorageClient(...channelTo(address, 'storage', tls));
    this.calls = new CallStream('storage', () => this.client.calls(), { channel: () => this.client.getChannel() });
  }

  close(): void {
    this.calls.close();
    this.client.close();
  }

  async get(key: StoredKey, at: ReadAtOptions = {}, opts?: CallOptions): Promise<StoredResult> {
    const res = await this.calls.call(storage.StorageService.get, { key, at: { revision: at.revision ?? 0, minRevision: at.minRevision ?? 0 } }, opts);
    const answer = new Answer(res.object, res.revision);
    if (res.stale) answer.stale = true;
    return answer;
  }

  async list(key: Omit<StoredKey, 'name'>, options: ListRequestOptions = {}, opts?: CallOptions): Promise<ListPage> {
    const { items, ...rest } = await this.listEncoded(key, options, opts);
    return { ...rest, items: items.map(parse) };
  }

  /** A page as storage answered it: each item's JSON, not parsed. */
  async listEncoded(key: Omit<StoredKey, 'name'>, options: ListRequestOptions = {}, opts?: CallOptions): Promise<EncodedListPage> {
    const res = await callUnary(
      'storage',
      boundMethod(this.client, this.client.list),
      {
        key: { ...key, name: '' },
        at: { revision: options.at?.revision ?? 0, minRevision: options.at?.minRevision ?? 0 },
        limit: options.limit ?? 0,
        continueToken: options.continueToken ?? '',
        labelSelector: options.labelSelector ?? '',
        fieldSelector: options.fieldSelector ?? '',
      },
      opts,
    );
    const page: EncodedListPage = {
      items: res.items.map((b) => Buffer.from(b.buffer, b.byteOffset, b.byteLength)),
      revision: res.revision,
      continueToken: res.continueToken,
    };
    if (res.remainingItemCount !== undefined) page.remainingItemCount = res.remainingItemCount;
    return page;
  }

  async create(key: StoredKey, obj: ApiObject, opts: WriteOptions = {}): Promise<StoredResult> {
    const res = await this.calls.call(storage.StorageService.create, { key, object: encode(obj), dryRun: opts.dryRun ?? false }, opts);
    return new Answer(res.object, res.revision);
  }

  async update(key: StoredKey, obj: ApiObject, pre: PreconditionOptions = {}, opts: WriteOptions = {}): Promise<StoredResult> {
    const res = await this.calls.call(
      storage.StorageService.update,
      { key, object: encode(obj), preconditions: { revision: pre.revision ?? 0, uid: pre.uid ?? '' }, dryRun: opts.dryRun ?? false },
      opts,
    );
    return new Answer(res.object, res.revision);
  }

  async delete(key: StoredKey, pre: PreconditionOptions = {}, opts: WriteOptions = {}): Promise<StoredResult> {
    const res = await this.calls.call(
      storage.StorageService.delete,
      { key, preconditions: { revision: pre.revision ?? 0, uid: pre.uid ?? '' }, dryRun: opts.dryRun ?? false },
      opts,
    );
    return new Answer(res.object, res.revision);
  }

  async currentRevision(opts?: CallOptions): Promise<number> {
    const res = await this.calls.call(storage.StorageService.currentRevision, {}, opts);
    return res.revision;
  }
}
