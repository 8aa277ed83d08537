import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import type { JetStreamManager, NatsConnection } from 'nats';
import { REGISTRY_PREFIX, withResourceVersion } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { carrierOf, spanContextOf, startSpanUnder, SpanKind, SpanStatusCode, type Logger, type Span } from '@svc/service-kit';
import { isWriteTraceKey, PUBLISHED_RANGE, writeTracesOf } from '@svc/storage/write-trace';
import { PLAIN_TRANSFORMER, ValueTransformError, type ValueTransformer } from '@svc/storage/encryption';
import { Compactor } from './compactor';
import { recordPublished } from './fanout-metrics';
import { AckedPublisher, STREAM_NAME, PROGRESS_SUBJECT, decodeEvent, encodeEvent, subjectFor, truncate } from './bus';

/**
 * The publisher: while this replica leads (an etcd election), it tails etcd
 * from the revision after the last one on the bus and publishes every change
 * in revision order. Each publish expects the stream's last sequence to be
 * the one this leader wrote before, so a deposed leader cannot interleave
 * with its successor: its next publish fails and it steps down.
 */
export interface PublisherOptions {
  etcd: Etcd3;
  nc: NatsConnection;
  jsm: JetStreamManager;
  log: Logger;
  /** Identity announced in the election. */
  id: string;
  /** Largest message the bus accepts. */
  maxPayload: number;
  electionTtlSeconds?: number;
  /** How often the leader compacts etcd's history (see Compactor); 0 never. */
  compactionIntervalMs?: number;
  /** Creates the bus stream when it is missing (someone deleted it); run each time this replica starts leading. */
  ensureStream?: () => Promise<void>;
  /** Opens values encrypted at rest (server.ts); plain text without. */
  values?: ValueTransformer;
}

export const ELECTION_NAME = 'svc-watch-fanout';

/** Publishes awaiting their acknowledgement at once. */
const MAX_IN_FLIGHT = 256;

interface Position {
  revision: number;
  sequence: number;
}

/** What the etcd watch delivered, in order. */
type Change =
  /** `at`: when etcd's watch delivered the change (performance.now()), for the publish lag. */
  | { kind: 'put' | 'delete'; kv: IKeyValue; prev: IKeyValue | undefined; trace?: string | undefined; at: number }
  | { kind: 'compacted'; revision: number }
  /** etcd's progress notification: every change up to `revision` has been delivered. */
  | { kind: 'progress'; revision: number };

/**
 * A stored object's JSON with `metadata.resourceVersion` set, as watchers
 * receive it: spliced into the bytes storage wrote (withResourceVersion), or,
 * for JSON not as JSON.stringify writes it, parsed and serialised again.
 */
export function setResourceVersion(json: Buffer, revision: number): Buffer {
  const spliced = withResourceVersion(json, String(revision));
  if (spliced) return spliced;
  const obj = JSON.parse(json.toString('utf8')) as { metadata?: Record<string, unknown> };
  obj.metadata = { ...(obj.metadata ?? {}), resourceVersion: String(revision) };
  return Buffer.from(JSON.stringify(obj));
}

export class Publisher {
  private stopped = false;
  private leading = false;
  private watcher: Watcher | undefined;
  private position: Position = { revision: 0, sequence: 0 };
  /** Changes not yet published, oldest first. */
  private backlog: Change[] = [];
  private draining = false;
  private resign: (() => Promise<void>) | undefined;
  /** Counts terms of leadership, so late acknowledgements of an old term are ignored. */
  private term = 0;
  /** Publishes awaiting their acknowledgement, and who waits for one to come back. */
  private inFlight = 0;
  /** When etcd delivered the change being published (set just before publishChange), for the publish lag. */
  private receivedAt: number | undefined;
  private onAcked: (() => void) | undefined;
  private readonly bus: AckedPublisher;
  /** The newest revision the bus has acknowledged: etcd history before it is no longer needed. */
  private acknowledged = 0;
  readonly compactor: Compactor;

  constructor(private readonly opts: PublisherOptions) {
    this.bus = new AckedPublisher(opts.nc);
    this.compactor = new Compactor(opts.etcd, opts.compactionIntervalMs ?? 0, opts.log, () => this.acknowledged);
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** Campaigns until stopped; leads whenever elected. */
  start(): void {
    this.campaign();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.stepDown('stopping');
    this.bus.close();
  }

  private campaign(): void {
    if (this.stopped) return;
    const { etcd, log, id } = this.opts;
    const campaign = etcd.election(ELECTION_NAME, this.opts.electionTtlSeconds ?? 5).campaign(id);
    this.resign = () => campaign.resign().catch(() => undefined);
    campaign.on('elected', () => {
      log.info('elected publisher', { id });
      this.lead().catch((err: unknown) => this.fail('leading failed', err));
    });
    campaign.on('error', (err: Error) => this.fail('campaign failed', err));
  }

  private fail(what: string, err: unknown): void {
    this.opts.log.warn(what, { err });
    void this.stepDown(what).then(() => {
      if (!this.stopped) setTimeout(() => this.campaign(), 1000);
    });
  }

  private async stepDown(why: string): Promise<void> {
    const wasLeading = this.leading;
    this.leading = false;
    this.backlog = [];
    this.compactor.stop();
    const w = this.watcher;
    this.watcher = undefined;
    if (w) await w.cancel().catch(() => undefined);
    const resign = this.resign;
    this.resign = undefined;
    if (resign) await resign();
    if (wasLeading) this.opts.log.info('stepped down', { why });
  }

  /** Where the bus ends: its last sequence and the revision of its last event. */
  private async busPosition(): Promise<Position | undefined> {
    const info = await this.opts.jsm.streams.info(STREAM_NAME);
    if (info.state.messages === 0) return undefined;
    const last = await this.opts.jsm.streams.getMessage(STREAM_NAME, { seq: info.state.last_seq });
    return { revision: decodeEvent(last.data).revision, sequence: info.state.last_seq };
  }

  private async lead(): Promise<void> {
    const { etcd, log } = this.opts;
    this.leading = true;
    const term = ++this.term;
    // Only this term's watcher fills the backlog: one of an earlier term may have delivered changes while it was being cancelled.
    this.backlog = [];
    // A deleted stream comes back empty: the history then restarts (below), and gateways end their watches.
    await this.opts.ensureStream?.();
    const onBus = await this.busPosition();
    if (onBus) {
      this.position = onBus;
      this.acknowledged = Math.max(this.acknowledged, onBus.revision);
    } else {
      // Nothing on the bus (first start, or idle past the window): history
      // starts now, announced by a progress marker with no predecessor.
      const info = await this.opts.jsm.streams.info(STREAM_NAME);
      this.position = { revision: 0, sequence: info.state.last_seq };
      const head = Number((await etcd.kv.range({ key: Buffer.from(REGISTRY_PREFIX), count_only: true })).header.revision);
      this.publish({ type: watch.EventType.EVENT_TYPE_PROGRESS, key: '', revision: head, prevRevision: 0, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: false });
    }
    log.info('publishing from', { revision: this.position.revision + 1, sequence: this.position.sequence });
    // The registry and, beside it, the key where storage records the trace of a sampled write (write-trace.ts).
    const watcher = await etcd.watch().inRange(PUBLISHED_RANGE).withPreviousKV().startRevision(String(this.position.revision + 1)).create();
    const current = (): boolean => this.leading && term === this.term;
    if (!current()) {
      await watcher.cancel();
      return;
    }
    this.watcher = watcher;
    this.compactor.start();
    watcher.on('data', (res) => {
      // A watcher of an earlier term, delivering what etcd had sent before its cancellation: published now, its
      // changes would come ahead of this term's replay from the bus's end, and the replay's up to them would be skipped.
      if (!current()) return;
      const compacted = Number(res.compact_revision ?? 0);
      if (compacted > 0) this.backlog.push({ kind: 'compacted', revision: compacted });
      else if (res.events.length === 0) this.backlog.push({ kind: 'progress', revision: Number(res.header.revision) });
      else {
        // A traced write's record shares its revision, and so this response, with the change it traces.
        const traces = writeTracesOf(res.events);
        const at = performance.now();
        for (const e of res.events) {
          if (traces && isWriteTraceKey(e.kv.key)) continue;
          this.backlog.push({ kind: e.type === 'Delete' ? 'delete' : 'put', kv: e.kv, prev: e.prev_kv, trace: traces?.get(Number(e.kv.mod_revision)), at });
        }
      }
      this.drain();
    });
    watcher.on('error', (err) => {
      if (current()) this.fail('etcd watch failed', err);
    });
    // The etcd client re-creates a broken watch from the revision in the header of the last response, not from
    // after the last change it delivered, so changes etcd had yet to send (a watch still catching up) would be
    // skipped without a trace: lead again from where the bus ends instead.
    watcher.on('disconnected', (err: Error) => {
      if (current()) this.fail('etcd watch interrupted', err);
    });
  }

  /**
   * Publishes the backlog in order. Everything that fits under
   * MAX_IN_FLIGHT goes out in the same tick, so the client writes the
   * messages to the socket together; at the limit it waits for an
   * acknowledgement.
   */
  private drain(): void {
    if (this.draining) return;
    this.draining = true;
    void (async () => {
      try {
        // stepDown and lead empty the backlog and only the current term's watcher fills it, so a new term never publishes an old term's changes.
        while (this.leading && this.backlog.length > 0) {
          if (this.inFlight >= MAX_IN_FLIGHT) {
            await new Promise<void>((resolve) => (this.onAcked = resolve));
            continue;
          }
          const change = this.backlog.shift() as Change;
          if (change.kind === 'compacted') await this.resetAfterCompaction(change.revision);
          else if (change.kind === 'progress') this.publishProgress(change.revision);
          else {
            this.receivedAt = change.at;
            this.publishChange(change.kind, change.kv, change.prev, change.trace);
          }
        }
      } catch (err) {
        this.fail('publish failed', err);
      } finally {
        this.draining = false;
      }
    })();
  }

  /** The revisions we would resume from are gone: start a new history at etcd's head. */
  private async resetAfterCompaction(compacted: number): Promise<void> {
    this.opts.log.warn('etcd history compacted past the bus; starting a new history', { compacted });
    const head = Number((await this.opts.etcd.kv.range({ key: Buffer.from(REGISTRY_PREFIX), count_only: true })).header.revision);
    this.publish({ type: watch.EventType.EVENT_TYPE_PROGRESS, key: '', revision: head, prevRevision: 0, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: false });
    this.fail('restart after compaction', new Error(`compacted at ${compacted}`));
  }

  /**
   * etcd's revision moved past the last change under the registry (a write
   * elsewhere, such as the publisher election): a progress marker carries
   * the bus to that revision, so a reader waiting for etcd's current
   * revision (a consistent read from a gateway's cache) is not left waiting
   * for the next change.
   */
  private publishProgress(revision: number): void {
    if (revision <= this.position.revision) return;
    this.publish({ type: watch.EventType.EVENT_TYPE_PROGRESS, key: '', revision, prevRevision: this.position.revision, object: Buffer.alloc(0), prevObject: Buffer.alloc(0), truncated: false });
  }

  private publishChange(kind: 'put' | 'delete', kv: IKeyValue, prev: IKeyValue | undefined, trace?: string): void {
    const revision = Number(kv.mod_revision);
    if (revision <= this.position.revision) return;
    try {
      const values = this.opts.values ?? PLAIN_TRANSFORMER;
      const open = (v: IKeyValue): IKeyValue => ({ ...v, value: values.fromStorage(v.key, v.value) });
      kv = kind === 'put' ? open(kv) : kv;
      prev = prev ? open(prev) : undefined;
    } catch (err) {
      if (!(err instanceof ValueTransformError)) throw err;
      // A value no configured key opens is never published as garbage, nor
      // does it stop the publisher: watchers miss this change (a read of the
      // object answers 500 naming the key), the history moves past it.
      this.opts.log.error('change not published: its value cannot be decrypted', { key: err.etcdKey, revision, reason: err.reason });
      this.publishProgress(revision);
      return;
    }
    let type: watch.EventType;
    let object: Buffer;
    if (kind === 'delete') {
      type = watch.EventType.EVENT_TYPE_DELETED;
      // The last state, stamped with the deletion revision as watchers expect.
      object = prev ? setResourceVersion(prev.value, revision) : Buffer.alloc(0);
    } else {
      type = kv.create_revision === kv.mod_revision ? watch.EventType.EVENT_TYPE_ADDED : watch.EventType.EVENT_TYPE_MODIFIED;
      object = setResourceVersion(kv.value, revision);
    }
    const prevObject = prev ? setResourceVersion(prev.value, Number(prev.mod_revision)) : Buffer.alloc(0);
    this.publish({ type, key: kv.key.toString('utf8'), revision, prevRevision: this.position.revision, object, prevObject, truncated: false }, trace);
  }

  /**
   * Publishes without waiting for the previous acknowledgement: each message
   * names the sequence it must follow, so the bus still rejects anything out
   * of order or from a second publisher, and the first rejected or
   * unexpected acknowledgement ends this term of leadership.
   */
  private publish(event: watch.ChangeEvent, trace?: string): void {
    let data = encodeEvent(event);
    // Leave room for headers; oversized changes travel without their objects.
    if (data.length > this.opts.maxPayload - 4096) data = encodeEvent(truncate(event));
    const subject = event.type === watch.EventType.EVENT_TYPE_PROGRESS ? PROGRESS_SUBJECT : subjectFor(event.key);
    const expected = this.position.sequence;
    this.position = { revision: event.revision, sequence: expected + 1 };
    const term = this.term;
    const msgId = `${event.type === watch.EventType.EVENT_TYPE_PROGRESS ? 'progress' : 'rev'}-${event.revision}`;
    this.inFlight++;
    const receivedAt = this.receivedAt;
    this.receivedAt = undefined;
    const span = trace ? publishSpan(trace, subject, event.revision) : undefined;
    this.bus
      .publish(subject, data, msgId, expected, span ? (carrierOf(span)['traceparent'] ?? trace) : trace)
      .then((ack) => {
        if (ack.duplicate || ack.seq !== expected + 1) {
          throw new Error(`the bus stored revision ${event.revision} at sequence ${ack.seq}${ack.duplicate ? ' (duplicate)' : ''}, expected ${expected + 1}`);
        }
        this.acknowledged = Math.max(this.acknowledged, event.revision);
        recordPublished(event.type, receivedAt);
        span?.end();
      })
      .catch((err: unknown) => {
        span?.setStatus({ code: SpanStatusCode.ERROR, message: (err as Error).message });
        span?.end();
        if (this.leading && term === this.term) this.fail('publish failed', err);
      })
      .finally(() => {
        this.inFlight--;
        const wake = this.onAcked;
        this.onAcked = undefined;
        wake?.();
      });
  }
}

/**
 * The publish of a traced write's change, a child of the write (while
 * watch-fanout traces; else the write's context travels on as it came).
 */
function publishSpan(traceparent: string, subject: string, revision: number): Span | undefined {
  const parent = spanContextOf(traceparent);
  return parent ? startSpanUnder(`publish ${subject}`, parent, SpanKind.PRODUCER, { 'messaging.system': 'nats', 'messaging.destination.name': subject, 'svc.revision': revision }) : undefined;
}
