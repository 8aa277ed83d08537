import type { ApiObject, UserInfo } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import { classify, flowDistinguisher, flowHash, type ClassifiedRequest } from './classify';
import { CATCH_ALL, digestConfig, flowSchemaFrom, priorityLevelFrom, type DigestedConfig, type DigestedLevel, type FlowSchema } from './config';
import { withDanglingCondition } from './dangling';
import { levelObserver, setLevelLimits } from './metrics';
import { QueueSet, realClock, type Clock, type RequestDetails, type Ticket } from './queueset';

/**
 * The gateway's API Priority and Fairness controller: keeps the digested
 * configuration current from storage (read every second, from the watch
 * cache when it has the objects, so the poll costs no storage call once
 * the cache holds them), a queue set per priority level, and admits each
 * classified request to its level.
 */

export interface FlowControlOptions {
  /** `--max-requests-inflight` + `--max-mutating-requests-inflight`: the seats the levels share. */
  serverConcurrencyLimit: number;
  /** How long a request may wait in a queue before it is refused (the original: a quarter of the request timeout). */
  queueWaitMs: number;
  /** How often the configuration is read again. */
  refreshMs: number;
  clock: Clock;
  /** Writes a FlowSchema whose `Dangling` condition changed (compare-and-swap on its resourceVersion); unset: nothing is written. */
  writeStatus?: (schema: ApiObject) => Promise<void>;
}

export const DEFAULT_QUEUE_WAIT_MS = 15_000;
const DEFAULT_REFRESH_MS = 1000;

/** Where the stored FlowSchemas and PriorityLevelConfigurations are read from. */
export type ConfigSource = () => Promise<{ flowSchemas: readonly ApiObject[]; priorityLevels: readonly ApiObject[] }>;

interface LevelState {
  level: DigestedLevel;
  queues: QueueSet;
  /** The level is no longer configured: it runs what it holds and goes once idle. */
  quiescing: boolean;
}

/** A request's classification: the schema that matched and its level. */
export interface Classification {
  schema: FlowSchema;
  level: DigestedLevel;
  distinguisher: string;
}

export class FlowControl {
  private config: DigestedConfig;
  private readonly levels = new Map<string, LevelState>();
  private fingerprint = '';
  private timer: NodeJS.Timeout | undefined;
  private refreshing: Promise<void> | undefined;
  private readonly options: FlowControlOptions;

  constructor(
    private readonly source: ConfigSource | undefined,
    options: Partial<FlowControlOptions> & Pick<FlowControlOptions, 'serverConcurrencyLimit'>,
    private readonly log?: Logger,
  ) {
    this.options = { queueWaitMs: DEFAULT_QUEUE_WAIT_MS, refreshMs: DEFAULT_REFRESH_MS, clock: realClock, ...options };
    this.config = digestConfig([], [], this.options.serverConcurrencyLimit);
    this.applyDigest(this.config);
  }

  /** Reads the configuration now and then every `refreshMs` (the mandatory objects serve until the first read answers). */
  start(): void {
    if (!this.source || this.timer) return;
    void this.refresh();
    this.timer = setInterval(() => void this.refresh(), this.options.refreshMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Reads the stored objects and applies them when they changed; a failed read keeps the configuration in force. */
  refresh(): Promise<void> {
    if (!this.source) return Promise.resolve();
    const source = this.source;
    this.refreshing ??= (async () => {
      try {
        const { flowSchemas, priorityLevels } = await source();
        if (this.apply(flowSchemas.map(flowSchemaFrom), priorityLevels.map(priorityLevelFrom))) await this.writeDangling(flowSchemas, priorityLevels);
      } catch (err) {
        this.log?.warn('flow control: could not read the configuration; keeping the one in force', { err: (err as Error).message });
      } finally {
        this.refreshing = undefined;
      }
    })();
    return this.refreshing;
  }

  /**
   * Each stored FlowSchema's `Dangling` condition, written where it is not
   * what the stored levels say (a write that loses a race is left to the
   * next change, which reads the schema again).
   */
  private async writeDangling(schemas: readonly ApiObject[], levels: readonly ApiObject[]): Promise<void> {
    const write = this.options.writeStatus;
    if (!write) return;
    const levelNames = new Set(levels.map((l) => l.metadata?.name ?? ''));
    for (const raw of schemas) {
      const level = flowSchemaFrom(raw).priorityLevel;
      const updated = withDanglingCondition(raw, level, levelNames.has(level));
      if (!updated) continue;
      try {
        await write(updated);
      } catch (err) {
        this.log?.info('flow control: the Dangling condition of a flow schema was not written', { flowSchema: raw.metadata?.name, err: (err as Error).message });
      }
    }
  }

  /** Applies a configuration (the objects as read; the mandatory ones are imagined when missing); false when nothing changed. */
  apply(flowSchemas: readonly FlowSchema[], priorityLevels: readonly ReturnType<typeof priorityLevelFrom>[]): boolean {
    const fingerprint = [...flowSchemas.map((s) => `fs/${s.name}/${s.uid}/${s.resourceVersion}`), ...priorityLevels.map((l) => `pl/${l.name}/${l.uid}/${l.resourceVersion}`)].sort().join('\n');
    if (fingerprint === this.fingerprint) return false;
    this.fingerprint = fingerprint;
    const digested = digestConfig(flowSchemas, priorityLevels, this.options.serverConcurrencyLimit);
    this.applyDigest(digested);
    this.log?.info('flow control configuration applied', {
      flowSchemas: digested.flowSchemas.length,
      priorityLevels: digested.levels.size,
      ...(digested.imagined.length > 0 ? { imagined: digested.imagined } : {}),
      ...(digested.dangling.size > 0 ? { dangling: Object.fromEntries(digested.dangling) } : {}),
    });
    return true;
  }

  private applyDigest(digested: DigestedConfig): void {
    this.config = digested;
    for (const [name, level] of digested.levels) {
      const queueConfig = { concurrencyLimit: level.concurrencyLimit, queuing: level.config.queuing };
      const state = this.levels.get(name);
      if (state) {
        state.level = level;
        state.quiescing = false;
        state.queues.reconfigure(queueConfig);
      } else {
        this.levels.set(name, { level, queues: new QueueSet(queueConfig, this.options.clock, levelObserver(name)), quiescing: false });
      }
    }
    for (const [name, state] of this.levels) {
      if (digested.levels.has(name)) continue;
      if (state.queues.idle) this.levels.delete(name);
      else state.quiescing = true;
    }
    setLevelLimits(new Map([...digested.levels].map(([name, l]) => [name, { nominal: l.nominalLimit, current: Number.isFinite(l.concurrencyLimit) ? l.concurrencyLimit : 0 }])));
  }

  /** The configuration in force. */
  get current(): DigestedConfig {
    return this.config;
  }

  /** The schema and level of a request: the first schema that matches, the catch-all when none does. */
  classify(user: UserInfo, info: ClassifiedRequest): Classification {
    const schema = classify(this.config.flowSchemas, user, info) ?? (this.config.flowSchemas.find((s) => s.name === CATCH_ALL) as FlowSchema);
    const level = this.config.levels.get(schema.priorityLevel) as DigestedLevel;
    return { schema, level, distinguisher: flowDistinguisher(schema, user, info) };
  }

  /** Admits a classified request of `seats` (capped by the level's maximum) to its level's queue set. */
  admit(c: Classification, seats: number, details?: RequestDetails): Ticket {
    const state = this.levels.get(c.level.config.name) as LevelState;
    return state.queues.start({
      seats: Math.min(Math.max(1, seats), c.level.maxSeats),
      hash: flowHash(c.schema.name, c.distinguisher),
      flowSchema: c.schema.name,
      distinguisher: c.distinguisher,
      waitMs: this.options.queueWaitMs,
      ...(details ? { details } : {}),
    });
  }

  /** Every level's state, by name (the debug endpoints). */
  levelStates(): ReadonlyArray<{ name: string; level: DigestedLevel; queues: QueueSet; quiescing: boolean }> {
    return [...this.levels].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, s]) => ({ name, ...s }));
  }
}
