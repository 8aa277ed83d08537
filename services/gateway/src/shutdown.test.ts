import type { Request, Response } from 'express';
import { GracefulShutdown } from './shutdown';

interface Answer {
  status?: number;
  headers: Record<string, string>;
  body?: string;
}

function exchange(path: string): { req: Request; res: Response; answer: Answer } {
  const answer: Answer = { headers: {} };
  const res = {
    setHeader(name: string, value: string) {
      answer.headers[name.toLowerCase()] = value;
      return res;
    },
    status(code: number) {
      answer.status = code;
      return res;
    },
    type() {
      return res;
    },
    send(body: string) {
      answer.body = body;
      return res;
    },
  };
  return { req: { path } as Request, res: res as unknown as Response, answer };
}

describe('graceful shutdown', () => {
  test('readiness fails from the stop signal while requests are still served for the delay; then they are refused with 503', async () => {
    const shutdown = new GracefulShutdown({ delayMs: 5000, sendRetryAfter: false });
    await expect(shutdown.readinessCheck()).resolves.toBeUndefined();
    let wake: () => void = () => {};
    const delayed: number[] = [];
    const begun = shutdown.begin((ms) => {
      delayed.push(ms);
      return new Promise<void>((resolve) => (wake = resolve));
    });
    expect(shutdown.phase).toBe('delaying');
    expect(delayed).toEqual([5000]);
    await expect(shutdown.readinessCheck()).rejects.toThrow('shutting down');
    const during = exchange('/api/v1/namespaces/default/configmaps');
    expect(shutdown.refuse(during.req, during.res)).toBe(false);
    wake();
    await begun;
    expect(shutdown.phase).toBe('draining');
    const after = exchange('/api/v1/namespaces/default/configmaps');
    expect(shutdown.refuse(after.req, after.res)).toBe(true);
    expect(after.answer.status).toBe(503);
    expect(after.answer.headers).toMatchObject({ connection: 'close', 'retry-after': '1' });
    expect(JSON.parse(after.answer.body ?? '{}')).toMatchObject({ kind: 'Status', code: 503, reason: 'ServiceUnavailable' });
  });

  test('with --shutdown-send-retry-after the refusal is 429 with Retry-After: 5; probes and metrics are still answered', async () => {
    const shutdown = new GracefulShutdown({ delayMs: 0, sendRetryAfter: true });
    await shutdown.begin();
    const refused = exchange('/apis/coordination.svc.io/v1/leases');
    expect(shutdown.refuse(refused.req, refused.res)).toBe(true);
    expect(refused.answer.status).toBe(429);
    expect(refused.answer.headers).toMatchObject({ connection: 'close', 'retry-after': '5' });
    expect(JSON.parse(refused.answer.body ?? '{}')).toMatchObject({ reason: 'TooManyRequests', details: { retryAfterSeconds: 5 } });
    for (const path of ['/readyz', '/readyz/shutdown', '/livez', '/healthz', '/metrics']) {
      const probe = exchange(path);
      expect([path, shutdown.refuse(probe.req, probe.res)]).toEqual([path, false]);
    }
    const lookalike = exchange('/readyzzz');
    expect(shutdown.refuse(lookalike.req, lookalike.res)).toBe(true);
  });

  test('a second stop signal changes nothing', async () => {
    const shutdown = new GracefulShutdown({ delayMs: 0, sendRetryAfter: false });
    await shutdown.begin();
    await shutdown.begin();
    expect(shutdown.phase).toBe('draining');
  });
});
