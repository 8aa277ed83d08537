import { ApiError } from '@svc/apimachinery';
import { parseRequestInfo, parseRequestPath, splitRequestTarget } from './request-info';

const parse = (method: string, url: string) => {
  const target = splitRequestTarget(url);
  return parseRequestInfo(method, parseRequestPath(target.rawPath), target.query);
};

const refusal = (rawPath: string): { code: number; reason: string } | undefined => {
  try {
    parseRequestPath(rawPath);
    return undefined;
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return { code: err.code, reason: err.reason };
  }
};

describe('request path parsing', () => {
  test.each([
    ['/', []],
    ['/api', ['api']],
    ['/api/', ['api']],
    ['/api/v1/namespaces/ns/secrets', ['api', 'v1', 'namespaces', 'ns', 'secrets']],
    ['/api/v1/namespaces/ns/secrets/', ['api', 'v1', 'namespaces', 'ns', 'secrets']],
    ['/healthz', ['healthz']],
    ['/readyz/etcd', ['readyz', 'etcd']],
    // Ordinary percent-encoding decodes once, as clients expect.
    ['/apis/rbac.authorization.svc.io/v1/clusterroles/system%3Afoo', ['apis', 'rbac.authorization.svc.io', 'v1', 'clusterroles', 'system:foo']],
    ['/apis/rbac.authorization.svc.io/v1/clusterroles/system:foo', ['apis', 'rbac.authorization.svc.io', 'v1', 'clusterroles', 'system:foo']],
    ['/api/v1/namespaces/n%61me', ['api', 'v1', 'namespaces', 'name']],
    ['/api/v1/namespaces/%C3%A9', ['api', 'v1', 'namespaces', 'é']],
    ['/api/v1/namespaces/a%20b', ['api', 'v1', 'namespaces', 'a b']],
    // Dots that are not a whole relative element are ordinary characters.
    ['/api/v1/namespaces/x/configmaps/a.b', ['api', 'v1', 'namespaces', 'x', 'configmaps', 'a.b']],
    ['/api/v1/namespaces/x/configmaps/...', ['api', 'v1', 'namespaces', 'x', 'configmaps', '...']],
    ['/api/v1/namespaces/x/configmaps/.a', ['api', 'v1', 'namespaces', 'x', 'configmaps', '.a']],
  ])('%s parses to %j', (rawPath, segments) => {
    expect(parseRequestPath(rawPath)).toEqual(segments);
  });

  const BAD = { code: 400, reason: 'BadRequest' };
  const NOT_FOUND = { code: 404, reason: 'NotFound' };
  test.each([
    // Relative elements, literal or encoded in any case and mix.
    ['/healthz/../api/v1/namespaces/x/secrets', BAD],
    ['/readyz/%2e%2e/api/v1/namespaces/x/secrets', BAD],
    ['/livez/%2E%2E/api/v1/namespaces/x/secrets', BAD],
    ['/livez/%2e%2E/api', BAD],
    ['/healthz/.%2e/api', BAD],
    ['/healthz/%2e./api', BAD],
    ['/healthz/./../api', BAD],
    ['/healthz/./api', BAD],
    ['/healthz/%2e/api', BAD],
    ['/api/v1/namespaces/x/secrets/../secrets', BAD],
    ['/api/v1/namespaces/x/secrets/..', BAD],
    ['/api/v1/namespaces/x/secrets/.', BAD],
    ['/api/v1/namespaces/x/secrets/./', BAD],
    ['/..', BAD],
    // Encoded separators, NUL and other controls, backslashes, double encoding.
    ['/api/v1/namespaces/x/secrets%2fy', BAD],
    ['/api/v1/namespaces/x/secrets%2Fy', BAD],
    ['/healthz%2f..%2fapi/v1/namespaces/x/secrets', BAD],
    ['/healthz%2F%2E%2E%2Fapi', BAD],
    ['/api/v1/namespaces/x%00/secrets', BAD],
    ['/api/v1/namespaces/x%0a/secrets', BAD],
    ['/api/v1/namespaces/x%7f/secrets', BAD],
    ['/healthz\\..\\api', BAD],
    ['/healthz/%5c../api', BAD],
    ['/healthz/%5C..%5Capi', BAD],
    ['/healthz/%252e%252e/api', BAD],
    ['/api/v1/namespaces/x/secrets%252fy', BAD],
    // Invalid percent-encoding and invalid UTF-8.
    ['/api/v1/namespaces/%zz/secrets', BAD],
    ['/api/v1/namespaces/%/secrets', BAD],
    ['/api/v1/namespaces/abc%2/secrets', BAD],
    ['/api/v1/namespaces/%ff/secrets', BAD],
    ['/api/v1/namespaces/%C3/secrets', BAD],
    // Empty segments.
    ['//api/v1/namespaces/x/secrets', NOT_FOUND],
    ['/api//v1/namespaces/x/secrets', NOT_FOUND],
    ['/api/v1/namespaces/x/secrets//', NOT_FOUND],
    ['/healthz//../api', NOT_FOUND],
    ['//', NOT_FOUND],
    // Not a path at all.
    ['api/v1', BAD],
    ['', BAD],
  ])('%s is refused (%j)', (rawPath, expected) => {
    expect(refusal(rawPath)).toEqual(expected);
  });

  test('only the origin form of the request target is served', () => {
    expect(() => splitRequestTarget('https://other.example/api/v1/namespaces/x/secrets')).toThrow(ApiError);
    expect(() => splitRequestTarget('*')).toThrow(ApiError);
    const target = splitRequestTarget('/api/v1/namespaces/x/secrets?watch=true&labelSelector=a%3Db');
    expect(target.rawPath).toBe('/api/v1/namespaces/x/secrets');
    expect(target.query.get('labelSelector')).toBe('a=b');
  });

  test('the request info carries the parsed segments and the canonical path', () => {
    const info = parse('GET', '/apis/rbac.authorization.svc.io/v1/clusterroles/system%3Afoo/');
    expect(info.segments).toEqual(['apis', 'rbac.authorization.svc.io', 'v1', 'clusterroles', 'system:foo']);
    expect(info.path).toBe('/apis/rbac.authorization.svc.io/v1/clusterroles/system:foo');
    expect(info).toMatchObject({ isResourceRequest: true, verb: 'get', resource: 'clusterroles', name: 'system:foo' });
  });
});

describe('request info', () => {
  test.each([
    ['GET', '/api/v1/namespaces/ns/configmaps', { verb: 'list', namespace: 'ns', resource: 'configmaps', name: '' }],
    ['GET', '/api/v1/namespaces/ns/configmaps/a', { verb: 'get', namespace: 'ns', resource: 'configmaps', name: 'a' }],
    ['GET', '/api/v1/namespaces/ns/configmaps?watch=true', { verb: 'watch', resource: 'configmaps' }],
    ['GET', '/api/v1/watch/namespaces/ns/configmaps', { verb: 'watch', namespace: 'ns', resource: 'configmaps' }],
    ['POST', '/api/v1/namespaces/ns/configmaps', { verb: 'create', resource: 'configmaps' }],
    ['PUT', '/api/v1/namespaces/ns/pods/p/status', { verb: 'update', resource: 'pods', name: 'p', subresource: 'status' }],
    ['DELETE', '/api/v1/namespaces/ns/configmaps', { verb: 'deletecollection' }],
    ['GET', '/api/v1/namespaces', { verb: 'list', resource: 'namespaces', namespace: '' }],
    ['GET', '/api/v1/namespaces/ns', { verb: 'get', resource: 'namespaces', name: 'ns', namespace: '' }],
    ['PUT', '/api/v1/namespaces/ns/finalize', { verb: 'update', resource: 'namespaces', name: 'ns', subresource: 'finalize' }],
    ['GET', '/apis/coordination.svc.io/v1/namespaces/ns/leases/l', { apiGroup: 'coordination.svc.io', apiVersion: 'v1', resource: 'leases', name: 'l' }],
    ['GET', '/api/v1/nodes', { verb: 'list', resource: 'nodes', namespace: '' }],
    ['GET', '/api/v1/configmaps?fieldSelector=metadata.name%3Dx', { verb: 'list', name: 'x' }],
  ])('%s %s', (method, url, expected) => {
    const info = parse(method, url);
    expect(info.isResourceRequest).toBe(true);
    expect(info).toMatchObject(expected);
  });

  test.each([['/api'], ['/api/v1'], ['/apis'], ['/apis/coordination.svc.io'], ['/apis/coordination.svc.io/v1'], ['/version'], ['/healthz']])(
    'non-resource %s uses the HTTP method as verb',
    (path) => {
      const info = parse('GET', path);
      expect(info.isResourceRequest).toBe(false);
      expect(info.verb).toBe('get');
    },
  );
});
