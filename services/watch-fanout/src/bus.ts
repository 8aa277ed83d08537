import { RetentionPolicy, StorageType, DiscardPolicy, createInbox, headers, type JetStreamManager, type Msg, type NatsConnection, type Subscription } from 'nats';
import { parseObjectKey } from '@svc/apimachinery';
import { watch } from '@svc/proto';

/**
 * The change bus: one JetStream stream holds the published changes for the
 * history window; every message is a protobuf `ChangeEvent`. Subjects are
 * `svc.changes.<resource>.<group>` (dots in a group become `_`, the core
 * group is `core`), so a subscriber can narrow to what it watches.
 */
export const STREAM_NAME = 'SVC_CHANGES';
export const SUBJECT_PREFIX = 'svc.changes';
export const ALL_SUBJECTS = `${SUBJECT_PREFIX}.>`;
export const PROGRESS_SUBJECT = `${SUBJECT_PREFIX}._progress._`;
/** The message header carrying the W3C trace context of the write behind a change. */
export const TRACEPARENT_HEADER = 'traceparent';

export function subjectFor(key: string): string {
  const parsed = parseObjectKey(key);
  if (!parsed) return PROGRESS_SUBJECT;
  return `${SUBJECT_PREFIX}.${parsed.resource}.${parsed.group ? parsed.group.replace(/\./g, '_') : 'core'}`;
}

export function encodeEvent(event: watch.ChangeEvent): Uint8Array {
  return watch.ChangeEvent.encode(event).finish();
}

export function decodeEvent(data: Uint8Array): watch.ChangeEvent {
  return watch.ChangeEvent.decode(data);
}

/** An event without its objects, for changes too large for one bus message. */
export function truncate(event: watch.ChangeEvent): watch.ChangeEvent {
  return { ...event, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: true };
}

export async function ensureStream(jsm: JetStreamManager, windowMs: number, maxBytes = -1): Promise<void> {
  const config = {
    max_bytes: maxBytes,
    name: STREAM_NAME,
    subjects: [ALL_SUBJECTS],
    retention: RetentionPolicy.Limits,
    storage: StorageType.File,
    discard: DiscardPolicy.Old,
    max_age: windowMs * 1_000_000,
    duplicate_window: Math.min(windowMs, 120_000) * 1_000_000,
    num_replicas: 1,
  };
  try {
    await jsm.streams.info(STREAM_NAME);
    await jsm.streams.update(STREAM_NAME, config);
  } catch (err) {
    if (!/stream not found/i.test((err as Error).message)) throw err;
    try {
      await jsm.streams.add(config);
    } catch (addErr) {
      // Another replica created it between our check and our add.
      if (!/already in use|already exists/i.test((addErr as Error).message)) throw addErr;
    }
  }
}

/** The bus's answer to one publish. */
export interface PublishAck {
  seq: number;
  duplicate: boolean;
}

interface AwaitingAck {
  resolve(ack: PublishAck): void;
  reject(err: Error): void;
  sentAt: number;
}

/**
 * Publishes into the stream and collects JetStream's acknowledgements on one
 * inbox subscription. The client library's `jetstream().publish` is a
 * request per message (its own inbox entry, timer and error object); the
 * publisher keeps hundreds in flight, so it takes the cheaper route: a plain
 * publish with a reply subject, the same headers, and one sweep that fails
 * every publish whose acknowledgement is overdue.
 */
export class AckedPublisher {
  private readonly prefix = createInbox();
  private readonly awaiting = new Map<number, AwaitingAck>();
  private readonly sub: Subscription;
  private readonly sweep: NodeJS.Timeout;
  private next = 1;

  constructor(
    private readonly nc: NatsConnection,
    private readonly ackTimeoutMs = 5000,
  ) {
    this.sub = nc.subscribe(`${this.prefix}.*`, { callback: (err, msg) => (err ? this.failAll(err) : this.onAck(msg)) });
    this.sweep = setInterval(() => this.expire(), Math.min(1000, ackTimeoutMs));
    this.sweep.unref();
  }

  /** Publishes now (the write is batched with others in the same tick); resolves with the stream's acknowledgement. */
  publish(subject: string, data: Uint8Array, msgId: string, expectedLastSequence: number, traceparent?: string): Promise<PublishAck> {
    const token = this.next++;
    const h = headers();
    h.set('Nats-Msg-Id', msgId);
    h.set('Nats-Expected-Last-Sequence', String(expectedLastSequence));
    // The trace of the write that made the change (write-trace.ts in storage), for the gateways' deliveries.
    if (traceparent) h.set(TRACEPARENT_HEADER, traceparent);
    return new Promise<PublishAck>((resolve, reject) => {
      this.awaiting.set(token, { resolve, reject, sentAt: Date.now() });
      try {
        this.nc.publish(subject, data, { reply: `${this.prefix}.${token}`, headers: h });
      } catch (err) {
        this.awaiting.delete(token);
        reject(err as Error);
      }
    });
  }

  /** Fails every publish still awaiting its acknowledgement. */
  failAll(err: Error): void {
    const open = [...this.awaiting.values()];
    this.awaiting.clear();
    for (const a of open) a.reject(err);
  }

  close(): void {
    clearInterval(this.sweep);
    this.sub.unsubscribe();
    this.failAll(new Error('publisher closed'));
  }

  private onAck(msg: Msg): void {
    const token = Number(msg.subject.slice(this.prefix.length + 1));
    const a = this.awaiting.get(token);
    if (!a) return;
    this.awaiting.delete(token);
    if (msg.headers && msg.headers.code >= 300) {
      // A status without a body: 503 when no stream takes the subject.
      a.reject(new Error(`the bus refused the publish: ${msg.headers.code} ${msg.headers.description}`));
      return;
    }
    try {
      const body = JSON.parse(Buffer.from(msg.data).toString('utf8')) as { seq?: number; duplicate?: boolean; error?: { code?: number; description?: string } };
      if (body.error) a.reject(new Error(`the bus refused the publish: ${body.error.description ?? 'unknown error'} (${body.error.code ?? 0})`));
      else if (typeof body.seq !== 'number') a.reject(new Error('the bus acknowledged without a sequence'));
      else a.resolve({ seq: body.seq, duplicate: body.duplicate === true });
    } catch (err) {
      a.reject(new Error(`undecodable acknowledgement: ${(err as Error).message}`));
    }
  }

  private expire(): void {
    const cutoff = Date.now() - this.ackTimeoutMs;
    for (const [token, a] of this.awaiting) {
      // Oldest first: Map iteration follows insertion order.
      if (a.sentAt > cutoff) break;
      this.awaiting.delete(token);
      a.reject(new Error(`no acknowledgement from the bus within ${this.ackTimeoutMs} ms`));
    }
  }
}
