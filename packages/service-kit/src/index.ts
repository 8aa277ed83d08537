/**
 * What every service shares at its edges: structured logs, flags, gRPC
 * servers and clients with API errors carried across.
 */
export { createLogger, LOG_LEVELS, type Logger, type LogLevel, type LogFields, type LoggerOptions } from './logger';
export { DurationError, parseGoDuration } from './duration';
export { parseFlags, parseDuration, listFlag, usage, FlagError, type FlagSpec, type FlagSpecs, type ParsedFlags } from './flags';
export {
  STATUS_TRAILER,
  REQUEST_ID_HEADER,
  CLIENT_OPTIONS,
  toGrpcError,
  fromGrpcError,
  unary,
  serverStream,
  startGrpcServer,
  channelTo,
  MAX_MESSAGE_BYTES,
  outgoingMetadata,
  callUnary,
  logFailure,
  traceCarrier,
  type CallContext,
  type UnaryFn,
  type UnaryHandler,
  type CallOptions,
  type GrpcServerHandle,
  type GrpcServerOptions,
  type ServerSecurity,
  MAX_CONNECTION_AGE_MS,
  MAX_CONNECTION_AGE_GRACE_MS,
} from './grpc';
export { CallsServer, CallStream, DEFAULT_CALL_STREAMS, DEFAULT_STREAM_MAX_AGE_MS, type CallStreamOptions, type UnaryMethodDefinition } from './call-stream';
export {
  HealthService,
  ServingStatus,
  LIVENESS_SERVICE,
  HEALTH_FLAGS,
  startHealthServer,
  type HealthOptions,
  type ReadinessCheck,
  type HealthServerHandle,
} from './health';
export { balancedTarget, addressEntries, BALANCING_OPTIONS } from './balancing';
export { runMain, versionRequest } from './main';
export { versionInfo, versionText, readBuildInfo, DEFAULT_GIT_VERSION, BUILD_INFO_FILE, type VersionInfo, type BuildInfo } from './version';
export { toProtoUser, fromProtoUser } from './user';
export * from './ttl-cache';
export {
  loadInternalTls,
  internalTlsFromFlags,
  tlsFilesFromFlags,
  peerIdentity,
  callerCheck,
  INTERNAL_TLS_FLAGS,
  type InternalTls,
  type InternalTlsFiles,
} from './internal-tls';
export { loadKubeconfig, KubeconfigError, type Credentials } from './kubeconfig';
export { loadWebhookConfig, postJson, type WebhookReply } from './webhook';
export { WEBHOOK_AGENT_OPTIONS, WebhookAgents, type WebhookEndpoint } from './webhook-agents';
export { FieldReader, parseConfigDocument, type JsonObject } from './config-reader';
export { watchFileContent, contentHash, type FileWatch, type FileWatchOptions, type FileWatchTimers } from './file-watch';
export {
  addCallObserver,
  boundMethod,
  observeCall,
  type CallDescription,
  type CallObservation,
  type CallObserver,
  type CallSide,
  type CallTransport,
  type ObservedCall,
} from './call-hooks';
export {
  MetricsRegistry,
  FastCounter,
  FastHistogram,
  type CounterChild,
  type HistogramChild,
  processMetrics,
  boundedLabel,
  validateShowHiddenFor,
  BINARY_VERSION,
  PROMETHEUS_CONTENT_TYPE,
  OPENMETRICS_CONTENT_TYPE,
  type StabilityLevel,
  type MetricOptions,
  type HistogramOptions,
  type GaugeOptions,
  type MetricsRegistryOptions,
} from './metrics';
export {
  tracingEnabled,
  tracer,
  droppedSpans,
  tracingStats,
  buildSampler,
  startTracing,
  stopTracing,
  flushTracing,
  inClientSpan,
  sampledTraceparent,
  spanContextOf,
  startLinkedSpan,
  startServerSpan,
  startSpanUnder,
  activeContext,
  carrierOf,
  activeTraceId,
} from './tracing';
export {
  tracingSettings,
  parseTracingConfiguration,
  readTracingConfigFile,
  samplerForRate,
  TracingConfigError,
  TRACING_CONFIG_VERSIONS,
  DEFAULT_FILE_ENDPOINT,
  type TracingSettings,
  type TracingConfiguration,
  type SamplerChoice,
  type BatchSettings,
  type OtlpProtocol,
} from './tracing-config';
export { SpanKind, SpanStatusCode, type Span, type Context as TraceContext, type SpanContext } from '@opentelemetry/api';
export { BoundedBatchSpanProcessor, type SpanQueueStats, type SpanQueueEvents } from './span-queue';
export { installGrpcMetrics, grpcCodeName, GRPC_CODE_NAMES } from './grpc-metrics';
export {
  serveMetrics,
  startProcessMetrics,
  parseBindAddress,
  METRICS_FLAGS,
  SHOW_HIDDEN_METRICS_FLAGS,
  type MetricsEndpoint,
} from './metrics-server';
