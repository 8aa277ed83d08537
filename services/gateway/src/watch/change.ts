import type { ApiObject } from '@svc/apimachinery';
import { watch } from '@svc/proto';

/** Encodings of one thing, each made on first use and kept. */
class Encodings {
  private readonly byKey = new Map<string, Buffer>();

  get(key: string, encode: () => Buffer): Buffer {
    let bytes = this.byKey.get(key);
    if (!bytes) {
      bytes = encode();
      this.byKey.set(key, bytes);
    }
    return bytes;
  }
}

/**
 * Objects and changes as the gateway holds them once it has received them:
 * the JSON bytes exactly as they came off the change stream (or storage),
 * parsed at most once, and encoded at most once per representation. Every
 * watch, every list and the cache share the same instances, so a change
 * that a thousand watchers receive is parsed once and written as the same
 * bytes to each of them.
 *
 * The parsed `object` is shared: nothing may change it. A caller that wants
 * an object of its own takes `copy()`.
 */
export class SharedObject {
  private parsed: ApiObject | undefined;
  private encodings: Encodings | undefined;
  private rev: number | undefined;

  constructor(
    /** The object's key in storage. */
    readonly key: string,
    /** Its JSON, with metadata.resourceVersion set. */
    readonly json: Buffer,
    /** The revision of its last change, when known without parsing. */
    revision?: number,
  ) {
    this.rev = revision;
  }

  /** The revision of the object's last change (its resourceVersion). */
  get revision(): number {
    this.rev ??= Number(this.object.metadata?.resourceVersion ?? 0) || 0;
    return this.rev;
  }

  /** The parsed object, shared and read-only. */
  get object(): ApiObject {
    this.parsed ??= JSON.parse(this.json.toString('utf8')) as ApiObject;
    return this.parsed;
  }

  /** A parsed copy the caller owns. */
  copy(): ApiObject {
    return JSON.parse(this.json.toString('utf8')) as ApiObject;
  }

  /** The object in one representation (`key` names it), encoded on first use and kept. */
  encoded(key: string, encode: () => Buffer): Buffer {
    this.encodings ??= new Encodings();
    return this.encodings.get(key, encode);
  }
}

export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/**
 * One change of the change stream, decoded once for every receiver. The
 * encodings of the watch events it becomes (an ADDED for one watcher, a
 * MODIFIED for another, in JSON or protobuf) are made once each and shared.
 */
export class Change {
  private lines: Encodings | undefined;

  constructor(
    readonly type: ChangeType,
    readonly key: string,
    readonly revision: number,
    /** The object after the change (for DELETED, its last state at the deletion's revision). */
    readonly object: SharedObject | undefined,
    /** The object before the change, when there was one. */
    readonly prev: SharedObject | undefined,
    /** Bytes the change took on the bus (for buffer accounting). */
    readonly size: number,
  ) {}

  /** One watch event of this change, encoded once per `key` (event type and representation). */
  encoded(key: string, encode: () => Buffer): Buffer {
    this.lines ??= new Encodings();
    return this.lines.get(key, encode);
  }
}

const TYPES: Partial<Record<watch.EventType, ChangeType>> = {
  [watch.EventType.EVENT_TYPE_ADDED]: 'ADDED',
  [watch.EventType.EVENT_TYPE_MODIFIED]: 'MODIFIED',
  [watch.EventType.EVENT_TYPE_DELETED]: 'DELETED',
};

function bufferOf(bytes: Uint8Array): Buffer {
  return Buffer.isBuffer(bytes) ? bytes : Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The gateway's form of a change from the bus or watch-fanout's history (not a progress marker). */
export function decodeChange(e: watch.ChangeEvent): Change {
  const type = TYPES[e.type];
  if (!type) throw new Error(`not a change: event type ${e.type}`);
  const object = e.object.length > 0 ? new SharedObject(e.key, bufferOf(e.object), e.revision) : undefined;
  const prev = e.prevObject.length > 0 ? new SharedObject(e.key, bufferOf(e.prevObject)) : undefined;
  return new Change(type, e.key, e.revision, object, prev, e.object.length + e.prevObject.length + e.key.length);
}
