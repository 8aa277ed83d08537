import { Etcd3, type IKeyValue, type IRangeResponse, type IOptions, type ITxnResponse } from 'etcd3';
import { etcdClientOptions } from './etcd-options';
import { observeEtcd, etcdType, type EtcdCall } from './etcd-observe';
import { withWriteTrace } from './write-trace';
import { PLAIN_TRANSFORMER, ValueTransformError, type ValueTransformer } from './encryption/transformer';
import {
  ApiError,
  collectionPrefix,
  decodeContinue,
  encodeContinue,
  matchesSelectors,
  namespaceTerminating,
  namespaceTerminatingError,
  objectKey,
  parseFieldSelector,
  parseLabelSelector,
  removeResourceVersion,
  resourceVersionLayout,
  spliceResourceVersion,
  type ApiObject,
  type GroupResource,
  type StoredKey,
} from '@svc/apimachinery';

/**
 * The storage interface over etcd. Objects are stored as JSON without
 * `metadata.resourceVersion`; reads put the key's mod revision there. Every
 * etcd failure is turned into an ApiError here and nowhere else.
 */

export interface ReadAt {
  /** Exactly this revision; 0 = most recent. */
  revision?: number;
  /** Any revision at least this new; 0 = no bound. */
  minRevision?: number;
}

export interface Preconditions {
  revision?: number;
  uid?: string;
}

export interface StoredObject {
  readonly object: ApiObject;
  /** JSON of `object`, as sent to clients. */
  readonly json: Buffer;
  readonly revision: number;
  /** Get only: etcd holds the value as another key or provider than the configuration's first would write it. */
  readonly stale?: boolean;
}

/**
 * An object to write: parsed, or its JSON as the caller sent it. JSON as
 * JSON.stringify writes it is stored and answered without being parsed
 * (the resourceVersion is spliced out and in); any other is parsed.
 */
export type WriteInput = ApiObject | Uint8Array;

export interface ListOptions {
  at?: ReadAt;
  limit?: number;
  continueToken?: string;
  labelSelector?: string;
  fieldSelector?: string;
}

export interface ListResult {
  items: Buffer[];
  revision: number;
  continueToken: string;
  remainingItemCount?: number;
}

const CONFLICT_MESSAGE = 'the object has been modified; please apply your changes to the latest version and try again';
/** How long a read waits for a revision the store has not reached yet. */
const FUTURE_REVISION_WAIT_MS = 3000;

function prefixEnd(prefix: Buffer): Buffer {
  const end = Buffer.from(prefix);
  for (let i = end.length - 1; i >= 0; i--) {
    if ((end[i] as number) < 0xff) {
      end[i] = (end[i] as number) + 1;
      return end.subarray(0, i + 1);
    }
  }
  return Buffer.from([0]);
}

function groupResource(k: Pick<StoredKey, 'group' | 'resource'>): GroupResource {
  return { group: k.group, resource: k.resource };
}

/** Serialises an object for etcd: resourceVersion is never stored. */
export function encodeForStore(obj: ApiObject): Buffer {
  const meta = obj.metadata;
  if (meta && meta.resourceVersion !== undefined) {
    const { resourceVersion: _omit, ...rest } = meta;
    return Buffer.from(JSON.stringify({ ...obj, metadata: rest }));
  }
  return Buffer.from(JSON.stringify(obj));
}

/** An object as answered: its JSON, parsed on first use (most answers are only forwarded). */
class StoredJson implements StoredObject {
  private parsed: ApiObject | undefined;

  constructor(
    readonly json: Buffer,
    readonly revision: number,
  ) {}

  get object(): ApiObject {
    this.parsed ??= JSON.parse(this.json.toString('utf8')) as ApiObject;
    return this.parsed;
  }
}

/**
 * A stored value as read at `revision`: with that resourceVersion, spliced in when the value is as storage writes it.
 * An encrypted value is opened first (encryption/transformer.ts); the plain
 * value is the JSON storage wrote, so the splice applies to it as to any.
 * One that cannot be opened is a 500 naming the key, as the original answers.
 */
function decode(stored: Buffer, revision: string | number, key: string | Buffer, values: ValueTransformer = PLAIN_TRANSFORMER): StoredObject {
  let value: Buffer;
  try {
    value = values.fromStorage(key, stored);
  } catch (err) {
    if (err instanceof ValueTransformError) throw ApiError.internal(err.message, err);
    throw err;
  }
  const layout = resourceVersionLayout(value);
  if (layout) return new StoredJson(spliceResourceVersion(value, layout, String(revision)), Number(revision));
  let object: ApiObject;
  try {
    object = JSON.parse(value.toString('utf8')) as ApiObject;
  } catch (err) {
    throw ApiError.internal(`stored object at ${typeof key === 'string' ? key : key.toString('utf8')} cannot be decoded`, err);
  }
  return stamped(object, revision);
}

/** The object as read back at `revision`: a copy with that resourceVersion. */
function stamped(obj: ApiObject, revision: string | number): StoredObject {
  const object = { ...obj, metadata: { ...(obj.metadata ?? {}), resourceVersion: String(revision) } };
  return { object, json: Buffer.from(JSON.stringify(object)), revision: Number(revision) };
}

/** What a write stores (without resourceVersion) and answers (with the write's revision). */
interface EncodedWrite {
  readonly value: Buffer;
  answer(revision: string | number): StoredObject;
}

/** A write's object as sent, parsed: what is not JSON is a 400, as when the server parsed it on arrival. */
function parseRequestObject(bytes: Uint8Array): ApiObject {
  try {
    return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as ApiObject;
  } catch (err) {
    throw ApiError.badRequest(`storage request with an undecodable object: ${(err as Error).message}`);
  }
}

/**
 * The stored value and the answer of a write, from the bytes as sent when
 * they are as JSON.stringify writes an object (they then equal what
 * serialising their parse would give), from the parsed object otherwise.
 */
function encodeWrite(input: WriteInput): EncodedWrite {
  let obj: ApiObject;
  if (input instanceof Uint8Array) {
    const bytes = Buffer.from(input.buffer, input.byteOffset, input.byteLength);
    const layout = resourceVersionLayout(bytes);
    if (layout) {
      return { value: removeResourceVersion(bytes, layout), answer: (revision) => new StoredJson(spliceResourceVersion(bytes, layout, String(revision)), Number(revision)) };
    }
    obj = parseRequestObject(bytes);
  } else {
    obj = input;
  }
  return { value: encodeForStore(obj), answer: (revision) => stamped(obj, revision) };
}

/** etcd's default --max-request-bytes, and how the system starts etcd. */
export const DEFAULT_ETCD_MAX_REQUEST_BYTES = 1572864;

export function translateEtcdError(err: unknown, maxRequestBytes = DEFAULT_ETCD_MAX_REQUEST_BYTES): ApiError {
  if (err instanceof ApiError) return err;
  const message = err instanceof Error ? err.message : String(err);
  if (message.includes('required revision has been compacted')) {
    return ApiError.expired('The resourceVersion for the provided list is too old.');
  }
  // etcd refuses requests over its --max-request-bytes (checked before sending,
  // see EtcdStore.checkRequestSize; this is for a limit set lower on etcd
  // than here), its gRPC server a message past that limit plus its overhead,
  // and a transaction of more operations than its --max-txn-ops.
  if (/request is too large|received message larger than max|too many operations in txn request/.test(message)) {
    return ApiError.requestEntityTooLarge(`Request entity too large: limit is ${maxRequestBytes}: the write is larger than the store accepts (${message})`);
  }
  const name = err instanceof Error ? err.constructor.name : '';
  if (/Unavailable|ConnectFailed|DeadlineExceeded|ClientClosed|Cancelled/.test(name) || /unavailable|ECONNREFUSED|deadline/i.test(message)) {
    return ApiError.serviceUnavailable(`etcd is unavailable: ${message}`, 1);
  }
  return ApiError.internal('etcd request failed', err);
}

/**
 * What a write transaction adds to its keys and value on the wire (request
 * header, compares, operation framing): a generous bound, so a write this
 * refuses is one etcd would refuse too, or nearly.
 */
const TXN_OVERHEAD_BYTES = 1024;

export interface EtcdStoreOptions {
  endpoints: string[];
  /**
   * etcd's --max-request-bytes: a write whose transaction would be larger is
   * refused (413 RequestEntityTooLarge naming the limit) before it is sent,
   * never as whatever etcd or its gRPC server answer. Default
   * DEFAULT_ETCD_MAX_REQUEST_BYTES.
   */
  maxRequestBytes?: number;
  /** Per-request deadline towards etcd. */
  requestTimeoutMs?: number;
  /** How long continue tokens stay valid is bounded by etcd compaction. */
  etcdOptions?: Partial<IOptions>;
  /** Encryption at rest: how values are written to and read from etcd (plain text without). */
  values?: ValueTransformer;
}

/** The current revision (read with a count-only range) and a namespace's state, as etcd calls. */
const REVISION_CALL: EtcdCall = { operation: 'revision', type: '' };
const NAMESPACE_CALL: EtcdCall = { operation: 'get', type: 'namespaces' };

/** Keys read from etcd in one range request (objects are at most 1.5 MiB each). */
const READ_BATCH = 250;

/** Namespaces whose state the create guard remembers; the oldest is forgotten past this. */
const MAX_REMEMBERED_NAMESPACES = 10_000;

export class EtcdStore {
  readonly client: Etcd3;
  private readonly namespaces = new Map<string, { modRevision: string; terminating: boolean }>();
  private readonly maxRequestBytes: number;
  private readonly values: ValueTransformer;

  constructor(options: EtcdStoreOptions) {
    this.values = options.values ?? PLAIN_TRANSFORMER;
    const timeout = options.requestTimeoutMs ?? 10000;
    this.maxRequestBytes = options.maxRequestBytes ?? DEFAULT_ETCD_MAX_REQUEST_BYTES;
    this.client = new Etcd3(
      etcdClientOptions(options.endpoints, {
        dialTimeout: Math.min(timeout, 3000),
        defaultCallOptions: (ctx) => (ctx.isStream ? {} : { deadline: Date.now() + timeout }),
        ...options.etcdOptions,
      }),
    );
  }

  close(): void {
    this.client.close();
  }

  /**
   * Refuses a write whose transaction (its keys, each counted for every
   * place the transaction names it, the value and the framing) would be
   * larger than etcd accepts: 413, as the original answers a body over its
   * limit, before anything is sent.
   */
  private checkRequestSize(value: Buffer, keys: Buffer[]): void {
    const size = value.length + keys.reduce((n, k) => n + k.length, 0) + TXN_OVERHEAD_BYTES;
    if (size > this.maxRequestBytes) {
      throw ApiError.requestEntityTooLarge(
        `Request entity too large: limit is ${this.maxRequestBytes}: the object is ${value.length} bytes as stored, larger than the store accepts`,
      );
    }
  }

  private async txn(call: EtcdCall, req: Parameters<Etcd3['kv']['txn']>[0]): Promise<ITxnResponse> {
    try {
      return await observeEtcd(call, () => this.client.kv.txn(withWriteTrace(req)));
    } catch (err) {
      throw translateEtcdError(err, this.maxRequestBytes);
    }
  }

  private async range(call: EtcdCall, req: Parameters<Etcd3['kv']['range']>[0]): Promise<IRangeResponse> {
    try {
      return await observeEtcd(call, () => this.client.kv.range(req));
    } catch (err) {
      throw translateEtcdError(err);
    }
  }

  async currentRevision(): Promise<{ revision: number; compactRevision: number }> {
    const res = await this.range(REVISION_CALL, { key: Buffer.from('/registry/'), count_only: true, limit: 1 });
    return { revision: Number(res.header.revision), compactRevision: 0 };
  }

  /** Waits (briefly) until the store has reached `minRevision`. */
  private async ensureRevision(minRevision: number): Promise<void> {
    const deadline = Date.now() + FUTURE_REVISION_WAIT_MS;
    for (;;) {
      const { revision } = await this.currentRevision();
      if (revision >= minRevision) return;
      if (Date.now() > deadline) throw ApiError.tooLargeResourceVersion(minRevision, revision);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  private async readRevision(at: ReadAt | undefined): Promise<number> {
    const exact = at?.revision ?? 0;
    if (exact > 0) {
      await this.ensureRevision(exact);
      return exact;
    }
    if ((at?.minRevision ?? 0) > 0) await this.ensureRevision(at?.minRevision ?? 0);
    return 0;
  }

  async get(key: StoredKey, at?: ReadAt): Promise<StoredObject> {
    const k = objectKey(key);
    const revision = await this.readRevision(at);
    const res = await this.range({ operation: 'get', type: etcdType(key) }, { key: Buffer.from(k), revision });
    const kv = res.kvs[0];
    if (!kv) throw ApiError.notFound(groupResource(key), key.name);
    const result = decode(kv.value, kv.mod_revision, k, this.values);
    if (!this.values.stale(key.group, key.resource, kv.value)) return result;
    return { json: result.json, revision: result.revision, stale: true, get object() { return result.object; } };
  }

  async list(key: Omit<StoredKey, 'name'>, options: ListOptions = {}): Promise<ListResult> {
    const prefix = Buffer.from(collectionPrefix(key));
    const end = prefixEnd(prefix);
    const labels = parseLabelSelector(options.labelSelector);
    const fields = parseFieldSelector(options.fieldSelector);
    const filtering = !labels.empty || !fields.empty;
    const limit = options.limit && options.limit > 0 ? options.limit : 0;

    let revision: number;
    let start = prefix;
    if (options.continueToken) {
      const token = decodeContinue(options.continueToken);
      revision = token.rv;
      start = Buffer.concat([prefix, Buffer.from(token.start)]);
    } else {
      revision = await this.readRevision(options.at);
    }

    // Read in batches at one revision whatever the page size, so no single
    // etcd answer is larger than a batch (an unpaged list of any size works);
    // selectors drop items, so batches continue until the page is full.
    const want = limit > 0 ? limit : Number.POSITIVE_INFINITY;
    const items: Buffer[] = [];
    let lastReturned: Buffer | undefined;
    let more = false;
    let remaining: number | undefined;
    for (;;) {
      const batch = filtering ? READ_BATCH : Math.min(READ_BATCH, want - items.length);
      const res = await this.rangeAt({ operation: 'list', type: etcdType(key) }, { key: start, range_end: end, revision, limit: batch }, options.continueToken !== undefined);
      if (revision === 0) revision = Number(res.header.revision);
      let lastScanned: Buffer | undefined;
      for (const kv of res.kvs) {
        if (items.length >= want) {
          more = true;
          break;
        }
        lastScanned = kv.key;
        // A value that cannot be decrypted fails the whole list (500 naming its key), as the original's list does.
        const stored = decode(kv.value, kv.mod_revision, kv.key, this.values);
        if (filtering) {
          if (!matchesSelectors(stored.object, labels, fields)) continue;
        }
        items.push(stored.json);
        lastReturned = kv.key;
      }
      if (more || !res.more || !lastScanned) break;
      if (items.length >= want) {
        more = true;
        // Without selectors etcd's count tells how many items the page leaves out.
        if (!filtering) remaining = Number(res.count) - res.kvs.length;
        break;
      }
      start = Buffer.concat([lastScanned, Buffer.from([0])]);
    }
    let continueToken = '';
    if (more && lastReturned) {
      continueToken = encodeContinue(revision, lastReturned.subarray(prefix.length).toString('utf8') + '\u0000');
    }
    const result: ListResult = { items, revision, continueToken };
    if (remaining !== undefined && remaining > 0) result.remainingItemCount = remaining;
    return result;
  }

  private async rangeAt(call: EtcdCall, req: Parameters<Etcd3['kv']['range']>[0], fromContinue: boolean): Promise<IRangeResponse> {
    try {
      return await observeEtcd(call, () => this.client.kv.range(req));
    } catch (err) {
      const apiError = translateEtcdError(err);
      if (apiError.code === 410 && fromContinue) {
        throw ApiError.expired(
          'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.',
        );
      }
      throw apiError;
    }
  }

  async create(key: StoredKey, input: WriteInput, dryRun = false): Promise<StoredObject> {
    const k = Buffer.from(objectKey(key));
    const { value, answer } = this.sealed(key, k, encodeWrite(input));
    // Content of a namespace is written only while that namespace exists and
    // is not terminating, checked in the same transaction as the write (its
    // key's revision must be the one whose state was checked), so nothing
    // created during a namespace's deletion can outlive it.
    const guarded = key.namespace !== '';
    // The key is named by the compare, the put and the failure's read; the namespace's key by its compare.
    if (!dryRun) this.checkRequestSize(value, guarded ? [k, k, k, Buffer.from(objectKey({ group: '', resource: 'namespaces', namespace: '', name: key.namespace }))] : [k, k, k]);
    for (let attempt = 0; ; attempt++) {
      const ns = guarded ? await this.namespaceState(key, attempt > 0) : undefined;
      if (dryRun) {
        const existing = await this.range({ operation: 'count', type: etcdType(key) }, { key: k, count_only: true });
        if (Number(existing.count) > 0) throw ApiError.alreadyExists(groupResource(key), key.name);
        return answer(existing.header.revision);
      }
      const compare: Parameters<Etcd3['kv']['txn']>[0]['compare'] = [{ key: k, target: 'Create', result: 'Equal', create_revision: 0 }];
      if (ns) compare.push({ key: ns.key, target: 'Mod', result: 'Equal', mod_revision: ns.modRevision });
      const res = await this.txn({ operation: 'create', type: etcdType(key), requestBytes: value.length }, { compare, success: [{ request_put: { key: k, value } }], failure: [{ request_range: { key: k, count_only: true } }] });
      if (res.succeeded) return answer(res.header.revision);
      if (Number(res.responses[0]?.response_range?.count ?? 0) > 0) throw ApiError.alreadyExists(groupResource(key), key.name);
      // The namespace changed since it was checked: check it again.
      if (attempt >= 5) throw ApiError.conflict(groupResource(key), key.name, `namespace ${key.namespace} kept changing; try again`);
    }
  }

  /**
   * The namespace an object is created in, as of its key's modification
   * revision; refused when it is missing or terminating. Remembered between
   * calls (a create compares the revision, so a stale entry costs one retry).
   */
  private async namespaceState(key: StoredKey, fresh: boolean): Promise<{ key: Buffer; modRevision: string }> {
    const nsKey = objectKey({ group: '', resource: 'namespaces', namespace: '', name: key.namespace });
    let state = fresh ? undefined : this.namespaces.get(key.namespace);
    // A refusal is never served from memory: the namespace may have been created again since.
    if (!state || state.terminating) {
      const kv = (await this.range(NAMESPACE_CALL, { key: Buffer.from(nsKey) })).kvs[0];
      if (!kv) {
        this.namespaces.delete(key.namespace);
        throw ApiError.notFound({ group: '', resource: 'namespaces' }, key.namespace);
      }
      const ns = decode(kv.value, kv.mod_revision, kv.key, this.values).object;
      const terminating = namespaceTerminating(ns);
      state = { modRevision: String(kv.mod_revision), terminating };
      if (this.namespaces.size >= MAX_REMEMBERED_NAMESPACES) this.namespaces.delete(this.namespaces.keys().next().value as string);
      this.namespaces.set(key.namespace, state);
    }
    if (state.terminating) {
      throw namespaceTerminatingError(groupResource(key), key.name, key.namespace);
    }
    return { key: Buffer.from(nsKey), modRevision: state.modRevision };
  }


  /**
   * Replaces an object. With a revision precondition the write is a
   * compare-and-swap on the key's mod revision; a uid precondition is checked
   * against the current object inside the same compare.
   */
  async update(key: StoredKey, input: WriteInput, pre: Preconditions = {}, dryRun = false): Promise<StoredObject> {
    return this.replace(key, this.sealed(key, Buffer.from(objectKey(key)), encodeWrite(input)), pre, dryRun);
  }

  /** The write with its value as etcd stores it (encrypted when the configuration says so); the answer is unchanged. */
  private sealed(key: StoredKey, k: Buffer, write: EncodedWrite): EncodedWrite {
    const value = this.values.toStorage(key.group, key.resource, k, write.value);
    return value === write.value ? write : { value, answer: write.answer };
  }

  private async replace(key: StoredKey, write: EncodedWrite, pre: Preconditions, dryRun: boolean): Promise<StoredObject> {
    const k = Buffer.from(objectKey(key));
    const { value, answer } = write;
    // The key is named by the compare, the put and (a swap's) failure read.
    if (!dryRun) this.checkRequestSize(value, [k, k, k]);
    if (pre.revision && !pre.uid && !dryRun) return this.swap(key, k, write, pre.revision);
    const current = await this.checkPreconditions(key, pre);
    if (dryRun) return answer(current.mod_revision);
    const res = await this.txn({ operation: 'update', type: etcdType(key), requestBytes: value.length }, {
      compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: current.mod_revision }],
      success: [{ request_put: { key: k, value } }],
      failure: [],
    });
    if (!res.succeeded) {
      // Changed between the read and the write.
      if (pre.revision || pre.uid) throw ApiError.conflict(groupResource(key), key.name, CONFLICT_MESSAGE);
      return this.replace(key, write, pre, dryRun);
    }
    return answer(res.header.revision);
  }

  async delete(key: StoredKey, pre: Preconditions = {}, dryRun = false): Promise<{ deleted: StoredObject; revision: number }> {
    const k = Buffer.from(objectKey(key));
    const current = await this.checkPreconditions(key, pre);
    if (dryRun) return { deleted: decode(current.value, current.mod_revision, objectKey(key), this.values), revision: Number(current.mod_revision) };
    const res = await this.txn({ operation: 'delete', type: etcdType(key) }, {
      compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: current.mod_revision }],
      success: [{ request_delete_range: { key: k, prev_kv: true } }],
      failure: [],
    });
    if (!res.succeeded) {
      if (pre.revision || pre.uid) throw ApiError.conflict(groupResource(key), key.name, CONFLICT_MESSAGE);
      return this.delete(key, pre, dryRun);
    }
    return { deleted: decode(current.value, current.mod_revision, objectKey(key), this.values), revision: Number(res.header.revision) };
  }

  /**
   * Compare-and-swap in one round trip: the write happens if the key is
   * still at `revision`; otherwise the same transaction reads the key, which
   * tells a conflict (409) from a deleted object (404).
   */
  private async swap(key: StoredKey, k: Buffer, write: EncodedWrite, revision: number): Promise<StoredObject> {
    const res = await this.txn({ operation: 'update', type: etcdType(key), requestBytes: write.value.length }, {
      compare: [{ key: k, target: 'Mod', result: 'Equal', mod_revision: revision }],
      success: [{ request_put: { key: k, value: write.value } }],
      failure: [{ request_range: { key: k, keys_only: true } }],
    });
    if (res.succeeded) return write.answer(res.header.revision);
    if ((res.responses[0]?.response_range?.kvs ?? []).length === 0) throw ApiError.notFound(groupResource(key), key.name);
    throw ApiError.conflict(groupResource(key), key.name, CONFLICT_MESSAGE);
  }

  private async checkPreconditions(key: StoredKey, pre: Preconditions): Promise<IKeyValue> {
    const res = await this.range({ operation: 'get', type: etcdType(key) }, { key: Buffer.from(objectKey(key)) });
    const kv = res.kvs[0];
    if (!kv) throw ApiError.notFound(groupResource(key), key.name);
    if (pre.revision && Number(kv.mod_revision) !== pre.revision) {
      throw ApiError.conflict(groupResource(key), key.name, CONFLICT_MESSAGE);
    }
    if (pre.uid) {
      const uid = decode(kv.value, kv.mod_revision, objectKey(key), this.values).object.metadata?.uid;
      if (uid !== pre.uid) {
        throw ApiError.conflict(
          groupResource(key),
          key.name,
          `Precondition failed: UID in precondition: ${pre.uid}, UID in object meta: ${uid ?? ''}`,
        );
      }
    }
    return kv;
  }
}

