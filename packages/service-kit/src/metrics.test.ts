import { status } from '@grpc/grpc-js';
import { observeCall } from './call-hooks';
import { installGrpcMetrics } from './grpc-metrics';
import { MetricsRegistry, OPENMETRICS_CONTENT_TYPE, PROMETHEUS_CONTENT_TYPE, boundedLabel, validateShowHiddenFor } from './metrics';
import { parseBindAddress, serveMetrics } from './metrics-server';

async function text(registry: MetricsRegistry, accept?: string): Promise<string> {
  return (await registry.render(accept)).body;
}

describe('metrics with stability classes', () => {
  test('HELP starts with the stability class, ALPHA when none is declared', async () => {
    const r = new MetricsRegistry({ version: '1.32.0' });
    r.counter({ name: 'a_total', help: 'Stable one.', stabilityLevel: 'STABLE' }).inc();
    r.gauge({ name: 'b', help: 'Beta one.', stabilityLevel: 'BETA' }).set(2);
    r.histogram({ name: 'c_seconds', help: 'Alpha one.', buckets: [1] }).observe(0.5);
    const out = await text(r);
    expect(out).toContain('# HELP a_total [STABLE] Stable one.');
    expect(out).toContain('# HELP b [BETA] Beta one.');
    expect(out).toContain('# HELP c_seconds [ALPHA] Alpha one.');
    expect(out).toContain('a_total 1');
  });

  test('a metric deprecated in this release says since when, after its class, and is still exposed', async () => {
    const r = new MetricsRegistry({ version: '1.32.3' });
    r.counter({ name: 'old_total', help: 'Old.', stabilityLevel: 'STABLE', deprecatedVersion: '1.32.0' }).inc();
    const out = await text(r);
    expect(out).toContain('# HELP old_total [STABLE] (Deprecated since 1.32.0) Old.');
    expect(out).toContain('old_total 1');
  });

  test('a deprecation announced for a later release is not printed yet', async () => {
    const r = new MetricsRegistry({ version: '1.32.0' });
    r.gauge({ name: 'later', help: 'Later.', deprecatedVersion: '1.33.0' });
    expect(await text(r)).toContain('# HELP later [ALPHA] Later.');
  });

  test('a metric deprecated before this minor release is hidden until show-hidden asks for it', async () => {
    const r = new MetricsRegistry({ version: '1.32.0' });
    const hidden = r.counter({ name: 'hidden_total', help: 'Hidden.', deprecatedVersion: '1.31.0' });
    hidden.inc(3);
    expect(r.exposes('hidden_total')).toBe(false);
    expect(await text(r)).not.toContain('hidden_total');
    r.enableShowHidden();
    expect(r.exposes('hidden_total')).toBe(true);
    const out = await text(r);
    expect(out).toContain('# HELP hidden_total [ALPHA] (Deprecated since 1.31.0) Hidden.');
    expect(out).toContain('hidden_total 3');
    // Declared after show-hidden: exposed at once.
    r.gauge({ name: 'hidden_later', help: 'Also hidden.', deprecatedVersion: '1.30.0' });
    expect(r.exposes('hidden_later')).toBe(true);
  });

  test('--show-hidden-metrics-for-version accepts only the previous minor release', () => {
    expect(() => validateShowHiddenFor('', '1.32.0')).not.toThrow();
    expect(() => validateShowHiddenFor('1.31', '1.32.0')).not.toThrow();
    expect(() => validateShowHiddenFor('1.30', '1.32.0')).toThrow("must be omitted or have the value '1.31'");
    expect(() => validateShowHiddenFor('1.32', '1.32.0')).toThrow(/Only the previous minor version is allowed/);
    expect(() => validateShowHiddenFor('1.31.0', '1.32.0')).toThrow();
  });

  test('OpenMetrics when the Accept header asks for it: counters named without _total in metadata, # EOF at the end', async () => {
    const r = new MetricsRegistry();
    r.counter({ name: 'requests_total', help: 'Requests.', labelNames: ['code'] as const }).labels('200').inc(2);
    const prom = await r.render('text/plain');
    expect(prom.contentType).toBe(PROMETHEUS_CONTENT_TYPE);
    const om = await r.render('application/openmetrics-text;version=1.0.0,text/plain;q=0.5');
    expect(om.contentType).toBe(OPENMETRICS_CONTENT_TYPE);
    expect(om.body).toContain('# TYPE requests counter');
    expect(om.body).toContain('requests_total{code="200"} 2');
    expect(om.body.endsWith('# EOF\n')).toBe(true);
    // Rendering OpenMetrics does not rename the metric for the next Prometheus scrape.
    expect((await r.render(undefined)).body).toContain('# TYPE requests_total counter');
  });

  test('process and runtime metrics carry the usual process_* names', async () => {
    const r = new MetricsRegistry();
    r.collectDefaultMetrics();
    r.collectDefaultMetrics();
    const out = await text(r);
    expect(out).toContain('process_cpu_seconds_total');
    expect(out).toContain('process_resident_memory_bytes');
    expect(out).toContain('process_start_time_seconds');
  });

  test('an unknown label value collapses to the fallback', () => {
    const known = new Set(['GET', 'LIST']);
    expect(boundedLabel('GET', known)).toBe('GET');
    expect(boundedLabel('FROB', known)).toBe('other');
  });
});

describe('gRPC metrics', () => {
  test('every call is counted by service, method, type and code name, and timed', async () => {
    const r = new MetricsRegistry();
    const remove = installGrpcMetrics(r, 'storage');
    try {
      observeCall({ side: 'server', service: '', method: 'Get', transport: 'calls', requestId: 'a' }).end(status.NOT_FOUND);
      observeCall({ side: 'server', service: '', method: 'Get', transport: 'unary', requestId: 'b' }).end(status.OK);
      observeCall({ side: 'client', service: 'authz', method: 'Authorize', transport: 'unary', requestId: 'c' }).end(status.UNAVAILABLE);
      observeCall({ side: 'server', service: 'watch-fanout', method: 'Watch', transport: 'server-stream', requestId: 'd' }).end(status.CANCELLED);
    } finally {
      remove();
    }
    const out = await text(r);
    expect(out).toContain('grpc_server_handled_total{grpc_service="storage",grpc_method="Get",grpc_type="unary",grpc_code="NotFound"} 1');
    expect(out).toContain('grpc_server_handled_total{grpc_service="storage",grpc_method="Get",grpc_type="unary",grpc_code="OK"} 1');
    expect(out).toContain('grpc_server_started_total{grpc_service="storage",grpc_method="Get",grpc_type="unary"} 2');
    expect(out).toContain('grpc_client_handled_total{grpc_service="authz",grpc_method="Authorize",grpc_type="unary",grpc_code="Unavailable"} 1');
    expect(out).toContain('grpc_server_handled_total{grpc_service="watch-fanout",grpc_method="Watch",grpc_type="server_stream",grpc_code="Canceled"} 1');
    expect(out).toContain('grpc_server_handling_seconds_count{grpc_service="storage",grpc_method="Get",grpc_type="unary"} 2');
    expect(out).toContain('grpc_client_handling_seconds_bucket{grpc_service="authz",grpc_method="Authorize",grpc_type="unary",le="0.005"} ');
  });
});

describe('metrics endpoint', () => {
  test('bind addresses are host:port', () => {
    expect(parseBindAddress('127.0.0.1:9100')).toEqual({ host: '127.0.0.1', port: 9100 });
    expect(parseBindAddress('[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseBindAddress(':9100')).toEqual({ host: '0.0.0.0', port: 9100 });
    expect(() => parseBindAddress('9100')).toThrow(/is not host:port/);
    expect(() => parseBindAddress('h:70000')).toThrow(/is not host:port/);
  });

  test('serves GET /metrics only', async () => {
    const r = new MetricsRegistry();
    r.gauge({ name: 'up_here', help: 'Here.' }).set(1);
    const endpoint = await serveMetrics(r, '127.0.0.1:0');
    try {
      const ok = await fetch(`http://${endpoint.address}/metrics`);
      expect(ok.status).toBe(200);
      expect(ok.headers.get('content-type')).toBe(PROMETHEUS_CONTENT_TYPE);
      expect(await ok.text()).toContain('up_here 1');
      const om = await fetch(`http://${endpoint.address}/metrics`, { headers: { accept: 'application/openmetrics-text' } });
      expect(om.headers.get('content-type')).toBe(OPENMETRICS_CONTENT_TYPE);
      expect((await fetch(`http://${endpoint.address}/other`)).status).toBe(404);
      expect((await fetch(`http://${endpoint.address}/metrics`, { method: 'POST' })).status).toBe(405);
    } finally {
      await endpoint.close();
    }
  });
});
