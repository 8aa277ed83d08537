import type { Etcd3 } from 'etcd3';
import { processMetrics, type Logger, type MetricsRegistry } from '@svc/service-kit';

/**
 * `apiserver_storage_objects{resource}`: how many objects each resource
 * has in etcd, counted at an interval by one count-only range per resource
 * (etcd answers it from its index, without reading values), as the original
 * server refreshes it every minute. Resources are the ones written or
 * listed through this process since it started.
 */

/** Resources followed at most; past this, new ones are not counted (their requests still are). */
export const MAX_COUNTED_RESOURCES = 2_000;

const followed = new Set<string>();

/** Notes a resource (its etcd `type` label, `pods` or `deployments.apps`) as worth counting. */
export function noteObjectType(type: string): void {
  if (type === '' || followed.has(type) || followed.size >= MAX_COUNTED_RESOURCES) return;
  followed.add(type);
}

/** The resources counted (for tests). */
export function followedTypes(): ReadonlySet<string> {
  return followed;
}

/** The etcd prefix of a `type` label: `deployments.apps` → `/registry/apps/deployments/`. */
export function prefixOfType(type: string): string {
  const dot = type.indexOf('.');
  return dot < 0 ? `/registry/${type}/` : `/registry/${type.slice(dot + 1)}/${type.slice(0, dot)}/`;
}

function prefixEnd(prefix: string): Buffer {
  const end = Buffer.from(prefix);
  end[end.length - 1] = (end[end.length - 1] as number) + 1;
  return end;
}

export interface ObjectCounting {
  /** Counts every followed resource now (the interval does the same). */
  refresh(): Promise<void>;
  stop(): void;
}

type ResourceGauge = ReturnType<MetricsRegistry['gauge']>;

const gauges = new WeakMap<MetricsRegistry, ResourceGauge>();

function storageObjectsGauge(registry: MetricsRegistry): ResourceGauge {
  let gauge = gauges.get(registry);
  if (!gauge) {
    gauge = registry.gauge({
      name: 'apiserver_storage_objects',
      help: 'Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.',
      labelNames: ['resource'] as const,
      stabilityLevel: 'STABLE',
    });
    gauges.set(registry, gauge);
  }
  return gauge;
}

/** Starts counting every `intervalMs`; a resource whose count fails reports -1, as the original does. */
export function startObjectCounting(client: Etcd3, log: Logger, intervalMs = 60_000, registry: MetricsRegistry = processMetrics): ObjectCounting {
  const gauge = storageObjectsGauge(registry);
  let running: Promise<void> | undefined;
  const refresh = (): Promise<void> => {
    running ??= (async () => {
      for (const type of followed) {
        const prefix = prefixOfType(type);
        try {
          const res = await client.kv.range({ key: Buffer.from(prefix), range_end: prefixEnd(prefix), count_only: true });
          gauge.labels(type).set(Number(res.count));
        } catch (err) {
          gauge.labels(type).set(-1);
          log.debug('counting stored objects failed', { resource: type, err });
        }
      }
    })().finally(() => {
      running = undefined;
    });
    return running;
  };
  const timer = setInterval(() => void refresh(), intervalMs);
  timer.unref();
  return {
    refresh,
    stop: () => clearInterval(timer),
  };
}
