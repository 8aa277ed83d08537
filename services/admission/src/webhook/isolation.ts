import type { Logger } from '@svc/service-kit';

/**
 * Isolation of a failing webhook (a circuit breaker; the original server has
 * none: it calls a webhook that is down on every request and each request
 * waits for the timeout). After `failures` consecutive failed calls
 * (timeouts, refused connections, TLS errors, bad answers) a webhook is
 * isolated for a back-off period: it is not called, and the dispatcher
 * applies its failurePolicy at once (`Ignore` skips it, `Fail` refuses).
 * When the period is over, one request makes a trial call (the others are
 * still not sent): a success ends the isolation, a failure isolates it again
 * for twice as long, up to `maxBackoffMs`. Each start and end is logged as
 * one structured line; counters are kept for metrics.
 */

export interface IsolationOptions {
  /** Consecutive failures that isolate a webhook; 0 never isolates. */
  failures: number;
  /** The first back-off period. */
  backoffMs: number;
  /** The longest back-off period (each failed trial doubles it). */
  maxBackoffMs: number;
  now?: () => number;
  log?: Logger;
}

/** A trial call not reported within this long (longer than any webhook timeout) is taken as lost, and another may start. */
const TRIAL_LOST_MS = 60_000;

export const DEFAULT_ISOLATION: IsolationOptions = { failures: 5, backoffMs: 10_000, maxBackoffMs: 180_000 };

/** Which webhook: `id` tells versions of it apart (a changed address is a new webhook). */
export interface IsolatedWebhook {
  id: string;
  configuration: string;
  webhook: string;
}

/** Whether to call: a trial call ends an isolation when it succeeds. */
export type IsolationGate = { call: true; trial: boolean } | { call: false; failures: number; retryInMs: number };

interface State {
  target: IsolatedWebhook;
  consecutiveFailures: number;
  isolated: boolean;
  /** When the current back-off period ends. */
  until: number;
  backoffMs: number;
  trialUnderWay: boolean;
  trialStartedAt: number;
  isolatedSince: number;
  /** Counters for metrics. */
  isolations: number;
  skipped: number;
}

/** A webhook's counters (what the metrics expose). */
export interface IsolationStats {
  configuration: string;
  webhook: string;
  isolated: boolean;
  consecutiveFailures: number;
  /** How many times it was isolated. */
  isolations: number;
  /** Calls not made because it was isolated. */
  skipped: number;
}

export class WebhookIsolation {
  private readonly states = new Map<string, State>();
  private readonly now: () => number;

  constructor(private readonly opts: IsolationOptions = DEFAULT_ISOLATION) {
    this.now = opts.now ?? Date.now;
  }

  private state(target: IsolatedWebhook): State {
    let s = this.states.get(target.id);
    if (!s) {
      s = { target, consecutiveFailures: 0, isolated: false, until: 0, backoffMs: this.opts.backoffMs, trialUnderWay: false, trialStartedAt: 0, isolatedSince: 0, isolations: 0, skipped: 0 };
      this.states.set(target.id, s);
    }
    return s;
  }

  /** Whether `target` is called now. */
  gate(target: IsolatedWebhook): IsolationGate {
    const s = this.states.get(target.id);
    if (!s?.isolated) return { call: true, trial: false };
    const now = this.now();
    if (now >= s.until && (!s.trialUnderWay || now - s.trialStartedAt > TRIAL_LOST_MS)) {
      s.trialUnderWay = true;
      s.trialStartedAt = now;
      return { call: true, trial: true };
    }
    s.skipped++;
    return { call: false, failures: s.consecutiveFailures, retryInMs: Math.max(0, s.until - now) };
  }

  /** The webhook answered. */
  succeeded(target: IsolatedWebhook): void {
    const s = this.states.get(target.id);
    if (!s) return;
    if (s.isolated) {
      this.opts.log?.info('admission webhook isolation ended', { configuration: s.target.configuration, webhook: s.target.webhook, isolatedMs: this.now() - s.isolatedSince });
    }
    s.isolated = false;
    s.trialUnderWay = false;
    s.consecutiveFailures = 0;
    s.backoffMs = this.opts.backoffMs;
  }

  /** The call failed (the webhook is unavailable). */
  failed(target: IsolatedWebhook): void {
    if (this.opts.failures <= 0) return;
    const s = this.state(target);
    s.consecutiveFailures++;
    const now = this.now();
    if (s.isolated) {
      // A failed trial (or a call that began before the isolation): a longer period.
      if (!s.trialUnderWay) return;
      s.trialUnderWay = false;
      s.backoffMs = Math.min(s.backoffMs * 2, this.opts.maxBackoffMs);
      s.until = now + s.backoffMs;
      this.opts.log?.warn('admission webhook isolated again', { configuration: s.target.configuration, webhook: s.target.webhook, failures: s.consecutiveFailures, backoffMs: s.backoffMs });
      return;
    }
    if (s.consecutiveFailures < this.opts.failures) return;
    s.isolated = true;
    s.isolations++;
    s.isolatedSince = now;
    s.backoffMs = this.opts.backoffMs;
    s.until = now + s.backoffMs;
    this.opts.log?.warn('admission webhook isolated', { configuration: s.target.configuration, webhook: s.target.webhook, failures: s.consecutiveFailures, backoffMs: s.backoffMs });
  }

  /** Forgets the webhooks not in `ids` (no longer configured). */
  retain(ids: ReadonlySet<string>): void {
    for (const id of this.states.keys()) if (!ids.has(id)) this.states.delete(id);
  }

  /** Each known webhook's counters. */
  stats(): IsolationStats[] {
    return [...this.states.values()].map((s) => ({
      configuration: s.target.configuration,
      webhook: s.target.webhook,
      isolated: s.isolated,
      consecutiveFailures: s.consecutiveFailures,
      isolations: s.isolations,
      skipped: s.skipped,
    }));
  }
}
