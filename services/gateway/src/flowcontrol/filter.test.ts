import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import type { ApiObject, UserInfo } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import { withUser } from '../context';
import type { Handler } from '../filters/chain';
import { withPanicRecovery } from '../filters/panic-recovery';
import { withRequestDeadline } from '../filters/request-deadline';
import { withRequestInfoFilter } from '../filters/request-info';
import { flowSchemaFrom, priorityLevelFrom } from './config';
import { FlowControl } from './controller';
import { withFlowControlDebug, formatTable } from './debug';
import { FLOW_SCHEMA_UID_HEADER, PRIORITY_LEVEL_UID_HEADER, withMaxInFlight, withPriorityAndFairness } from './filter';
import { inFlightLimits } from './max-in-flight';

const quiet = createLogger('test', { write: () => undefined });

/** A server whose chain runs `filter` for the user named by the `x-user` header; the handler waits until released. */
async function serve(filter: (next: Handler) => Handler): Promise<{ url: string; release(): void; close(): Promise<void>; running(): number }> {
  let waiters: Array<() => void> = [];
  let running = 0;
  const inner: Handler = async (_req, res) => {
    running++;
    await new Promise<void>((r) => waiters.push(r));
    running--;
    res.status(200).end('done');
  };
  const limited = filter(inner);
  const chain = withPanicRecovery(
    withRequestInfoFilter(async (req, res) => {
      const name = String(req.headers['x-user'] ?? 'anonymous');
      const groups = String(req.headers['x-groups'] ?? '').split(',').filter(Boolean);
      const user: UserInfo = { username: name, uid: '', groups: [...groups, 'system:authenticated'], extra: {} };
      withUser(req, user);
      await limited(req, res);
    }),
    quiet,
  );
  const app = express();
  app.set('query parser', false);
  app.use((req, res) => void chain(req, res));
  const server = http.createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    release() {
      const w = waiters;
      waiters = [];
      for (const r of w) r();
    },
    running: () => running,
    close: () => new Promise((r) => server.close(() => r())),
  };
}

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

function request(url: string, path: string, userName: string, groups = ''): { answer: Promise<Answer>; abort(): void } {
  const controller = new AbortController();
  const answer = new Promise<Answer>((resolve, reject) => {
    const req = http.get(`${url}${path}`, { headers: { 'x-user': userName, 'x-groups': groups }, signal: controller.signal }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
  return { answer, abort: () => controller.abort() };
}

const until = async (cond: () => boolean): Promise<void> => {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
};

function rejectLevelConfig(): FlowControl {
  const fc = new FlowControl(undefined, { serverConcurrencyLimit: 2, queueWaitMs: 60_000 });
  const pl: ApiObject = { metadata: { name: 'catch-all', uid: 'pl-uid-1', resourceVersion: '1' }, spec: { type: 'Limited', limited: { nominalConcurrencyShares: 5, limitResponse: { type: 'Reject' } } } };
  const queued: ApiObject = {
    metadata: { name: 'queued', uid: 'pl-uid-2', resourceVersion: '1' },
    spec: { type: 'Limited', limited: { nominalConcurrencyShares: 5, limitResponse: { type: 'Queue', queuing: { queues: 1, handSize: 1, queueLengthLimit: 10 } } } },
  };
  const fs: ApiObject = {
    metadata: { name: 'catch-all', uid: 'fs-uid-1', resourceVersion: '1' },
    spec: { matchingPrecedence: 10000, priorityLevelConfiguration: { name: 'catch-all' }, distinguisherMethod: { type: 'ByUser' }, rules: [{ subjects: [{ kind: 'Group', group: { name: 'system:authenticated' } }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] }] },
  };
  const queuedFs: ApiObject = {
    metadata: { name: 'waiters', uid: 'fs-uid-2', resourceVersion: '1' },
    spec: { matchingPrecedence: 100, priorityLevelConfiguration: { name: 'queued' }, rules: [{ subjects: [{ kind: 'User', user: { name: 'waiter' } }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] }] },
  };
  fc.apply([fs, queuedFs].map(flowSchemaFrom), [pl, queued].map(priorityLevelFrom));
  return fc;
}

describe('priority and fairness filter', () => {
  test('over its level limit a request is answered 429 with Retry-After and a TooManyRequests Status; responses name the schema and level', async () => {
    const fc = rejectLevelConfig();
    const s = await serve((next) => withPriorityAndFairness(next, fc, () => undefined));
    try {
      // The catch-all level here has 2 × 5/10 = 1 seat.
      const first = request(s.url, '/version', 'alice');
      await until(() => s.running() === 1);
      const refused = await request(s.url, '/version', 'bob').answer;
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.headers[FLOW_SCHEMA_UID_HEADER.toLowerCase()]).toBe('fs-uid-1');
      expect(refused.headers[PRIORITY_LEVEL_UID_HEADER.toLowerCase()]).toBe('pl-uid-1');
      expect(JSON.parse(refused.body)).toMatchObject({ kind: 'Status', status: 'Failure', code: 429, reason: 'TooManyRequests', details: { retryAfterSeconds: 1 } });
      // Members of system:masters are exempt (the imagined exempt schema).
      const admin = request(s.url, '/version', 'root', 'system:masters');
      await until(() => s.running() === 2);
      s.release();
      const ok = await first.answer;
      expect(ok.status).toBe(200);
      expect(ok.headers[FLOW_SCHEMA_UID_HEADER.toLowerCase()]).toBe('fs-uid-1');
      expect((await admin.answer).status).toBe(200);
    } finally {
      s.release();
      await s.close();
    }
  });

  test('a client that goes away while queued leaves its queue', async () => {
    const fc = rejectLevelConfig();
    const s = await serve((next) => withPriorityAndFairness(next, fc, () => undefined));
    const level = () => fc.levelStates().find((l) => l.name === 'queued')?.queues;
    try {
      const first = request(s.url, '/version', 'waiter');
      await until(() => s.running() === 1);
      const second = request(s.url, '/version', 'waiter');
      second.answer.catch(() => undefined);
      await until(() => level()?.waitingCount === 1);
      second.abort();
      await until(() => level()?.waitingCount === 0);
      expect(level()?.dump().cancelled).toBe(1);
      s.release();
      expect((await first.answer).status).toBe(200);
      expect(level()?.idle).toBe(true);
    } finally {
      s.release();
      await s.close();
    }
  });

  test('a queued request waits a quarter of what its deadline allows, not the configured wait', async () => {
    const fc = rejectLevelConfig();
    const s = await serve((next) => withRequestDeadline(withPriorityAndFairness(next, fc, () => undefined), 60_000));
    try {
      const first = request(s.url, '/version', 'waiter');
      await until(() => s.running() === 1);
      // A 40 ms deadline: 10 ms in the queue (the configured wait is a minute), so the 429 comes before the deadline's 504.
      const queued = await request(s.url, '/version?timeout=40ms', 'waiter').answer;
      expect(queued.status).toBe(429);
      expect(JSON.parse(queued.body)).toMatchObject({ reason: 'TooManyRequests', message: 'Too many requests, please try again later (it waited too long in its queue).' });
      s.release();
      expect((await first.answer).status).toBe(200);
    } finally {
      s.release();
      await s.close();
    }
  });

  test('without priority and fairness, read-only and mutating requests have their own in-flight limits', async () => {
    const s = await serve((next) => withMaxInFlight(next, inFlightLimits(1, 5)));
    try {
      const first = request(s.url, '/version', 'alice');
      await until(() => s.running() === 1);
      const refused = await request(s.url, '/version', 'bob').answer;
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe('1');
      expect(JSON.parse(refused.body)).toMatchObject({ reason: 'TooManyRequests' });
      s.release();
      expect((await first.answer).status).toBe(200);
    } finally {
      s.release();
      await s.close();
    }
  });

  test('the debug dumps list the levels, queues and requests', async () => {
    const fc = rejectLevelConfig();
    const s = await serve((next) => withPriorityAndFairness(withFlowControlDebug(next, fc), fc, () => undefined));
    try {
      const levels = await request(s.url, '/debug/api_priority_and_fairness/dump_priority_levels', 'root', 'system:masters').answer;
      expect(levels.status).toBe(200);
      const lines = levels.body.trim().split('\n');
      expect(lines[0]).toMatch(/^PriorityLevelName, +ActiveQueues, +IsIdle,/);
      expect(lines.map((l) => l.split(',')[0]?.trim())).toEqual(['PriorityLevelName', 'catch-all', 'exempt', 'queued']);
      const queues = await request(s.url, '/debug/api_priority_and_fairness/dump_queues', 'root', 'system:masters').answer;
      expect(queues.body).toMatch(/^queued, +0, +0,/m);
      const requests = await request(s.url, '/debug/api_priority_and_fairness/dump_requests?includeRequestDetails=1', 'root', 'system:masters').answer;
      // The dump request itself is executing at the exempt level.
      expect(requests.body).toMatch(/^exempt, +exempt, +-1, +-1,.*root, +get, +\/debug\/api_priority_and_fairness\/dump_requests/m);
    } finally {
      s.release();
      await s.close();
    }
  });

  test('tables are aligned as a tab writer aligns them', () => {
    expect(formatTable([['Name', 'Value'], ['a-long-name', '1']])).toBe('Name,        Value\na-long-name, 1\n');
  });
});
