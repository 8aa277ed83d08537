import { randomUUID } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Logger } from '@svc/service-kit';
import { REQUEST_ID_HEADER } from '@svc/service-kit';
import { initRequestState } from '../context';
import { writeError } from '../responses';
import type { Handler } from './chain';
import { logRequestOnFinish } from './http-log';

/**
 * Outermost filter: gives the request an id and a logger, logs its outcome
 * (http-log.ts), and turns anything thrown below into a Status (never a
 * stack trace).
 */
/** How long a refused request's body may pause before the connection is given up. */
const DISCARD_IDLE_MS = 5000;

/**
 * Reads and drops what is left of a refused request's body (at most
 * `limitBytes`, for as long as it keeps arriving: a pause of a few seconds
 * ends it), so a client still sending it gets the Status instead of a reset
 * connection; past the bound the connection closes after the answer.
 */
async function discardBody(req: Request, res: Response, limitBytes: number): Promise<void> {
  if (req.complete || req.readableEnded) return;
  let seen = 0;
  const drained = await new Promise<boolean>((resolve) => {
    let timer = setTimeout(() => done(false), DISCARD_IDLE_MS);
    const onData = (chunk: Buffer): void => {
      seen += chunk.length;
      clearTimeout(timer);
      if (seen > limitBytes) done(false);
      else timer = setTimeout(() => done(false), DISCARD_IDLE_MS);
    };
    const done = (ok: boolean): void => {
      clearTimeout(timer);
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      resolve(ok);
    };
    const onEnd = (): void => done(true);
    const onError = (): void => done(false);
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.resume();
  });
  if (!drained && !res.headersSent) res.setHeader('Connection', 'close');
}

export function withPanicRecovery(handler: Handler, log: Logger, maxBodyBytes = 3 * 1024 * 1024): Handler {
  return async (req, res) => {
    const requestId = (req.headers[REQUEST_ID_HEADER] as string | undefined) || randomUUID();
    initRequestState(req, requestId, log.with({ requestId }));
    res.setHeader('Audit-Id', requestId);
    logRequestOnFinish(req, res, process.hrtime.bigint());
    try {
      await handler(req, res);
    } catch (err) {
      await discardBody(req, res, maxBodyBytes);
      writeError(req, res, err);
    }
  };
}
