import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { TraceFlags } from '@opentelemetry/api';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { BoundedBatchSpanProcessor } from './span-queue';

function span(sampled = true): ReadableSpan {
  return { spanContext: () => ({ traceId: '1'.repeat(32), spanId: '2'.repeat(16), traceFlags: sampled ? TraceFlags.SAMPLED : TraceFlags.NONE }) } as unknown as ReadableSpan;
}

/** An exporter whose exports wait until the test answers them. */
class HeldExporter implements SpanExporter {
  readonly calls: Array<{ spans: ReadableSpan[]; done: (r: ExportResult) => void }> = [];
  export(spans: ReadableSpan[], done: (r: ExportResult) => void): void {
    this.calls.push({ spans, done });
  }
  async shutdown(): Promise<void> {}
}

const settings = { maxQueueSize: 4, maxExportBatchSize: 2, scheduledDelayMs: 60_000, exportTimeoutMs: 60_000 };

describe('bounded batch span processor', () => {
  test('a full queue drops spans and counts them; nothing waits for the exporter', () => {
    const exporter = new HeldExporter();
    const q = new BoundedBatchSpanProcessor(exporter, settings);
    // Two spans fill a batch: its export starts and is held.
    for (let i = 0; i < 2; i++) q.onEnd(span());
    expect(exporter.calls).toHaveLength(1);
    // Four more fill the queue while the export is out; the rest are dropped.
    for (let i = 0; i < 7; i++) q.onEnd(span());
    expect(q.stats()).toEqual({ queued: 4, dropped: 3, failed: 0, exported: 0 });
    // One export at a time.
    expect(exporter.calls).toHaveLength(1);
  });

  test('unsampled spans are not queued', () => {
    const q = new BoundedBatchSpanProcessor(new HeldExporter(), settings);
    q.onEnd(span(false));
    expect(q.stats().queued).toBe(0);
  });

  test('a failed export loses its batch (counted, told once) and the next batch goes', async () => {
    const exporter = new HeldExporter();
    const failing: string[] = [];
    const q = new BoundedBatchSpanProcessor(exporter, settings, { exportFailing: (e) => failing.push(e?.message ?? ''), exportRecovered: () => failing.push('recovered') });
    for (let i = 0; i < 4; i++) q.onEnd(span());
    exporter.calls[0]?.done({ code: ExportResultCode.FAILED, error: new Error('connect ECONNREFUSED') });
    await new Promise((r) => setImmediate(r));
    expect(exporter.calls).toHaveLength(2);
    exporter.calls[1]?.done({ code: ExportResultCode.FAILED, error: new Error('again') });
    await new Promise((r) => setImmediate(r));
    expect(q.stats()).toMatchObject({ queued: 0, failed: 4, exported: 0 });
    expect(failing).toEqual(['connect ECONNREFUSED']);
    q.onEnd(span());
    q.onEnd(span());
    exporter.calls[2]?.done({ code: ExportResultCode.SUCCESS });
    await new Promise((r) => setImmediate(r));
    expect(q.stats()).toMatchObject({ failed: 4, exported: 2 });
    expect(failing).toEqual(['connect ECONNREFUSED', 'recovered']);
  });

  test('an export that never answers times out and counts as failed', async () => {
    const exporter = new HeldExporter();
    const q = new BoundedBatchSpanProcessor(exporter, { ...settings, exportTimeoutMs: 20 });
    q.onEnd(span());
    q.onEnd(span());
    await new Promise((r) => setTimeout(r, 60));
    expect(q.stats()).toMatchObject({ failed: 2, queued: 0 });
  });

  test('forceFlush exports a partial batch without waiting for the delay', async () => {
    const exporter = new HeldExporter();
    const q = new BoundedBatchSpanProcessor(exporter, settings);
    q.onEnd(span());
    const flushed = q.forceFlush();
    expect(exporter.calls).toHaveLength(1);
    exporter.calls[0]?.done({ code: ExportResultCode.SUCCESS });
    await flushed;
    expect(q.stats()).toMatchObject({ queued: 0, exported: 1 });
  });
});
