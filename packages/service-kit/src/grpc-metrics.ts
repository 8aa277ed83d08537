import { addCallObserver, type CallDescription, type CallObservation } from './call-hooks';
import type { CounterChild, FastCounter, FastHistogram, HistogramChild, MetricsRegistry } from './metrics';

/**
 * gRPC server and client metrics for every internal call, named and labelled
 * as go-grpc-prometheus names them (`grpc_server_handled_total{grpc_service,
 * grpc_method, grpc_type, grpc_code}`, `grpc_server_handling_seconds`...),
 * recorded through the one call hook both sides pass.
 */

/** gRPC status codes by number, as their names (`OK`, `NotFound`). */
export const GRPC_CODE_NAMES: readonly string[] = [
  'OK',
  'Canceled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
];

export function grpcCodeName(code: number): string {
  return GRPC_CODE_NAMES[code] ?? 'Unknown';
}

/** Prometheus' default buckets, which go-grpc-prometheus uses for handling time. */
const HANDLING_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

const LABELS = ['grpc_service', 'grpc_method', 'grpc_type'] as const;
const CODE_LABELS = ['grpc_service', 'grpc_method', 'grpc_type', 'grpc_code'] as const;

type Label = (typeof LABELS)[number];
type CodeLabel = (typeof CODE_LABELS)[number];

interface SideMetrics {
  started: FastCounter<Label>;
  handled: FastCounter<CodeLabel>;
  handling: FastHistogram<Label>;
}

function declareSide(registry: MetricsRegistry, side: 'server' | 'client'): SideMetrics {
  const what = side === 'server' ? 'RPCs started on the server' : 'RPCs started on the client';
  return {
    started: registry.counter({ name: `grpc_${side}_started_total`, help: `Total number of ${what}.`, labelNames: LABELS }),
    handled: registry.counter({
      name: `grpc_${side}_handled_total`,
      help: side === 'server' ? 'Total number of RPCs completed on the server, regardless of success or failure.' : 'Total number of RPCs completed by the client, regardless of success or failure.',
      labelNames: CODE_LABELS,
    }),
    handling: registry.histogram({
      name: `grpc_${side}_handling_seconds`,
      help:
        side === 'server'
          ? 'Histogram of response latency (seconds) of gRPC that had been application-level handled by the server.'
          : 'Histogram of response latency (seconds) of the gRPC until it is finished by the application.',
      labelNames: LABELS,
      buckets: HANDLING_BUCKETS,
    }),
  };
}

/** A method's children, bound once: a call then costs two increments and an observation. */
interface MethodMetrics {
  started: CounterChild;
  handling: HistogramChild;
  byCode: Map<number, CounterChild>;
  handled: FastCounter<CodeLabel>;
  labels: [string, string, string];
}

/**
 * Records every internal call of this process, both sides. `serverService`
 * names the serving side when the hook does not (this process's service).
 * Returns the observer's removal.
 */
export function installGrpcMetrics(registry: MetricsRegistry, serverService: string): () => void {
  const sides = { server: declareSide(registry, 'server'), client: declareSide(registry, 'client') };
  const methods = new Map<string, MethodMetrics>();
  const methodOf = (call: CallDescription): MethodMetrics => {
    const service = call.service || (call.side === 'server' ? serverService : 'unknown');
    const type = call.transport === 'server-stream' ? 'server_stream' : 'unary';
    const key = `${call.side}\u0000${service}\u0000${call.method}\u0000${type}`;
    let m = methods.get(key);
    if (!m) {
      const s = sides[call.side];
      m = {
        started: s.started.labels(service, call.method, type),
        handling: s.handling.labels(service, call.method, type),
        byCode: new Map(),
        handled: s.handled,
        labels: [service, call.method, type],
      };
      methods.set(key, m);
    }
    m.started.inc();
    return m;
  };
  return addCallObserver((call): CallObservation => {
    const m = methodOf(call);
    const started = performance.now();
    return {
      end(code) {
        m.handling.observe((performance.now() - started) / 1000);
        let counter = m.byCode.get(code);
        if (!counter) {
          counter = m.handled.labels(m.labels[0], m.labels[1], m.labels[2], grpcCodeName(code));
          m.byCode.set(code, counter);
        }
        counter.inc();
      },
    };
  });
}
