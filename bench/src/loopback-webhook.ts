import * as fs from 'node:fs';
import * as https from 'node:https';

/**
 * A validating admission webhook that allows everything, for the admission
 * benchmark: Node's HTTPS server answering each AdmissionReview with its
 * uid and `allowed: true`, run as a child process so that its CPU is its
 * own. argv: serving cert, serving key, host, port. It reports `listening`
 * and, when asked (`count`), how many reviews it answered and on how many
 * TLS connections.
 */
const [certFile, keyFile, host, port] = process.argv.slice(2) as [string, string, string, string];
let reviews = 0;
let connections = 0;
const server = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (c: Buffer) => chunks.push(c));
  req.on('end', () => {
    const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { apiVersion: string; request: { uid: string } };
    reviews++;
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response: { uid: review.request.uid, allowed: true } }));
  });
});
server.on('secureConnection', () => connections++);
server.keepAliveTimeout = 60_000;
server.listen(Number(port), host, () => process.send?.({ listening: true }));
process.on('message', (m) => {
  if ((m as { count?: boolean }).count) process.send?.({ reviews, connections });
});
process.on('disconnect', () => process.exit(0));
