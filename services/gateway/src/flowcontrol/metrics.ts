import { processMetrics, type CounterChild, type HistogramChild, type MetricsRegistry } from '@svc/service-kit';
import type { QueueSetObserver, RejectReason } from './queueset';

/**
 * `apiserver_flowcontrol_*`, with the original's names, labels and buckets.
 * Requests waiting and executing are counted here as the queue sets report
 * them and read into the gauges at scrape time; counters and histograms are
 * bound once per label combination.
 */

/** The original's wait-duration buckets. */
const WAIT_BUCKETS = [0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30];

interface Series {
  priorityLevel: string;
  flowSchema: string;
  waiting: number;
  waitingSeats: number;
  executing: number;
  executingSeats: number;
}

/** Requests in the queue sets by level and schema (kept while non-zero, so the label sets stay those in use). */
const series = new Map<string, Series>();
/** Each level's limits, by name. */
const limits = new Map<string, { nominal: number; current: number }>();

function seriesOf(priorityLevel: string, flowSchema: string): Series {
  const key = `${priorityLevel}\u0000${flowSchema}`;
  let s = series.get(key);
  if (!s) {
    s = { priorityLevel, flowSchema, waiting: 0, waitingSeats: 0, executing: 0, executingSeats: 0 };
    series.set(key, s);
  }
  return s;
}

function declare(registry: MetricsRegistry) {
  const gaugeOf = (name: string, help: string, read: (s: Series) => number) =>
    registry.gauge({
      name,
      help,
      labelNames: ['priority_level', 'flow_schema'] as const,
      stabilityLevel: 'BETA',
      collect(gauge) {
        gauge.reset();
        for (const s of series.values()) gauge.labels(s.priorityLevel, s.flowSchema).set(read(s));
      },
    });
  const limitGauge = (name: string, help: string, read: (l: { nominal: number; current: number }) => number) =>
    registry.gauge({
      name,
      help,
      labelNames: ['priority_level'] as const,
      stabilityLevel: 'BETA',
      collect(gauge) {
        gauge.reset();
        for (const [level, l] of limits) gauge.labels(level).set(read(l));
      },
    });
  return {
    rejected: registry.counter({
      name: 'apiserver_flowcontrol_rejected_requests_total',
      help: 'Number of requests rejected by API Priority and Fairness subsystem',
      labelNames: ['flow_schema', 'priority_level', 'reason'] as const,
      stabilityLevel: 'BETA',
    }),
    dispatched: registry.counter({
      name: 'apiserver_flowcontrol_dispatched_requests_total',
      help: 'Number of requests executed by API Priority and Fairness subsystem',
      labelNames: ['priority_level', 'flow_schema'] as const,
      stabilityLevel: 'BETA',
    }),
    waitDuration: registry.histogram({
      name: 'apiserver_flowcontrol_request_wait_duration_seconds',
      help: 'Length of time a request spent waiting in its queue',
      labelNames: ['priority_level', 'flow_schema', 'execute'] as const,
      stabilityLevel: 'BETA',
      buckets: WAIT_BUCKETS,
    }),
    inQueue: gaugeOf('apiserver_flowcontrol_current_inqueue_requests', 'Number of requests currently pending in queues of the API Priority and Fairness subsystem', (s) => s.waiting),
    inQueueSeats: gaugeOf('apiserver_flowcontrol_current_inqueue_seats', 'Number of seats currently pending in queues of the API Priority and Fairness subsystem', (s) => s.waitingSeats),
    executing: gaugeOf('apiserver_flowcontrol_current_executing_requests', 'Number of requests in initial (for a WATCH) or any (for a non-WATCH) execution stage in the API Priority and Fairness subsystem', (s) => s.executing),
    executingSeats: gaugeOf('apiserver_flowcontrol_current_executing_seats', 'Concurrency (number of seats) occupied by the currently executing (initial stage for a WATCH, any stage otherwise) requests in the API Priority and Fairness subsystem', (s) => s.executingSeats),
    nominalLimit: limitGauge('apiserver_flowcontrol_nominal_limit_seats', 'Nominal number of execution seats configured for each priority level', (l) => l.nominal),
    concurrencyLimit: limitGauge('apiserver_flowcontrol_request_concurrency_limit', 'Nominal number of execution seats configured for each priority level', (l) => l.nominal),
    currentLimit: limitGauge('apiserver_flowcontrol_current_limit_seats', 'current derived number of execution seats available to each priority level', (l) => l.current),
  };
}

type FlowControlMetrics = ReturnType<typeof declare>;
let declared: FlowControlMetrics | undefined;

export function flowControlMetrics(): FlowControlMetrics {
  return (declared ??= declare(processMetrics));
}

/** Bound children, by label values joined. */
const rejectedChildren = new Map<string, CounterChild>();
const dispatchedChildren = new Map<string, CounterChild>();
const waitChildren = new Map<string, HistogramChild>();
const MAX_BOUND = 10_000;

function bound<T>(map: Map<string, T>, key: string, make: () => T): T {
  let child = map.get(key);
  if (!child) {
    if (map.size >= MAX_BOUND) map.clear();
    child = make();
    map.set(key, child);
  }
  return child;
}

/** A rejection counted outside a queue set (the max-in-flight limiter, or a level gone while the request was classified). */
export function countRejected(flowSchema: string, priorityLevel: string, reason: RejectReason): void {
  const m = flowControlMetrics();
  bound(rejectedChildren, `${flowSchema}\u0000${priorityLevel}\u0000${reason}`, () => m.rejected.labels(flowSchema, priorityLevel, reason)).inc();
}

/** The observer of one priority level's queue set. */
export function levelObserver(priorityLevel: string): QueueSetObserver {
  const m = flowControlMetrics();
  const drop = (s: Series): void => {
    if (s.waiting === 0 && s.executing === 0) series.delete(`${s.priorityLevel}\u0000${s.flowSchema}`);
  };
  const wait = (flowSchema: string, execute: boolean, ms: number): void =>
    bound(waitChildren, `${priorityLevel}\u0000${flowSchema}\u0000${execute}`, () => m.waitDuration.labels(priorityLevel, flowSchema, String(execute))).observe(ms / 1000);
  return {
    waiting(flowSchema, requests, seats) {
      const s = seriesOf(priorityLevel, flowSchema);
      s.waiting += requests;
      s.waitingSeats += seats;
      drop(s);
    },
    executing(flowSchema, requests, seats) {
      const s = seriesOf(priorityLevel, flowSchema);
      s.executing += requests;
      s.executingSeats += seats;
      drop(s);
    },
    dispatched(flowSchema, waitedMs) {
      bound(dispatchedChildren, `${priorityLevel}\u0000${flowSchema}`, () => m.dispatched.labels(priorityLevel, flowSchema)).inc();
      wait(flowSchema, true, waitedMs);
    },
    rejected(flowSchema, reason, waitedMs) {
      countRejected(flowSchema, priorityLevel, reason);
      wait(flowSchema, false, waitedMs);
    },
  };
}

/** The limits reported for the levels now configured (others are forgotten). */
export function setLevelLimits(levels: ReadonlyMap<string, { nominal: number; current: number }>): void {
  limits.clear();
  for (const [name, l] of levels) limits.set(name, l);
}
