import { withRequestInfo } from '../context';
import { parseRequestInfo } from '../request-info';
import type { Handler } from './chain';

/** Parses what the request is about before anyone needs to know. */
export function withRequestInfoFilter(handler: Handler): Handler {
  return async (req, res) => {
    const url = new URL(req.originalUrl, 'https://gateway.invalid');
    withRequestInfo(req, parseRequestInfo(req.method, url.pathname, url.searchParams));
    await handler(req, res);
  };
}
