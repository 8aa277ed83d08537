import { issueClientCertificate, startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest, certRequest, tokenRequest, type HttpResponse } from './http';
import { run, until } from './helpers';

/**
 * Metrics end to end: the gateway's /metrics (authorized like any
 * non-resource URL) moves with the requests it serves, with the original
 * server's names and labels; a deprecated version a client used shows in
 * apiserver_requested_deprecated_apis; the storage service's own endpoint
 * has etcd and gRPC server latencies.
 */

const GROUP = 'metrics.example.com';

/** The value of the one sample of `name` whose labels are exactly `labels` (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    const close = line.lastIndexOf('}');
    const found: Record<string, string> = {};
    for (const m of line.slice(name.length + 1, close).matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) found[m[1] as string] = m[2] as string;
    const keys = Object.keys(labels);
    if (keys.length === Object.keys(found).length && keys.every((k) => found[k] === labels[k])) return Number(line.slice(close + 1).trim());
  }
  return 0;
}

const request = (verb: string, resource: string, scope: string, code: string, extra: Record<string, string> = {}) => ({
  verb,
  dry_run: '',
  group: '',
  version: 'v1',
  resource,
  subresource: '',
  scope,
  component: 'apiserver',
  code,
  ...extra,
});

function withoutCode(labels: Record<string, string>): Record<string, string> {
  const { code: _code, ...rest } = labels;
  return rest;
}

describe('metrics', () => {
  let env: Environment;
  const scrape = async (): Promise<string> => {
    const res = await adminRequest(env, 'GET', '/metrics');
    expect(res.status).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    env = await startEnvironment();
  }, 90_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('request counters and the duration histogram move with the requests, with the right labels', async () => {
    const before = await scrape();
    expect(before).toContain('# HELP apiserver_request_total [STABLE] ');
    expect(before).toContain('# TYPE apiserver_request_duration_seconds histogram');

    const created = await adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ metadata: { name: 'metrics-probe' }, data: { a: '1' } }));
    expect(created.status).toBe(201);
    expect((await adminRequest(env, 'GET', '/api/v1/namespaces/default/configmaps')).status).toBe(200);
    expect((await adminRequest(env, 'GET', '/api/v1/namespaces/default/configmaps/no-such-map')).status).toBe(404);
    const watched = await adminRequest(env, 'GET', '/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&timeoutSeconds=1');
    expect(watched.status).toBe(200);
    expect(watched.body).toContain('"ADDED"');

    const after = await scrape();
    const moved = (labels: Record<string, string>): number => sample(after, 'apiserver_request_total', labels) - sample(before, 'apiserver_request_total', labels);
    const create = request('POST', 'configmaps', 'resource', '201');
    expect(moved(create)).toBeGreaterThanOrEqual(1);
    expect(moved(request('LIST', 'configmaps', 'namespace', '200'))).toBeGreaterThanOrEqual(1);
    expect(moved(request('GET', 'configmaps', 'resource', '404'))).toBe(1);
    expect(moved(request('WATCH', 'configmaps', 'namespace', '200'))).toBeGreaterThanOrEqual(1);

    const durations = (text: string) => sample(text, 'apiserver_request_duration_seconds_count', withoutCode(create));
    expect(durations(after) - durations(before)).toBeGreaterThanOrEqual(1);
    expect(sample(after, 'apiserver_request_duration_seconds_bucket', { ...withoutCode(create), le: '60' })).toBe(durations(after));
    // The watch's events and the list's response size.
    expect(sample(after, 'apiserver_watch_events_total', { group: '', version: 'v1', resource: 'configmaps' })).toBeGreaterThanOrEqual(1);
    const listSizes = { verb: 'LIST', group: '', version: 'v1', resource: 'configmaps', subresource: '', scope: 'namespace', component: 'apiserver' };
    expect(sample(after, 'apiserver_response_sizes_count', listSizes)).toBeGreaterThanOrEqual(1);
    // Process metrics, and the in-flight gauge with the original's request kinds.
    expect(after).toMatch(/^process_cpu_seconds_total \d/m);
    expect(after).toContain('apiserver_current_inflight_requests{request_kind="readOnly"}');
    expect(after).toContain('apiserver_current_inflight_requests{request_kind="mutating"}');
    expect(sample(after, 'authentication_attempts', { result: 'success' })).toBeGreaterThan(0);
  });

  test('OpenMetrics when asked for', async () => {
    const res = await adminRequest(env, 'GET', '/metrics', undefined, { accept: 'application/openmetrics-text;version=1.0.0' });
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toContain('application/openmetrics-text');
    expect(res.body).toContain('# TYPE apiserver_request counter');
    expect(res.body.endsWith('# EOF\n')).toBe(true);
  });

  test('the system:monitoring group may read /metrics; a service account without a grant is forbidden', async () => {
    const monitor = await issueClientCertificate(env.pki, 'metrics-reader', 'prometheus', ['system:monitoring']);
    // The default roles are written once the controller-manager has started.
    const allowed = await until(async () => {
      const res = await certRequest(env, 'GET', '/metrics', monitor);
      return res.status === 200 ? res : undefined;
    }, 30_000);
    expect(allowed.body).toContain('apiserver_request_total');

    const account = await adminRequest(env, 'POST', '/api/v1/namespaces/default/serviceaccounts', JSON.stringify({ metadata: { name: 'no-metrics' } }));
    expect(account.status).toBe(201);
    const token = await adminRequest(env, 'POST', '/api/v1/namespaces/default/serviceaccounts/no-metrics/token', JSON.stringify({ spec: {} }));
    expect(token.status).toBe(201);
    const denied = await tokenRequest(env, 'GET', '/metrics', String((token.json()['status'] as Record<string, unknown>)['token']));
    expect(denied.status).toBe(403);
    expect(denied.json()['reason']).toBe('Forbidden');
    expect(denied.json()['message']).toContain('cannot get path "/metrics"');
    // Counted as the 403 it was.
    const after = await scrape();
    expect(sample(after, 'apiserver_request_total', { verb: 'GET', dry_run: '', group: '', version: '', resource: '', subresource: '/metrics', scope: '', component: 'apiserver', code: '403' })).toBeGreaterThanOrEqual(1);
  });

  test('a request through a deprecated version sets apiserver_requested_deprecated_apis', async () => {
    const schema = { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } } };
    const crd = {
      apiVersion: 'apiextensions.svc.io/v1',
      kind: 'CustomResourceDefinition',
      metadata: { name: `widgets.${GROUP}` },
      spec: {
        group: GROUP,
        scope: 'Namespaced',
        names: { plural: 'widgets', singular: 'widget', kind: 'Widget' },
        versions: [
          { name: 'v1', served: true, storage: true, schema },
          { name: 'v1beta1', served: true, storage: false, deprecated: true, schema },
        ],
      },
    };
    expect((await adminRequest(env, 'POST', '/apis/apiextensions.svc.io/v1/customresourcedefinitions', JSON.stringify(crd))).status).toBe(201);
    const listed: HttpResponse = await until(async () => {
      const res = await adminRequest(env, 'GET', `/apis/${GROUP}/v1beta1/namespaces/default/widgets`);
      return res.status === 200 ? res : undefined;
    }, 30_000);
    expect(String(listed.headers['warning'])).toContain('deprecated');
    const text = await scrape();
    expect(sample(text, 'apiserver_requested_deprecated_apis', { group: GROUP, version: 'v1beta1', resource: 'widgets', subresource: '', removed_release: '' })).toBe(1);
    // The version that is not deprecated is not reported.
    expect((await adminRequest(env, 'GET', `/apis/${GROUP}/v1/namespaces/default/widgets`)).status).toBe(200);
    expect(sample(await scrape(), 'apiserver_requested_deprecated_apis', { group: GROUP, version: 'v1', resource: 'widgets', subresource: '', removed_release: '' })).toBe(0);
  });

  test("the storage service's endpoint has etcd latencies and gRPC server histograms", async () => {
    const address = env.metricsAddresses['storage'];
    expect(address).toBeDefined();
    const res = await fetch(`http://${address}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text).toContain('# HELP etcd_request_duration_seconds [ALPHA] ');
    expect(sample(text, 'etcd_request_duration_seconds_count', { operation: 'create', type: 'configmaps' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'grpc_server_handling_seconds_count', { grpc_service: 'svc.storage.v1.Storage', grpc_method: 'Create', grpc_type: 'unary' })).toBeGreaterThanOrEqual(1);
    expect(sample(text, 'grpc_server_handled_total', { grpc_service: 'svc.storage.v1.Storage', grpc_method: 'Get', grpc_type: 'unary', grpc_code: 'NotFound' })).toBeGreaterThanOrEqual(1);
    expect(text).toMatch(/^process_resident_memory_bytes \d/m);
  });

  test('every internal service serves its metrics; the gateway answers kubectl get --raw /metrics', async () => {
    for (const name of ['authn', 'authz', 'admission', 'watch-fanout-0', 'controller-manager']) {
      const address = env.metricsAddresses[name];
      expect(address).toBeDefined();
      const res = await fetch(`http://${address}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('process_cpu_seconds_total');
    }
    const fanout = await (await fetch(`http://${env.metricsAddresses['watch-fanout-0']}/metrics`)).text();
    expect(fanout).toMatch(/^watch_fanout_leader 1$/m);
    expect(fanout).toContain('watch_fanout_publish_lag_seconds_count');
    const raw = await run('kubectl', ['--kubeconfig', env.kubeconfigPath, 'get', '--raw', '/metrics']);
    expect(raw.code).toBe(0);
    expect(raw.stdout).toContain('apiserver_request_total{');
  });
});
