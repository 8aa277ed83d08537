import { processMetrics, type MetricsRegistry } from '@svc/service-kit';
import type { Decision } from './contract';

/**
 * The authorization service's metrics, with the original server's names:
 * decisions (`apiserver_authorization_decisions_total`), and for webhook
 * authorizers their evaluations, latency and decision-cache lookups.
 */

/** 0.5 ms to 10 s, the original's webhook latency buckets. */
const WEBHOOK_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10];

function declare(registry: MetricsRegistry) {
  return {
    decisions: registry.counter({
      name: 'apiserver_authorization_decisions_total',
      help: 'Total number of terminal decisions made by an authorizer split by authorizer type, name, and decision.',
      labelNames: ['type', 'name', 'decision'] as const,
    }),
    webhookEvaluations: registry.counter({
      name: 'apiserver_authorization_webhook_evaluations_total',
      help: 'Round-trips to authorization webhooks.',
      labelNames: ['name', 'result'] as const,
    }),
    webhookDuration: registry.histogram({
      name: 'apiserver_authorization_webhook_duration_seconds',
      help: 'Request latency in seconds.',
      labelNames: ['name', 'result'] as const,
      buckets: WEBHOOK_BUCKETS,
    }),
    webhookCache: registry.counter({
      name: 'apiserver_authorization_webhook_cache_total',
      help: "Lookups of an authorization webhook's decision cache, by result (hit, miss).",
      labelNames: ['name', 'result'] as const,
    }),
  };
}

let instruments: ReturnType<typeof declare> | undefined;

function metrics(): ReturnType<typeof declare> {
  return (instruments ??= declare(processMetrics));
}

/** Bound once: a decision costs one increment. */
let byDecision: Record<Decision, { inc(): void }> | undefined;

/** The service's answer to one Authorize call: allowed, or denied (a denial or nobody's opinion). */
export function recordDecision(decision: Decision): void {
  byDecision ??= {
    allow: metrics().decisions.labels('Service', 'authz', 'allowed'),
    deny: metrics().decisions.labels('Service', 'authz', 'denied'),
    'no-opinion': metrics().decisions.labels('Service', 'authz', 'denied'),
  };
  byDecision[decision].inc();
}

/** A webhook authorizer's cache lookup. */
export function recordWebhookCache(name: string, hit: boolean): void {
  metrics().webhookCache.labels(name, hit ? 'hit' : 'miss').inc();
}

/** One round trip to a webhook authorizer: `success`, `error` (no usable answer) or `timeout`. */
export function recordWebhookCall(name: string, result: 'success' | 'error' | 'timeout', started: number): void {
  const m = metrics();
  m.webhookEvaluations.labels(name, result).inc();
  m.webhookDuration.labels(name, result).observe((performance.now() - started) / 1000);
}
