import type { watch } from '@svc/proto';
import { SpanKind, spanContextOf, startLinkedSpan, type SpanContext, type TraceContext } from '@svc/service-kit';
import type { Change } from './change';

/**
 * The delivery of a change to each watcher, traced: a span per watcher,
 * linked to the write that made the change (its trace travels from storage
 * through etcd and the bus: storage's write-trace.ts, the bus message's
 * `traceparent` header), a child of the watch request's own span when
 * there is one. So one trace view leads from a write to every watcher it
 * reached. Only changes that arrived with a trace are looked at, and only
 * while tracing is on (the subscriber reads no header otherwise).
 */

const writeTraces = new WeakMap<watch.ChangeEvent, SpanContext>();

/** Remembers the trace of the write behind `event` until it is dispatched (the event is the key: nothing to expire). */
export function noteWriteTrace(event: watch.ChangeEvent, traceparent: string): void {
  const sc = spanContextOf(traceparent);
  if (sc) writeTraces.set(event, sc);
}

export function writeTraceOf(event: watch.ChangeEvent): SpanContext | undefined {
  return writeTraces.get(event);
}

/** Delivers `change` inside a span linked to `write`. */
export function deliverLinked(write: SpanContext, change: Change, deliver: (c: Change) => void, parent: TraceContext | undefined, resource: string): void {
  const span = startLinkedSpan(`watch delivery ${resource}`, write, { 'svc.watch.event': change.type, 'svc.revision': change.revision, 'svc.watch.resource': resource }, SpanKind.CONSUMER, parent);
  try {
    deliver(change);
  } finally {
    span?.end();
  }
}
