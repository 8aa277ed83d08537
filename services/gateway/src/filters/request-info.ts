import { withRequestInfo } from '../context';
import { parseRequestInfo, parseRequestPath, splitRequestTarget } from '../request-info';
import { requestHeadRefusal } from '../request-head';
import type { Handler } from './chain';

/**
 * Parses what the request is about before anyone needs to know. This is the
 * only place that reads the request target: the path is decoded and checked
 * once (a refused path is a Status here, before any authentication or
 * authorization decision), and every later filter and the router use the
 * parsed segments only. A head the original's HTTP server refuses (no or
 * several Host headers, too many header fields) is refused here too, and the
 * connection closes after the Status.
 */
export function withRequestInfoFilter(handler: Handler): Handler {
  return async (req, res) => {
    const refused = requestHeadRefusal(req);
    if (refused) {
      res.setHeader('Connection', 'close');
      throw refused;
    }
    const target = splitRequestTarget(req.originalUrl);
    withRequestInfo(req, parseRequestInfo(req.method, parseRequestPath(target.rawPath), target.query));
    await handler(req, res);
  };
}
