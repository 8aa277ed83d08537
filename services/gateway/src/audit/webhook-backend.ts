import * as https from 'node:https';
import { loadWebhookConfig, postJson, type Credentials } from '@svc/service-kit';
import type { DropCounter } from './drops';
import { AUDIT_API_VERSION, type AuditBackend } from './types';

/**
 * The webhook backend (`--audit-webhook-config-file`), in the original
 * server's batch mode: events wait in a bounded buffer and leave as one
 * `EventList` when `maxBatchSize` have gathered or `maxBatchWaitMs` after
 * the first of a batch arrived. At most `maxInFlight` batches are sent at
 * once; a batch that fails is retried with a growing backoff, then dropped
 * (its events counted). A full buffer drops new events (counted): a slow or
 * unreachable webhook never holds a request.
 */
export interface BatchOptions {
  /** Events buffered at most (upstream --audit-webhook-batch-buffer-size, 10000). */
  bufferSize: number;
  /** Events per EventList at most (upstream 400). */
  maxBatchSize: number;
  /** How long the first event of a batch waits for others (upstream 30 s). */
  maxBatchWaitMs: number;
  /** Batches sent at once at most. */
  maxInFlight: number;
  /** Tries of one batch, the first included. */
  maxAttempts: number;
  /** The wait before the first retry; each next one waits 1.5 times longer (upstream --audit-webhook-initial-backoff, 10 s). */
  initialBackoffMs: number;
}

export const DEFAULT_BATCH_OPTIONS: BatchOptions = {
  bufferSize: 10_000,
  maxBatchSize: 400,
  maxBatchWaitMs: 30_000,
  maxInFlight: 4,
  maxAttempts: 5,
  initialBackoffMs: 10_000,
};

/** Sends one EventList body; rejects when the webhook did not accept it. */
export type SendBatch = (body: string) => Promise<void>;

export function eventListBody(events: readonly string[]): string {
  return `{"kind":"EventList","apiVersion":"${AUDIT_API_VERSION}","metadata":{},"items":[${events.join(',')}]}`;
}

export class BatchingBackend implements AuditBackend {
  readonly name = 'webhook';
  private buffer: string[] = [];
  private timer: NodeJS.Timeout | undefined;
  private inFlight = 0;
  private closed = false;
  private readonly sending = new Set<Promise<void>>();
  private readonly retryTimers = new Set<NodeJS.Timeout>();

  constructor(
    private readonly send: SendBatch,
    private readonly options: BatchOptions,
    private readonly drops: DropCounter,
  ) {}

  /** Events buffered, not yet in a batch under way. */
  get buffered(): number {
    return this.buffer.length;
  }

  write(eventJson: string): boolean {
    if (this.closed) return false;
    if (this.buffer.length >= this.options.bufferSize) {
      this.drops.drop(1, `the webhook's buffer of ${this.options.bufferSize} events is full`);
      return false;
    }
    this.buffer.push(eventJson);
    if (this.buffer.length >= this.options.maxBatchSize) this.sendBatches();
    else this.timer ??= setTimeout(() => this.sendBatches(true), this.options.maxBatchWaitMs);
    return true;
  }

  /** Starts as many batches as may be under way: full ones, and (when `due`) a partial one whose wait is over. */
  private sendBatches(due = false): void {
    if (due) this.timer = undefined;
    while (this.inFlight < this.options.maxInFlight && (this.buffer.length >= this.options.maxBatchSize || (due && this.buffer.length > 0))) {
      const batch = this.buffer.splice(0, this.options.maxBatchSize);
      this.start(batch);
    }
    if (this.buffer.length > 0 && this.timer === undefined && this.inFlight < this.options.maxInFlight) {
      this.timer = setTimeout(() => this.sendBatches(true), this.options.maxBatchWaitMs);
    }
  }

  private start(batch: string[]): void {
    this.inFlight++;
    const done = this.deliver(batch).finally(() => {
      this.inFlight--;
      this.sending.delete(done);
      // What waited for a free slot goes now: it has waited long enough.
      if (this.buffer.length > 0 && !this.closed) this.sendBatches(this.buffer.length >= this.options.maxBatchSize || this.timer === undefined);
    });
    this.sending.add(done);
  }

  private async deliver(batch: string[]): Promise<void> {
    const body = eventListBody(batch);
    let backoff = this.options.initialBackoffMs;
    for (let attempt = 1; ; attempt++) {
      try {
        await this.send(body);
        return;
      } catch (err) {
        if (attempt >= this.options.maxAttempts || this.closed) {
          this.drops.drop(batch.length, `the webhook did not accept a batch after ${attempt} tries: ${(err as Error).message}`);
          return;
        }
      }
      await new Promise<void>((resolve) => {
        const t = setTimeout(() => {
          this.retryTimers.delete(t);
          resolve();
        }, backoff);
        this.retryTimers.add(t);
      });
      backoff *= 1.5;
    }
  }

  /** Sends what is buffered (one try each), waits for batches under way, and stops. */
  async close(): Promise<void> {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, this.options.maxBatchSize);
      this.start(batch);
    }
    this.closed = true;
    for (const t of this.retryTimers) t.unref();
    await Promise.allSettled([...this.sending]);
  }
}

/** How long one POST of a batch may take, and the largest answer read. */
const WEBHOOK_TIMEOUT_MS = 30_000;
const MAX_ANSWER_BYTES = 64 * 1024;

/** Posts batches to the webhook the kubeconfig file names, over kept-alive connections. */
export function webhookSender(configFile: string): { send: SendBatch; close(): void; creds: Credentials } {
  const creds = loadWebhookConfig(configFile);
  const agent = new https.Agent({ keepAlive: true, maxSockets: DEFAULT_BATCH_OPTIONS.maxInFlight, ...(creds.ca ? { ca: creds.ca } : {}), ...(creds.cert ? { cert: creds.cert } : {}), ...(creds.key ? { key: creds.key } : {}) });
  return {
    creds,
    send: async (body) => {
      const reply = await postJson(creds, body, WEBHOOK_TIMEOUT_MS, MAX_ANSWER_BYTES, agent);
      if (reply.status < 200 || reply.status >= 300) throw new Error(`the webhook answered ${reply.status}: ${reply.body.slice(0, 200)}`);
    },
    close: () => agent.destroy(),
  };
}
