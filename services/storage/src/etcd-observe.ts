import { inClientSpan, processMetrics, type MetricsRegistry } from '@svc/service-kit';
import type { StoredKey } from '@svc/apimachinery';
import { noteObjectType } from './object-counts';

/**
 * The one place every etcd request of the store passes: its latency, count,
 * errors and size per operation and resource, with the original server's
 * metric names (`etcd_request_duration_seconds{operation,type}`).
 */

/** What the store asked etcd for (`revision`: the current revision, no object read). */
export type EtcdOperation = 'get' | 'list' | 'count' | 'create' | 'update' | 'delete' | 'revision';

export interface EtcdCall {
  operation: EtcdOperation;
  /** The resource as `<resource>.<group>` (`pods`, `deployments.apps`), as the original labels it. */
  type: string;
  /** Bytes of the value written, for writes. */
  requestBytes?: number;
}

/** The `type` label of a key's resource. */
export function etcdType(key: Pick<StoredKey, 'group' | 'resource'>): string {
  return key.group ? `${key.resource}.${key.group}` : key.resource;
}

const LABELS = ['operation', 'type'] as const;

function declare(registry: MetricsRegistry) {
  return {
    duration: registry.histogram({
      name: 'etcd_request_duration_seconds',
      help: 'Etcd request latency in seconds for each operation and object type.',
      labelNames: LABELS,
      buckets: [0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60],
    }),
    total: registry.counter({ name: 'etcd_requests_total', help: 'Etcd request counts for each operation and object type.', labelNames: LABELS }),
    errors: registry.counter({ name: 'etcd_request_errors_total', help: 'Etcd failed request counts for each operation and object type.', labelNames: LABELS }),
    size: registry.histogram({
      name: 'etcd_request_size_bytes',
      help: 'Size in bytes of the values written to etcd for each operation and object type.',
      labelNames: LABELS,
      // 64 B to 4 MiB, by factors of 4.
      buckets: [64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304],
    }),
  };
}

let instruments: ReturnType<typeof declare> | undefined;

interface Bound {
  total: { inc(): void };
  errors: { inc(): void };
  duration: { observe(v: number): void };
  size: { observe(v: number): void };
}

/** Children by operation and type, bound once (both are bounded: the operations, and the resources served). */
const bound = new Map<string, Bound>();

function boundFor(call: EtcdCall): Bound {
  const key = `${call.operation}\u0000${call.type}`;
  let b = bound.get(key);
  if (!b) {
    const m = (instruments ??= declare(processMetrics));
    b = {
      total: m.total.labels(call.operation, call.type),
      errors: m.errors.labels(call.operation, call.type),
      duration: m.duration.labels(call.operation, call.type),
      size: m.size.labels(call.operation, call.type),
    };
    bound.set(key, b);
  }
  return b;
}

/** Runs one etcd request, recording it. */
export async function observeEtcd<T>(call: EtcdCall, fn: () => Promise<T>): Promise<T> {
  const m = boundFor(call);
  if (call.operation === 'create' || call.operation === 'list') noteObjectType(call.type);
  const started = performance.now();
  try {
    // A client span per request when the call belongs to a trace (tracing.ts: nothing otherwise).
    return await inClientSpan(`etcd ${call.operation}`, { 'db.system.name': 'etcd', 'db.operation.name': call.operation, 'db.collection.name': call.type }, fn);
  } catch (err) {
    m.errors.inc();
    throw err;
  } finally {
    m.total.inc();
    m.duration.observe((performance.now() - started) / 1000);
    if (call.requestBytes !== undefined) m.size.observe(call.requestBytes);
  }
}
