import * as fs from 'node:fs';
import type { ServerResponse } from 'node:http';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';

/**
 * The floor under the gateway's fan-out: Node's HTTPS server, with the
 * gateway's TLS settings, holding every GET open as a chunked watch stream
 * (the gateway's head) and doing nothing else; each line the benchmark
 * sends it (IPC) is written to every stream, one write each, as the gateway
 * writes an event. Run as a child process by the benchmark, which measures
 * its CPU. argv: serving cert, serving key, client CA.
 */
const [certFile, keyFile, caFile] = process.argv.slice(2) as [string, string, string];
const streams = new Set<ServerResponse>();
const server = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile), ca: fs.readFileSync(caFile), requestCert: true, rejectUnauthorized: false }, (_req, res) => {
  res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
  res.flushHeaders();
  streams.add(res);
  res.on('close', () => streams.delete(res));
});
server.keepAliveTimeout = 65000;
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('message', (m: { line: string }) => {
  const line = Buffer.from(m.line + '\n');
  for (const res of streams) res.write(line);
});
process.on('disconnect', () => process.exit(0));
