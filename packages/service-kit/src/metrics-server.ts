import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from './logger';
import { installGrpcMetrics } from './grpc-metrics';
import { processMetrics, validateShowHiddenFor, type MetricsRegistry } from './metrics';

/**
 * Each internal service serves its metrics over plain HTTP on a port of its
 * own (`--metrics-bind-address`), apart from its gRPC port: a scraper needs
 * no internal certificate, and nothing but `/metrics` is served there.
 */

export const SHOW_HIDDEN_METRICS_FLAGS = {
  'show-hidden-metrics-for-version': {
    description: "The previous minor release (e.g. 1.31) whose hidden metrics (deprecated before this release) are shown again; only the previous minor release is accepted",
    default: '',
  },
} as const;

export const METRICS_FLAGS = {
  'metrics-bind-address': {
    description: "host:port the metrics endpoint (GET /metrics, plain HTTP) listens on; '0' or empty: not served",
    default: '0',
  },
  ...SHOW_HIDDEN_METRICS_FLAGS,
} as const;

/** The largest `/metrics` request line and headers a scraper may send before the connection is dropped. */
const MAX_HEADER_BYTES = 16 * 1024;

export interface MetricsEndpoint {
  /** The bound `host:port`. */
  address: string;
  close(): Promise<void>;
}

/** `host:port` (`[::1]:9100`, `:9100` for every interface) → its parts. */
export function parseBindAddress(value: string): { host: string; port: number } {
  const m = /^(?:\[([^\]]+)\]|([^:]*)):(\d+)$/.exec(value);
  const port = m ? Number(m[3]) : NaN;
  if (!m || !Number.isInteger(port) || port < 0 || port > 65535) {
    throw new Error(`--metrics-bind-address: ${JSON.stringify(value)} is not host:port (or 0 to disable)`);
  }
  return { host: m[1] ?? (m[2] || '0.0.0.0'), port };
}

/** Serves `registry` at `GET /metrics` on `bindAddress`. */
export async function serveMetrics(registry: MetricsRegistry, bindAddress: string, log?: Logger): Promise<MetricsEndpoint> {
  const { host, port } = parseBindAddress(bindAddress);
  const server = http.createServer({ maxHeaderSize: MAX_HEADER_BYTES }, (req, res) => {
    const path = (req.url ?? '').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'Content-Type': 'text/plain' }).end('404 page not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { 'Content-Type': 'text/plain', Allow: 'GET, HEAD' }).end('method not allowed\n');
      return;
    }
    registry.render(req.headers.accept).then(
      ({ contentType, body }) => {
        res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
        res.end(req.method === 'HEAD' ? undefined : body);
      },
      (err: unknown) => {
        log?.error('metrics: collection failed', { err });
        res.writeHead(500, { 'Content-Type': 'text/plain' }).end('metrics collection failed\n');
      },
    );
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const address = bound.family === 'IPv6' ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`;
  log?.info('metrics endpoint listening', { address });
  return {
    address,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/**
 * Sets up this process's metrics from its flags: hidden metrics when asked
 * for, process and runtime metrics, gRPC metrics of every call, and the
 * endpoint when `--metrics-bind-address` names one (a service without the
 * flag, the gateway, serves them itself).
 */
export async function startProcessMetrics(
  service: string,
  flags: { get(name: string): string; getOptional?(name: string): string | undefined },
  hasFlag: (name: string) => boolean,
  log?: Logger,
): Promise<MetricsEndpoint | undefined> {
  if (hasFlag('show-hidden-metrics-for-version')) {
    const showHidden = flags.get('show-hidden-metrics-for-version');
    validateShowHiddenFor(showHidden);
    if (showHidden) processMetrics.enableShowHidden();
  }
  processMetrics.collectDefaultMetrics();
  installGrpcMetricsOnce(processMetrics, service);
  if (!hasFlag('metrics-bind-address')) return undefined;
  const bind = flags.get('metrics-bind-address');
  if (!bind || bind === '0') return undefined;
  return serveMetrics(processMetrics, bind, log);
}

let grpcInstalled = false;

function installGrpcMetricsOnce(registry: MetricsRegistry, service: string): void {
  if (grpcInstalled) return;
  grpcInstalled = true;
  installGrpcMetrics(registry, service);
}
