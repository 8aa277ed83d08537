import type { Logger } from '@svc/service-kit';

/**
 * Audit events a backend could not take (a full buffer, a batch the
 * webhook never accepted), counted per backend. The counts are read by
 * `droppedAuditEvents` (for metrics); each backend warns at most once per
 * interval, with the number dropped since its last warning.
 */
const dropped = new Map<string, number>();
let generated = 0;

/** Events generated and handed to the backends since the process started (the original's apiserver_audit_event_total). */
export function auditEventsGenerated(): number {
  return generated;
}

/** Counts one event handed to the backends. */
export function countGenerated(): void {
  generated++;
}

/** Events dropped since the process started, in total or by one backend (`log`, `webhook`). */
export function droppedAuditEvents(backend?: string): number {
  if (backend !== undefined) return dropped.get(backend) ?? 0;
  let total = 0;
  for (const n of dropped.values()) total += n;
  return total;
}

/** How often a backend that keeps dropping events says so. */
export const DROP_WARNING_INTERVAL_MS = 60_000;

export class DropCounter {
  private lastWarning = -Infinity;
  private sinceWarning = 0;

  constructor(
    private readonly backend: string,
    private readonly log: Logger,
    private readonly intervalMs = DROP_WARNING_INTERVAL_MS,
    private readonly now: () => number = Date.now,
  ) {}

  drop(count: number, why: string): void {
    dropped.set(this.backend, (dropped.get(this.backend) ?? 0) + count);
    this.sinceWarning += count;
    const t = this.now();
    if (t - this.lastWarning < this.intervalMs) return;
    this.log.warn('audit events dropped', { backend: this.backend, dropped: this.sinceWarning, why, total: dropped.get(this.backend) });
    this.lastWarning = t;
    this.sinceWarning = 0;
  }
}
