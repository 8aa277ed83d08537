import type { ApiObject, UserInfo } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import { classify, flowDistinguisher, flowHash, type ClassifiedRequest } from './classify';
import { CATCH_ALL, digestConfig, flowSchemaFrom, priorityLevelFrom, type DigestedConfig, type DigestedLevel, type FlowSchema } from './config';
import { allocateLimits, BORROWING_PERIOD_MS, smoothDemand, type LevelDemand } from './borrowing';
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
  /**
   * How long a request without a deadline of its own may wait in a queue
   * before it is refused (the original: a quarter of `--request-timeout`);
   * a request with a deadline waits what `admit` is given.
   */
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
  /** Its seat demand, smoothed over the borrowing periods. */
  smoothedDemand: number;
  /** Its limit now, after borrowing and lending (Infinity when exempt). */
  currentLimit: number;
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
  private borrowingTimer: NodeJS.Timeout | undefined;
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
    this.borrowingTimer = setInterval(() => this.adjustBorrowing(), BORROWING_PERIOD_MS);
    this.borrowingTimer.unref();
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    if (this.borrowingTimer) clearInterval(this.borrowingTimer);
    this.timer = undefined;
    this.borrowingTimer = undefined;
  }

  /** Sets every level's limit from the seat demand of the period that ends now (borrowing.ts). */
  adjustBorrowing(): void {
    const demands: LevelDemand[] = [];
    for (const [name, state] of this.levels) {
      const d = state.queues.takeDemand();
      if (state.quiescing) continue;
      state.smoothedDemand = smoothDemand(state.smoothedDemand, d.average, d.deviation);
      const l = state.level;
      demands.push({
        name,
        exempt: l.config.type === 'Exempt',
        nominal: l.nominalLimit,
        minLimit: l.nominalLimit - l.lendableLimit,
        maxLimit: l.nominalLimit + l.borrowingLimit,
        smoothed: state.smoothedDemand,
        highWatermark: Math.round(d.max),
      });
    }
    const limits = allocateLimits(demands);
    for (const [name, limit] of limits) {
      const state = this.levels.get(name);
      if (!state || state.level.config.type === 'Exempt') continue;
      const current = Math.max(1, limit);
      if (current === state.currentLimit) continue;
      state.currentLimit = current;
      state.queues.reconfigure({ concurrencyLimit: current, queuing: state.level.config.queuing });
    }
    this.reportLimits();
  }

  private reportLimits(): void {
    setLevelLimits(
      new Map(
        [...this.levels]
          .filter(([, s]) => !s.quiescing)
          .map(([name, s]) => [name, { nominal: s.level.nominalLimit, current: Number.isFinite(s.currentLimit) ? s.currentLimit : 0 }]),
      ),
    );
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
        state.currentLimit = level.concurrencyLimit;
        state.queues.reconfigure(queueConfig);
      } else {
        const queues = new QueueSet(queueConfig, this.options.clock, levelObserver(name));
        this.levels.set(name, { level, queues, quiescing: false, smoothedDemand: 0, currentLimit: level.concurrencyLimit });
      }
    }
    for (const [name, state] of this.levels) {
      if (digested.levels.has(name)) continue;
      if (state.queues.idle) this.levels.delete(name);
      else state.quiescing = true;
    }
    this.reportLimits();
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

  /** Admits a classified request of `seats` (capped by the level's maximum) to its level's queue set, to wait at most `waitMs` (default: the configured wait). */
  admit(c: Classification, seats: number, details?: RequestDetails, waitMs = this.options.queueWaitMs): Ticket {
    const state = this.levels.get(c.level.config.name) as LevelState;
    return state.queues.start({
      seats: Math.min(Math.max(1, seats), c.level.maxSeats),
      hash: flowHash(c.schema.name, c.distinguisher),
      flowSchema: c.schema.name,
      distinguisher: c.distinguisher,
      waitMs,
      ...(details ? { details } : {}),
    });
  }

  /** Every level's state, by name (the debug endpoints). */
  levelStates(): ReadonlyArray<{ name: string; level: DigestedLevel; queues: QueueSet; quiescing: boolean; currentLimit: number }> {
    return [...this.levels].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)).map(([name, s]) => ({ name, ...s }));
  }
}
