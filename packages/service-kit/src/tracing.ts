import { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Attributes, type Context, type Link, type Span, type SpanContext, type Tracer } from '@opentelemetry/api';
import { status as GrpcStatus } from '@grpc/grpc-js';
import { CompositePropagator, W3CBaggagePropagator, W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter as OtlpJsonExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { OTLPTraceExporter as OtlpProtoExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { AlwaysOffSampler, AlwaysOnSampler, ParentBasedSampler, TraceIdRatioBasedSampler, type Sampler, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { ATTR_SERVICE_NAME } from '@opentelemetry/semantic-conventions';
import { addCallObserver, type CallDescription, type CallObservation } from './call-hooks';
import type { Logger } from './logger';
import { BoundedBatchSpanProcessor, type SpanQueueStats } from './span-queue';
import type { SamplerChoice, TracingSettings } from './tracing-config';

/**
 * Traces. `startTracing` (called by runMain before a service starts, when
 * tracing is configured: tracing-config.ts) registers the SDK: a tracer
 * provider with the configured sampler, W3C trace context propagation, an
 * OTLP/HTTP exporter behind a bounded batch queue (span-queue.ts), and an
 * observer of every internal call (call-hooks.ts) that makes a client span
 * per call, active while it is sent so the sent trace headers name it, and
 * a server span per served call continuing the caller's trace, active
 * while the handler runs so the calls it makes are its children. Without
 * `startTracing` nothing here records anything: the API's tracer is a no-op
 * and the helpers run their work as it is.
 *
 * Calls and work outside any trace (a background refresh, a health probe)
 * start none: a trace begins where a request enters the system (the
 * gateway's server span), so every span belongs to one.
 */

const TRACER_NAME = 'svc';

interface Running {
  provider: NodeTracerProvider;
  queue: BoundedBatchSpanProcessor;
  removeObserver: () => void;
}

let running: Running | undefined;

/** Whether this process records traces. */
export function tracingEnabled(): boolean {
  return running !== undefined;
}

/** The tracer spans are made with (the API's no-op one while tracing is off). */
export function tracer(): Tracer {
  return trace.getTracer(TRACER_NAME);
}

/** Spans lost so far: dropped on a full queue or in an export that failed (0 while tracing is off). */
export function droppedSpans(): number {
  const s = running?.queue.stats();
  return s ? s.dropped + s.failed : 0;
}

/** The span queue's counts (undefined while tracing is off). */
export function tracingStats(): SpanQueueStats | undefined {
  return running?.queue.stats();
}

export function buildSampler(choice: SamplerChoice): Sampler {
  switch (choice.kind) {
    case 'always_on':
      return new AlwaysOnSampler();
    case 'always_off':
      return new AlwaysOffSampler();
    case 'traceidratio':
      return new TraceIdRatioBasedSampler(choice.ratio);
    case 'parentbased_always_on':
      return new ParentBasedSampler({ root: new AlwaysOnSampler() });
    case 'parentbased_always_off':
      return new ParentBasedSampler({ root: new AlwaysOffSampler() });
    case 'parentbased_traceidratio':
      return new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(choice.ratio) });
  }
}

function exporterFor(settings: TracingSettings): SpanExporter {
  // The exporter's own concurrency bound stays above one: the queue sends one batch at a time.
  const config = { url: settings.url, headers: settings.headers, timeoutMillis: settings.batch.exportTimeoutMs };
  return settings.protocol === 'http/json' ? new OtlpJsonExporter(config) : new OtlpProtoExporter(config);
}

/**
 * Registers the SDK for this process (once). `exporter` replaces the OTLP
 * exporter (tests).
 */
export function startTracing(settings: TracingSettings, log: Logger, exporter?: SpanExporter): void {
  if (running) return;
  const queue = new BoundedBatchSpanProcessor(exporter ?? exporterFor(settings), settings.batch, {
    exportFailing: (err) => log.warn('span export failing; spans are dropped until the collector answers', { url: settings.url, err: err?.message ?? 'unknown error' }),
    exportRecovered: () => log.info('span export recovered', { url: settings.url }),
  });
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: settings.serviceName }),
    sampler: buildSampler(settings.sampler),
    spanProcessors: [queue],
  });
  provider.register({ propagator: new CompositePropagator({ propagators: [new W3CTraceContextPropagator(), new W3CBaggagePropagator()] }) });
  running = { provider, queue, removeObserver: addCallObserver(traceCall) };
  log.info('tracing', { url: settings.url, protocol: settings.protocol, sampler: settings.sampler.kind, ...('ratio' in settings.sampler ? { ratio: settings.sampler.ratio } : {}) });
}

/** Exports every span finished so far. */
export async function flushTracing(): Promise<void> {
  await running?.queue.forceFlush();
}

/** Exports what is queued (within `timeoutMs`) and unregisters the SDK. */
export async function stopTracing(timeoutMs = 2000): Promise<void> {
  const r = running;
  if (!r) return;
  running = undefined;
  r.removeObserver();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([r.provider.shutdown().catch(() => undefined), new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
  clearTimeout(timer);
  trace.disable();
  propagation.disable();
  context.disable();
}

/** Whether `ctx` holds a span to continue. */
function inTrace(ctx: Context): boolean {
  const sc = trace.getSpanContext(ctx);
  return sc !== undefined && trace.isSpanContextValid(sc);
}

/** Server spans are errors for the codes that mean the server failed (as the RPC conventions say); client spans for any failure. */
const SERVER_FAULTS = new Set<GrpcStatus>([GrpcStatus.UNKNOWN, GrpcStatus.DEADLINE_EXCEEDED, GrpcStatus.UNIMPLEMENTED, GrpcStatus.INTERNAL, GrpcStatus.UNAVAILABLE, GrpcStatus.DATA_LOSS]);

/** The call observer: a client or server span per internal call that belongs to a trace. */
function traceCall(call: CallDescription): CallObservation | undefined {
  const parent = call.side === 'client' ? context.active() : call.carrier ? propagation.extract(ROOT_CONTEXT, call.carrier) : ROOT_CONTEXT;
  if (!inTrace(parent)) return undefined;
  const span = tracer().startSpan(
    `${call.service}/${call.method}`,
    {
      kind: call.side === 'client' ? SpanKind.CLIENT : SpanKind.SERVER,
      attributes: { 'rpc.system': 'grpc', 'rpc.service': call.service, 'rpc.method': call.method, 'svc.transport': call.transport, ...(call.requestId ? { 'svc.request_id': call.requestId } : {}) },
    },
    parent,
  );
  if (!span.isRecording()) {
    // Not sampled: the context still carries the caller's decision onward.
    const ctx = trace.setSpan(parent, span);
    return { wrap: (fn) => context.with(ctx, fn), end: () => span.end() };
  }
  const ctx = trace.setSpan(parent, span);
  return {
    wrap: (fn) => context.with(ctx, fn),
    end: (code) => {
      span.setAttribute('rpc.grpc.status_code', code);
      if (code !== GrpcStatus.OK && (call.side === 'client' || SERVER_FAULTS.has(code))) span.setStatus({ code: SpanStatusCode.ERROR, message: GrpcStatus[code] });
      span.end();
    },
  };
}

/**
 * Runs `fn` in a client span named `name` (an etcd request, a webhook
 * call), a child of the active span; without an active trace `fn` just
 * runs. A rejection marks the span as failed.
 */
export function inClientSpan<T>(name: string, attributes: Attributes, fn: (span: Span | undefined) => Promise<T>): Promise<T> {
  if (!running) return fn(undefined);
  const parent = context.active();
  if (!inTrace(parent)) return fn(undefined);
  const span = tracer().startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent);
  return context.with(trace.setSpan(parent, span), () => fn(span)).then(
    (value) => {
      span.end();
      return value;
    },
    (err: unknown) => {
      span.setStatus({ code: SpanStatusCode.ERROR, message: err instanceof Error ? err.message : String(err) });
      span.end();
      throw err;
    },
  );
}

/** The W3C `traceparent` of the active span when it is sampled (what a write records for its watchers); undefined otherwise. */
export function sampledTraceparent(): string | undefined {
  if (!running) return undefined;
  const sc = trace.getSpanContext(context.active());
  if (!sc || !trace.isSpanContextValid(sc) || (sc.traceFlags & 1) === 0) return undefined;
  return `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags.toString(16)}`;
}

/** The span context a `traceparent` names (invalid input: undefined). */
export function spanContextOf(traceparent: string | undefined): SpanContext | undefined {
  if (!traceparent) return undefined;
  const sc = trace.getSpanContext(new W3CTraceContextPropagator().extract(ROOT_CONTEXT, { traceparent }, { get: (c, k) => (c as Record<string, string>)[k], keys: (c) => Object.keys(c as object) }));
  return sc && trace.isSpanContextValid(sc) ? sc : undefined;
}

/**
 * A span linked to another trace (the delivery of a change to a watcher,
 * linked to the write that made it), a child of `parent` when given (the
 * watch request's span), else a root. Runs nothing: the caller ends it.
 */
export function startLinkedSpan(name: string, link: SpanContext, attributes: Attributes, kind: SpanKind, parent?: Context): Span | undefined {
  if (!running) return undefined;
  const links: Link[] = [{ context: link }];
  return tracer().startSpan(name, { kind, attributes, links, ...(parent ? {} : { root: true }) }, parent ?? ROOT_CONTEXT);
}

/**
 * A server span continuing the trace that an incoming request's W3C headers
 * name (else a root the sampler decides on); `run` runs work with it active.
 * Undefined while tracing is off.
 */
export function startServerSpan(name: string, headers: Record<string, string | string[] | undefined>, attributes: Attributes): { span: Span; run<T>(fn: () => T): T } | undefined {
  if (!running) return undefined;
  const parent = propagation.extract(ROOT_CONTEXT, headers);
  const span = tracer().startSpan(name, { kind: SpanKind.SERVER, attributes }, parent);
  const ctx = trace.setSpan(parent, span);
  return { span, run: (fn) => context.with(ctx, fn) };
}

/** The active trace context (to hand to a span started later, e.g. a watch's deliveries). */
export function activeContext(): Context {
  return context.active();
}

/** A span whose parent is `parent` (a context that arrived from elsewhere, such as a write's trace); undefined while tracing is off. */
export function startSpanUnder(name: string, parent: SpanContext, kind: SpanKind, attributes: Attributes): Span | undefined {
  if (!running) return undefined;
  return tracer().startSpan(name, { kind, attributes }, trace.setSpanContext(ROOT_CONTEXT, parent));
}

/** The W3C headers of `span`'s context (to send where no call hook runs: a bus message). */
export function carrierOf(span: Span): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(trace.setSpan(ROOT_CONTEXT, span), carrier);
  return carrier;
}

/** The trace id of the active span, for log lines ('' when there is none). */
export function activeTraceId(): string {
  const sc = trace.getSpanContext(context.active());
  return sc && trace.isSpanContextValid(sc) ? sc.traceId : '';
}
