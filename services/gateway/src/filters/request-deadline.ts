import type { Response } from 'express';
import { logFrom, requestInfoFrom, withDeadline } from '../context';
import { isLongRunning } from '../request-info';
import { deadlineExceeded, effectiveTimeoutMs } from '../request-timeout';
import { writeError } from '../responses';
import type { Handler } from './chain';

/**
 * Request deadlines (the original's request-deadline and timeout filters in
 * one). A request that is not long-running gets a deadline: its `timeout`
 * parameter (parsed with the request info) when positive and shorter than
 * `--request-timeout`, that maximum otherwise. Everything below reads it:
 * priority and fairness bounds the queue wait by it, and the calls the
 * handler makes to storage and admission are bounded by what is left of it.
 *
 * When the deadline passes before the handler answered, the client gets a
 * 504 Timeout Status at once; a handler that had already started its answer
 * has it cut off (the connection or stream is reset), as the original does.
 * Either way the handler's later writes go nowhere, and its outcome is only
 * logged. A handler that fails after its deadline (typically because a call
 * ran out of the time left) is answered with the same 504.
 */
export function withRequestDeadline(handler: Handler, maximumMs: number): Handler {
  return async (req, res) => {
    const info = requestInfoFrom(req);
    if (isLongRunning(info)) return handler(req, res);
    const receivedAt = Date.now();
    const deadline = receivedAt + effectiveTimeoutMs(info.timeoutMs, maximumMs);
    withDeadline(req, { receivedAt, deadline });
    const guard = guardResponse(res);
    const failedLate = (err: unknown): 'expired' => {
      logFrom(req).info('request failed after its deadline', { err: err instanceof Error ? err.message : String(err) });
      return 'expired';
    };
    const handled = (async () => handler(req, res))().then(
      () => 'done' as const,
      (err: unknown) => {
        if (Date.now() < deadline) throw err;
        return failedLate(err);
      },
    );
    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<'expired'>((resolve) => {
      timer = setTimeout(() => resolve('expired'), Math.max(0, deadline - Date.now()));
    });
    let outcome: 'done' | 'expired';
    try {
      outcome = await Promise.race([handled, expired]);
    } finally {
      clearTimeout(timer);
    }
    if (outcome === 'done') return;
    // The handler may still be running: whatever it ends with is only logged.
    handled.catch(failedLate);
    if (res.writableEnded) return; // answered in time, the handler is only finishing up
    if (guard.begun()) res.destroy();
    else guard.answer(() => writeError(req, res, deadlineExceeded(info)));
    guard.seal();
  };
}

interface ResponseGuard {
  /** Whether the handler has started its answer (written its head or any of its body). */
  begun(): boolean;
  /** Writes an answer of the filter's own, not counted as the handler's. */
  answer(write: () => void): void;
  /** From now on the handler's writes and header changes do nothing. */
  seal(): void;
}

/** Watches and, once sealed, silences what the handler writes on `res`. */
function guardResponse(res: Response): ResponseGuard {
  let begun = false;
  let own = false;
  let sealed = false;
  const write = res.write.bind(res) as (...args: unknown[]) => boolean;
  const end = res.end.bind(res) as (...args: unknown[]) => Response;
  const writeHead = res.writeHead.bind(res) as (...args: unknown[]) => Response;
  const note = (): void => {
    if (!own) begun = true;
  };
  res.write = ((...args: unknown[]) => {
    if (sealed) return true;
    note();
    return write(...args);
  }) as Response['write'];
  res.end = ((...args: unknown[]) => {
    if (sealed) return res;
    note();
    return end(...args);
  }) as Response['end'];
  res.writeHead = ((...args: unknown[]) => {
    if (sealed) return res;
    note();
    return writeHead(...args);
  }) as Response['writeHead'];
  return {
    begun: () => begun || res.headersSent,
    answer(writeAnswer) {
      own = true;
      try {
        writeAnswer();
      } finally {
        own = false;
      }
    },
    seal() {
      sealed = true;
      res.status = () => res;
      res.setHeader = (() => res) as Response['setHeader'];
      res.removeHeader = () => undefined;
      res.flushHeaders = () => undefined;
    },
  };
}
