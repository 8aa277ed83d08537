import { randomUUID } from 'node:crypto';
import type { Logger } from '@svc/service-kit';
import { REQUEST_ID_HEADER } from '@svc/service-kit';
import { initRequestState, logFrom, parsedRequestInfoFrom } from '../context';
import { writeError } from '../responses';
import type { Handler } from './chain';

/**
 * Outermost filter: gives the request an id and a logger, logs its outcome,
 * and turns anything thrown below into a Status (never a stack trace).
 */
export function withPanicRecovery(handler: Handler, log: Logger): Handler {
  return async (req, res) => {
    const requestId = (req.headers[REQUEST_ID_HEADER] as string | undefined) || randomUUID();
    initRequestState(req, requestId, log.with({ requestId }));
    res.setHeader('Audit-Id', requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const ms = Number(process.hrtime.bigint() - started) / 1e6;
      // A path refused by the request-info filter is logged through the Status it got, not as sent.
      logFrom(req).debug('request', { method: req.method, path: parsedRequestInfoFrom(req)?.path ?? '(refused)', status: res.statusCode, ms: Math.round(ms * 10) / 10 });
    });
    try {
      await handler(req, res);
    } catch (err) {
      writeError(req, res, err);
    }
  };
}
