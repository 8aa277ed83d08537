import * as http2 from 'node:http2';
import * as https from 'node:https';
import * as tls from 'node:tls';
import { PassThrough } from 'node:stream';
import type { IncomingHttpHeaders } from 'node:http';
import express, { type Express } from 'express';
import { createLogger } from '@svc/service-kit';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';
import { connectionSocketOf, expressForBothProtocols } from './express-http2';
import { createFrontServer, drainBeforeClosing, type FrontServer, type FrontServerOptions } from './front-server';

/**
 * The listening side with a small express app in front: both protocols on
 * one port, the HTTP/2 settings, the edges node's HTTP/1.1 server handles
 * before the app, timeouts and shutdown. Waits are on events, never on time.
 */

const quiet = createLogger('test', { write: () => undefined });
let pki: TestPki;

beforeAll(() => {
  pki = makeTestPki();
});
afterAll(() => pki.remove());

interface Started {
  front: FrontServer;
  port: number;
  url: string;
}

const running: FrontServer[] = [];
afterEach(() => {
  for (const front of running.splice(0)) {
    front.destroyAll();
    front.server.close();
  }
});

async function serve(app: Express, options: Partial<FrontServerOptions> = {}): Promise<Started> {
  const server = pki.tlsFor('localhost');
  const front = createFrontServer(expressForBothProtocols(app), {
    tls: { cert: server.cert, key: server.key, ca: server.ca, requestCert: true, rejectUnauthorized: false },
    maxHeaderBytes: 1024 * 1024,
    maxHeadersCount: 2001,
    keepAliveTimeoutMs: 65_000,
    headersTimeoutMs: 70_000,
    requestTimeoutMs: 300_000,
    log: quiet,
    ...options,
  });
  running.push(front);
  const port = await front.listen('127.0.0.1', 0);
  return { front, port, url: `https://127.0.0.1:${port}` };
}

/** An app whose every route reports what express saw. */
function reportingApp(): Express {
  const app = express();
  app.set('query parser', false);
  app.use((req, res) => {
    const cert = (connectionSocketOf(req) as tls.TLSSocket).getPeerCertificate();
    res.status(200).type('application/json').send(JSON.stringify({ version: req.httpVersion, method: req.method, url: req.originalUrl, distinct: req.headersDistinct, peer: cert?.subject?.CN ?? null }));
  });
  return app;
}

interface H2Answer {
  headers: http2.IncomingHttpHeaders & http2.IncomingHttpStatusHeader;
  body: string;
}

function h2Request(session: http2.ClientHttp2Session, headers: http2.OutgoingHttpHeaders, body?: string): Promise<H2Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request(headers);
    let got: H2Answer['headers'] = {};
    let text = '';
    stream.on('response', (h) => (got = h));
    stream.setEncoding('utf8');
    stream.on('data', (d: string) => (text += d));
    stream.on('end', () => resolve({ headers: got, body: text }));
    stream.on('error', reject);
    stream.end(body);
  });
}

function connect(url: string, identity?: string): http2.ClientHttp2Session {
  const client = identity ? pki.tlsFor(identity) : undefined;
  const session = http2.connect(url, { ca: pki.tlsFor('localhost').ca, ...(client ? { cert: client.cert, key: client.key } : {}) });
  session.on('error', () => undefined);
  return session;
}

function h1Request(url: string, path: string, options: https.RequestOptions = {}): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.request(`${url}${path}`, { ca: pki.tlsFor('localhost').ca, agent: false, ...options }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A TLS connection that writes `text` and returns everything the server sent until it closed. */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ port, host: '127.0.0.1', ca: pki.tlsFor('localhost').ca, servername: 'localhost', ALPNProtocols: ['http/1.1'] }, () => socket.write(text));
    let got = '';
    socket.setEncoding('utf8');
    socket.on('data', (d: string) => (got += d));
    socket.on('close', () => resolve(got));
    socket.on('error', reject);
  });
}

describe('one port, two protocols', () => {
  test('ALPN picks h2 or http/1.1 as the client offers; a client that offers neither name gets HTTP/1.1', async () => {
    const { port } = await serve(reportingApp());
    const negotiated = (protocols: string[] | undefined) =>
      new Promise<string | false | null>((resolve, reject) => {
        const socket = tls.connect({ port, host: '127.0.0.1', ca: pki.tlsFor('localhost').ca, servername: 'localhost', ...(protocols ? { ALPNProtocols: protocols } : {}) }, () => {
          resolve(socket.alpnProtocol);
          socket.destroy();
        });
        socket.on('error', reject);
      });
    expect(await negotiated(['h2', 'http/1.1'])).toBe('h2');
    expect(await negotiated(['http/1.1'])).toBe('http/1.1');
    expect(await negotiated(undefined)).toBe(false);
  });

  test('the same express app answers HTTP/1.1 and HTTP/2, with its own methods on both', async () => {
    const { url } = await serve(reportingApp());
    const h1 = await h1Request(url, '/apis/x?y=1', { headers: { 'x-twice': ['a', 'b'] } });
    expect(h1.status).toBe(200);
    expect(h1.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(JSON.parse(h1.body)).toMatchObject({ version: '1.1', method: 'GET', url: '/apis/x?y=1', distinct: { 'x-twice': ['a', 'b'] } });

    const session = connect(url);
    const h2 = await h2Request(session, { ':path': '/apis/x?y=1', 'x-twice': ['a', 'b'] });
    expect(h2.headers[':status']).toBe(200);
    expect(h2.headers['content-type']).toBe('application/json; charset=utf-8');
    const seen = JSON.parse(h2.body) as { version: string; url: string; distinct: Record<string, string[]> };
    expect(seen).toMatchObject({ version: '2.0', method: 'GET', url: '/apis/x?y=1' });
    // Each field with all its values; no pseudo-header is a field.
    expect(seen.distinct['x-twice']).toEqual(['a', 'b']);
    expect(Object.keys(seen.distinct).some((name) => name.startsWith(':'))).toBe(false);
    session.close();
  });

  test('the client certificate is read from the connection on both protocols, one socket per HTTP/2 connection', async () => {
    const sockets: unknown[] = [];
    const app = express();
    app.use((req, res) => {
      sockets.push(connectionSocketOf(req));
      res.json({ peer: (connectionSocketOf(req) as tls.TLSSocket).getPeerCertificate().subject?.CN ?? null });
    });
    const { url } = await serve(app);
    const alice = pki.tlsFor('alice');
    expect(JSON.parse((await h1Request(url, '/', { cert: alice.cert, key: alice.key })).body)).toEqual({ peer: 'alice' });
    const session = connect(url, 'alice');
    expect(JSON.parse((await h2Request(session, { ':path': '/one' })).body)).toEqual({ peer: 'alice' });
    expect(JSON.parse((await h2Request(session, { ':path': '/two' })).body)).toEqual({ peer: 'alice' });
    expect(sockets[1]).toBe(sockets[2]);
    session.close();
    const anonymous = connect(url);
    expect(JSON.parse((await h2Request(anonymous, { ':path': '/' })).body)).toEqual({ peer: null });
    anonymous.close();
  });
});

describe('HTTP/2 responses', () => {
  test('connection-specific headers a handler sets are dropped on HTTP/2 and kept on HTTP/1.1', async () => {
    const app = express();
    app.use((_req, res) => {
      res.setHeader('Keep-Alive', 'timeout=5');
      res.set('Proxy-Connection', 'keep-alive');
      res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
      res.write('{"type":"ADDED"}\n');
      res.end('{"type":"DELETED"}\n');
    });
    const { url } = await serve(app);
    const session = connect(url);
    const h2 = await h2Request(session, { ':path': '/watch' });
    expect(h2.headers[':status']).toBe(200);
    expect(h2.headers['transfer-encoding']).toBeUndefined();
    expect(h2.headers['keep-alive']).toBeUndefined();
    expect(h2.headers['proxy-connection']).toBeUndefined();
    expect(h2.headers['cache-control']).toBe('no-cache, private');
    expect(h2.body).toBe('{"type":"ADDED"}\n{"type":"DELETED"}\n');
    session.close();
    const h1 = await h1Request(url, '/watch');
    expect(h1.headers['transfer-encoding']).toBe('chunked');
    expect(h1.body).toBe('{"type":"ADDED"}\n{"type":"DELETED"}\n');
  });

  test('Connection: close ends the HTTP/2 connection gracefully after the response (GOAWAY, NO_ERROR)', async () => {
    const app = express();
    app.use((req, res) => {
      if (req.url === '/close') res.setHeader('Connection', 'close');
      res.status(503).json({ closing: req.url === '/close' });
    });
    const { url } = await serve(app);
    const session = connect(url);
    const goaway = new Promise<number>((resolve) => session.once('goaway', (code: number) => resolve(code)));
    const closed = new Promise<void>((resolve) => session.once('close', () => resolve()));
    expect(JSON.parse((await h2Request(session, { ':path': '/open' })).body)).toEqual({ closing: false });
    const answer = await h2Request(session, { ':path': '/close' });
    expect(answer.headers[':status']).toBe(503);
    expect(answer.headers['connection']).toBeUndefined();
    expect(JSON.parse(answer.body)).toEqual({ closing: true });
    expect(await goaway).toBe(http2.constants.NGHTTP2_NO_ERROR);
    await closed;
  });

  test('a long-running response is stopped on the server when the client cancels its stream', async () => {
    let serverSawClose!: () => void;
    const stopped = new Promise<void>((resolve) => (serverSawClose = resolve));
    const app = express();
    app.use((req, res) => {
      if (req.url !== '/watch') {
        res.end('served');
        return;
      }
      res.writeHead(200, { 'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked' });
      res.flushHeaders();
      res.write('{"type":"ADDED"}\n');
      res.on('close', () => serverSawClose());
    });
    const { url } = await serve(app);
    const session = connect(url);
    const stream = session.request({ ':path': '/watch' });
    stream.end();
    const first = await new Promise<string>((resolve) => stream.once('data', (d: Buffer) => resolve(d.toString())));
    expect(first).toBe('{"type":"ADDED"}\n');
    stream.close(http2.constants.NGHTTP2_CANCEL);
    await stopped;
    // The connection serves on.
    expect((await h2Request(session, { ':path': '/again' })).headers[':status']).toBe(200);
    session.destroy();
  });
});

/** HTTP/2 frames written by hand: a client that does not respect the server's stream limit. */
function frame(type: number, flags: number, stream: number, payload: Buffer): Buffer {
  const head = Buffer.alloc(9);
  head.writeUIntBE(payload.length, 0, 3);
  head[3] = type;
  head[4] = flags;
  head.writeUInt32BE(stream, 5);
  return Buffer.concat([head, payload]);
}

/** HEADERS for `GET https://localhost/` that also ends the stream (HPACK: indexed :method GET, :scheme https, :path /; literal :authority). */
function getHeaders(stream: number): Buffer {
  const authority = Buffer.from('localhost');
  return frame(0x1, 0x4 | 0x1, stream, Buffer.concat([Buffer.from([0x82, 0x87, 0x84, 0x01, authority.length]), authority]));
}

describe('HTTP/2 stream limit', () => {
  test('the server announces 100 streams per connection by default', async () => {
    const { url } = await serve(reportingApp());
    const session = connect(url);
    const settings = await new Promise<http2.Settings>((resolve) => session.once('remoteSettings', resolve));
    expect(settings.maxConcurrentStreams).toBe(100);
    expect(settings.initialWindowSize).toBe(256 * 1024);
    expect(settings.maxFrameSize).toBe(256 * 1024);
    expect(settings.maxHeaderListSize).toBe(1024 * 1024);
    session.close();
  });

  test('streams past the limit are refused by the protocol (REFUSED_STREAM), the others served, and the connection goes on', async () => {
    // Answers only once the excess streams have been refused, so the first ones are open when those arrive.
    const release: Array<() => void> = [];
    // Whatever the test waits for is checked again on every frame and every request.
    let changed: () => void = () => undefined;
    const app = express();
    app.use((_req, res) => {
      release.push(() => res.json({ ok: true }));
      changed();
    });
    const { port } = await serve(app, { maxConcurrentStreams: 3 });
    const socket = tls.connect({ port, host: '127.0.0.1', ca: pki.tlsFor('localhost').ca, servername: 'localhost', ALPNProtocols: ['h2'] });
    const refused: Array<[number, number]> = [];
    const answered = new Set<number>();
    let pending = Buffer.alloc(0);
    socket.on('data', (data: Buffer) => {
      pending = Buffer.concat([pending, data]);
      while (pending.length >= 9) {
        const length = pending.readUIntBE(0, 3);
        if (pending.length < 9 + length) break;
        const [type, flags] = [pending[3] as number, pending[4] as number];
        const stream = pending.readUInt32BE(5) & 0x7fffffff;
        const payload = pending.subarray(9, 9 + length);
        pending = pending.subarray(9 + length);
        if (type === 0x3) refused.push([stream, payload.readUInt32BE(0)]);
        if (type === 0x0 && flags & 0x1) answered.add(stream);
        if (type === 0x4 && !(flags & 0x1)) socket.write(frame(0x4, 0x1, 0, Buffer.alloc(0)));
      }
      changed();
    });
    const until = (done: () => boolean) =>
      new Promise<void>((resolve) => {
        changed = () => done() && resolve();
        changed();
      });
    await new Promise<void>((resolve) => socket.once('secureConnect', () => resolve()));
    expect(socket.alpnProtocol).toBe('h2');
    socket.write(Buffer.concat([Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'), frame(0x4, 0, 0, Buffer.alloc(0)), ...[1, 3, 5, 7, 9, 11].map(getHeaders)]));
    await until(() => refused.length === 3);
    expect(refused).toEqual([
      [7, http2.constants.NGHTTP2_REFUSED_STREAM],
      [9, http2.constants.NGHTTP2_REFUSED_STREAM],
      [11, http2.constants.NGHTTP2_REFUSED_STREAM],
    ]);
    for (const answer of release.splice(0)) answer();
    await until(() => answered.size === 3);
    expect([...answered].sort()).toEqual([1, 3, 5]);
    // The same connection takes a new stream once there is room.
    socket.write(getHeaders(13));
    await until(() => release.length === 1);
    release[0]?.();
    await until(() => answered.has(13));
    socket.destroy();
  });
});

describe('timeouts', () => {
  test('an HTTP/2 connection without streams for the keep-alive timeout is closed gracefully', async () => {
    const { url } = await serve(reportingApp(), { keepAliveTimeoutMs: 100 });
    const session = connect(url);
    const goaway = new Promise<number>((resolve) => session.once('goaway', (code: number) => resolve(code)));
    expect((await h2Request(session, { ':path': '/' })).headers[':status']).toBe(200);
    expect(await goaway).toBe(http2.constants.NGHTTP2_NO_ERROR);
  });

  test('an HTTP/2 connection with a stream open (a quiet watch) is not idle', async () => {
    const app = express();
    app.use((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"type":"ADDED"}\n');
      // Quiet for several idle timeouts, then the next event.
      setTimeout(() => res.end('{"type":"DELETED"}\n'), 500);
    });
    const { url } = await serve(app, { keepAliveTimeoutMs: 100 });
    const session = connect(url);
    let goawayDuringWatch = false;
    session.once('goaway', () => (goawayDuringWatch = true));
    const watch = await h2Request(session, { ':path': '/watch' });
    expect(watch.body).toBe('{"type":"ADDED"}\n{"type":"DELETED"}\n');
    expect(goawayDuringWatch).toBe(false);
    session.destroy();
  });

  test('an HTTP/2 request that has not arrived whole by the request timeout is reset', async () => {
    let handled = 0;
    const app = express();
    app.use((req, res) => {
      handled++;
      req.resume();
      req.on('end', () => res.end('read'));
    });
    const { url } = await serve(app, { requestTimeoutMs: 100 });
    const session = connect(url);
    const stream = session.request({ ':method': 'POST', ':path': '/' });
    stream.on('error', () => undefined);
    stream.write('{"partial":');
    await new Promise<void>((resolve) => stream.once('close', () => resolve()));
    expect(stream.rstCode).toBe(http2.constants.NGHTTP2_CANCEL);
    expect(handled).toBe(1);
    // Other streams of the connection are not affected.
    expect((await h2Request(session, { ':method': 'POST', ':path': '/' }, 'whole')).body).toBe('read');
    session.close();
  });

  test('HTTP/1.1 keeps its keep-alive timeout', async () => {
    const { url } = await serve(reportingApp());
    const res = await h1Request(url, '/', { agent: new https.Agent({ keepAlive: true, ca: pki.tlsFor('localhost').ca }) });
    expect(res.headers['keep-alive']).toBe('timeout=65');
  });
});

describe('the HTTP/1.1 edges, as before', () => {
  test('headers up to 1 MiB are read; past it 431 with a Status', async () => {
    const { url, port } = await serve(reportingApp());
    expect((await h1Request(url, '/', { headers: { 'x-long': 'v'.repeat(100 * 1024) } })).status).toBe(200);
    const refused = await rawExchange(port, `GET / HTTP/1.1\r\nHost: localhost\r\nX-Long: ${'v'.repeat(1024 * 1024 + 1)}\r\n\r\n`);
    expect(refused).toMatch(/^HTTP\/1\.1 431 /);
    expect(refused).toContain('"code":431');
  });

  test('an unparsable request gets 400 with a Status', async () => {
    const { port } = await serve(reportingApp());
    const answer = await rawExchange(port, 'GET / HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(answer).toContain('"kind":"Status"');
  });

  test('CONNECT is refused with 405 on both protocols', async () => {
    const { url, port } = await serve(reportingApp());
    const h1 = await rawExchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n');
    expect(h1).toMatch(/^HTTP\/1\.1 405 /);
    expect(h1).toContain('"reason":"MethodNotAllowed"');
    const session = connect(url);
    const h2 = await h2Request(session, { ':method': 'CONNECT', ':authority': 'example.com:443' });
    expect(h2.headers[':status']).toBe(405);
    expect(JSON.parse(h2.body)).toMatchObject({ kind: 'Status', code: 405, reason: 'MethodNotAllowed' });
    session.close();
  });

  test('an Upgrade request is served as a request (nothing is upgraded)', async () => {
    const { port } = await serve(reportingApp());
    const answer = await rawExchange(port, 'GET /api HTTP/1.1\r\nHost: localhost\r\nConnection: Upgrade, close\r\nUpgrade: websocket\r\n\r\n');
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('"url":"/api"');
  });

  test('an expectation other than 100-continue: 417 on HTTP/1.1; HTTP/2 ignores it (as Go does) and serves the request', async () => {
    const { url, port } = await serve(reportingApp());
    const h1 = await rawExchange(port, 'GET / HTTP/1.1\r\nHost: localhost\r\nExpect: something\r\n\r\n');
    expect(h1).toMatch(/^HTTP\/1\.1 417 /);
    expect(h1).toContain('the expectation \\"something\\" is not supported');
    const session = connect(url);
    expect((await h2Request(session, { ':path': '/', expect: 'something' })).headers[':status']).toBe(200);
    session.close();
  });
});

describe('shutdown', () => {
  test('stops listening, closes idle HTTP/1.1 connections, sends GOAWAY on HTTP/2 and lets requests in flight finish', async () => {
    let finish!: () => void;
    const inFlight = new Promise<void>((resolve) => (finish = resolve));
    let arrived!: () => void;
    const started = new Promise<void>((resolve) => (arrived = resolve));
    const app = express();
    app.use((req, res) => {
      if (req.url !== '/slow') {
        res.end('quick');
        return;
      }
      arrived();
      void inFlight.then(() => res.end('finished'));
    });
    const { front, url } = await serve(app);
    // An idle HTTP/1.1 keep-alive connection.
    const agent = new https.Agent({ keepAlive: true, ca: pki.tlsFor('localhost').ca });
    let idleClosed!: () => void;
    const idleGone = new Promise<void>((resolve) => (idleClosed = resolve));
    await new Promise<void>((resolve, reject) => {
      const req = https.request(`${url}/`, { agent }, (res) => {
        res.resume();
        res.on('end', () => resolve());
      });
      req.on('socket', (socket) => socket.once('close', () => idleClosed()));
      req.on('error', reject);
      req.end();
    });
    // An HTTP/2 connection with a request in flight.
    const session = connect(url);
    const goaway = new Promise<void>((resolve) => session.once('goaway', () => resolve()));
    const slow = h2Request(session, { ':path': '/slow' });
    await started;

    let closed = false;
    const shutdown = front.beginShutdown().then(() => (closed = true));
    await goaway;
    await idleGone;
    await expect(h1Request(url, '/')).rejects.toThrow(/ECONNREFUSED/);
    expect(closed).toBe(false);
    finish();
    expect((await slow).body).toBe('finished');
    await shutdown;
    agent.destroy();
  });

  test('destroyAll ends what is still open', async () => {
    const app = express();
    app.use((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"type":"ADDED"}\n');
    });
    const { front, url } = await serve(app);
    const session = connect(url);
    const stream = session.request({ ':path': '/watch' });
    stream.end();
    await new Promise<void>((resolve) => stream.once('data', () => resolve()));
    const shutdown = front.beginShutdown();
    front.destroyAll();
    await shutdown;
    await new Promise<void>((resolve) => (session.destroyed ? resolve() : session.once('close', () => resolve())));
  });
});

describe('draining a refused connection', () => {
  const limits = { idleMs: 1000, maxMs: 10_000, maxBytes: 100 };
  const socket = (): PassThrough => new PassThrough();
  afterEach(() => jest.useRealTimers());

  test('a client that keeps sending is read for as long as it progresses, then cut off after a pause', () => {
    jest.useFakeTimers();
    const s = socket();
    drainBeforeClosing(s, limits);
    for (let i = 0; i < 8; i++) {
      jest.advanceTimersByTime(900);
      s.write(Buffer.alloc(10));
    }
    expect(s.destroyed).toBe(false);
    jest.advanceTimersByTime(1001);
    expect(s.destroyed).toBe(true);
  });

  test('past the byte bound or the overall bound the connection is cut off', () => {
    jest.useFakeTimers();
    const big = socket();
    drainBeforeClosing(big, limits);
    big.write(Buffer.alloc(60));
    expect(big.destroyed).toBe(false);
    big.write(Buffer.alloc(60));
    expect(big.destroyed).toBe(true);

    const slow = socket();
    drainBeforeClosing(slow, { ...limits, maxBytes: 1e9 });
    for (let i = 0; i < 12; i++) {
      jest.advanceTimersByTime(900);
      if (!slow.destroyed) slow.write(Buffer.alloc(1));
    }
    expect(slow.destroyed).toBe(true);
  });
});
