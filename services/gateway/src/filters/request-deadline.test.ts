import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { ApiError } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import { deadlineFrom, type RequestDeadline } from '../context';
import type { Handler } from './chain';
import { withPanicRecovery } from './panic-recovery';
import { withRequestDeadline } from './request-deadline';
import { withRequestInfoFilter } from './request-info';

const quiet = createLogger('test', { write: () => undefined });
const MAXIMUM_MS = 60_000;

interface Server {
  url: string;
  close(): Promise<void>;
}

async function serve(inner: Handler): Promise<Server> {
  const chain = withPanicRecovery(withRequestInfoFilter(withRequestDeadline(inner, MAXIMUM_MS)), quiet);
  const app = express();
  app.set('query parser', false);
  app.use((req, res) => void chain(req, res));
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, close: () => new Promise((r) => server.close(() => r())) };
}

interface Answer {
  status: number;
  body: string;
  /** Whether the whole response arrived (false: the server cut it off). */
  complete: boolean;
}

function request(url: string, method: string, path: string): Promise<Answer> {
  return new Promise<Answer>((resolve, reject) => {
    const req = http.request(`${url}${path}`, { method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('error', () => undefined);
      res.on('close', () => resolve({ status: res.statusCode ?? 0, body, complete: res.complete }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A handler that waits until released, then answers; what its late writes did is recorded. */
function lateHandler(write: (res: Parameters<Handler>[1]) => void, before?: (res: Parameters<Handler>[1]) => void) {
  let release: () => void = () => undefined;
  const released = new Promise<void>((r) => (release = r));
  let finished: Promise<void> = Promise.resolve();
  const handler: Handler = (_req, res) => {
    before?.(res);
    finished = released.then(() => write(res));
    return finished;
  };
  return { handler, release: () => release(), finished: () => finished };
}

describe('request deadlines', () => {
  let server: Server | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  test('a list past its deadline is 504 with the timeout filter wording; the late answer goes nowhere', async () => {
    const late = lateHandler((res) => {
      res.setHeader('X-Late', 'yes');
      res.status(200).type('text/plain').send('late');
    });
    server = await serve(late.handler);
    const answer = await request(server.url, 'GET', '/api/v1/namespaces/default/configmaps?timeout=1ms');
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.body)).toEqual({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: 'Timeout: request did not complete within the allotted timeout',
      reason: 'Timeout',
      details: {},
      code: 504,
    });
    late.release();
    await expect(late.finished()).resolves.toBeUndefined();
    // The server goes on serving.
    expect((await request(server.url, 'GET', '/healthz?timeout=abc')).status).toBe(400);
  });

  test('a write past its deadline is 504 with the wording of the original for writes', async () => {
    const late = lateHandler((res) => void res.status(201).end('{}'));
    server = await serve(late.handler);
    const answer = await request(server.url, 'POST', '/api/v1/namespaces/default/configmaps?timeout=1ms');
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.body).message).toBe('Timeout: request did not complete within requested timeout - context deadline exceeded');
    late.release();
    await late.finished();
  });

  test('an answer already started when the deadline passes is cut off', async () => {
    const late = lateHandler(
      (res) => void res.end('rest'),
      (res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        res.write('start');
      },
    );
    server = await serve(late.handler);
    const answer = await request(server.url, 'GET', '/api/v1/namespaces/default/configmaps?timeout=1ms');
    expect(answer.status).toBe(200);
    expect(answer.complete).toBe(false);
    late.release();
    await late.finished();
  });

  test('a handler that fails once its deadline has passed is answered with the deadline 504', async () => {
    server = await serve(async (req) => {
      const { deadline } = deadlineFrom(req) as RequestDeadline;
      // Busy until past the deadline, so the failure comes before the deadline's timer can run.
      while (Date.now() <= deadline) {
        /* waiting */
      }
      throw ApiError.timeout('the admission service did not answer in time');
    });
    const answer = await request(server.url, 'POST', '/api/v1/namespaces/default/configmaps?timeout=5ms');
    expect(answer.status).toBe(504);
    expect(JSON.parse(answer.body).message).toBe('Timeout: request did not complete within requested timeout - context deadline exceeded');
  });

  test('a failure before the deadline is the handler’s own', async () => {
    server = await serve(async () => {
      throw ApiError.badRequest('bad');
    });
    const answer = await request(server.url, 'POST', '/api/v1/namespaces/default/configmaps?timeout=1h');
    expect(answer.status).toBe(400);
  });

  test('the deadline: the timeout when shorter than the maximum, the maximum otherwise; none for a watch', async () => {
    const seen: Array<number | undefined> = [];
    server = await serve(async (req, res) => {
      const d = deadlineFrom(req);
      seen.push(d && d.deadline - d.receivedAt);
      res.status(200).end();
    });
    for (const query of ['timeout=2s', 'timeout=1h', '', 'timeout=0s', 'timeout=-1s', 'watch=true&timeout=abc']) {
      expect((await request(server.url, 'GET', `/api/v1/namespaces/default/configmaps?${query}`)).status).toBe(200);
    }
    expect(seen).toEqual([2000, MAXIMUM_MS, MAXIMUM_MS, MAXIMUM_MS, MAXIMUM_MS, undefined]);
  });

  test('a timeout that is not a duration is 400 naming it', async () => {
    server = await serve(async (_req, res) => void res.status(200).end());
    const answer = await request(server.url, 'GET', '/api/v1/namespaces/default/configmaps?timeout=abc');
    expect(answer.status).toBe(400);
    expect(JSON.parse(answer.body)).toMatchObject({ reason: 'BadRequest', message: 'invalid timeout specified in the request URL - time: invalid duration "abc"' });
  });
});
