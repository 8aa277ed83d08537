import * as fs from 'node:fs';
import * as https from 'node:https';
import type { Environment } from '@svc/testenv';

export interface HttpResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  raw: Buffer;
  json(): Record<string, unknown>;
}

type Credentials = { cert: Buffer; key: Buffer } | { token: string };

function send(env: Environment, method: string, path: string, credentials: Credentials, body: string | Buffer | undefined, headers: Record<string, string>): Promise<HttpResponse> {
  return new Promise((resolve, reject) => {
    const auth = 'token' in credentials ? { authorization: `Bearer ${credentials.token}` } : {};
    const req = https.request(
      `${env.url}${path}`,
      {
        method,
        ca: fs.readFileSync(env.pki.caCert),
        ...('cert' in credentials ? { cert: credentials.cert, key: credentials.key } : {}),
        // Node sends a DELETE body without a length unless told: give every body one.
        headers: { 'content-type': 'application/json', ...auth, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}), ...headers },
        timeout: 20000,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const raw = Buffer.concat(chunks);
          const text = raw.toString('utf8');
          resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, raw, json: () => JSON.parse(text) as Record<string, unknown> });
        });
      },
    );
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('request timed out')));
    if (body !== undefined) req.write(body);
    req.end();
  });
}

/** Raw HTTPS requests as the admin, for what clients cannot be made to send. */
export function adminRequest(env: Environment, method: string, path: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<HttpResponse> {
  return send(env, method, path, { cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) }, body, headers);
}

/** A raw HTTPS request with a bearer token and no client certificate. */
export function tokenRequest(env: Environment, method: string, path: string, token: string, body?: string | Buffer, headers: Record<string, string> = {}): Promise<HttpResponse> {
  return send(env, method, path, { token }, body, headers);
}

/** A raw HTTPS request with a client certificate (a node's, say). */
export function certRequest(env: Environment, method: string, path: string, cert: { cert: string; key: string }, body?: string | Buffer, headers: Record<string, string> = {}): Promise<HttpResponse> {
  return send(env, method, path, { cert: fs.readFileSync(cert.cert), key: fs.readFileSync(cert.key) }, body, headers);
}
