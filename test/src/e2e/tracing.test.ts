import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { until } from './helpers';
import { adminRequest } from './http';

/**
 * Traces across every hop. An OTLP/HTTP receiver (http/json) runs in the
 * test; the system is started with OTEL_EXPORTER_OTLP_ENDPOINT pointing at
 * it. A ConfigMap created with a `traceparent` header yields one trace: the
 * gateway's server span under the caller's span, client spans of the
 * gateway's calls with the authz, admission and storage server spans under
 * them, storage's etcd write under its server span, and, for a watch
 * started before, the gateway's delivery of the change linked to that
 * trace. The request log line carries the trace id. With an endpoint
 * nobody answers, requests succeed as before.
 */

interface ReceivedSpan {
  service: string;
  name: string;
  kind: number;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  links: Array<{ traceId: string; spanId: string }>;
  attributes: Record<string, unknown>;
}

/** OTLP/JSON ids are hex; some encoders write base64. */
function hexId(id: unknown): string {
  if (typeof id !== 'string' || id === '') return '';
  return /^[0-9a-f]+$/i.test(id) && (id.length === 32 || id.length === 16) ? id.toLowerCase() : Buffer.from(id, 'base64').toString('hex');
}

type AnyValue = { stringValue?: string; intValue?: string | number; boolValue?: boolean; doubleValue?: number };
type KeyValue = { key: string; value: AnyValue };

function valueOf(v: AnyValue): unknown {
  return v.stringValue ?? (v.intValue !== undefined ? Number(v.intValue) : undefined) ?? v.boolValue ?? v.doubleValue;
}

interface OtlpRequest {
  resourceSpans?: Array<{
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: Array<{ spans?: Array<{ traceId: string; spanId: string; parentSpanId?: string; name: string; kind: number; attributes?: KeyValue[]; links?: Array<{ traceId: string; spanId: string }> }> }>;
  }>;
}

/** A minimal OTLP/HTTP receiver of JSON exports. */
function startReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; close(): Promise<void> }> {
  const spans: ReceivedSpan[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url !== '/v1/traces' || !String(req.headers['content-type']).startsWith('application/json')) {
        res.writeHead(415).end();
        return;
      }
      const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpRequest;
      for (const rs of body.resourceSpans ?? []) {
        const service = String(valueOf(rs.resource?.attributes?.find((a) => a.key === 'service.name')?.value ?? {}) ?? '');
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            spans.push({
              service,
              name: s.name,
              kind: s.kind,
              traceId: hexId(s.traceId),
              spanId: hexId(s.spanId),
              parentSpanId: hexId(s.parentSpanId),
              links: (s.links ?? []).map((l) => ({ traceId: hexId(l.traceId), spanId: hexId(l.spanId) })),
              attributes: Object.fromEntries((s.attributes ?? []).map((a) => [a.key, valueOf(a.value)])),
            });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      resolve({ url: `http://127.0.0.1:${port}`, spans, close: () => new Promise((r) => server.close(() => r())) });
    }),
  );
}

/** A watch as the admin, collecting what it receives until closed. */
function startWatch(env: Environment, pathAndQuery: string): Promise<{ received: () => string; close(): void }> {
  return new Promise((resolve, reject) => {
    let text = '';
    const req = https.request(`${env.url}${pathAndQuery}`, {
      ca: fs.readFileSync(env.pki.caCert),
      cert: fs.readFileSync(env.pki.adminCert),
      key: fs.readFileSync(env.pki.adminKey),
      agent: false,
    });
    req.on('response', (res) => {
      res.on('data', (d: Buffer) => (text += d.toString('utf8')));
      res.on('error', () => undefined);
      resolve({ received: () => text, close: () => req.destroy() });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('tracing', () => {
  let env: Environment;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    receiver = await startReceiver();
    env = await startEnvironment({
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json', OTEL_BSP_SCHEDULE_DELAY: '100' },
    });
  });

  afterAll(async () => {
    await env?.stop(true);
    await receiver?.close();
  });

  test('one trace from the request through authz, admission and storage to the watcher', async () => {
    const ns = `trace-${randomBytes(3).toString('hex')}`;
    expect((await adminRequest(env, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }))).status).toBe(201);
    const watch = await startWatch(env, `/api/v1/namespaces/${ns}/configmaps?watch=1`);
    try {
      const traceId = randomBytes(16).toString('hex');
      const callerSpan = randomBytes(8).toString('hex');
      const created = await adminRequest(env, 'POST', `/api/v1/namespaces/${ns}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'traced' }, data: { a: '1' } }), {
        traceparent: `00-${traceId}-${callerSpan}-01`,
      });
      expect(created.status).toBe(201);
      await until(() => (watch.received().includes('"name":"traced"') ? true : undefined));

      const inTrace = (): ReceivedSpan[] => receiver.spans.filter((s) => s.traceId === traceId);
      const find = (service: string, name: string | RegExp): ReceivedSpan | undefined =>
        inTrace().find((s) => s.service === service && (typeof name === 'string' ? s.name === name : name.test(s.name)));
      // The server span of each service the create passed, and the delivery to the watcher. Each
      // process exports on its own schedule, so the gateway's span may arrive after the others.
      const gatewaySpan = (): ReceivedSpan | undefined => find('gateway', 'POST /api/v1/namespaces/{:namespace}/configmaps');
      await until(() => (gatewaySpan() && find('storage', 'etcd create') && find('admission', /^svc\.admission\.v1\.Admission\//) && find('authz', /^svc\.authz\.v1\./) ? true : undefined), 20000);
      const server = gatewaySpan();
      expect(server).toBeDefined();
      expect(server?.parentSpanId).toBe(callerSpan);
      expect(server?.kind).toBe(2); // SERVER
      expect(server?.attributes).toMatchObject({ 'http.request.method': 'POST', 'http.response.status_code': 201, 'apiserver.verb': 'create', 'apiserver.resource': 'configmaps' });
      const byId = new Map(inTrace().map((s) => [s.spanId, s]));
      // Each service's server span is the child of the gateway's client span of the same call, itself a child of the request's span (or of a span under it).
      for (const service of ['authz', 'admission', 'storage']) {
        const served = inTrace().filter((s) => s.service === service && s.kind === 2);
        expect(served.length).toBeGreaterThan(0);
        for (const s of served) {
          const caller = byId.get(s.parentSpanId);
          expect(caller?.kind).toBe(3); // CLIENT
          // `authz/Authorize` for `svc.authz.v1.Authz/Authorize`: the peer the client called.
          expect(caller?.name.split('/')[0]).toBe(s.name.split('.')[1]);
          // Up the parents, the chain reaches the gateway's server span.
          let up = caller;
          while (up && up.spanId !== server?.spanId) up = byId.get(up.parentSpanId);
          expect(up?.spanId).toBe(server?.spanId);
        }
      }
      const etcdWrite = find('storage', 'etcd create');
      expect(byId.get(etcdWrite?.parentSpanId ?? '')?.name).toBe('svc.storage.v1.Storage/Create');

      // The delivery to the watcher is linked to the write's trace.
      const delivery = await until(() => receiver.spans.find((s) => s.service === 'gateway' && s.name.startsWith('watch delivery') && s.links.some((l) => l.traceId === traceId)), 20000);
      expect(delivery.attributes).toMatchObject({ 'svc.watch.event': 'ADDED', 'svc.watch.resource': 'configmaps' });
      // It links to watch-fanout's publish of the change, a child of the etcd write.
      const publish = byId.get(delivery.links[0]?.spanId ?? '') ?? (await until(() => receiver.spans.find((s) => s.spanId === delivery.links[0]?.spanId), 10000));
      expect(publish.service).toBe('watch-fanout');
      expect(publish.parentSpanId).toBe(etcdWrite?.spanId);

      // The request's log line names its trace.
      const logLine = await until(() =>
        fs
          .readFileSync(path.join(env.dir, 'logs', 'gateway.log'), 'utf8')
          .split('\n')
          .find((l) => l.includes(`"traceId":"${traceId}"`) && l.includes('"HTTP"')),
      );
      expect(JSON.parse(logLine)).toMatchObject({ verb: 'create', code: 201, traceId });
    } finally {
      watch.close();
    }
  });

  test('an internal call outside any request starts no trace, and a request without traceparent starts one at the gateway', async () => {
    const before = new Set(receiver.spans.map((s) => s.traceId));
    const res = await adminRequest(env, 'GET', '/api/v1/namespaces/default/configmaps');
    expect(res.status).toBe(200);
    const span = await until(() => receiver.spans.find((s) => s.service === 'gateway' && s.name === 'GET /api/v1/namespaces/{:namespace}/configmaps' && !before.has(s.traceId)));
    expect(span.parentSpanId).toBe('');
    // Every span recorded belongs to a trace some request started at the gateway (or a watch delivery linked to one).
    const roots = new Set(receiver.spans.filter((s) => s.parentSpanId === '').map((s) => s.service));
    expect([...roots].every((s) => s === 'gateway')).toBe(true);
  });
});

describe('tracing to an endpoint nobody answers', () => {
  let env: Environment;

  beforeAll(async () => {
    // A port that was free a moment ago: nothing listens there.
    const closed = http.createServer();
    const port = await new Promise<number>((resolve) => closed.listen(0, '127.0.0.1', () => resolve((closed.address() as { port: number }).port)));
    await new Promise((r) => closed.close(r));
    env = await startEnvironment({ env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_BSP_SCHEDULE_DELAY: '50', OTEL_BSP_EXPORT_TIMEOUT: '1000' } });
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('requests succeed, and the failing export is logged', async () => {
    // At once: every span of them waits in (or is dropped from) the bounded queue, none holds a request.
    const created = await Promise.all(
      Array.from({ length: 20 }, (_, i) => adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `unexported-${i}` } }))),
    );
    expect(created.map((r) => r.status)).toEqual(created.map(() => 201));
    await until(() => (fs.readFileSync(path.join(env.dir, 'logs', 'gateway.log'), 'utf8').includes('span export failing') ? true : undefined), 20000);
  });
});
