import type { Request, Response } from 'express';
import { ApiError, type ResourceDefinition } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { initRequestState } from '../context';
import type { RequestInfo } from '../request-info';
import { DEFAULT_LIMITS } from '../server';
import { handleWatch } from './watch';

/** The checks a watch passes before it holds anything: a followed change stream, and room under the cap. */
function attempt(hub: { isReady: boolean; watcherCount: number }, maxWatches: number): Promise<void> {
  const req = { headers: {}, query: {}, on: () => undefined } as unknown as Request;
  initRequestState(req, 'r1', createLogger('test', { write: () => undefined }));
  const deps = { hub, limits: { ...DEFAULT_LIMITS, maxWatches } } as unknown as GatewayDeps;
  const def = { group: '', version: 'v1', kind: 'ConfigMap', plural: 'configmaps', namespaced: true } as unknown as ResourceDefinition;
  const info = { namespace: 'default', name: '', parts: ['configmaps'] } as unknown as RequestInfo;
  return handleWatch(req, {} as Response, { deps, def, info });
}

async function rejection(p: Promise<void>): Promise<ApiError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('the watch was accepted');
}

describe('watch admission', () => {
  it('is 503 with Retry-After until the gateway follows the change stream', async () => {
    const err = await rejection(attempt({ isReady: false, watcherCount: 0 }, 10));
    expect(err.code).toBe(503);
    expect(err.retryAfterSeconds).toBe(1);
  });

  it('is 429 with Retry-After at the cap of watches', async () => {
    const err = await rejection(attempt({ isReady: true, watcherCount: 10 }, 10));
    expect(err.code).toBe(429);
    expect(err.reason).toBe('TooManyRequests');
    expect(err.message).toMatch(/the limit is 10/);
    expect(err.retryAfterSeconds).toBe(1);
  });
});
