import * as grpc from '@grpc/grpc-js';
import { ApiError } from '@svc/apimachinery';
import type { common } from '@svc/proto';
import { encodeCallStatus, failedCallError, fromGrpcError, grpcCodeOf, logFailure, traceCarrier, whenChannelReady, type CallContext, type CallOptions, type UnaryHandler } from './grpc';
import type { Logger } from './logger';
import { methodOfPath, observeCall } from './call-hooks';

/**
 * A service's `Calls` stream: its unary methods multiplexed over one
 * long-lived bidirectional gRPC stream (frames are svc.common.v1.CallFrame).
 * A unary call in grpc-js opens an HTTP/2 stream, sends headers and
 * trailers, and arms its own deadline machinery; a frame on an open stream
 * costs a fraction of that, which matters on the write path where every
 * create crosses admission and storage. Each method keeps its messages,
 * its errors (the API Status travels in the frame) and its meaning.
 */

type Frame = common.CallFrame;

const EMPTY = Buffer.alloc(0);

function frame(fields: Partial<Frame> & { id: number }): Frame {
  return { method: '', message: EMPTY, requestId: '', trace: {}, timeoutMs: 0, cancel: false, code: 0, details: '', status: '', ...fields };
}

function errorFrame(id: number, err: ApiError): Frame {
  return frame({ id, code: grpcCodeOf(err), details: err.message, status: encodeCallStatus(err) });
}

interface Route {
  /** The gRPC service's full name (`svc.storage.v1.Storage`). */
  service: string;
  method: string;
  decode(bytes: Buffer): unknown;
  encode(value: unknown): Buffer;
  run(req: unknown, ctx: CallContext): Promise<unknown>;
}

/** A framed call's context; the logger and abort signal are made on first use. */
class FrameContext implements CallContext {
  private controller: AbortController | undefined;
  private logger: Logger | undefined;
  private aborted = false;

  constructor(
    readonly requestId: string,
    private readonly base: Logger,
  ) {}

  get log(): Logger {
    this.logger ??= this.requestId ? this.base.with({ requestId: this.requestId }) : this.base;
    return this.logger;
  }

  get signal(): AbortSignal {
    if (!this.controller) {
      this.controller = new AbortController();
      if (this.aborted) this.controller.abort();
    }
    return this.controller.signal;
  }

  abort(): void {
    this.aborted = true;
    this.controller?.abort();
  }
}

/** One open stream on the serving side. */
interface OpenStream {
  call: grpc.ServerDuplexStream<Frame, Frame>;
  inFlight: Map<number, FrameContext>;
  /** The caller finished sending, or the server is closing: end once idle. */
  closing: boolean;
}

/**
 * The serving side. Routes every frame to the unary handler of the same
 * method (handlers built with `unary`), answers on the same stream, and on
 * `drain` lets in-flight calls finish before ending each stream.
 */
export class CallsServer {
  private readonly routes = new Map<string, Route>();
  private readonly open = new Set<OpenStream>();
  private draining = false;

  /** `methods` names the implementation's keys the stream serves. */
  constructor(
    private readonly log: Logger,
    definition: grpc.ServiceDefinition,
    implementation: Record<string, unknown>,
    methods: string[],
  ) {
    for (const key of methods) {
      const def = definition[key];
      const handler = implementation[key] as UnaryHandler<unknown, unknown> | undefined;
      if (!def || def.requestStream || def.responseStream || typeof handler?.run !== 'function') {
        throw new Error(`${key} is not a unary method built with unary()`);
      }
      this.routes.set(def.path, {
        service: def.path.slice(1, def.path.lastIndexOf('/')),
        method: methodOfPath(def.path),
        decode: def.requestDeserialize,
        encode: def.responseSerialize,
        run: handler.run,
      });
    }
  }

  /** The `Calls` method's handler. */
  readonly handler: grpc.handleBidiStreamingCall<Frame, Frame> = (call) => {
    const stream: OpenStream = { call, inFlight: new Map(), closing: this.draining };
    this.open.add(stream);
    const abortAll = (): void => {
      for (const c of stream.inFlight.values()) c.abort();
      this.open.delete(stream);
    };
    call.on('data', (f: Frame) => this.serve(stream, f));
    call.on('end', () => {
      stream.closing = true;
      this.endIfIdle(stream);
    });
    call.on('cancelled', abortAll);
    call.on('error', abortAll);
    if (stream.closing) this.endIfIdle(stream);
  };

  /** Stops taking calls: every stream ends once its in-flight calls are answered. */
  drain(): void {
    this.draining = true;
    for (const stream of this.open) {
      stream.closing = true;
      this.endIfIdle(stream);
    }
  }

  private endIfIdle(stream: OpenStream): void {
    if (!stream.closing || stream.inFlight.size > 0 || !this.open.has(stream)) return;
    this.open.delete(stream);
    stream.call.end();
  }

  private reply(stream: OpenStream, f: Frame): void {
    if (!stream.call.destroyed && stream.call.writable) stream.call.write(f);
  }

  private serve(stream: OpenStream, f: Frame): void {
    const id = f.id;
    if (f.cancel) {
      stream.inFlight.get(id)?.abort();
      return;
    }
    const route = this.routes.get(f.method);
    if (!route) {
      this.reply(stream, errorFrame(id, ApiError.methodNotAllowed(`the Calls stream does not serve ${f.method || 'a call without a method'}`)));
      return;
    }
    if (this.draining) {
      this.reply(stream, errorFrame(id, ApiError.serviceUnavailable('the service is shutting down, try again later', 1)));
      return;
    }
    let req: unknown;
    try {
      req = route.decode(Buffer.from(f.message));
    } catch (err) {
      this.reply(stream, errorFrame(id, ApiError.badRequest(`undecodable ${route.method} request: ${(err as Error).message}`)));
      return;
    }
    const ctx = new FrameContext(f.requestId, this.log);
    stream.inFlight.set(id, ctx);
    void this.answer(stream, id, route, req, ctx, f.trace);
  }

  private async answer(stream: OpenStream, id: number, route: Route, req: unknown, ctx: FrameContext, carrier: Record<string, string>): Promise<void> {
    const observed = observeCall({ side: 'server', service: route.service, method: route.method, transport: 'calls', requestId: ctx.requestId, carrier });
    try {
      this.reply(stream, frame({ id, message: route.encode(await observed.wrap(() => route.run(req, ctx))) }));
      observed.end(grpc.status.OK);
    } catch (err) {
      const apiError = ApiError.from(err);
      logFailure(ctx, route.method, apiError);
      observed.end(grpcCodeOf(apiError));
      this.reply(stream, errorFrame(id, apiError));
    } finally {
      stream.inFlight.delete(id);
      this.endIfIdle(stream);
    }
  }
}

/** What the calling side needs of a generated unary method definition. */
export interface UnaryMethodDefinition<Req, Res> {
  path: string;
  requestSerialize(value: Req): Buffer;
  responseDeserialize(bytes: Buffer): Res;
}

interface Pending {
  stream: grpc.ClientDuplexStream<Frame, Frame>;
  resolve(frame: Frame): void;
  reject(err: ApiError): void;
  timer: NodeJS.Timeout;
}

/** How many `Calls` streams a client keeps open at once (see CallStream). */
export const DEFAULT_CALL_STREAMS = 4;
/**
 * How long a `Calls` stream takes new calls. Well under the server's
 * connection-age grace (grpc.ts), so no call is left on a connection the
 * server is about to close, and streams move to replicas that appeared.
 */
export const DEFAULT_STREAM_MAX_AGE_MS = 30_000;
/**
 * The shortest life of a stream. A stream lives as long as the client had
 * been calling when it opened, between this and the maximum age: the
 * streams opened while the channel was still connecting (all to the first
 * replica that answered) are replaced within seconds, later ones rarely.
 */
const MIN_STREAM_AGE_MS = 1000;

export interface CallStreamOptions {
  /** Streams open at once, calls taking turns among them (default DEFAULT_CALL_STREAMS). */
  streams?: number;
  /** How long a stream takes new calls before it is replaced (default DEFAULT_STREAM_MAX_AGE_MS). */
  maxStreamAgeMs?: number;
  /** The clock (tests). */
  now?: () => number;
  /**
   * The channel the streams open on. A call made while it is reconnecting
   * (a replica restarted) waits for it up to `readyWaitMs` (default
   * READY_WAIT_MS, never past the call's timeout) before its stream opens.
   */
  channel?: () => grpc.ChannelInterface;
  readyWaitMs?: number;
}

/** How long a call waits for a reconnecting channel (about the reconnection backoff's cap plus a dial). */
export const READY_WAIT_MS = 1500;

interface Slot {
  stream: grpc.ClientDuplexStream<Frame, Frame>;
  /** When the stream stops taking new calls. */
  retireAt: number;
}

/**
 * The calling side. A stream is one HTTP/2 stream, so it stays on the
 * replica the channel's balancer picked when it opened: the client keeps
 * several streams, opened one after another (the round-robin balancer puts
 * each on the next ready replica) and takes turns among them, and replaces
 * each after at most `maxStreamAgeMs` (the old one ends once its calls are
 * answered; see MIN_STREAM_AGE_MS for the first ones), so calls spread over
 * the replicas and follow them as they change.
 *
 * A stream opens on first use and again after it broke. A call that gets
 * no answer within its timeout fails with 504 (and a cancel frame tells the
 * callee); a broken stream fails every open call as a unary call would fail
 * (503 with Retry-After when the service is down).
 */
export class CallStream {
  private readonly slots: Array<Slot | undefined>;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private nextSlot = 0;
  private closed = false;
  private readonly maxAgeMs: number;
  private readonly now: () => number;
  /** When the first stream opened (the channel started connecting). */
  private firstOpenAt: number | undefined;

  constructor(
    private readonly service: string,
    private readonly openStream: () => grpc.ClientDuplexStream<Frame, Frame>,
    options: CallStreamOptions = {},
  ) {
    this.slots = new Array<Slot | undefined>(Math.max(1, options.streams ?? DEFAULT_CALL_STREAMS)).fill(undefined);
    this.maxAgeMs = options.maxStreamAgeMs ?? DEFAULT_STREAM_MAX_AGE_MS;
    this.now = options.now ?? Date.now;
    this.channel = options.channel;
    this.readyWaitMs = options.readyWaitMs ?? READY_WAIT_MS;
  }

  private readonly channel: (() => grpc.ChannelInterface) | undefined;
  private readonly readyWaitMs: number;

  call<Req, Res>(method: UnaryMethodDefinition<Req, Res>, request: Req, opts: CallOptions = {}): Promise<Res> {
    if (this.closed) return Promise.reject(ApiError.serviceUnavailable(`the ${this.service} client is closed`, 1));
    const channel = this.channel?.();
    if (!channel || channel.getConnectivityState(false) === grpc.connectivityState.READY) return this.callOnStream(method, request, opts);
    return whenChannelReady(channel, Math.min(this.readyWaitMs, opts.timeoutMs ?? this.readyWaitMs)).then(() => {
      if (this.closed) throw ApiError.serviceUnavailable(`the ${this.service} client is closed`, 1);
      return this.callOnStream(method, request, opts);
    });
  }

  private callOnStream<Req, Res>(method: UnaryMethodDefinition<Req, Res>, request: Req, opts: CallOptions): Promise<Res> {
    const stream = this.current();
    const id = this.nextId++;
    const timeoutMs = opts.timeoutMs ?? 30000;
    const observed = observeCall({ side: 'client', service: this.service, method: methodOfPath(method.path), transport: 'calls', requestId: opts.requestId ?? '' });
    return observed
      .wrap(
        () =>
          new Promise<Frame>((resolve, reject) => {
            const timer = setTimeout(() => {
              if (!this.pending.delete(id)) return;
              if (!stream.destroyed && !stream.writableEnded) stream.write(frame({ id, cancel: true }));
              reject(ApiError.timeout(`the ${this.service} service did not answer in time`, 1));
            }, timeoutMs);
            this.pending.set(id, { stream, resolve, reject, timer });
            stream.write(frame({ id, method: method.path, message: method.requestSerialize(request), requestId: opts.requestId ?? '', trace: traceCarrier(), timeoutMs }));
          }),
      )
      .then((answer) => {
        if (answer.code !== grpc.status.OK || answer.status) throw failedCallError(answer.code, answer.status, this.service, answer.details);
        return method.responseDeserialize(Buffer.from(answer.message));
      })
      .then(
        (res) => {
          observed.end(grpc.status.OK);
          return res;
        },
        (err: unknown) => {
          observed.end(grpcCodeOf(ApiError.from(err)));
          throw err;
        },
      );
  }

  /** Ends the streams; open calls fail with 503. */
  close(): void {
    this.closed = true;
    for (const [i, slot] of this.slots.entries()) {
      this.slots[i] = undefined;
      if (!slot) continue;
      this.failAll(slot.stream, ApiError.serviceUnavailable(`the ${this.service} client is closed`, 1));
      slot.stream.cancel();
    }
  }

  /** Streams open now (retired ones still answering are not counted). */
  get openStreams(): number {
    return this.slots.filter((s) => s !== undefined).length;
  }

  /** The stream the next call travels on: the next slot's, replaced when broken or too old. */
  private current(): grpc.ClientDuplexStream<Frame, Frame> {
    const index = this.nextSlot;
    this.nextSlot = (this.nextSlot + 1) % this.slots.length;
    const slot = this.slots[index];
    if (slot && !slot.stream.destroyed) {
      if (this.now() < slot.retireAt) return slot.stream;
      // Half-closed, the stream ends once the calls on it are answered (CallsServer).
      slot.stream.end();
    }
    const stream = this.openStream();
    const now = this.now();
    this.firstOpenAt ??= now;
    const lifeMs = Math.min(this.maxAgeMs, Math.max(MIN_STREAM_AGE_MS, now - this.firstOpenAt));
    this.slots[index] = { stream, retireAt: now + lifeMs };
    const broken = (err: ApiError): void => {
      if (this.slots[index]?.stream === stream) this.slots[index] = undefined;
      this.failAll(stream, err);
    };
    stream.on('data', (f: Frame) => {
      const p = this.pending.get(f.id);
      if (!p) return;
      this.pending.delete(f.id);
      clearTimeout(p.timer);
      p.resolve(f);
    });
    stream.on('error', (err: unknown) => broken(fromGrpcError(err, this.service)));
    stream.on('end', () => broken(ApiError.serviceUnavailable(`the ${this.service} service closed the call stream, try again`, 1)));
    return stream;
  }

  /** Fails the calls still open on `stream`. */
  private failAll(stream: grpc.ClientDuplexStream<Frame, Frame>, err: ApiError): void {
    for (const [id, p] of this.pending) {
      if (p.stream !== stream) continue;
      this.pending.delete(id);
      clearTimeout(p.timer);
      p.reject(err);
    }
  }
}
