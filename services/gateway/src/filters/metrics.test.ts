import { ResourceRegistry } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import { reportedDryRun, reportedScope, reportedVerb, requestKind } from '../apiserver-metrics';
import { isLongRunning, parseRequestInfo, parseRequestPath } from '../request-info';
import { compressUsername, resourceLabels } from './metrics';

function info(method: string, target: string) {
  const [p, q = ''] = target.split('?') as [string, string?];
  return parseRequestInfo(method, parseRequestPath(p), new URLSearchParams(q));
}

function verb(method: string, target: string, contentType?: string): string {
  return reportedVerb(info(method, target), method, contentType);
}

describe('request metrics labels', () => {
  const registry = new ResourceRegistry();
  registerBuiltins(registry);

  test('verbs as the original reports them', () => {
    expect(verb('GET', '/api/v1/namespaces/default/configmaps/a')).toBe('GET');
    expect(verb('GET', '/api/v1/namespaces/default/configmaps')).toBe('LIST');
    expect(verb('GET', '/api/v1/configmaps')).toBe('LIST');
    expect(verb('GET', '/api/v1/namespaces/default/configmaps?watch=true')).toBe('WATCH');
    expect(verb('GET', '/api/v1/namespaces/default/configmaps?watch=1')).toBe('WATCH');
    expect(verb('GET', '/api/v1/watch/namespaces/default/configmaps')).toBe('WATCH');
    expect(verb('POST', '/api/v1/namespaces/default/configmaps')).toBe('POST');
    expect(verb('PUT', '/api/v1/namespaces/default/configmaps/a')).toBe('PUT');
    expect(verb('PATCH', '/api/v1/namespaces/default/configmaps/a', 'application/merge-patch+json')).toBe('PATCH');
    expect(verb('PATCH', '/api/v1/namespaces/default/configmaps/a', 'application/apply-patch+yaml; charset=utf-8')).toBe('APPLY');
    expect(verb('DELETE', '/api/v1/namespaces/default/configmaps/a')).toBe('DELETE');
    expect(verb('DELETE', '/api/v1/namespaces/default/configmaps')).toBe('DELETECOLLECTION');
    expect(verb('POST', '/api/v1/namespaces/default/pods/p/exec')).toBe('CONNECT');
    expect(verb('GET', '/healthz')).toBe('GET');
    expect(verb('HEAD', '/version')).toBe('GET');
    // Unknown methods collapse instead of adding a value per method a client invents.
    expect(verb('FROB', '/api/v1/namespaces/default/configmaps')).toBe('other');
    expect(verb('OPTIONS', '/metrics')).toBe('other');
  });

  test('scope: one named object (or a create) is resource, then namespace, cluster, and empty for non-resource paths', () => {
    expect(reportedScope(info('GET', '/api/v1/namespaces/default/configmaps/a'))).toBe('resource');
    expect(reportedScope(info('POST', '/api/v1/namespaces/default/configmaps'))).toBe('resource');
    expect(reportedScope(info('GET', '/api/v1/namespaces/default/configmaps'))).toBe('namespace');
    expect(reportedScope(info('GET', '/api/v1/configmaps'))).toBe('cluster');
    expect(reportedScope(info('GET', '/healthz'))).toBe('');
  });

  test('dry_run is All, empty, or invalid', () => {
    expect(reportedDryRun([])).toBe('');
    expect(reportedDryRun(['All'])).toBe('All');
    expect(reportedDryRun(['All', 'All'])).toBe('All');
    expect(reportedDryRun(['Some'])).toBe('invalid');
  });

  test('resources nobody serves, unknown subresources and paths not found are not named', () => {
    expect(resourceLabels(info('GET', '/api/v1/namespaces/default/configmaps/a'), registry, 404)).toEqual({ group: '', version: 'v1', resource: 'configmaps', subresource: '', deprecated: false });
    expect(resourceLabels(info('GET', '/apis/policy/v1/namespaces/default/poddisruptionbudgets/d/status'), registry, 200)).toMatchObject({ group: 'policy', version: 'v1', resource: 'poddisruptionbudgets', subresource: 'status' });
    expect(resourceLabels(info('GET', '/apis/made.up/v9/things-0123'), registry, 404)).toEqual({ group: '', version: '', resource: '', subresource: '', deprecated: false });
    expect(resourceLabels(info('GET', '/api/v1/namespaces/default/configmaps/a/bogus'), registry, 404)).toMatchObject({ resource: 'configmaps', subresource: '' });
    expect(resourceLabels(info('GET', '/healthz'), registry, 200)).toMatchObject({ resource: '', subresource: '/healthz' });
    expect(resourceLabels(info('GET', '/random/path/9f8e'), registry, 404)).toMatchObject({ resource: '', subresource: '' });
  });

  test('watches and streams are long-running; reads and writes are told apart for in-flight counts', () => {
    expect(isLongRunning(info('GET', '/api/v1/configmaps?watch=true'))).toBe(true);
    expect(isLongRunning(info('GET', '/api/v1/namespaces/d/pods/p/log?follow=true'))).toBe(true);
    expect(isLongRunning(info('GET', '/api/v1/namespaces/d/pods/p/log'))).toBe(false);
    expect(isLongRunning(info('GET', '/api/v1/configmaps'))).toBe(false);
    expect(requestKind(info('GET', '/api/v1/configmaps'), 'GET')).toBe('readOnly');
    expect(requestKind(info('POST', '/api/v1/namespaces/d/configmaps'), 'POST')).toBe('mutating');
    expect(requestKind(info('GET', '/metrics'), 'GET')).toBe('readOnly');
  });

  test('user names are reported for a few internal identities only', () => {
    expect(compressUsername('admin')).toBe('admin');
    expect(compressUsername('jane@example.com')).toBe('email_id');
    expect(compressUsername('system:serviceaccount:team:builder')).toBe('other');
  });
});
