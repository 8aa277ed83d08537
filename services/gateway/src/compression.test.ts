import { randomBytes } from 'node:crypto';
import * as http from 'node:http';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import type { Readable } from 'node:stream';
import * as zlib from 'node:zlib';
import type { Request, Response } from 'express';
import { createLogger } from '@svc/service-kit';
import { acceptsGzip, compressLargeResponses, GZIP_THRESHOLD_BYTES, withCompression, type CompressibleResponse } from './compression';
import { initRequestState, withRequestInfo } from './context';
import { parseRequestInfo, parseRequestPath } from './request-info';

type Serve = (req: http.IncomingMessage | http2.Http2ServerRequest, res: CompressibleResponse) => void | Promise<void>;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as sent. */
  raw: Buffer;
  /** The body as the client reads it (gunzipped when gzip-encoded). */
  body: Buffer;
}

function decoded(headers: Answer['headers'], raw: Buffer): Buffer {
  return headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(raw) : raw;
}

/** Both protocols node serves, each with the interception's two sides (the handler's writes, the client's reading). */
const protocols = {
  'HTTP/1.1': async (serve: Serve, method: string, headers: Record<string, string>, read?: (res: Readable) => void): Promise<Answer> => {
    const server = http.createServer((req, res) => void serve(req, res as unknown as CompressibleResponse));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      return await new Promise<Answer>((resolve, reject) => {
        const req = http.request({ port: (server.address() as AddressInfo).port, host: '127.0.0.1', method, headers, agent: false }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const raw = Buffer.concat(chunks);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, raw, body: decoded(res.headers, raw) });
          });
          read?.(res);
        });
        req.on('error', reject);
        req.end();
      });
    } finally {
      server.close();
    }
  },
  'HTTP/2': async (serve: Serve, method: string, headers: Record<string, string>, read?: (res: Readable) => void): Promise<Answer> => {
    const server = http2.createServer((req, res) => void serve(req, res as unknown as CompressibleResponse));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const session = http2.connect(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
    try {
      return await new Promise<Answer>((resolve, reject) => {
        const stream = session.request({ ':method': method, ':path': '/', ...headers });
        let status = 0;
        let got: Answer['headers'] = {};
        stream.on('response', (h) => {
          status = Number(h[':status']);
          got = h as Answer['headers'];
        });
        const chunks: Buffer[] = [];
        stream.on('data', (c: Buffer) => chunks.push(c));
        stream.on('end', () => {
          const raw = Buffer.concat(chunks);
          resolve({ status, headers: got, raw, body: decoded(got, raw) });
        });
        stream.on('error', reject);
        read?.(stream);
        stream.end();
      });
    } finally {
      session.close();
      server.close();
    }
  },
};

const GZIP = { 'accept-encoding': 'gzip' };
/** JSON-like text (compressible), `bytes` long. */
const text = (bytes: number): Buffer => Buffer.from('{"kind":"ConfigMap","data":{"key":"value"}},'.repeat(Math.ceil(bytes / 44)).slice(0, bytes));

/** A handler that writes `body` in `pieces` writes and ends, waiting for 'drain' when a write says so. */
function streamed(body: Buffer, pieces: number, status = 200): Serve {
  return async (req, res) => {
    compressLargeResponses(req, res);
    res.statusCode = status;
    res.setHeader('Content-Type', 'application/json');
    const size = Math.ceil(body.length / pieces);
    for (let at = 0; at < body.length; at += size) {
      if (!res.write(body.subarray(at, at + size))) await new Promise((resolve) => res.once('drain', resolve));
    }
    res.end();
  };
}

function whole(body: Buffer, status = 200): Serve {
  return (req, res) => {
    compressLargeResponses(req, res);
    res.statusCode = status;
    res.setHeader('Content-Type', 'application/json');
    res.end(body);
  };
}

describe('Accept-Encoding', () => {
  test.each([
    ['gzip', true],
    ['gzip, deflate, br', true],
    ['deflate, GZIP', true],
    ['br;q=1.0, gzip;q=0.8', true],
    ['x-gzip', true],
    ['gzip;q=0', false],
    ['gzip; q=0.000', false],
    ['deflate', false],
    ['identity', false],
    ['*', false],
    ['', false],
  ])('%j accepts gzip: %s', (header, expected) => {
    expect(acceptsGzip(header)).toBe(expected);
  });

  test('absent, or in several header lines', () => {
    expect(acceptsGzip(undefined)).toBe(false);
    expect(acceptsGzip(['deflate', 'gzip'])).toBe(true);
  });
});

describe.each(Object.entries(protocols))('response compression over %s', (protocol, request) => {
  test('a body up to 128 KiB is sent as written, with its length', async () => {
    const body = text(GZIP_THRESHOLD_BYTES);
    const res = await request(whole(body), 'GET', GZIP);
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers['vary']).toBeUndefined();
    // HTTP/2 states no length for a body node's compatibility layer writes in one piece either.
    if (protocol === 'HTTP/1.1') expect(res.headers['content-length']).toBe(String(body.length));
    expect(res.raw.equals(body)).toBe(true);
  });

  test('a larger body is gzipped (Content-Encoding, Vary, no length) and decodes to the same bytes', async () => {
    const body = text(GZIP_THRESHOLD_BYTES + 1);
    const res = await request(whole(body), 'GET', GZIP);
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.headers['vary']).toBe('Accept-Encoding');
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.raw.length).toBeLessThan(body.length / 4);
    expect(res.body.equals(body)).toBe(true);
  });

  test('a body streamed in many writes is compressed once it passes 128 KiB, and decodes to the same bytes', async () => {
    const body = text(3 * 1024 * 1024 + 17);
    const res = await request(streamed(body, 200), 'GET', GZIP);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.body.equals(body)).toBe(true);
  });

  test('a small body streamed in many writes is sent uncompressed, in one piece', async () => {
    const body = text(100 * 1024);
    const res = await request(streamed(body, 10), 'GET', GZIP);
    expect(res.headers['content-encoding']).toBeUndefined();
    if (protocol === 'HTTP/1.1') expect(res.headers['content-length']).toBe(String(body.length));
    expect(res.raw.equals(body)).toBe(true);
  });

  test('incompressible data streamed in large writes arrives whole', async () => {
    const body = randomBytes(2 * 1024 * 1024);
    const res = await request(streamed(body, 7), 'GET', GZIP);
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.body.equals(body)).toBe(true);
  });

  test('nothing is compressed for a client that does not accept gzip, or refuses it (q=0)', async () => {
    const body = text(512 * 1024);
    const refusals: Array<Record<string, string>> = [{}, { 'accept-encoding': 'gzip;q=0' }, { 'accept-encoding': 'deflate, br' }];
    for (const headers of refusals) {
      const res = await request(streamed(body, 8), 'GET', headers);
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.raw.equals(body)).toBe(true);
    }
  });

  test('HEAD, 204 and 304 are left alone', async () => {
    const body = text(512 * 1024);
    const head = await request(whole(body), 'HEAD', GZIP);
    expect(head.headers['content-encoding']).toBeUndefined();
    expect(head.raw.length).toBe(0);
    for (const status of [204, 304]) {
      const res = await request(streamed(body, 4, status), 'GET', GZIP);
      expect(res.status).toBe(status);
      expect(res.headers['content-encoding']).toBeUndefined();
      expect(res.raw.length).toBe(0);
    }
  });

  test('a response that set its own Content-Encoding is not encoded again; Vary keeps what the handler set', async () => {
    const body = text(512 * 1024);
    const setting = (name: string, value: string): Serve => (req, res) => {
      compressLargeResponses(req, res);
      res.setHeader(name, value);
      res.end(body);
    };
    const encodedAlready = await request(setting('Content-Encoding', 'identity'), 'GET', GZIP);
    expect(encodedAlready.headers['content-encoding']).toBe('identity');
    expect(encodedAlready.raw.equals(body)).toBe(true);
    const varied = await request(setting('Vary', 'Accept'), 'GET', GZIP);
    expect(varied.headers['vary']).toBe('Accept, Accept-Encoding');
  });

  test('writeHead before the body: status and headers are kept, the body still compressed', async () => {
    const body = text(256 * 1024);
    const res = await request(
      (req, res) => {
        compressLargeResponses(req, res);
        res.writeHead(201, { 'Content-Type': 'application/yaml', 'X-Extra': 'yes' });
        expect(res.headersSent).toBe(true);
        res.write(body.subarray(0, 1000));
        res.end(body.subarray(1000));
      },
      'GET',
      GZIP,
    );
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toBe('application/yaml');
    expect(res.headers['x-extra']).toBe('yes');
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.body.equals(body)).toBe(true);
  });

  test('a handler that flushes its head streams uncompressed (as a watch does)', async () => {
    const body = text(512 * 1024);
    const res = await request(
      async (req, res) => {
        compressLargeResponses(req, res);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
        for (let at = 0; at < body.length; at += 64 * 1024) {
          if (!res.write(body.subarray(at, at + 64 * 1024))) await new Promise((resolve) => res.once('drain', resolve));
        }
        res.end();
      },
      'GET',
      GZIP,
    );
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.raw.equals(body)).toBe(true);
  });

  test('once written to, the response counts as started for the handler (an error then ends it, as uncompressed)', async () => {
    const seen: boolean[] = [];
    const res = await request(
      (req, res) => {
        compressLargeResponses(req, res);
        seen.push(res.headersSent);
        res.write('{"partial":');
        seen.push(res.headersSent);
        res.end();
        seen.push(res.writableEnded);
      },
      'GET',
      GZIP,
    );
    expect(seen).toEqual([false, true, true]);
    expect(res.raw.toString()).toBe('{"partial":');
  });

  test('ending twice while compressing ends the response once', async () => {
    const body = text(256 * 1024);
    const res = await request(
      (req, res) => {
        compressLargeResponses(req, res);
        res.end(body);
        res.end();
        expect(res.write('more')).toBe(false);
      },
      'GET',
      GZIP,
    );
    expect(res.headers['content-encoding']).toBe('gzip');
    expect(res.body.equals(body)).toBe(true);
  });
});

describe.each(Object.entries(protocols))('backpressure while compressing over %s', (_protocol, request) => {
  test('a slow client holds back the handler: the gateway never holds much of a large response', async () => {
    const total = 16 * 1024 * 1024;
    const piece = 256 * 1024;
    let mostHeld = 0;
    let waits = 0;
    let sent = Buffer.alloc(0);
    const serve: Serve = async (req, res) => {
      compressLargeResponses(req, res);
      res.setHeader('Content-Type', 'application/octet-stream');
      const parts: Buffer[] = [];
      for (let at = 0; at < total; at += piece) {
        // Incompressible, so what the handler writes is what must cross the connection.
        const chunk = randomBytes(piece);
        parts.push(chunk);
        const ok = res.write(chunk);
        mostHeld = Math.max(mostHeld, res.writableLength);
        if (!ok) {
          waits++;
          await new Promise((resolve) => res.once('drain', resolve));
        }
      }
      sent = Buffer.concat(parts);
      res.end();
    };
    // The client reads a chunk, then nothing until the next turn of its event loop.
    const answer = await request(serve, 'GET', GZIP, (res) => {
      res.on('data', () => {
        res.pause();
        setImmediate(() => res.resume());
      });
    });
    expect(answer.headers['content-encoding']).toBe('gzip');
    expect(answer.body.equals(sent)).toBe(true);
    expect(waits).toBeGreaterThan(0);
    // Without backpressure the handler would write everything at once and the gateway would hold most of it.
    expect(mostHeld).toBeLessThan(4 * 1024 * 1024);
  });
});

describe('the filter', () => {
  const quiet = createLogger('test', { write: () => undefined });

  async function throughFilter(path: string, query: string): Promise<Answer> {
    const body = text(512 * 1024);
    const handler = withCompression(async (_req, res) => {
      res.setHeader('Content-Type', 'application/json');
      for (let at = 0; at < body.length; at += 64 * 1024) {
        if (!res.write(body.subarray(at, at + 64 * 1024))) await new Promise((resolve) => res.once('drain', resolve));
      }
      res.end();
    });
    const answer = await protocols['HTTP/1.1'](
      async (req, res) => {
        initRequestState(req as Request, 'r1', quiet);
        withRequestInfo(req as Request, parseRequestInfo('GET', parseRequestPath(path), new URLSearchParams(query)));
        await handler(req as Request, res as unknown as Response);
      },
      'GET',
      GZIP,
    );
    expect(answer.body.equals(body)).toBe(true);
    return answer;
  }

  test('compresses a large list', async () => {
    expect((await throughFilter('/api/v1/namespaces/default/configmaps', '')).headers['content-encoding']).toBe('gzip');
  });

  test('never compresses a watch', async () => {
    expect((await throughFilter('/api/v1/namespaces/default/configmaps', 'watch=true')).headers['content-encoding']).toBeUndefined();
    expect((await throughFilter('/api/v1/watch/namespaces/default/configmaps', '')).headers['content-encoding']).toBeUndefined();
  });
});
