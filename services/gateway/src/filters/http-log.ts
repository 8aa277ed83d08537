import type { Request, Response } from 'express';
import { currentUserFrom, logFrom, parsedRequestInfoFrom, traceIdFrom } from '../context';

/**
 * The request log: one info-level line per request once its answer is
 * sent, as the original server's httplog writes it. The line carries the
 * request id (the response's `Audit-Id`, added by the request's logger),
 * the verb as authorization saw it, the path as parsed (a path refused
 * before it parsed is logged as `(refused)`, never as sent), the user when
 * known, the code and the latency. Health probes are logged at debug level,
 * so a steady probe does not drown the requests an operator looks for.
 */

const PROBE_PATHS = new Set(['healthz', 'livez', 'readyz']);

/** Logs the request's line when its response finishes; `started` is `process.hrtime.bigint()` at arrival. */
export function logRequestOnFinish(req: Request, res: Response, started: bigint): void {
  res.once('finish', () => {
    const info = parsedRequestInfoFrom(req);
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    const user = currentUserFrom(req);
    const traceId = traceIdFrom(req);
    const fields = {
      verb: info?.verb ?? req.method.toLowerCase(),
      method: req.method,
      path: info?.path ?? '(refused)',
      ...(user ? { user: user.username } : {}),
      code: res.statusCode,
      ms: Math.round(ms * 10) / 10,
      // HTTP/1.1 or HTTP/2.0, as negotiated on the connection.
      protocol: `HTTP/${req.httpVersion}`,
      userAgent: (req.headers['user-agent'] ?? '').slice(0, 256),
      srcIP: req.socket.remoteAddress ?? '',
      // The request's trace (when tracing is on), to find its spans from the log line.
      ...(traceId ? { traceId } : {}),
    };
    const probe = info !== undefined && !info.isResourceRequest && PROBE_PATHS.has(info.segments[0] ?? '');
    if (probe) logFrom(req).debug('HTTP', fields);
    else logFrom(req).info('HTTP', fields);
  });
}
