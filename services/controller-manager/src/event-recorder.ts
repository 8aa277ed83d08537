import { hostname } from 'node:os';
import { ApiError, rfc3339Micro, type ApiObject } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import { realClock, type Clock } from './clock';

/**
 * How the controllers report what they did: `events.svc.io/v1` Events, as
 * the original's events recorder writes them. An event names the object it
 * is about (`regarding`), what the controller did (`action`) and why
 * (`reason`), its reporter (`reportingController` and the instance), and
 * `eventTime`. The same event reported again within the series window
 * moves the first one's `series` on (count, lastObservedTime) instead of
 * writing another object. Recording never fails a controller's work: an
 * event that cannot be written is logged and dropped.
 */

export const EVENTS_V1_PATH = '/apis/events.svc.io/v1';
/** The original recorder's window: an identical event after this starts a new object. */
export const SERIES_WINDOW_MS = 6 * 60 * 1000;
/** Distinct events remembered for series (the oldest are forgotten first). */
const MAX_REMEMBERED = 4096;

export type EventType = 'Normal' | 'Warning';

/** The object an event is about, as an ObjectReference. */
export interface EventReference {
  apiVersion?: string;
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
  resourceVersion?: string;
  fieldPath?: string;
}

export interface RecordedEvent {
  regarding: EventReference;
  related?: EventReference;
  type: EventType;
  reason: string;
  action: string;
  note: string;
}

export interface EventRecorderOptions {
  /** `reportingController`, a qualified name (`svc.io/garbage-collector`). */
  controller: string;
  /** `reportingInstance`: which process of the controller (default: the host's name). */
  instance?: string;
  clock?: Clock;
  log?: Pick<Logger, 'warn'>;
}

/** An ObjectReference to `obj` (its apiVersion, kind, namespace, name, uid). */
export function referenceTo(obj: ApiObject): EventReference {
  const meta = obj.metadata ?? {};
  return {
    ...(obj.apiVersion ? { apiVersion: obj.apiVersion } : {}),
    kind: obj.kind ?? '',
    name: meta.name ?? '',
    ...(meta.namespace ? { namespace: meta.namespace } : {}),
    ...(meta.uid ? { uid: meta.uid } : {}),
  };
}

interface Remembered {
  namespace: string;
  object: ApiObject;
  count: number;
  firstMs: number;
}

export class EventRecorder {
  private readonly remembered = new Map<string, Remembered>();
  private readonly clock: Clock;
  private readonly instance: string;
  private lastNameNs = 0n;

  constructor(
    private readonly client: Pick<ApiClient, 'request'>,
    private readonly options: EventRecorderOptions,
  ) {
    this.clock = options.clock ?? realClock;
    this.instance = options.instance ?? hostname();
  }

  /** Writes the event (or moves its series on); settles once written or dropped, never rejects. */
  async record(event: RecordedEvent): Promise<void> {
    try {
      await this.write(event);
    } catch (err) {
      this.options.log?.warn('event not recorded', { reason: event.reason, regarding: `${event.regarding.kind}/${event.regarding.name}`, err: (err as Error).message });
    }
  }

  private key(event: RecordedEvent): string {
    const ref = (r: EventReference | undefined) => (r ? [r.apiVersion, r.kind, r.namespace, r.name, r.uid, r.fieldPath].join('|') : '');
    return JSON.stringify([ref(event.regarding), ref(event.related), event.type, event.reason, event.action, event.note]);
  }

  private async write(event: RecordedEvent): Promise<void> {
    const now = this.clock.now();
    const key = this.key(event);
    const known = this.remembered.get(key);
    if (known && now - known.firstMs < SERIES_WINDOW_MS) {
      const count = known.count + 1;
      const next = { ...known.object, series: { count, lastObservedTime: rfc3339Micro(new Date(now)) } };
      const name = encodeURIComponent(known.object.metadata?.name ?? '');
      try {
        known.object = await this.client.request('PUT', `${EVENTS_V1_PATH}/namespaces/${encodeURIComponent(known.namespace)}/events/${name}`, next);
        known.count = count;
        return;
      } catch (err) {
        // The first event is gone (expired, deleted): start again with a new one.
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
    }
    const namespace = event.regarding.namespace || 'default';
    const created = await this.client.request('POST', `${EVENTS_V1_PATH}/namespaces/${encodeURIComponent(namespace)}/events`, this.newEvent(event, namespace, now));
    this.remembered.delete(key);
    this.remembered.set(key, { namespace, object: created, count: 1, firstMs: now });
    if (this.remembered.size > MAX_REMEMBERED) this.remembered.delete(this.remembered.keys().next().value as string);
  }

  private newEvent(event: RecordedEvent, namespace: string, now: number): ApiObject {
    // The original names an event `<regarding>.<time in hex nanoseconds>`; distinct within this recorder.
    const at = BigInt(Math.floor(now)) * 1_000_000n;
    const ns = at > this.lastNameNs ? at : this.lastNameNs + 1n;
    this.lastNameNs = ns;
    return {
      apiVersion: 'events.svc.io/v1',
      kind: 'Event',
      metadata: { name: `${event.regarding.name}.${ns.toString(16)}`, namespace },
      eventTime: rfc3339Micro(new Date(now)),
      reportingController: this.options.controller,
      reportingInstance: this.instance,
      action: event.action,
      reason: event.reason,
      regarding: event.regarding,
      ...(event.related ? { related: event.related } : {}),
      note: event.note.length > 1024 ? event.note.slice(0, 1024) : event.note,
      type: event.type,
    };
  }
}
