import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import express from 'express';

/**
 * The floor under the gateway: an express app on Node's HTTPS server, with
 * the gateway's TLS settings, answering a configmap POST with the object it
 * was sent (parsed, given a uid, encoded again) and nothing behind it. Run
 * as a child process by the benchmark, which measures its CPU per request.
 * argv: serving cert, serving key, client CA.
 */
const [certFile, keyFile, caFile] = process.argv.slice(2) as [string, string, string];
const app = express();
app.disable('x-powered-by');
app.set('etag', false);
app.use((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const obj = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { metadata?: Record<string, unknown> };
    obj.metadata = { ...(obj.metadata ?? {}), uid: 'floor' };
    res.status(201).setHeader('Content-Type', 'application/json');
    res.end(Buffer.from(JSON.stringify(obj)));
  });
});
const server = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile), ca: fs.readFileSync(caFile), requestCert: true, rejectUnauthorized: false }, app);
server.listen(0, '127.0.0.1', () => process.send?.({ port: (server.address() as AddressInfo).port }));
process.on('disconnect', () => process.exit(0));
