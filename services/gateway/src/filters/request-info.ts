import { withRequestInfo } from '../context';
import { parseRequestInfo, parseRequestPath, splitRequestTarget } from '../request-info';
import type { Handler } from './chain';

/**
 * Parses what the request is about before anyone needs to know. This is the
 * only place that reads the request target: the path is decoded and checked
 * once (a refused path is a Status here, before any authentication or
 * authorization decision), and every later filter and the router use the
 * parsed segments only.
 */
export function withRequestInfoFilter(handler: Handler): Handler {
  return async (req, res) => {
    const target = splitRequestTarget(req.originalUrl);
    withRequestInfo(req, parseRequestInfo(req.method, parseRequestPath(target.rawPath), target.query));
    await handler(req, res);
  };
}
