import { createLogger, type Logger } from '@svc/service-kit';

/** A logger that writes nothing, for services started inside a test. */
export function quietLogger(): Logger {
  return createLogger('test', { write: () => undefined });
}

/** Polls until `cond` holds; throws after `timeoutMs`. */
export async function until(cond: () => boolean, timeoutMs = 15000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error('condition not reached in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
