import { parseRequestInfo } from './request-info';

const parse = (method: string, url: string) => {
  const u = new URL(url, 'https://x');
  return parseRequestInfo(method, u.pathname, u.searchParams);
};

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
