import * as http from 'node:http';

/**
 * `BENCH_TRACING=1`: every service traces every request (the default
 * sampler, parentbased_always_on, with no caller's decision: 100%) and
 * exports over OTLP/HTTP protobuf, as in production, to this sink in the
 * bench process: it reads each export, counts its bytes and answers 200, so
 * the figures are the services' own cost of tracing with a collector that
 * keeps up.
 */
export interface TracingSink {
  /** The environment variables that point the services at the sink. */
  env: NodeJS.ProcessEnv;
  /** Exports received and their bytes so far. */
  received(): { exports: number; bytes: number };
  close(): Promise<void>;
}

export function tracingRequested(): boolean {
  return process.env['BENCH_TRACING'] === '1';
}

export async function startTracingSink(): Promise<TracingSink> {
  let exports = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    req.on('data', (c: Buffer) => (bytes += c.length));
    req.on('end', () => {
      exports++;
      res.writeHead(200, { 'content-type': 'application/x-protobuf' }).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as { port: number }).port)));
  return {
    env: { OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${port}`, OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf', OTEL_TRACES_SAMPLER: 'parentbased_always_on', OTEL_BSP_SCHEDULE_DELAY: '1000' },
    received: () => ({ exports, bytes }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
