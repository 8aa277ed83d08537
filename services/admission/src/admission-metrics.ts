import { processMetrics, type MetricsRegistry } from '@svc/service-kit';
import type { IsolationStats, WebhookIsolation } from './webhook/isolation';

/**
 * The admission service's metrics, with the original server's names where
 * it has them: each admission step's latency, each webhook call's latency,
 * its rejections and the calls that failed open, and this service's
 * isolation of failing webhooks (the original has no such isolation).
 */

type StepType = 'admit' | 'validate';

function declare(registry: MetricsRegistry) {
  return {
    step: registry.histogram({
      name: 'apiserver_admission_step_admission_duration_seconds',
      help: 'Admission sub-step latency histogram in seconds, broken out for each operation and API resource and step type (validate or admit).',
      labelNames: ['type', 'operation', 'rejected'] as const,
      stabilityLevel: 'STABLE',
      buckets: [0.005, 0.025, 0.1, 0.5, 1.0, 2.5],
    }),
    webhook: registry.histogram({
      name: 'apiserver_admission_webhook_admission_duration_seconds',
      help: 'Admission webhook latency histogram in seconds, identified by name and broken out for each operation and API resource and type (validate or admit).',
      labelNames: ['name', 'type', 'operation', 'rejected'] as const,
      stabilityLevel: 'STABLE',
      buckets: [0.005, 0.025, 0.1, 0.5, 1.0, 2.5, 10, 25],
    }),
    requests: registry.counter({
      name: 'apiserver_admission_webhook_request_total',
      help: 'Admission webhook request total, identified by name and broken out for each admission type (validating or mutating) and operation. Additional labels specify whether the request was rejected or not and an HTTP status code. Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.',
      labelNames: ['name', 'type', 'operation', 'code', 'rejected'] as const,
    }),
    rejections: registry.counter({
      name: 'apiserver_admission_webhook_rejection_count',
      help: 'Admission webhook rejection count, identified by name and broken out for each admission type (validating or admit) and operation. Additional labels specify an error type (calling_webhook_error or apiserver_internal_error if an error occurred; no_error otherwise) and optionally a non-zero rejection code if the webhook rejects the request with an HTTP status code (honored by the apiserver when the code is greater or equal to 400). Codes greater than 600 are truncated to 600, to keep the metrics cardinality bounded.',
      labelNames: ['name', 'type', 'operation', 'error_type', 'rejection_code'] as const,
    }),
    failOpen: registry.counter({
      name: 'apiserver_admission_webhook_fail_open_count',
      help: 'Admission webhook fail open count, identified by name and broken out for each admission type (validating or admit).',
      labelNames: ['name', 'type'] as const,
    }),
  };
}

let instruments: ReturnType<typeof declare> | undefined;

function metrics(): ReturnType<typeof declare> {
  return (instruments ??= declare(processMetrics));
}

/** Runs one admission step (the mutating or the validating phase), recording its latency and whether it refused. */
export async function timeStep<T>(type: StepType, operation: string, fn: () => Promise<T>): Promise<T> {
  const started = performance.now();
  let rejected = true;
  try {
    const out = await fn();
    rejected = false;
    return out;
  } finally {
    metrics().step.labels(type, operation, String(rejected)).observe((performance.now() - started) / 1000);
  }
}

function boundedCode(code: number): string {
  return String(Math.min(code, 600));
}

export interface WebhookCallOutcome {
  name: string;
  mutating: boolean;
  operation: string;
  /** performance.now() when the call started. */
  started: number;
  /** The webhook answered and refused (with this code, 0 when it gave none); undefined: it allowed. */
  rejectedWith?: number;
  /** The call failed (not an answer): no code, error_type calling_webhook_error. */
  failed?: boolean;
  /** HTTP status of the answer, when there was one. */
  httpCode?: number;
}

/** Records one webhook call. */
export function recordWebhookCall(o: WebhookCallOutcome): void {
  const m = metrics();
  const type = o.mutating ? 'admit' : 'validating';
  const rejected = o.failed === true || o.rejectedWith !== undefined;
  m.webhook.labels(o.name, o.mutating ? 'admit' : 'validate', o.operation, String(rejected)).observe((performance.now() - o.started) / 1000);
  m.requests.labels(o.name, type, o.operation, boundedCode(o.httpCode ?? 0), String(rejected)).inc();
  if (o.failed) m.rejections.labels(o.name, type, o.operation, 'calling_webhook_error', '0').inc();
  else if (o.rejectedWith !== undefined) m.rejections.labels(o.name, type, o.operation, 'no_error', boundedCode(o.rejectedWith)).inc();
}

/** A failed call was ignored (failurePolicy Ignore). */
export function recordFailOpen(name: string, mutating: boolean): void {
  metrics().failOpen.labels(name, mutating ? 'admit' : 'validating').inc();
}

const isolations: WebhookIsolation[] = [];
let isolationDeclared = false;

/** Isolation counters of a dispatcher, read at scrape time. Returns its removal. */
export function registerIsolationMetrics(isolation: WebhookIsolation, registry: MetricsRegistry = processMetrics): () => void {
  isolations.push(isolation);
  if (!isolationDeclared) {
    isolationDeclared = true;
    const gauges: Array<{ name: string; help: string; value: (s: IsolationStats) => number }> = [
      {
        name: 'apiserver_admission_webhook_isolated',
        help: 'Whether an admission webhook is isolated after consecutive failed calls (1) or called (0), by configuration and webhook name.',
        value: (s) => (s.isolated ? 1 : 0),
      },
      {
        name: 'apiserver_admission_webhook_isolations',
        help: 'How many times an admission webhook was isolated, by configuration and webhook name (since its configuration was last changed).',
        value: (s) => s.isolations,
      },
      {
        name: 'apiserver_admission_webhook_isolation_skipped_calls',
        help: 'Calls not made to an admission webhook because it was isolated (its failurePolicy applied at once), by configuration and webhook name.',
        value: (s) => s.skipped,
      },
    ];
    for (const { name, help, value } of gauges) {
      registry.gauge({
        name,
        help,
        labelNames: ['configuration', 'name'] as const,
        collect(g) {
          g.reset();
          for (const s of isolations.flatMap((i) => i.stats())) g.labels(s.configuration, s.webhook).set(value(s));
        },
      });
    }
  }
  return () => {
    const i = isolations.indexOf(isolation);
    if (i >= 0) isolations.splice(i, 1);
  };
}
