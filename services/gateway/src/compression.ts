import type { OutgoingHttpHeader, OutgoingHttpHeaders } from 'node:http';
import * as zlib from 'node:zlib';
import { requestInfoFrom } from './context';
import type { Handler } from './filters/chain';

/**
 * Response compression, as the original server's APIResponseCompression:
 * a response is sent gzip-encoded when the client accepts gzip and the body
 * is larger than 128 KiB; smaller bodies, watches, HEAD requests and
 * bodiless statuses (204, 304) go out as they were written.
 *
 * Handlers do not take part. The response is intercepted where it is
 * written: the first 128 KiB are held back (with the head) whether they come
 * in one `end` or in many `write` calls, so the decision can be made on the
 * size; past the threshold the head goes out with `Content-Encoding: gzip`
 * and `Vary: Accept-Encoding` (and without a Content-Length), the held bytes
 * and everything written after them pass through a gzip stream; a response
 * that ends under it is sent unchanged in one piece.
 *
 * Backpressure is kept: once compressing, `write` returns what the gzip
 * stream's does and 'drain' is emitted when it drains (the connection's own
 * 'drain' only restarts the gzip stream), and the gzip stream stops while the
 * connection does not take its output, so a slow client holds back the
 * handler instead of the gateway buffering the response.
 */

/** Bodies larger than this are compressed (the original's threshold). */
export const GZIP_THRESHOLD_BYTES = 128 * 1024;
/** The original's level: the least CPU for a ratio close to the default level's. */
export const GZIP_LEVEL = 1;

/**
 * Whether an `Accept-Encoding` header accepts gzip: a `gzip` (or `x-gzip`)
 * coding whose quality is not zero. The original looks for the bare `gzip`
 * token only; this also honours an explicit weight (`gzip;q=0.5` accepts,
 * `gzip;q=0` refuses). `*` is not taken as gzip, as the original does not.
 */
export function acceptsGzip(header: string | string[] | undefined): boolean {
  const value = Array.isArray(header) ? header.join(',') : header;
  if (!value) return false;
  for (const coding of value.split(',')) {
    const [name = '', ...params] = coding.split(';').map((p) => p.trim());
    const lower = name.toLowerCase();
    if (lower !== 'gzip' && lower !== 'x-gzip') continue;
    const q = params.find((p) => /^q\s*=/i.test(p));
    if (q === undefined) return true;
    const weight = Number(q.slice(q.indexOf('=') + 1).trim());
    if (Number.isFinite(weight) && weight > 0) return true;
  }
  return false;
}

/** What the interception needs of a request: node's http/1 and http/2 requests both have it. */
export interface CompressibleRequest {
  method?: string | undefined;
  headers: { 'accept-encoding'?: string | string[] | undefined };
}

/**
 * What it needs of a response: node's `ServerResponse` and
 * `Http2ServerResponse` both have it (express's response extends either).
 */
export interface CompressibleResponse {
  statusCode: number;
  statusMessage: string;
  readonly headersSent: boolean;
  readonly writableEnded: boolean;
  readonly writableLength: number;
  readonly writableNeedDrain: boolean;
  getHeader(name: string): OutgoingHttpHeader | undefined;
  setHeader(name: string, value: OutgoingHttpHeader): unknown;
  removeHeader(name: string): void;
  writeHead(statusCode: number, ...rest: unknown[]): unknown;
  flushHeaders(): void;
  write(chunk: unknown, ...rest: unknown[]): boolean;
  end(...args: unknown[]): unknown;
  destroy(err?: Error): unknown;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  emit(event: string, ...args: unknown[]): boolean;
}

type Callback = (err?: Error | null) => void;

function toBuffer(chunk: unknown, encoding: unknown): Buffer {
  if (Buffer.isBuffer(chunk)) return chunk;
  if (chunk instanceof Uint8Array) return Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
  return Buffer.from(String(chunk), typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
}

/** `write(chunk, [encoding], [cb])` / `end([chunk], [encoding], [cb])` arguments, sorted out. */
function writeArgs(args: unknown[]): { chunk: unknown; encoding: unknown; cb: Callback | undefined } {
  const [first, second, third] = args;
  if (typeof first === 'function') return { chunk: undefined, encoding: undefined, cb: first as Callback };
  if (typeof second === 'function') return { chunk: first, encoding: undefined, cb: second as Callback };
  return { chunk: first, encoding: second, cb: typeof third === 'function' ? (third as Callback) : undefined };
}

/** Adds `Accept-Encoding` to the response's Vary unless it is there (or Vary is `*`). */
function varyOnAcceptEncoding(res: CompressibleResponse): void {
  const current = res.getHeader('vary');
  const values = (Array.isArray(current) ? current : current === undefined ? [] : [String(current)]).flatMap((v) => v.split(',')).map((v) => v.trim());
  if (values.some((v) => v === '*' || v.toLowerCase() === 'accept-encoding')) return;
  res.setHeader('Vary', [...values.filter(Boolean), 'Accept-Encoding'].join(', '));
}

/** The header arguments of `writeHead(status, [message], [headers])`, applied with setHeader. */
function applyWriteHead(res: CompressibleResponse, statusCode: number, rest: unknown[]): void {
  res.statusCode = statusCode;
  let headers = rest[0];
  if (typeof headers === 'string') {
    res.statusMessage = headers;
    headers = rest[1];
  }
  if (Array.isArray(headers)) {
    // [[name, value], ...] or [name, value, name, value, ...]
    const pairs: Array<[string, OutgoingHttpHeader]> = Array.isArray(headers[0])
      ? (headers as Array<[string, OutgoingHttpHeader]>)
      : Array.from({ length: Math.floor(headers.length / 2) }, (_, i) => [String(headers[2 * i]), headers[2 * i + 1] as OutgoingHttpHeader] as [string, OutgoingHttpHeader]);
    for (const [name, value] of pairs) res.setHeader(name, value);
  } else if (headers && typeof headers === 'object') {
    for (const [name, value] of Object.entries(headers as OutgoingHttpHeaders)) if (value !== undefined) res.setHeader(name, value);
  }
}

/**
 * Installs the interception on one response. Does nothing for a HEAD
 * request or a client that does not accept gzip, so those responses are
 * written exactly as without it.
 */
export function compressLargeResponses(req: CompressibleRequest, res: CompressibleResponse, thresholdBytes = GZIP_THRESHOLD_BYTES): void {
  if (req.method === 'HEAD' || !acceptsGzip(req.headers['accept-encoding'])) return;
  // The response's own methods, to write through once decided.
  const write = res.write.bind(res);
  const end = res.end.bind(res);
  const writeHead = res.writeHead.bind(res);
  const flushHeaders = res.flushHeaders.bind(res);
  const emit = res.emit.bind(res);
  // The response's own accessors, read under the ones the interception puts on it.
  const nativeGetter = (name: string): (() => unknown) => {
    for (let proto = Object.getPrototypeOf(res) as object | null; proto; proto = Object.getPrototypeOf(proto) as object | null) {
      const getter = Object.getOwnPropertyDescriptor(proto, name)?.get;
      if (getter) return () => getter.call(res);
    }
    return () => undefined;
  };
  const native = {
    headersSent: nativeGetter('headersSent'),
    writableEnded: nativeGetter('writableEnded'),
    writableLength: nativeGetter('writableLength'),
    writableNeedDrain: nativeGetter('writableNeedDrain'),
  };

  let state: 'holding' | 'plain' | 'gzip' = 'holding';
  let held: Buffer[] = [];
  let heldBytes = 0;
  // What the handler believes: the head is out once it wrote or asked for it, the response over once it ended.
  let committed = false;
  let ended = false;
  let gzip: zlib.Gzip | undefined;

  const compressible = (): boolean => {
    const code = res.statusCode;
    return code >= 200 && code !== 204 && code !== 304 && res.getHeader('content-encoding') === undefined;
  };
  const takeHeld = (): Buffer => {
    const body = held.length === 1 ? (held[0] as Buffer) : Buffer.concat(held);
    held = [];
    heldBytes = 0;
    return body;
  };
  const startGzip = (): zlib.Gzip => {
    state = 'gzip';
    res.removeHeader('content-length');
    res.setHeader('Content-Encoding', 'gzip');
    varyOnAcceptEncoding(res);
    const gz = zlib.createGzip({ level: GZIP_LEVEL });
    gzip = gz;
    // The connection's backpressure stops the compressor; a full compressor stops the handler.
    gz.on('data', (out: Buffer) => {
      if (!write(out)) gz.pause();
    });
    gz.on('drain', () => emit('drain'));
    gz.once('end', () => end());
    gz.once('error', (err: Error) => res.destroy(err));
    return gz;
  };
  // A response that goes away (the client left) drops what it holds.
  res.once('close', () => {
    held = [];
    heldBytes = 0;
    gzip?.destroy();
  });

  Object.defineProperties(res, {
    headersSent: { configurable: true, get: () => committed || native.headersSent() === true },
    writableEnded: { configurable: true, get: () => ended || native.writableEnded() === true },
    writableLength: { configurable: true, get: () => heldBytes + (gzip ? gzip.writableLength + gzip.readableLength : 0) + Number(native.writableLength() ?? 0) },
    writableNeedDrain: { configurable: true, get: () => (gzip ? gzip.writableNeedDrain : native.writableNeedDrain() === true) },
  });

  // While compressing, the connection's 'drain' is the compressor's business (it goes on), not
  // the handler's: the handler hears 'drain' when the compressor can take more. Told by both, it
  // would write again each time the connection drained, faster than the compressor's output
  // leaves, and the compressor's input would grow without bound.
  res.emit = (event: string, ...args: unknown[]) => {
    if (event === 'drain' && state === 'gzip') {
      gzip?.resume();
      return true;
    }
    return emit(event, ...args);
  };
  res.writeHead = (statusCode: number, ...rest: unknown[]) => {
    if (state !== 'holding') return writeHead(statusCode, ...rest);
    applyWriteHead(res, statusCode, rest);
    committed = true;
    return res;
  };
  res.flushHeaders = () => {
    // A handler that wants its head out now streams: it is not held back, nor compressed.
    committed = true;
    if (state === 'holding') {
      state = 'plain';
      const body = takeHeld();
      flushHeaders();
      if (body.length > 0) write(body);
      return;
    }
    flushHeaders();
  };
  res.write = (...args: unknown[]) => {
    if (state === 'plain') return write(args[0], ...args.slice(1));
    const { chunk, encoding, cb } = writeArgs(args);
    // Nothing more goes into an ended response (an ended gzip stream would fail the response).
    if (ended) return false;
    committed = true;
    const data = toBuffer(chunk ?? '', encoding);
    if (state === 'gzip') return (gzip as zlib.Gzip).write(data, cb);
    held.push(data);
    heldBytes += data.length;
    if (heldBytes <= thresholdBytes) {
      if (cb) process.nextTick(cb);
      return true;
    }
    if (compressible()) return startGzip().write(takeHeld(), cb);
    state = 'plain';
    return write(takeHeld(), cb);
  };
  res.end = (...args: unknown[]) => {
    if (state === 'plain') return end(...args);
    if (ended) return res;
    const { chunk, encoding, cb } = writeArgs(args);
    committed = true;
    ended = true;
    if (cb) res.once('finish', () => cb());
    if (chunk !== undefined && chunk !== null) {
      const data = toBuffer(chunk, encoding);
      if (state === 'gzip') {
        (gzip as zlib.Gzip).end(data);
        return res;
      }
      held.push(data);
      heldBytes += data.length;
    } else if (state === 'gzip') {
      (gzip as zlib.Gzip).end();
      return res;
    }
    if (heldBytes > thresholdBytes && compressible()) {
      startGzip().end(takeHeld());
      return res;
    }
    state = 'plain';
    // One piece: node gives it a Content-Length, as a response written with one `end` has.
    if (heldBytes > 0) end(takeHeld());
    else end();
    return res;
  };
}

/**
 * The filter: every response but a watch's may be compressed (a watch is a
 * stream of events the client reads as they come; holding them back to
 * compress them would delay them).
 */
export function withCompression(handler: Handler): Handler {
  return async (req, res) => {
    if (requestInfoFrom(req).verb !== 'watch') compressLargeResponses(req, res as unknown as CompressibleResponse);
    await handler(req, res);
  };
}
