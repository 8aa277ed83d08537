import type { Request, Response } from 'express';
import { ApiError } from '@svc/apimachinery';
import { withImpersonation } from './impersonation';

describe('impersonation filter (not implemented yet: refused, never ignored)', () => {
  const run = async (headers: Record<string, string>): Promise<{ passed: boolean; error?: ApiError }> => {
    let passed = false;
    try {
      await withImpersonation(async () => void (passed = true))({ headers } as unknown as Request, {} as Response);
      return { passed };
    } catch (err) {
      if (!(err instanceof ApiError)) throw err;
      return { passed, error: err };
    }
  };

  test.each([
    ['impersonate-user', 'Impersonate-User'],
    ['impersonate-group', 'Impersonate-Group'],
    ['impersonate-uid', 'Impersonate-Uid'],
    ['impersonate-extra-scopes', 'Impersonate-Extra-Scopes'],
  ])('%s is 403 naming %s', async (header, named) => {
    const { passed, error } = await run({ [header]: 'x' });
    expect(passed).toBe(false);
    expect(error).toMatchObject({ code: 403, reason: 'Forbidden' });
    expect(error?.message).toContain(`impersonation is not supported by this server: header "${named}" refused`);
  });

  test('several headers are all named', async () => {
    const { error } = await run({ 'impersonate-user': 'a', 'impersonate-group': 'b' });
    expect(error?.message).toContain('headers "Impersonate-User", "Impersonate-Group" refused');
  });

  test('a request without them passes', async () => {
    expect(await run({ authorization: 'Bearer x', 'x-impersonate-user': 'not one of ours' })).toEqual({ passed: true });
  });
});
