import * as grpc from '@grpc/grpc-js';
import { propagation, context as otelContext } from '@opentelemetry/api';
import { ApiError, type Status } from '@svc/apimachinery';
import type { Logger } from './logger';
import { methodOfFunction, observeCall, type CallTransport, type ObservedCall } from './call-hooks';
import { callerCheck, clientCredentials, serverCredentials, type InternalTls } from './internal-tls';
import { HealthService, shutDown, startHealthServer, type HealthServerHandle, type ReadinessCheck } from './health';
import { balancedTarget, BALANCING_OPTIONS } from './balancing';

/**
 * gRPC plumbing shared by every service: errors cross the wire as a gRPC
 * status plus the API Status in trailing metadata (`svc-status`), so a
 * backend's NotFound reaches the HTTP client unchanged; transport failures
 * become 503/504 with Retry-After.
 */

export const STATUS_TRAILER = 'svc-status';
export const REQUEST_ID_HEADER = 'x-request-id';

const CODE_BY_HTTP: Record<number, grpc.status> = {
  400: grpc.status.INVALID_ARGUMENT,
  401: grpc.status.UNAUTHENTICATED,
  403: grpc.status.PERMISSION_DENIED,
  404: grpc.status.NOT_FOUND,
  405: grpc.status.UNIMPLEMENTED,
  406: grpc.status.INVALID_ARGUMENT,
  409: grpc.status.ABORTED,
  410: grpc.status.OUT_OF_RANGE,
  413: grpc.status.RESOURCE_EXHAUSTED,
  415: grpc.status.INVALID_ARGUMENT,
  422: grpc.status.INVALID_ARGUMENT,
  429: grpc.status.RESOURCE_EXHAUSTED,
  500: grpc.status.INTERNAL,
  503: grpc.status.UNAVAILABLE,
  504: grpc.status.DEADLINE_EXCEEDED,
};

/** The gRPC status code a failed call carries for an API error. */
export function grpcCodeOf(apiError: ApiError): grpc.status {
  return CODE_BY_HTTP[apiError.code] ?? grpc.status.UNKNOWN;
}

/**
 * The Status a failed call carries between services (JSON): the API Status,
 * with the error's warnings and audit annotations beside it when it has some.
 */
export function encodeCallStatus(apiError: ApiError): string {
  const status = apiError.toStatus();
  const annotated = Object.keys(apiError.auditAnnotations).length > 0;
  if (apiError.warnings.length === 0 && !annotated) return JSON.stringify(status);
  return JSON.stringify({ ...status, ...(apiError.warnings.length > 0 ? { warnings: apiError.warnings } : {}), ...(annotated ? { auditAnnotations: apiError.auditAnnotations } : {}) });
}

function decodeCallStatus(json: string): ApiError {
  const { warnings, auditAnnotations, ...status } = JSON.parse(json) as Status & { warnings?: unknown; auditAnnotations?: unknown };
  const err = ApiError.fromStatus(status);
  if (Array.isArray(warnings)) err.warnings = warnings.filter((w): w is string => typeof w === 'string');
  if (typeof auditAnnotations === 'object' && auditAnnotations !== null && !Array.isArray(auditAnnotations)) {
    for (const [k, v] of Object.entries(auditAnnotations)) if (typeof v === 'string') err.auditAnnotations[k] = v;
  }
  return err;
}

export function toGrpcError(err: unknown): Partial<grpc.StatusObject> {
  const apiError = ApiError.from(err);
  const metadata = new grpc.Metadata();
  metadata.set(STATUS_TRAILER, encodeCallStatus(apiError));
  return { code: grpcCodeOf(apiError), details: apiError.message, metadata };
}

/**
 * The ApiError of a failed call: the API Status it carried (JSON) when
 * there is one, else what its gRPC code means for the caller.
 */
export function failedCallError(code: grpc.status | undefined, statusJson: string | undefined, service: string, cause?: unknown): ApiError {
  if (statusJson !== undefined && statusJson !== '') {
    try {
      return decodeCallStatus(statusJson);
    } catch {
      // fall through to the transport mapping
    }
  }
  switch (code) {
    case grpc.status.UNAVAILABLE:
      return ApiError.serviceUnavailable(`the ${service} service is unavailable, try again later`, 1);
    case grpc.status.DEADLINE_EXCEEDED:
      return ApiError.timeout(`the ${service} service did not answer in time`, 1);
    case grpc.status.CANCELLED:
      return ApiError.timeout(`the call to the ${service} service was cancelled`, 1);
    default:
      return ApiError.internal(`the ${service} service failed`, cause);
  }
}

/** Turns a failed call into the ApiError the gateway answers with. */
export function fromGrpcError(err: unknown, service: string): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as Partial<grpc.ServiceError>;
  return failedCallError(e.code, e.metadata?.get(STATUS_TRAILER)?.[0]?.toString(), service, err);
}

export interface CallContext {
  requestId: string;
  log: Logger;
  /** Aborted when the caller goes away. */
  signal: AbortSignal;
}

function callContext(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>, log: Logger): CallContext {
  const requestId = String(call.metadata.get(REQUEST_ID_HEADER)[0] ?? '');
  const controller = new AbortController();
  call.on('cancelled', () => controller.abort());
  return { requestId, log: requestId ? log.with({ requestId }) : log, signal: controller.signal };
}

/** The string-valued metadata a caller sent (trace headers among them). */
function metadataCarrier(metadata: grpc.Metadata): Record<string, string> {
  const carrier: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata.getMap())) if (typeof value === 'string') carrier[key] = value;
  return carrier;
}

/** The served call, as observers see it (call-hooks.ts). */
function observeServed(call: grpc.ServerUnaryCall<unknown, unknown> | grpc.ServerWritableStream<unknown, unknown>, method: string, transport: CallTransport, requestId: string): ObservedCall {
  const path = call.getPath();
  return observeCall({ side: 'server', service: path.slice(1, path.lastIndexOf('/')), method, transport, requestId, carrier: metadataCarrier(call.metadata) });
}

/** The work behind a unary method, independent of how the call arrived. */
export type UnaryFn<Req, Res> = (req: Req, ctx: CallContext) => Promise<Res>;

/**
 * A unary handler that also exposes its work (`run`), so the service's
 * `Calls` stream (call-stream.ts) can serve the same method.
 */
export type UnaryHandler<Req, Res> = grpc.handleUnaryCall<Req, Res> & { readonly run: (req: Req, ctx: CallContext) => Promise<Res> };

/** Logs a failed call: server faults as errors, rejections at debug level. */
export function logFailure(ctx: CallContext, method: string, apiError: ApiError): void {
  if (apiError.code >= 500) ctx.log.error('call failed', { method, code: apiError.code, err: apiError.cause ?? apiError });
  else ctx.log.debug('call rejected', { method, code: apiError.code, reason: apiError.reason });
}

/** A unary handler whose errors become statuses with the API Status attached. */
export function unary<Req, Res>(log: Logger, method: string, fn: UnaryFn<Req, Res>): UnaryHandler<Req, Res> {
  const handler: grpc.handleUnaryCall<Req, Res> = (call, callback) => {
    const ctx = callContext(call, log);
    const observed = observeServed(call, method, 'unary', ctx.requestId);
    observed.wrap(() => fn(call.request, ctx)).then(
      (res) => {
        observed.end(grpc.status.OK);
        callback(null, res);
      },
      (err: unknown) => {
        const apiError = ApiError.from(err);
        logFailure(ctx, method, apiError);
        observed.end(grpcCodeOf(apiError));
        callback(toGrpcError(apiError));
      },
    );
  };
  return Object.assign(handler, { run: fn });
}

/** A server-streaming handler: `fn` writes with `send` and resolves when done. */
export function serverStream<Req, Res>(
  log: Logger,
  method: string,
  fn: (req: Req, send: (msg: Res) => Promise<void>, ctx: CallContext) => Promise<void>,
): grpc.handleServerStreamingCall<Req, Res> {
  return (call) => {
    const ctx = callContext(call, log);
    const send = (msg: Res): Promise<void> =>
      new Promise((resolve) => {
        if (call.write(msg)) resolve();
        else call.once('drain', () => resolve());
      });
    const observed = observeServed(call, method, 'server-stream', ctx.requestId);
    observed.wrap(() => fn(call.request, send, ctx)).then(
      () => {
        observed.end(grpc.status.OK);
        call.end();
      },
      (err: unknown) => {
        const apiError = ApiError.from(err);
        observed.end(grpcCodeOf(apiError));
        if (apiError.code >= 500) ctx.log.error('stream failed', { method, err: apiError.cause ?? apiError });
        // grpc-js ends a server stream with a status when 'error' is emitted on it.
        call.emit('error', toGrpcError(apiError));
      },
    );
  };
}

export interface GrpcServerHandle {
  /** The bound port (useful when the configured port was 0). */
  port: number;
  address: string;
  /** The plaintext health port's `host:port`, when one was asked for. */
  healthAddress?: string;
  /** The grpc.health.v1 service the server answers with. */
  health: HealthService;
  close(): Promise<void>;
}

/**
 * Starts a gRPC server with the given services on `address` (host:port).
 * `drain` runs first on close: long-lived streams end there once idle
 * (see CallsServer), so a graceful shutdown need not wait them out.
 */
export interface ServerSecurity {
  /** This service's internal certificate, its key and the internal CA. */
  tls: InternalTls;
  /** Identities (certificate common names) whose calls are served; any other is refused. */
  allowedCallers: readonly string[];
  /** Where refused calls are logged. */
  log: Logger;
}

/**
 * How long a client connection lives before the server asks the client to
 * go elsewhere (HTTP/2 GOAWAY; grpc-js adds up to 10% jitter): the client
 * resolves its target again, so replicas started since are balanced onto.
 * Calls open on the old connection have the grace to finish; the `Calls`
 * streams of call-stream.ts move to new streams well within it.
 */
export const MAX_CONNECTION_AGE_MS = 120_000;
export const MAX_CONNECTION_AGE_GRACE_MS = 60_000;

export interface GrpcServerOptions {
  security: ServerSecurity;
  drain?: () => void;
  /**
   * The grpc.health.v1 service (health.ts), always served on the internal
   * port (to any caller holding a certificate of the internal CA) and, with
   * `bindAddress`, on a plaintext port serving nothing else
   * (`--health-bind-address`). `ready` says whether the server can do its
   * work (always, without).
   */
  health?: { ready?: ReadinessCheck; bindAddress?: string; timeoutMs?: number };
}

/** `svc.storage.v1.Storage` of a generated service definition (its methods' paths say it). */
function serviceNameOf(definition: grpc.ServiceDefinition): string {
  const path = Object.values(definition)[0]?.path ?? '';
  return path.slice(1, path.lastIndexOf('/'));
}

export async function startGrpcServer(
  address: string,
  services: Array<{ definition: grpc.ServiceDefinition; implementation: grpc.UntypedServiceImplementation }>,
  options: GrpcServerOptions,
): Promise<GrpcServerHandle> {
  const { security } = options;
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
    'grpc.max_connection_age_ms': MAX_CONNECTION_AGE_MS,
    'grpc.max_connection_age_grace_ms': MAX_CONNECTION_AGE_GRACE_MS,
    interceptors: [callerCheck(security.allowedCallers, security.log)],
  });
  for (const s of services) server.addService(s.definition, s.implementation);
  const healthService = new HealthService({
    services: services.map((s) => serviceNameOf(s.definition)),
    log: security.log,
    ...(options.health?.ready ? { ready: options.health.ready } : {}),
    ...(options.health?.timeoutMs !== undefined ? { timeoutMs: options.health.timeoutMs } : {}),
  });
  server.addService(healthService.definition, healthService.implementation);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(address, serverCredentials(security.tls), (err, boundPort) => (err ? reject(err) : resolve(boundPort)));
  });
  let healthServer: HealthServerHandle | undefined;
  if (options.health?.bindAddress) {
    try {
      healthServer = await startHealthServer(options.health.bindAddress, healthService);
    } catch (err) {
      server.forceShutdown();
      throw err;
    }
  }
  const host = address.slice(0, address.lastIndexOf(':'));
  return {
    port,
    address: `${host}:${port}`,
    ...(healthServer ? { healthAddress: healthServer.address } : {}),
    health: healthService,
    close: () => {
      healthService.shutdown();
      void healthServer?.close();
      options.drain?.();
      return shutDown(server, 2000);
    },
  };
}

/**
 * The largest message on any internal channel, both ways: an unpaged list
 * travels from storage to the gateway as one message (10,000 objects of
 * 1 KiB are about 11 MiB, 50,000 of 200 B about 20 MiB).
 */
export const MAX_MESSAGE_BYTES = 256 * 1024 * 1024;

/**
 * Reconnection backoff of internal channels. The round-robin balancer
 * redials a replica that went away on its own, on this backoff (unlike
 * pick_first, which dials again on the next call): capped at one second,
 * a restarted replica is back in use within about a second, and a call
 * meanwhile waits for it briefly (whenChannelReady) instead of failing.
 */
export const RECONNECT_BACKOFF = { initialMs: 100, maxMs: 1000 };

export const CLIENT_OPTIONS: grpc.ClientOptions = {
  'grpc.max_receive_message_length': MAX_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_MESSAGE_BYTES,
  'grpc.keepalive_time_ms': 30000,
  'grpc.enable_retries': 1,
  'grpc.initial_reconnect_backoff_ms': RECONNECT_BACKOFF.initialMs,
  'grpc.max_reconnect_backoff_ms': RECONNECT_BACKOFF.maxMs,
  ...BALANCING_OPTIONS,
};

/**
 * Resolves once `channel` is READY, or after `waitMs` (whatever its state
 * then: the call made next fails as it would have, 503 when the service is
 * down). Answers at once when the channel is already ready.
 */
export function whenChannelReady(channel: grpc.ChannelInterface, waitMs: number): Promise<void> {
  let state = channel.getConnectivityState(true);
  if (state === grpc.connectivityState.READY || state === grpc.connectivityState.SHUTDOWN || waitMs <= 0) return Promise.resolve();
  const deadline = Date.now() + waitMs;
  return new Promise<void>((resolve) => {
    const watch = (): void =>
      channel.watchConnectivityState(state, deadline, (err) => {
        state = channel.getConnectivityState(true);
        if (err || state === grpc.connectivityState.READY || state === grpc.connectivityState.SHUTDOWN) resolve();
        else watch();
      });
    watch();
  });
}

/**
 * A generated client's constructor arguments for calling `identity` at
 * `address` with mutual TLS, balancing calls round-robin over every replica
 * the address names (see balancing.ts for the forms it takes).
 */
export function channelTo(address: string, identity: string, tls: InternalTls): [string, grpc.ChannelCredentials, grpc.ClientOptions] {
  const { credentials, options } = clientCredentials(tls, identity);
  return [balancedTarget(address), credentials, { ...CLIENT_OPTIONS, ...options }];
}

export interface CallOptions {
  requestId?: string;
  /** Milliseconds until the call is abandoned with 504. */
  timeoutMs?: number;
}

/** The active trace context, as W3C headers. */
export function traceCarrier(): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(otelContext.active(), carrier);
  return carrier;
}

/** Metadata for an outgoing call: request id and trace context. */
export function outgoingMetadata(opts: CallOptions = {}): grpc.Metadata {
  const md = new grpc.Metadata();
  if (opts.requestId) md.set(REQUEST_ID_HEADER, opts.requestId);
  for (const [k, v] of Object.entries(traceCarrier())) md.set(k, v);
  return md;
}

type UnaryMethod<Req, Res> = (
  request: Req,
  metadata: grpc.Metadata,
  options: Partial<grpc.CallOptions>,
  callback: (error: grpc.ServiceError | null, response: Res) => void,
) => grpc.ClientUnaryCall;

/** Calls a generated unary method and maps failures to ApiError. */
export function callUnary<Req, Res>(service: string, method: UnaryMethod<Req, Res>, request: Req, opts: CallOptions = {}): Promise<Res> {
  const deadline = new Date(Date.now() + (opts.timeoutMs ?? 30000));
  const observed = observeCall({ side: 'client', service, method: methodOfFunction(method), transport: 'unary', requestId: opts.requestId ?? '' });
  return observed.wrap(
    () =>
      new Promise<Res>((resolve, reject) => {
        method(request, outgoingMetadata(opts), { deadline }, (err, res) => {
          if (err) {
            const apiError = fromGrpcError(err, service);
            observed.end(grpcCodeOf(apiError));
            reject(apiError);
          } else {
            observed.end(grpc.status.OK);
            resolve(res);
          }
        });
      }),
  );
}
