import { context, TraceFlags } from '@opentelemetry/api';
import { ExportResultCode, suppressTracing, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { BatchSettings } from './tracing-config';

/**
 * The batch span processor: finished spans wait in a bounded queue and
 * leave in batches, one export at a time. Nothing a request does waits for
 * an export: a full queue drops the span (counted), an export that fails or
 * does not answer within the export timeout loses its batch (counted) and
 * the next one goes. The counts are what a metric of lost spans reads
 * (`droppedSpans()` in tracing.ts). The SDK's own batch processor keeps its
 * drop count private and resets it when it logs, so it is not used.
 */
export interface SpanQueueStats {
  /** Spans waiting now. */
  queued: number;
  /** Spans dropped because the queue was full. */
  dropped: number;
  /** Spans of batches whose export failed or timed out. */
  failed: number;
  /** Spans the collector took. */
  exported: number;
}

export interface SpanQueueEvents {
  /** Exports started failing (told once until one succeeds again). */
  exportFailing?(err: Error | undefined): void;
  /** Exports succeed again after failing. */
  exportRecovered?(): void;
}

export class BoundedBatchSpanProcessor implements SpanProcessor {
  private queue: ReadableSpan[] = [];
  private timer: NodeJS.Timeout | undefined;
  private exporting: Promise<void> | undefined;
  private shut = false;
  private failing = false;
  private readonly counts = { dropped: 0, failed: 0, exported: 0 };

  constructor(
    private readonly exporter: SpanExporter,
    private readonly settings: BatchSettings,
    private readonly events: SpanQueueEvents = {},
  ) {}

  stats(): SpanQueueStats {
    return { queued: this.queue.length, ...this.counts };
  }

  onStart(): void {}

  onEnd(span: ReadableSpan): void {
    if (this.shut || (span.spanContext().traceFlags & TraceFlags.SAMPLED) === 0) return;
    if (this.queue.length >= this.settings.maxQueueSize) {
      this.counts.dropped++;
      return;
    }
    this.queue.push(span);
    if (this.queue.length >= this.settings.maxExportBatchSize) this.kick();
    else this.arm();
  }

  async forceFlush(): Promise<void> {
    while (this.exporting || this.queue.length > 0) {
      if (this.exporting) await this.exporting;
      else this.kick();
    }
  }

  async shutdown(): Promise<void> {
    if (this.shut) return;
    await this.forceFlush();
    this.shut = true;
    this.disarm();
    await this.exporter.shutdown();
  }

  private arm(): void {
    if (this.timer || this.exporting) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.kick();
    }, this.settings.scheduledDelayMs);
    this.timer.unref();
  }

  private disarm(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** Starts an export of the next batch unless one is running. */
  private kick(): void {
    if (this.exporting || this.queue.length === 0) return;
    this.disarm();
    const batch = this.queue.splice(0, this.settings.maxExportBatchSize);
    this.exporting = this.exportBatch(batch).finally(() => {
      this.exporting = undefined;
      if (this.queue.length >= this.settings.maxExportBatchSize) this.kick();
      else if (this.queue.length > 0) this.arm();
    });
  }

  private exportBatch(batch: ReadableSpan[]): Promise<void> {
    return new Promise<void>((resolve) => {
      let settled = false;
      const settle = (result: ExportResult): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        if (result.code === ExportResultCode.SUCCESS) {
          this.counts.exported += batch.length;
          if (this.failing) {
            this.failing = false;
            this.events.exportRecovered?.();
          }
        } else {
          this.counts.failed += batch.length;
          if (!this.failing) {
            this.failing = true;
            this.events.exportFailing?.(result.error);
          }
        }
        resolve();
      };
      const timer = setTimeout(
        () => settle({ code: ExportResultCode.FAILED, error: new Error(`no answer from the collector within ${this.settings.exportTimeoutMs} ms`) }),
        this.settings.exportTimeoutMs,
      );
      timer.unref();
      // The export's own work (its HTTP request) is never traced.
      context.with(suppressTracing(context.active()), () => {
        try {
          this.exporter.export(batch, settle);
        } catch (err) {
          settle({ code: ExportResultCode.FAILED, error: err as Error });
        }
      });
    });
  }
}
