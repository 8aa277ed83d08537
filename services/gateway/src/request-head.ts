import { ApiError } from '@svc/apimachinery';

/**
 * Checks of a request's head that node's HTTP parser lets through but the
 * original server's (Go's net/http) refuses, or that node would resolve
 * silently in a way no later step can see:
 *
 * - HTTP/1.1 without a `Host` header: 400 "missing required Host header"
 *   (HTTP/1.0 needs none and is served, as there).
 * - More than one `Host` header: 400 "too many Host headers" (node keeps
 *   the first and drops the rest).
 * - More header fields than `MAX_HEADER_FIELDS`: 431 (node would keep the
 *   first fields and drop the others unseen, so a later header, an
 *   `Impersonate-User` say, would be ignored rather than refused).
 *
 * Each refusal closes the connection after its Status: what follows the head
 * on it cannot be trusted to start a new request.
 *
 * HTTP/2 has no Host rule: a request names its host in the `:authority`
 * pseudo-header (Go's HTTP/2 server requires neither, nor counts Host
 * fields), and pseudo-headers are not header fields for the count.
 */
export const MAX_HEADER_FIELDS = 2000;

export interface RequestHead {
  httpVersion: string;
  /** Names and values alternating, as sent (node's `rawHeaders`). */
  rawHeaders: readonly string[];
}

export function requestHeadRefusal(head: RequestHead): ApiError | undefined {
  const http2 = head.httpVersion.startsWith('2');
  let fields = head.rawHeaders.length / 2;
  if (http2) for (let i = 0; i < head.rawHeaders.length; i += 2) if ((head.rawHeaders[i] as string).startsWith(':')) fields--;
  if (fields > MAX_HEADER_FIELDS) {
    return new ApiError(431, 'BadRequest', `the request has more than ${MAX_HEADER_FIELDS} header fields: Request Header Fields Too Large`);
  }
  if (http2) return undefined;
  let hosts = 0;
  for (let i = 0; i < head.rawHeaders.length; i += 2) {
    if ((head.rawHeaders[i] as string).toLowerCase() === 'host') hosts++;
  }
  if (hosts > 1) return ApiError.badRequest('Bad Request: too many Host headers');
  if (hosts === 0 && head.httpVersion !== '1.0' && head.httpVersion !== '0.9') return ApiError.badRequest('Bad Request: missing required Host header');
  return undefined;
}
