import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import type { TLSSocket, TlsOptions } from 'node:tls';
import { ApiError } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { AnyRequest, AnyResponse } from './express-http2';

/**
 * The gateway's listening socket: TLS, with HTTP/2 and HTTP/1.1 on the same
 * port, chosen by ALPN (`h2`, `http/1.1`; a client that offers neither
 * protocol name gets HTTP/1.1), as the original server.
 *
 * HTTP/1.1 connections are served by node's HTTP/1 server code exactly as
 * an `https.Server` serves them: the same parser limits, timeouts and
 * refusals (set below on the server object, where that code reads them).
 *
 * HTTP/2 follows the original's settings: at most `maxConcurrentStreams`
 * streams at once per connection (100 by default, the original's: a client
 * opening more has them refused by the protocol, RST_STREAM, and the
 * connection goes on), a 256 KiB stream receive window and frame size with a
 * connection window for all streams, the same 1 MiB header limit as
 * HTTP/1.1. The keep-alive timeout closes an HTTP/2 connection that has no
 * stream for as long (Go's idle timeout), and the request timeout resets a
 * stream whose request has not arrived whole by then, as HTTP/1.1 answers
 * 408.
 */

/** The original's per-stream receive window and largest frame: most objects fit one. */
export const HTTP2_STREAM_WINDOW_BYTES = 256 * 1024;
/** The original's default stream limit per HTTP/2 connection. */
export const DEFAULT_HTTP2_MAX_STREAMS = 100;

export interface FrontServerOptions {
  /** Serving certificate, key and (with `requestCert`) client CAs. */
  tls: TlsOptions;
  /** Largest request head (HTTP/1.1 header block, HTTP/2 header list). */
  maxHeaderBytes: number;
  /** Header fields node keeps per request (one more than the request-head check allows, so too many is seen). */
  maxHeadersCount: number;
  /** HTTP/1.1 keep-alive, and how long an HTTP/2 connection may have no stream. */
  keepAliveTimeoutMs: number;
  /** HTTP/1.1: time to receive a request's head. */
  headersTimeoutMs: number;
  /** Time to receive a whole request (HTTP/1.1 answers 408; an HTTP/2 stream is reset). */
  requestTimeoutMs: number;
  maxConcurrentStreams?: number;
  log: Logger;
}

export interface FrontServer {
  server: http2.Http2SecureServer;
  listen(host: string, port: number): Promise<number>;
  /**
   * As Go's Shutdown starts: stops listening, closes idle HTTP/1.1
   * connections and tells every HTTP/2 connection (GOAWAY) to take no new
   * stream; requests in flight go on. Resolves when every connection is gone.
   */
  beginShutdown(): Promise<void>;
  /** Ends every connection still open. */
  destroyAll(): void;
}

/** The HTTP/1 settings node's HTTP/1.1 fallback reads from the server object, as from an `http.Server`. */
interface Http1Settings {
  maxHeaderSize: number;
  maxHeadersCount: number;
  keepAliveTimeout: number;
  headersTimeout: number;
  requestTimeout: number;
}

/** Pseudo-header fields an HTTP/2 request carries besides its header fields (`:method`, `:scheme`, `:authority`, `:path`, `:protocol`). */
const PSEUDO_HEADER_FIELDS = 5;

/**
 * A request the HTTP parser refuses never reaches the handler chain; it
 * still gets a Status (400, or 431 when its headers are over the limit),
 * and the connection closes. So does a CONNECT (405: nothing is tunnelled),
 * which node hands over as a bare socket instead of a request.
 */
const answered = new WeakSet<Duplex>();

function answerUnparsable(err: NodeJS.ErrnoException, socket: Duplex, maxHeaderBytes: number): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const tooLarge = err.code === 'HPE_HEADER_OVERFLOW';
  answerOnSocket(
    socket,
    tooLarge
      ? new ApiError(431, 'BadRequest', `the request headers are larger than the limit of ${maxHeaderBytes} bytes`)
      : ApiError.badRequest(`the request is not valid HTTP: ${err.code ?? err.message}`),
  );
}

/** Writes a Status as a whole HTTP/1.1 response straight to the socket, once, and closes it. */
function answerOnSocket(socket: Duplex, status: ApiError): void {
  // The parser reports again for every later chunk of a refused request: the answer is already on its way.
  if (answered.has(socket)) return;
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  answered.add(socket);
  const body = JSON.stringify(status.toStatus());
  const reason = STATUS_CODES[status.code] ?? 'Error';
  socket.end(`HTTP/1.1 ${status.code} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`);
  drainBeforeClosing(socket);
}

/** A refused connection is read for as long as its client keeps sending, within these bounds. */
export const DRAIN_LIMITS = { idleMs: 5000, maxMs: 60_000, maxBytes: 16 * 1024 * 1024 };

/**
 * Keeps reading (and dropping) what the client of a refused connection still
 * sends, typically a body behind a refused request line, so closing does not
 * reset the connection before the client has read the answer. A slow upload
 * on a loaded machine is still drained as long as it progresses; a client
 * that stops sending for `idleMs`, sends past `maxBytes` or for longer than
 * `maxMs` is cut off.
 */
export function drainBeforeClosing(socket: Duplex, limits = DRAIN_LIMITS): void {
  let seen = 0;
  let idle = setTimeout(() => socket.destroy(), limits.idleMs).unref();
  const deadline = setTimeout(() => socket.destroy(), limits.maxMs).unref();
  socket.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    clearTimeout(idle);
    if (seen > limits.maxBytes) socket.destroy();
    else idle = setTimeout(() => socket.destroy(), limits.idleMs).unref();
  });
  socket.once('close', () => {
    clearTimeout(idle);
    clearTimeout(deadline);
  });
  socket.resume();
}

/** A Status as an HTTP/2 response. */
function answerOnStream(res: http2.Http2ServerResponse, status: ApiError): void {
  const body = JSON.stringify(status.toStatus());
  res.writeHead(status.code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

const CONNECT_REFUSED = 'the server does not allow the CONNECT method: it tunnels no connections';

export function createFrontServer(onRequest: (req: AnyRequest, res: AnyResponse) => void, options: FrontServerOptions): FrontServer {
  const maxStreams = options.maxConcurrentStreams && options.maxConcurrentStreams > 0 ? options.maxConcurrentStreams : DEFAULT_HTTP2_MAX_STREAMS;
  const connectionWindow = HTTP2_STREAM_WINDOW_BYTES * maxStreams;
  const server = http2.createSecureServer({
    ...options.tls,
    allowHTTP1: true,
    settings: {
      maxConcurrentStreams: maxStreams,
      initialWindowSize: HTTP2_STREAM_WINDOW_BYTES,
      maxFrameSize: HTTP2_STREAM_WINDOW_BYTES,
      maxHeaderListSize: options.maxHeaderBytes,
    },
    // As many fields as HTTP/1.1 keeps, so the request-head check refuses too many the same way.
    maxHeaderListPairs: options.maxHeadersCount + PSEUDO_HEADER_FIELDS,
    // Room for every stream's receive window besides node's own default allowance (MB).
    maxSessionMemory: 10 + Math.ceil(connectionWindow / (1024 * 1024)),
  });
  const http1: Http1Settings = {
    // Go's default header limit (1 MiB), so long label selectors fit as they do upstream.
    maxHeaderSize: options.maxHeaderBytes,
    // One field more than allowed is kept, so a request with too many is seen and refused (431), never cut short unseen.
    maxHeadersCount: options.maxHeadersCount,
    keepAliveTimeout: options.keepAliveTimeoutMs,
    headersTimeout: options.headersTimeoutMs,
    requestTimeout: options.requestTimeoutMs,
  };
  Object.assign(server, http1);
  server.on('request', onRequest);

  // HTTP/1.1 edges, as an https.Server has them.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => answerUnparsable(err, socket, options.maxHeaderBytes));
  // HTTP/1.1 hands a CONNECT over as a bare socket, HTTP/2 as a request and a response.
  server.on('connect', (_req: IncomingMessage | http2.Http2ServerRequest, target: Duplex | http2.Http2ServerResponse) => {
    const refusal = ApiError.methodNotAllowed(CONNECT_REFUSED);
    if (target instanceof http2.Http2ServerResponse) answerOnStream(target, refusal);
    else answerOnSocket(target, refusal);
  });
  server.on('checkExpectation', (req: IncomingMessage | http2.Http2ServerRequest, res: ServerResponse | http2.Http2ServerResponse) => {
    // HTTP/2: an expectation other than 100-continue is ignored, as Go's HTTP/2 server ignores it.
    if (req instanceof http2.Http2ServerRequest) {
      onRequest(req, res);
      return;
    }
    // HTTP/1.1: 417 as the original answers it, with a Status (node's own answer has no body).
    const status = new ApiError(417, 'BadRequest', `the expectation ${JSON.stringify(String(req.headers.expect ?? '').slice(0, 128))} is not supported`);
    const body = JSON.stringify(status.toStatus());
    (res as ServerResponse).writeHead(417, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), Connection: 'close' });
    res.end(body);
  });

  const sockets = new Set<TLSSocket>();
  server.on('secureConnection', (socket: TLSSocket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });

  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (session: http2.ServerHttp2Session) => {
    sessions.add(session);
    session.once('close', () => sessions.delete(session));
    session.setLocalWindowSize(connectionWindow);
    // Idle: no stream for the keep-alive timeout closes the connection (gracefully: a stream opening meanwhile is still served).
    let open = 0;
    let idle: NodeJS.Timeout | undefined;
    const armIdle = (): void => {
      idle = setTimeout(() => {
        if (open === 0 && !session.closed && !session.destroyed) session.close();
      }, options.keepAliveTimeoutMs).unref();
    };
    armIdle();
    session.on('stream', (stream: http2.ServerHttp2Stream) => {
      open++;
      clearTimeout(idle);
      // A request that has not arrived whole in time is given up, as HTTP/1.1 gives it up with 408.
      const receiving = stream.endAfterHeaders
        ? undefined
        : setTimeout(() => {
            if (!stream.destroyed && stream.state.state === http2.constants.NGHTTP2_STREAM_STATE_OPEN) stream.close(http2.constants.NGHTTP2_CANCEL);
          }, options.requestTimeoutMs).unref();
      stream.once('close', () => {
        clearTimeout(receiving);
        open--;
        if (open === 0 && !session.closed && !session.destroyed) armIdle();
      });
    });
  });
  server.on('sessionError', (err: Error) => options.log.debug('http2 connection failed', { err }));

  return {
    server,
    listen: (host, port) =>
      new Promise<number>((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          resolve((server.address() as AddressInfo).port);
        });
      }),
    beginShutdown: () => {
      // Stops listening and closes idle HTTP/1.1 connections.
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const session of sessions) if (!session.closed) session.close();
      return closed;
    },
    destroyAll: () => {
      for (const session of sessions) session.destroy();
      for (const socket of sockets) socket.destroy();
    },
  };
}
