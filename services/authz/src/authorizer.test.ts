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
});
