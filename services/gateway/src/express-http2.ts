import type { IncomingMessage, OutgoingHttpHeader, OutgoingHttpHeaders, ServerResponse } from 'node:http';
import * as http2 from 'node:http2';
import type { Socket } from 'node:net';
import express, { type Express } from 'express';

/**
 * One express app behind node's HTTP/2 server, for both protocols
 * (`http2.createSecureServer({ allowHTTP1: true })` hands HTTP/1.1
 * connections node's `IncomingMessage`/`ServerResponse`, HTTP/2 streams its
 * compatibility `Http2ServerRequest`/`Http2ServerResponse`).
 *
 * Why an adapter: express gives every request and response its own
 * prototype (`app.request`, `app.response`), which inherit from
 * `IncomingMessage` and `ServerResponse`. Put on an HTTP/2 compatibility
 * object, that prototype hides the object's own accessors (headers, url,
 * method, write, end...) and the request breaks. So an HTTP/2 request gets
 * prototypes with express's very methods (copied from the same objects express
 * uses) over the HTTP/2 classes instead, and is dispatched through the same
 * app (same router, settings and middleware) with those prototypes; an
 * HTTP/1.1 request goes to the app untouched.
 *
 * What the HTTP/2 prototypes add, so that the handlers need not know:
 *
 * - `headersDistinct` on the request (node's HTTP/2 request has none): the
 *   fields as sent, each name with all its values, pseudo-headers left out.
 * - Connection-specific response headers (`Connection`, `Keep-Alive`,
 *   `Proxy-Connection`, `Transfer-Encoding`, `Upgrade`), which HTTP/2 forbids
 *   (node throws on them), are dropped whichever way they are set. A
 *   `Connection: close` is read as Go's HTTP/2 server reads it: once the
 *   response is over, the connection is closed gracefully (GOAWAY: streams in
 *   flight finish, new ones go to a new connection).
 */

/** Response headers that describe one HTTP/1.1 connection and are not allowed in HTTP/2. */
const CONNECTION_SPECIFIC = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);

export type AnyRequest = IncomingMessage | http2.Http2ServerRequest;
export type AnyResponse = ServerResponse | http2.Http2ServerResponse;

/** Express's dispatch, which the app's typings do not declare. */
interface Dispatch {
  handle(req: AnyRequest, res: AnyResponse): void;
}

/**
 * Whether a header set on an HTTP/2 response is dropped; a `Connection:
 * close` closes the connection gracefully once this response is over.
 */
function dropsHeader(res: http2.Http2ServerResponse, name: string, value: OutgoingHttpHeader | undefined): boolean {
  const lower = name.toLowerCase();
  if (!CONNECTION_SPECIFIC.has(lower)) return false;
  if (lower === 'connection' && /(^|,)\s*close\s*(,|$)/i.test(String(value ?? ''))) closeSessionAfter(res);
  return true;
}

const closingAfter = new WeakSet<http2.Http2ServerResponse>();

function closeSessionAfter(res: http2.Http2ServerResponse): void {
  if (closingAfter.has(res)) return;
  closingAfter.add(res);
  const session = res.stream.session;
  res.once('close', () => {
    if (session && !session.closed && !session.destroyed) session.close();
  });
}

/** The header arguments of `writeHead` without the connection-specific ones. */
function allowedHeaders(res: http2.Http2ServerResponse, headers: unknown): unknown {
  if (Array.isArray(headers)) {
    if (Array.isArray(headers[0])) return (headers as Array<[string, OutgoingHttpHeader]>).filter(([name, value]) => !dropsHeader(res, String(name), value));
    const kept: unknown[] = [];
    for (let i = 0; i + 1 < headers.length; i += 2) {
      if (!dropsHeader(res, String(headers[i]), headers[i + 1] as OutgoingHttpHeader)) kept.push(headers[i], headers[i + 1]);
    }
    return kept;
  }
  if (headers && typeof headers === 'object') {
    const kept: OutgoingHttpHeaders = {};
    for (const [name, value] of Object.entries(headers as OutgoingHttpHeaders)) if (!dropsHeader(res, name, value)) kept[name] = value;
    return kept;
  }
  return headers;
}

const h2ResponseBase = http2.Http2ServerResponse.prototype;

/** What the HTTP/2 response prototype puts over node's methods. */
const h2ResponseOverrides = {
  setHeader(this: http2.Http2ServerResponse, name: string, value: OutgoingHttpHeader): http2.Http2ServerResponse {
    if (dropsHeader(this, name, value)) return this;
    h2ResponseBase.setHeader.call(this, name, value as number | string | string[]);
    return this;
  },
  appendHeader(this: http2.Http2ServerResponse, name: string, value: string | string[]): http2.Http2ServerResponse {
    if (dropsHeader(this, name, value)) return this;
    h2ResponseBase.appendHeader.call(this, name, value);
    return this;
  },
  writeHead(this: http2.Http2ServerResponse, statusCode: number, ...rest: unknown[]): http2.Http2ServerResponse {
    const args = typeof rest[0] === 'string' ? [rest[0], allowedHeaders(this, rest[1])] : [allowedHeaders(this, rest[0])];
    return (h2ResponseBase.writeHead as (code: number, ...more: unknown[]) => http2.Http2ServerResponse).call(this, statusCode, ...args);
  },
};

const h2RequestAdditions = {
  /** As node's `IncomingMessage.headersDistinct`: lower-cased names, every value, no pseudo-headers. */
  get headersDistinct(): Record<string, string[]> {
    const raw = (this as unknown as http2.Http2ServerRequest).rawHeaders;
    const out: Record<string, string[]> = {};
    for (let i = 0; i + 1 < raw.length; i += 2) {
      const name = (raw[i] as string).toLowerCase();
      if (name.startsWith(':')) continue;
      (out[name] ??= []).push(raw[i + 1] as string);
    }
    return out;
  },
};

/** A prototype over `base` with the own properties of `sources`, later ones winning. */
function prototypeOver(base: object, ...sources: object[]): object {
  const proto = Object.create(base) as object;
  for (const source of sources) Object.defineProperties(proto, Object.getOwnPropertyDescriptors(source));
  return proto;
}

/**
 * The request listener for the server: HTTP/1.1 requests go to `app` as
 * ever, HTTP/2 ones through the same app with the HTTP/2 prototypes.
 */
export function expressForBothProtocols(app: Express): (req: AnyRequest, res: AnyResponse) => void {
  const h2Request = prototypeOver(http2.Http2ServerRequest.prototype, express.request, app.request, h2RequestAdditions);
  const h2Response = prototypeOver(h2ResponseBase, express.response, app.response, h2ResponseOverrides);
  // The app itself, seen with other prototypes: `handle` sets `this.request`/`this.response` on what it dispatches.
  const h2App = Object.create(app, { request: { value: h2Request }, response: { value: h2Response } }) as Dispatch;
  const h1App = app as unknown as Dispatch;
  return (req, res) => {
    if (req instanceof http2.Http2ServerRequest) h2App.handle(req, res);
    else h1App.handle(req, res);
  };
}

/**
 * The socket of the request's connection: an HTTP/2 request's own `socket`
 * stands for its stream (a new one each request), this is the session's, one
 * per connection as an HTTP/1.1 request's is. TLS details
 * (`getPeerCertificate`, `alpnProtocol`) read through either.
 */
export function connectionSocketOf(req: IncomingMessage): Socket {
  const maybeH2: unknown = req;
  if (maybeH2 instanceof http2.Http2ServerRequest) return maybeH2.stream.session?.socket ?? maybeH2.socket;
  return req.socket;
}

/** Whether the request came over HTTP/2. */
export function isHttp2(req: IncomingMessage): boolean {
  const maybeH2: unknown = req;
  return maybeH2 instanceof http2.Http2ServerRequest;
}
