import { chain, parseModes, type Attributes } from './authorizer';

const attrs = (groups: string[]): Attributes => ({
  user: { username: 'u', uid: '', groups, extra: {} },
  resourceRequest: true,
  verb: 'get',
  path: '/api/v1/namespaces/default/configmaps/x',
  apiGroup: '',
  apiVersion: 'v1',
  resource: 'configmaps',
  subresource: '',
  namespace: 'default',
  name: 'x',
});

describe('authorization chain', () => {
  test('system:masters is allowed even under AlwaysDeny', async () => {
    expect((await chain(['AlwaysDeny'])(attrs(['system:masters']))).decision).toBe('allow');
  });

  test('the first mode with an opinion decides', async () => {
    expect((await chain(['AlwaysDeny', 'AlwaysAllow'])(attrs([]))).decision).toBe('deny');
    expect((await chain(['AlwaysAllow', 'AlwaysDeny'])(attrs([]))).decision).toBe('allow');
  });

  test('unknown and repeated modes are configuration errors', () => {
    expect(() => parseModes('RBAC2')).toThrow(/not supported/);
    expect(() => parseModes('AlwaysAllow,AlwaysAllow')).toThrow(/twice/);
    expect(() => parseModes('')).toThrow(/at least one/);
    expect(parseModes('AlwaysAllow, AlwaysDeny')).toEqual(['AlwaysAllow', 'AlwaysDeny']);
  });

  test('when no mode has an opinion, the reason names the modes asked and what they said', async () => {
    const quiet = () => ({ decision: 'no-opinion' as const, reason: '' });
    const failing = () => ({ decision: 'no-opinion' as const, reason: 'webhook: answered HTTP 500' });
    expect(await chain(['RBAC'], { RBAC: quiet })(attrs([]))).toEqual({ decision: 'no-opinion', reason: 'none of the authorization modes (RBAC) allowed it' });
    expect(await chain(['Webhook', 'RBAC'], { RBAC: quiet, Webhook: failing })(attrs([]))).toEqual({
      decision: 'no-opinion',
      reason: 'none of the authorization modes (Webhook, RBAC) allowed it; webhook: answered HTTP 500',
    });
  });
});
