import type { IKeyValue } from 'etcd3';
import { createLogger, startServerSpan, startTracing, stopTracing } from '@svc/service-kit';
import { PUBLISHED_RANGE, WRITE_TRACE_KEY, isWriteTraceKey, withWriteTrace, writeTracesOf } from './write-trace';

const write = { compare: [], success: [{ request_put: { key: Buffer.from('/registry/configmaps/default/a'), value: Buffer.from('{}') } }], failure: [] };

function kv(key: string, revision: number, value = ''): { kv: IKeyValue } {
  return { kv: { key: Buffer.from(key), value: Buffer.from(value), mod_revision: String(revision), create_revision: String(revision), version: '1', lease: '0' } };
}

describe('write traces', () => {
  test('the trace key sits in the published range, outside the registry', () => {
    expect(WRITE_TRACE_KEY >= PUBLISHED_RANGE.start && WRITE_TRACE_KEY < PUBLISHED_RANGE.end).toBe(true);
    expect('/registry/configmaps/default/a' < PUBLISHED_RANGE.end && '/registry/' > WRITE_TRACE_KEY).toBe(true);
    expect(WRITE_TRACE_KEY.startsWith('/registry/')).toBe(false);
  });

  test('without tracing, or outside a sampled span, the write is sent as it is', async () => {
    expect(withWriteTrace(write)).toBe(write);
    startTracing(
      { serviceName: 't', url: 'http://127.0.0.1:1/v1/traces', protocol: 'http/json', sampler: { kind: 'parentbased_always_on' }, batch: { maxQueueSize: 10, maxExportBatchSize: 10, scheduledDelayMs: 1000, exportTimeoutMs: 1000 }, headers: {} },
      createLogger('t', { level: 'error' }),
    );
    try {
      expect(withWriteTrace(write)).toBe(write);
      const unsampled = startServerSpan('write', { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-00` }, {});
      expect(unsampled?.run(() => withWriteTrace(write))).toBe(write);
      // In a sampled span the trace is appended to the successful branch, after the write's own operations.
      const sampled = startServerSpan('write', {}, {});
      const span = sampled!.span;
      const traced = sampled!.run(() => withWriteTrace(write));
      span.end();
      expect(traced.success).toHaveLength(2);
      expect(traced.success?.[0]).toBe(write.success[0]);
      const put = traced.success?.[1]?.request_put;
      expect(put?.key?.toString()).toBe(WRITE_TRACE_KEY);
      expect(put?.value?.toString()).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
      expect(traced.failure).toBe(write.failure);
    } finally {
      await stopTracing();
    }
  });

  test("a watch response's traces by revision; none allocated for a response without", () => {
    expect(writeTracesOf([kv('/registry/configmaps/default/a', 7)])).toBeUndefined();
    const traces = writeTracesOf([kv('/registry/configmaps/default/a', 7), kv(WRITE_TRACE_KEY, 7, '00-t-s-01'), kv('/registry/pods/default/b', 8)]);
    expect(traces && [...traces]).toEqual([[7, '00-t-s-01']]);
    expect(isWriteTraceKey(Buffer.from(WRITE_TRACE_KEY))).toBe(true);
    expect(isWriteTraceKey(Buffer.from('/registry.tracf'))).toBe(false);
  });
});
