import * as tls from 'node:tls';
import { performance } from 'node:perf_hooks';

/**
 * The load generator's side of a watch, made as cheap as Node allows, since
 * a thousand of them share the machine with the system they measure: a TLS
 * socket with the HTTP/1.1 request written by hand (no HTTP client or
 * response stream in between), the chunked body unframed in place, and
 * each line searched for the object's name (a byte search; no string, no
 * JSON.parse).
 */

/** The number in an object name `<prefix><n>` of an ADDED event line `buf[start, end)`, or -1 for any other line. */
export function addedIndex(prefix: Buffer, marker: Buffer, buf: Buffer, start: number, end: number): number {
  if (end - start < prefix.length || buf.compare(prefix, 0, prefix.length, start, start + prefix.length) !== 0) return -1;
  let at = buf.indexOf(marker, start);
  if (at < 0 || at + marker.length >= end) return -1;
  at += marker.length;
  const from = at;
  let n = 0;
  for (; at < end; at++) {
    const c = buf[at] as number;
    if (c < 0x30 || c > 0x39) break;
    n = n * 10 + (c - 0x30);
  }
  return at > from && buf[at] === 0x22 ? n : -1;
}

/** Matches the ADDED events of objects named `<namePrefix><n>` in JSON watch lines. */
export function addedMatcher(namePrefix: string): (buf: Buffer, start: number, end: number) => number {
  const prefix = Buffer.from('{"type":"ADDED"');
  const marker = Buffer.from(`"name":"${namePrefix}`);
  return (buf, start, end) => addedIndex(prefix, marker, buf, start, end);
}

/** Hands each line `buf[start, end)` (without its newline) to `onLine`; a line split across pieces is joined first. */
export function lineSplitter(onLine: (buf: Buffer, start: number, end: number) => void): (buf: Buffer, start: number, end: number) => void {
  let pending: Buffer[] = [];
  return (buf, start, end) => {
    let from = start;
    while (from < end) {
      const nl = buf.indexOf(0x0a, from);
      if (nl < 0 || nl >= end) {
        pending.push(Buffer.from(buf.subarray(from, end)));
        return;
      }
      if (pending.length > 0) {
        pending.push(buf.subarray(from, nl));
        const line = Buffer.concat(pending);
        pending = [];
        onLine(line, 0, line.length);
      } else {
        onLine(buf, from, nl);
      }
      from = nl + 1;
    }
  };
}

/** Unframes a chunked body: the data of each chunk, as it comes, to `onData`; `onEnd` at the last chunk. */
export function chunkedDecoder(onData: (buf: Buffer, start: number, end: number) => void, onEnd: () => void): (buf: Buffer) => void {
  let left = 0;
  let crlf = 0;
  let sizeLine = '';
  let done = false;
  return (buf) => {
    let i = 0;
    while (i < buf.length && !done) {
      if (left > 0) {
        const n = Math.min(left, buf.length - i);
        onData(buf, i, i + n);
        i += n;
        left -= n;
        if (left === 0) crlf = 2;
      } else if (crlf > 0) {
        i++;
        crlf--;
      } else {
        const nl = buf.indexOf(0x0a, i);
        if (nl < 0) {
          sizeLine += buf.toString('latin1', i);
          return;
        }
        sizeLine += buf.toString('latin1', i, nl);
        i = nl + 1;
        left = parseInt(sizeLine, 16);
        sizeLine = '';
        if (!(left > 0)) {
          done = true;
          onEnd();
        }
      }
    }
  };
}

export interface WatchStreamOptions {
  port: number;
  /** Path and query of the watch. */
  path: string;
  tls: { ca: Buffer; cert: Buffer; key: Buffer };
  /** Each line of the stream with the time its last piece came (performance.now()). */
  onLine: (buf: Buffer, start: number, end: number, receivedAt: number) => void;
  /** The stream ended or failed (not called after `close`). */
  onEnd: () => void;
  /** Counts the socket's reads and the bytes they brought (after TLS), added to by every stream given it. */
  counters?: ReadCounters;
}

export interface ReadCounters {
  reads: number;
  bytes: number;
}

export interface WatchStream {
  /** Settles with the status of the answer once its head is in (0: the connection failed before one). */
  answered: Promise<number>;
  close(): void;
}

/** A watch on its own TLS connection to 127.0.0.1. */
export function openWatchStream(o: WatchStreamOptions): WatchStream {
  let receivedAt = 0;
  let closed = false;
  let settle: (status: number) => void = () => undefined;
  const answered = new Promise<number>((resolve) => (settle = resolve));
  const split = lineSplitter((buf, start, end) => o.onLine(buf, start, end, receivedAt));
  const end = (): void => {
    if (closed) return;
    closed = true;
    settle(0);
    o.onEnd();
  };
  let body: ((buf: Buffer) => void) | undefined;
  let head = Buffer.alloc(0);
  const socket = tls.connect({ host: '127.0.0.1', port: o.port, ...o.tls }, () => {
    socket.write(`GET ${o.path} HTTP/1.1\r\nHost: 127.0.0.1:${o.port}\r\nAccept: application/json\r\n\r\n`);
  });
  const counters = o.counters ?? { reads: 0, bytes: 0 };
  socket.on('data', (buf: Buffer) => {
    receivedAt = performance.now();
    counters.reads++;
    counters.bytes += buf.length;
    if (body) return body(buf);
    head = Buffer.concat([head, buf]);
    const headEnd = head.indexOf('\r\n\r\n');
    if (headEnd < 0) return;
    const status = Number(head.toString('latin1', 9, 12));
    const chunked = /^transfer-encoding:\s*chunked\s*$/im.test(head.toString('latin1', 0, headEnd));
    const rest = head.subarray(headEnd + 4);
    settle(status);
    body = chunked ? chunkedDecoder(split, () => socket.end()) : (b: Buffer) => split(b, 0, b.length);
    if (rest.length > 0) body(rest);
  });
  socket.on('error', end);
  socket.on('close', end);
  return {
    answered,
    close: () => {
      closed = true;
      socket.destroy();
    },
  };
}
