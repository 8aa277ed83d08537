import { processMetrics, type MetricsRegistry } from '@svc/service-kit';
import { watch } from '@svc/proto';

/**
 * The watch fan-out's metrics: how long a change takes from etcd's watch to
 * the bus's acknowledgement of its publish, the events published, whether
 * this replica leads, and what its history holds.
 */

/** 1 ms to about 16 s by factors of two. */
const LAG_BUCKETS = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);

const EVENT_TYPES: Record<number, string> = {
  [watch.EventType.EVENT_TYPE_ADDED]: 'ADDED',
  [watch.EventType.EVENT_TYPE_MODIFIED]: 'MODIFIED',
  [watch.EventType.EVENT_TYPE_DELETED]: 'DELETED',
  [watch.EventType.EVENT_TYPE_PROGRESS]: 'PROGRESS',
};

function declare(registry: MetricsRegistry) {
  const published = registry.counter({ name: 'watch_fanout_events_published_total', help: 'Change events published to the bus and acknowledged, by type.', labelNames: ['type'] as const });
  const lag = registry.histogram({
    name: 'watch_fanout_publish_lag_seconds',
    help: "Time from etcd's watch delivering a change (its commit, as seen here) to the bus acknowledging its publish.",
    buckets: LAG_BUCKETS,
  });
  const byType = new Map<number, { inc(): void }>();
  for (const [type, name] of Object.entries(EVENT_TYPES)) byType.set(Number(type), published.labels(name));
  return { lag, byType, other: published.labels('OTHER') };
}

let instruments: ReturnType<typeof declare> | undefined;

/** A change delivered by etcd at `receivedAt` (performance.now()) was acknowledged by the bus now. */
export function recordPublished(type: number, receivedAt: number | undefined): void {
  const m = (instruments ??= declare(processMetrics));
  (m.byType.get(type) ?? m.other).inc();
  if (receivedAt !== undefined) m.lag.observe((performance.now() - receivedAt) / 1000);
}

interface FanoutState {
  isLeader(): boolean;
  historyEvents(): number;
  historyBytes(): number;
}

/** The fan-outs of this process (one, except in tests); gauges report the latest. */
const states: FanoutState[] = [];
let gaugesDeclared = false;

function current(): FanoutState | undefined {
  return states[states.length - 1];
}

/** Gauges read at scrape time: leadership and the history's size. Returns the state's removal. */
export function registerFanoutGauges(state: FanoutState, registry: MetricsRegistry = processMetrics): () => void {
  states.push(state);
  if (!gaugesDeclared) {
    gaugesDeclared = true;
    registry.gauge({
      name: 'watch_fanout_leader',
      help: "1 when this replica is the publisher (leads etcd's watch onto the bus), 0 otherwise.",
      collect(g) {
        g.set(current()?.isLeader() ? 1 : 0);
      },
    });
    registry.gauge({
      name: 'watch_fanout_history_events',
      help: 'Change events held in the history that watches resume from.',
      collect(g) {
        g.set(current()?.historyEvents() ?? 0);
      },
    });
    registry.gauge({
      name: 'watch_fanout_history_bytes',
      help: 'Bytes the history holds (objects and a fixed overhead per event).',
      collect(g) {
        g.set(current()?.historyBytes() ?? 0);
      },
    });
  }
  return () => {
    const i = states.indexOf(state);
    if (i >= 0) states.splice(i, 1);
  };
}
