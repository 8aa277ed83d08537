import type { Etcd3, IKeyValue } from 'etcd3';
import { sampledTraceparent } from '@svc/service-kit';

/**
 * How the trace of a write reaches the watchers of the change it makes.
 *
 * Watch-fanout publishes what it sees in etcd's watch, not what storage was
 * asked, so the writer's trace context has to travel through etcd itself:
 * a sampled write (a create, update or delete made while a sampled span is
 * active) also puts its W3C `traceparent` under one fixed key,
 * WRITE_TRACE_KEY, in the same transaction. Both puts then carry the same
 * revision and etcd delivers them in the same watch response, so the
 * publisher, watching the registry and this key together (PUBLISHED_RANGE),
 * pairs each change with the trace of the write that made it, with no
 * race, no second round trip and no state to expire: the key is
 * overwritten by the next traced write, and its history is compacted with
 * everything else. The alternatives had a race (storage keeping contexts by
 * revision for watch-fanout to ask: the watch can deliver a change before
 * storage has seen its own transaction's answer) or a new connection
 * (storage publishing to NATS). Writes that are not sampled, and every
 * write while tracing is off, add nothing.
 *
 * The key sits beside the registry (`/registry.trace` sorts just before
 * `/registry/`), never in it, so no list, count or collection sees it.
 */
export const WRITE_TRACE_KEY = '/registry.trace';

/** The keys the publisher watches: the trace key and everything under `/registry/`. */
export const PUBLISHED_RANGE = { start: WRITE_TRACE_KEY, end: '/registry0' };

type TxnRequest = Parameters<Etcd3['kv']['txn']>[0];

/** `req` with the active sampled trace recorded beside its successful writes; `req` itself when there is none. */
export function withWriteTrace(req: TxnRequest): TxnRequest {
  const traceparent = sampledTraceparent();
  if (!traceparent) return req;
  // Appended, so the indexes of the write's own responses do not move.
  return { ...req, success: [...(req.success ?? []), { request_put: { key: Buffer.from(WRITE_TRACE_KEY), value: Buffer.from(traceparent) } }] };
}

/** Whether a watched key is the trace key (not a change to publish). */
export function isWriteTraceKey(key: Buffer): boolean {
  return key.length === WRITE_TRACE_KEY.length && key.toString('utf8') === WRITE_TRACE_KEY;
}

/** The traces recorded in one watch response, by revision; undefined for the common response with none (nothing allocated). */
export function writeTracesOf(events: ReadonlyArray<{ kv: IKeyValue }>): Map<number, string> | undefined {
  let traces: Map<number, string> | undefined;
  for (const { kv } of events) {
    if (isWriteTraceKey(kv.key)) (traces ??= new Map()).set(Number(kv.mod_revision), kv.value.toString('utf8'));
  }
  return traces;
}
