import { processMetrics, type MetricsRegistry } from '@svc/service-kit';
import type { AuthenticationResult } from './authenticator';

/**
 * The authentication service's metrics, with the original server's names:
 * attempts and their latency by result (`authentication_attempts`,
 * `authentication_duration_seconds`), requests by authenticating method,
 * and the token webhook's cache lookups
 * (`authentication_token_cache_request_total`).
 */

/** 1 ms to about 16 s by factors of two (ExponentialBuckets(0.001, 2, 15)). */
const DURATION_BUCKETS = Array.from({ length: 15 }, (_, i) => 0.001 * 2 ** i);

function declare(registry: MetricsRegistry) {
  const attempts = registry.counter({ name: 'authentication_attempts', help: 'Counter of authenticated attempts.', labelNames: ['result'] as const });
  const duration = registry.histogram({ name: 'authentication_duration_seconds', help: 'Authentication duration in seconds broken out by result.', labelNames: ['result'] as const, buckets: DURATION_BUCKETS });
  const byMethod = registry.counter({ name: 'authentication_method_total', help: 'Authenticated requests by the method that authenticated them (x509, token file, service account...).', labelNames: ['method'] as const });
  const tokenCache = registry.counter({ name: 'authentication_token_cache_request_total', help: 'Token webhook cache lookups by status (hit, miss).', labelNames: ['status'] as const });
  return {
    byMethod,
    tokenCache: { hit: tokenCache.labels('hit'), miss: tokenCache.labels('miss') },
    success: { attempts: attempts.labels('success'), duration: duration.labels('success') },
    failure: { attempts: attempts.labels('failure'), duration: duration.labels('failure') },
  };
}

let instruments: ReturnType<typeof declare> | undefined;

function metrics(): ReturnType<typeof declare> {
  return (instruments ??= declare(processMetrics));
}

/** One authentication (of a request or a token) that started at `started` (performance.now()). */
export function recordAuthentication(result: AuthenticationResult, started: number): AuthenticationResult {
  const m = metrics();
  const outcome = result.authenticated ? m.success : m.failure;
  outcome.attempts.inc();
  outcome.duration.observe((performance.now() - started) / 1000);
  if (result.authenticated) m.byMethod.labels(result.method).inc();
  return result;
}

/** A lookup of the token webhook's cache. */
export function recordTokenCache(hit: boolean): void {
  const m = metrics();
  (hit ? m.tokenCache.hit : m.tokenCache.miss).inc();
}
