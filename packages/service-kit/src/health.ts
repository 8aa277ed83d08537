import * as grpc from '@grpc/grpc-js';
import { health } from '@svc/proto';
import type { Logger } from './logger';

/**
 * The standard gRPC health service (grpc.health.v1.Health), which
 * Kubernetes' gRPC probes, grpc_health_probe and load balancers ask.
 *
 * - `""` (the server as a whole) and each gRPC service the server serves
 *   answer SERVING when the service can do its work: its readiness check
 *   passes within `timeoutMs` (a check that fails, throws or does not answer
 *   in time is NOT_SERVING, so Check never hangs on a backend).
 * - `liveness` answers SERVING while the process runs: answering at all
 *   shows the event loop turns, and nothing else is consulted.
 * - Any other name is NOT_FOUND for Check, SERVICE_UNKNOWN for Watch.
 *
 * Once the server stops (`shutdown`) every name but `liveness` is
 * NOT_SERVING and open Watch calls end, so a balancer stops sending work.
 */

export const ServingStatus = health.HealthCheckResponse_ServingStatus;
export type ServingStatus = health.HealthCheckResponse_ServingStatus;

/** Whether the service can do its work now; false or a throw (its message is logged) means not. */
export type ReadinessCheck = () => boolean | Promise<boolean>;

/** The service name that reports only that the process runs. */
export const LIVENESS_SERVICE = 'liveness';

export interface HealthOptions {
  /** Full names of the gRPC services the server serves (`svc.storage.v1.Storage`): answered like `""`. */
  services: readonly string[];
  /** Readiness of the server's work (backends reachable, stores loaded); always ready without. */
  ready?: ReadinessCheck;
  /** How long a readiness check may take before it counts as NOT_SERVING (default 1 s). */
  timeoutMs?: number;
  /** How often an open Watch re-checks (default 5 s). */
  watchIntervalMs?: number;
  /** Watch calls open at once; more are refused with RESOURCE_EXHAUSTED (default 64). */
  maxWatches?: number;
  log?: Logger;
}

const DEFAULT_TIMEOUT_MS = 1000;
const DEFAULT_WATCH_INTERVAL_MS = 5000;
const DEFAULT_MAX_WATCHES = 64;

interface OpenWatch {
  call: grpc.ServerWritableStream<health.HealthCheckRequest, health.HealthCheckResponse>;
  timer: NodeJS.Timeout | undefined;
}

export class HealthService {
  readonly definition: grpc.ServiceDefinition = health.HealthService;
  readonly implementation: health.HealthServer;
  private readonly names: Set<string>;
  private readonly timeoutMs: number;
  private readonly watchIntervalMs: number;
  private readonly maxWatches: number;
  private readonly watches = new Set<OpenWatch>();
  /** The readiness check in progress: concurrent probes share it. */
  private inFlight: Promise<boolean> | undefined;
  private stopped = false;
  private lastReady: boolean | undefined;

  constructor(private readonly options: HealthOptions) {
    this.names = new Set(['', ...options.services]);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.watchIntervalMs = options.watchIntervalMs ?? DEFAULT_WATCH_INTERVAL_MS;
    this.maxWatches = options.maxWatches ?? DEFAULT_MAX_WATCHES;
    this.implementation = {
      check: (call, callback) => {
        this.status(call.request.service).then(
          (status) => (status === undefined ? callback({ code: grpc.status.NOT_FOUND, details: `unknown service ${JSON.stringify(call.request.service)}` }) : callback(null, { status })),
          (err: unknown) => callback({ code: grpc.status.INTERNAL, details: (err as Error).message }),
        );
      },
      watch: (call) => this.watch(call),
    };
  }

  /** The status of `service` now; undefined for a name this server does not know. */
  async status(service: string): Promise<ServingStatus | undefined> {
    if (service === LIVENESS_SERVICE) return ServingStatus.SERVING;
    if (!this.names.has(service)) return undefined;
    if (this.stopped) return ServingStatus.NOT_SERVING;
    return (await this.ready()) ? ServingStatus.SERVING : ServingStatus.NOT_SERVING;
  }

  /** Open Watch calls (each holds a timer until its caller goes away). */
  get openWatches(): number {
    return this.watches.size;
  }

  /** Everything but `liveness` is NOT_SERVING from now on; open watches hear it and end. */
  shutdown(): void {
    if (this.stopped) return;
    this.stopped = true;
    for (const w of [...this.watches]) {
      this.send(w, ServingStatus.NOT_SERVING);
      this.endWatch(w);
      w.call.end();
    }
  }

  private ready(): Promise<boolean> {
    const check = this.options.ready;
    if (!check) return Promise.resolve(true);
    this.inFlight ??= this.runCheck(check).finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private async runCheck(check: ReadinessCheck): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<string>((resolve) => {
      timer = setTimeout(() => resolve(`no answer in ${this.timeoutMs} ms`), this.timeoutMs);
    });
    const outcome = Promise.resolve()
      .then(check)
      .then(
        (ok) => (ok ? true : 'not ready'),
        (err: unknown) => (err instanceof Error ? err.message : String(err)),
      );
    const result = await Promise.race([outcome, timedOut]).finally(() => clearTimeout(timer));
    const ready = result === true;
    if (ready !== this.lastReady) {
      if (ready) this.options.log?.info('health: serving');
      else this.options.log?.warn('health: not serving', { reason: result });
      this.lastReady = ready;
    }
    return ready;
  }

  private watch(call: grpc.ServerWritableStream<health.HealthCheckRequest, health.HealthCheckResponse>): void {
    if (this.watches.size >= this.maxWatches) {
      call.emit('error', { code: grpc.status.RESOURCE_EXHAUSTED, details: `too many health watches open (at most ${this.maxWatches})` });
      return;
    }
    const w: OpenWatch = { call, timer: undefined };
    this.watches.add(w);
    call.on('cancelled', () => this.endWatch(w));
    call.on('close', () => this.endWatch(w));
    let last: ServingStatus | undefined;
    const poll = (): void => {
      const service = call.request.service;
      this.status(service).then((status) => {
        if (!this.watches.has(w)) return;
        const now = status ?? ServingStatus.SERVICE_UNKNOWN;
        if (now !== last) {
          last = now;
          this.send(w, now);
        }
        w.timer = setTimeout(poll, this.watchIntervalMs);
      }, () => undefined);
    };
    poll();
  }

  /**
   * Writes a status unless the caller is not reading: a status that cannot be
   * written now is dropped (the next change or poll sends the newer one), so
   * nothing queues up for a stalled watcher.
   */
  private send(w: OpenWatch, status: ServingStatus): void {
    if (w.call.destroyed || !w.call.writable || w.call.writableNeedDrain) return;
    w.call.write({ status });
  }

  private endWatch(w: OpenWatch): void {
    if (!this.watches.delete(w)) return;
    if (w.timer) clearTimeout(w.timer);
  }
}

/** The flag of every gRPC service that turns on the plaintext health port. */
export const HEALTH_FLAGS = {
  'health-bind-address': {
    description:
      'host:port of a plaintext gRPC port serving only grpc.health.v1.Health (for probes that cannot present the internal certificate, e.g. Kubernetes gRPC probes); empty: not served. The health service is on the internal (mutual TLS) port as well',
    default: '',
  },
} as const;

export interface HealthServerHandle {
  /** The bound `host:port`. */
  address: string;
  port: number;
  close(): Promise<void>;
}

/** Serves only `service` on `bindAddress` (host:port), in plaintext. */
export async function startHealthServer(bindAddress: string, service: HealthService): Promise<HealthServerHandle> {
  const server = new grpc.Server();
  server.addService(service.definition, service.implementation);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync(bindAddress, grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(new Error(`--health-bind-address ${bindAddress}: ${err.message}`)) : resolve(bound)));
  });
  const host = bindAddress.slice(0, bindAddress.lastIndexOf(':'));
  return {
    address: `${host}:${port}`,
    port,
    close: () => shutDown(server, 1000),
  };
}

/** Stops `server`: the calls in flight may finish for `graceMs`, then it is shut down by force. */
export function shutDown(server: grpc.Server, graceMs: number): Promise<void> {
  return new Promise<void>((resolve) => {
    const timer = setTimeout(() => {
      server.forceShutdown();
      resolve();
    }, graceMs);
    server.tryShutdown(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}
