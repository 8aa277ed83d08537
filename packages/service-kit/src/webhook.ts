import * as https from 'node:https';
import { loadKubeconfig, type Credentials } from './kubeconfig';

/**
 * A webhook the server calls (the token review and authorization webhooks):
 * its connection file is in kubeconfig format, its URL must be https, and a
 * call is one bounded POST of JSON: at most `timeoutMs`, an answer of at
 * most `maxBytes`.
 */
export function loadWebhookConfig(file: string): Credentials {
  const creds = loadKubeconfig(file);
  let url: URL;
  try {
    url = new URL(creds.server);
  } catch {
    throw new Error(`${file}: clusters[].cluster.server: ${JSON.stringify(creds.server)} is not a URL`);
  }
  if (url.protocol !== 'https:') throw new Error(`${file}: clusters[].cluster.server: must be an https URL, got ${url.protocol}`);
  if ((creds.cert === undefined) !== (creds.key === undefined)) throw new Error(`${file}: users[].user: client-certificate and client-key go together`);
  return creds;
}

export interface WebhookReply {
  status: number;
  body: string;
}

export function postJson(creds: Credentials, body: string, timeoutMs: number, maxBytes: number): Promise<WebhookReply> {
  return new Promise((resolve, reject) => {
    const req = https.request(
      creds.server,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', 'content-length': String(Buffer.byteLength(body)), ...(creds.token ? { authorization: `Bearer ${creds.token}` } : {}) },
        ...(creds.ca ? { ca: creds.ca } : {}),
        ...(creds.cert ? { cert: creds.cert } : {}),
        ...(creds.key ? { key: creds.key } : {}),
        timeout: timeoutMs,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) {
            req.destroy(new Error(`the webhook's answer is larger than ${maxBytes} bytes`));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`the webhook did not answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end(body);
  });
}
