import type { ApiObject } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import { CachedStorage } from '../cache/cached-storage';
import type { Handler } from '../filters/chain';
import type { ObjectStorage } from '../registry/storage-interface';
import { FLOWCONTROL_GROUP } from './config';
import { DEFAULT_QUEUE_WAIT_MS, FlowControl, type ConfigSource } from './controller';
import { withFlowControlDebug } from './debug';
import { withMaxInFlight, withPriorityAndFairness } from './filter';
import { inFlightLimits } from './max-in-flight';
import { snapshotCounts, type ObjectCountFn } from './work-estimate';

/** `--enable-priority-and-fairness`, `--max-requests-inflight`, `--max-mutating-requests-inflight`. */
export interface FlowControlConfig {
  enabled: boolean;
  /** Read-only requests in flight (without flow control), and with the next the seats the priority levels share. */
  maxRequestsInflight: number;
  maxMutatingRequestsInflight: number;
  /** How long a request without a deadline may wait in a queue (default 15 s; the gateway passes a quarter of `--request-timeout`). */
  queueWaitMs?: number;
}

export const DEFAULT_FLOW_CONTROL: FlowControlConfig = { enabled: true, maxRequestsInflight: 400, maxMutatingRequestsInflight: 200 };

/** What the handler chain asks of flow control. */
export interface GatewayFlowControl {
  /** The dispatch filter (priority and fairness, or the max-in-flight limit). */
  filter(next: Handler): Handler;
  /** Serves the debug dumps in front of `next` (nothing when priority and fairness is off). */
  debug(next: Handler): Handler;
  readonly controller: FlowControl | undefined;
  stop(): void;
}

const collection = (resource: string) => ({ group: FLOWCONTROL_GROUP, resource, namespace: '' });
const READ_TIMEOUT_MS = 5000;

/** The stored objects, read as of any state the server holds (from the watch cache once it has them). */
function storageSource(storage: ObjectStorage): ConfigSource {
  const list = async (resource: string): Promise<ApiObject[]> => (await storage.list(collection(resource), { at: { any: true } }, { timeoutMs: READ_TIMEOUT_MS })).items;
  return async () => {
    const [flowSchemas, priorityLevels] = await Promise.all([list('flowschemas'), list('prioritylevelconfigurations')]);
    return { flowSchemas, priorityLevels };
  };
}

/** Object counts of the resources the watch cache holds (none without the cache: every list then takes one seat). */
export function watchCacheCounts(storage: ObjectStorage): ObjectCountFn {
  if (!(storage instanceof CachedStorage)) return () => undefined;
  return snapshotCounts(() => storage.objectCounts());
}

export function setupFlowControl(config: FlowControlConfig, storage: ObjectStorage, log: Logger): GatewayFlowControl {
  if (!config.enabled) {
    const limits = inFlightLimits(config.maxRequestsInflight, config.maxMutatingRequestsInflight);
    return { filter: (next) => withMaxInFlight(next, limits), debug: (next) => next, controller: undefined, stop: () => undefined };
  }
  const controller = new FlowControl(
    storageSource(storage),
    {
      serverConcurrencyLimit: config.maxRequestsInflight + config.maxMutatingRequestsInflight,
      queueWaitMs: config.queueWaitMs ?? DEFAULT_QUEUE_WAIT_MS,
      writeStatus: async (schema) => {
        const name = schema.metadata?.name ?? '';
        await storage.update({ ...collection('flowschemas'), name }, schema, { revision: Number(schema.metadata?.resourceVersion ?? 0) }, { timeoutMs: READ_TIMEOUT_MS });
      },
    },
    log,
  );
  controller.start();
  const counts = watchCacheCounts(storage);
  return {
    filter: (next) => withPriorityAndFairness(next, controller, counts),
    debug: (next) => withFlowControlDebug(next, controller),
    controller,
    stop: () => controller.stop(),
  };
}
