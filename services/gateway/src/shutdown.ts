import type { Request, Response } from 'express';
import { ApiError } from '@svc/apimachinery';

/**
 * Graceful shutdown, as the original server's:
 *
 * 1. `serving`: requests are served.
 * 2. `delaying` (for `--shutdown-delay-duration` after the stop signal):
 *    requests are still served as before, but `/readyz` fails its
 *    `shutdown` check, so a load balancer takes the instance out of rotation
 *    before it stops answering.
 * 3. `draining`: new requests are refused (health probes and `/metrics`
 *    excepted, so the instance can still be observed): with
 *    `--shutdown-send-retry-after`, 429 with `Retry-After: 5` and
 *    `Connection: close` while the gateway keeps listening (a client retries,
 *    through its load balancer, on another instance); without it, 503 and
 *    the listener is closed. Watches end cleanly (their clients re-watch
 *    elsewhere) and the requests in flight finish, up to a bound.
 *
 * The refusal runs before the handler chain, as the original's retry-after
 * filter does, so it reads the raw path for its exemptions; nothing else
 * is decided from it.
 */

export type ShutdownPhase = 'serving' | 'delaying' | 'draining';

export interface ShutdownOptions {
  /** `--shutdown-delay-duration`: how long `/readyz` fails before new requests are refused. */
  delayMs: number;
  /** `--shutdown-send-retry-after`: refuse with 429 and Retry-After while still listening, until drained. */
  sendRetryAfter: boolean;
}

export const DEFAULT_SHUTDOWN: ShutdownOptions = { delayMs: 0, sendRetryAfter: false };

/** Paths still served while draining (prefixes, as the original exempts them). */
const EXEMPT_PREFIXES = ['/readyz', '/livez', '/healthz', '/metrics'];

/** Seconds a refused client is asked to wait (the original's value). */
const RETRY_AFTER_SECONDS = 5;

export class GracefulShutdown {
  private current: ShutdownPhase = 'serving';

  constructor(readonly options: ShutdownOptions = DEFAULT_SHUTDOWN) {}

  get phase(): ShutdownPhase {
    return this.current;
  }

  /** The `shutdown` readiness check: fails from the stop signal on. */
  readonly readinessCheck = async (): Promise<void> => {
    if (this.current !== 'serving') throw new Error('the gateway is shutting down');
  };

  /** The stop signal: readiness fails; requests are still served for the delay, then refused. */
  async begin(sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref())): Promise<void> {
    if (this.current !== 'serving') return;
    this.current = 'delaying';
    if (this.options.delayMs > 0) await sleep(this.options.delayMs);
    this.current = 'draining';
  }

  /**
   * Answers the request when the gateway no longer takes it (true), or
   * leaves it to the handler chain (false).
   */
  refuse(req: Request, res: Response): boolean {
    if (this.current !== 'draining') return false;
    const path = req.path;
    if (EXEMPT_PREFIXES.some((p) => path === p || path.startsWith(`${p}/`))) return false;
    res.setHeader('Connection', 'close');
    if (this.options.sendRetryAfter) {
      res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS));
      const status = ApiError.tooManyRequests('The gateway is shutting down, please try again later.', RETRY_AFTER_SECONDS);
      res.status(429).type('application/json').send(JSON.stringify(status.toStatus()));
    } else {
      res.setHeader('Retry-After', '1');
      res.status(503).type('application/json').send(JSON.stringify(ApiError.serviceUnavailable('the gateway is shutting down; try again').toStatus()));
    }
    return true;
  }
}
