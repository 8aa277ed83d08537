import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { status } from '@grpc/grpc-js';
import { context, SpanKind, trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SamplingDecision } from '@opentelemetry/sdk-trace-base';
import { observeCall } from './call-hooks';
import { traceCarrier } from './grpc';
import { createLogger } from './logger';
import { activeTraceId, buildSampler, droppedSpans, flushTracing, inClientSpan, sampledTraceparent, spanContextOf, startTracing, stopTracing, tracer, tracingEnabled } from './tracing';
import type { TracingSettings } from './tracing-config';
import { makeTestPki } from './testing/pki';
import { postJson } from './webhook';

const settings: TracingSettings = {
  serviceName: 'test',
  url: 'http://127.0.0.1:1/v1/traces',
  protocol: 'http/json',
  sampler: { kind: 'parentbased_always_on' },
  batch: { maxQueueSize: 100, maxExportBatchSize: 50, scheduledDelayMs: 10, exportTimeoutMs: 1000 },
  headers: {},
};

describe('sampler choice', () => {
  const sampled = (kind: Parameters<typeof buildSampler>[0], parentSampled: boolean | undefined): SamplingDecision => {
    const parent =
      parentSampled === undefined ? context.active() : trace.setSpanContext(context.active(), { traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: parentSampled ? 1 : 0, isRemote: true });
    return buildSampler(kind).shouldSample(parent, 'c'.repeat(32), 'x', SpanKind.SERVER, {}, []).decision;
  };
  test('parent-based samplers follow the caller; root samplers decide alone', () => {
    expect(sampled({ kind: 'parentbased_always_off' }, true)).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(sampled({ kind: 'parentbased_always_off' }, undefined)).toBe(SamplingDecision.NOT_RECORD);
    expect(sampled({ kind: 'parentbased_always_on' }, false)).toBe(SamplingDecision.NOT_RECORD);
    expect(sampled({ kind: 'parentbased_traceidratio', ratio: 1 }, undefined)).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(sampled({ kind: 'parentbased_traceidratio', ratio: 0 }, undefined)).toBe(SamplingDecision.NOT_RECORD);
    expect(sampled({ kind: 'always_on' }, false)).toBe(SamplingDecision.RECORD_AND_SAMPLED);
    expect(sampled({ kind: 'always_off' }, true)).toBe(SamplingDecision.NOT_RECORD);
  });
});

describe('tracing', () => {
  test('off: nothing is recorded and the helpers just run', async () => {
    expect(tracingEnabled()).toBe(false);
    expect(observeCall({ side: 'client', service: 'storage', method: 'Get', transport: 'unary', requestId: '' }).wrap(() => traceCarrier())).toEqual({});
    expect(await inClientSpan('etcd Txn', {}, async (span) => span)).toBeUndefined();
    expect(sampledTraceparent()).toBeUndefined();
    expect(droppedSpans()).toBe(0);
  });

  test('on: a call makes a client span whose headers the server continues, and the server span is active in the handler', async () => {
    const exporter = new InMemorySpanExporter();
    startTracing(settings, createLogger('test', { level: 'error' }), exporter);
    try {
      const root = tracer().startSpan('request', { kind: SpanKind.SERVER });
      let carrier: Record<string, string> = {};
      let innerTraceparent: string | undefined;
      await context.with(trace.setSpan(context.active(), root), async () => {
        // No active span outside: an internal call with no trace starts none.
        const client = observeCall({ side: 'client', service: 'storage', method: 'Create', transport: 'calls', requestId: 'r1' });
        carrier = client.wrap(() => traceCarrier());
        const server = observeCall({ side: 'server', service: 'svc.storage.v1.Storage', method: 'Create', transport: 'calls', requestId: 'r1', carrier });
        await server.wrap(() => inClientSpan('etcd Txn', { 'db.system': 'etcd' }, async () => (innerTraceparent = sampledTraceparent())));
        server.end(status.OK);
        client.end(status.NOT_FOUND);
      });
      root.end();
      await flushTracing();
      expect(observeCall({ side: 'client', service: 'storage', method: 'Get', transport: 'unary', requestId: '' }).wrap(() => traceCarrier())).toEqual({});
      const spans = exporter.getFinishedSpans();
      const byName = Object.fromEntries(spans.map((s) => [s.name, s]));
      const traceId = root.spanContext().traceId;
      expect(spans.map((s) => s.spanContext().traceId)).toEqual([traceId, traceId, traceId, traceId]);
      expect(byName['storage/Create']?.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
      expect(byName['storage/Create']?.kind).toBe(SpanKind.CLIENT);
      expect(byName['storage/Create']?.status.code).toBe(2);
      expect(carrier['traceparent']).toBe(`00-${traceId}-${byName['storage/Create']?.spanContext().spanId}-01`);
      expect(byName['svc.storage.v1.Storage/Create']?.parentSpanContext?.spanId).toBe(byName['storage/Create']?.spanContext().spanId);
      expect(byName['svc.storage.v1.Storage/Create']?.kind).toBe(SpanKind.SERVER);
      expect(byName['etcd Txn']?.parentSpanContext?.spanId).toBe(byName['svc.storage.v1.Storage/Create']?.spanContext().spanId);
      expect(innerTraceparent).toBe(`00-${traceId}-${byName['etcd Txn']?.spanContext().spanId}-01`);
      expect(spanContextOf(innerTraceparent)?.spanId).toBe(byName['etcd Txn']?.spanContext().spanId);
      expect(spanContextOf('00-garbage')).toBeUndefined();
      expect(activeTraceId()).toBe('');
    } finally {
      await stopTracing();
    }
    expect(tracingEnabled()).toBe(false);
  });

  test('a webhook call is a client span whose traceparent the webhook receives', async () => {
    const pki = makeTestPki('tracing-webhook-ca');
    const seen: Array<string | undefined> = [];
    const server = https.createServer(pki.tlsFor('webhook'), (req, res) => {
      seen.push(req.headers['traceparent'] as string | undefined);
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
    const creds = { server: url, ca: Buffer.from(pki.tlsFor('webhook').ca) };
    const exporter = new InMemorySpanExporter();
    try {
      // Off: nothing is sent.
      await postJson(creds, '{}', 5000, 1024);
      startTracing(settings, createLogger('test', { level: 'error' }), exporter);
      const root = tracer().startSpan('request');
      await context.with(trace.setSpan(context.active(), root), () => postJson(creds, '{}', 5000, 1024));
      root.end();
      await flushTracing();
      const call = exporter.getFinishedSpans().find((s) => s.name === 'POST');
      expect(call?.kind).toBe(SpanKind.CLIENT);
      expect(call?.attributes['http.response.status_code']).toBe(200);
      expect(call?.parentSpanContext?.spanId).toBe(root.spanContext().spanId);
      expect(seen).toEqual([undefined, `00-${root.spanContext().traceId}-${call?.spanContext().spanId}-01`]);
    } finally {
      await stopTracing();
      server.close();
      pki.remove();
    }
  });
});
