import { X509Certificate } from 'node:crypto';
import * as https from 'node:https';
import * as tls from 'node:tls';
import { traceCarrier } from './grpc';
import { KubeconfigError, loadKubeconfig, type Credentials } from './kubeconfig';
import { inClientSpan } from './tracing';

/**
 * A webhook the server calls (the token review and authorization webhooks):
 * its connection file is in kubeconfig format, its URL must be https, and a
 * call is one bounded POST of JSON: at most `timeoutMs` from the request to
 * the last byte of the answer, an answer of at most `maxBytes`.
 */
export function loadWebhookConfig(file: string): Credentials {
  const creds = loadKubeconfig(file);
  let url: URL;
  try {
    url = new URL(creds.server);
  } catch {
    throw new KubeconfigError(`${file}: clusters[].cluster.server: ${JSON.stringify(creds.server)} is not a URL`);
  }
  if (url.protocol !== 'https:') throw new KubeconfigError(`${file}: clusters[].cluster.server: must be an https URL, got ${url.protocol}`);
  if ((creds.cert === undefined) !== (creds.key === undefined)) throw new KubeconfigError(`${file}: users[].user: client-certificate and client-key go together`);
  // Unusable TLS material is refused now rather than failing every call later.
  if (creds.ca) {
    const blocks = creds.ca.toString('latin1').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
    if (blocks.length === 0) throw new KubeconfigError(`${file}: clusters[].cluster.certificate-authority: no PEM certificate found`);
    for (const block of blocks) {
      try {
        new X509Certificate(block);
      } catch (err) {
        throw new KubeconfigError(`${file}: clusters[].cluster.certificate-authority: ${(err as Error).message}`);
      }
    }
  }
  if (creds.cert && creds.key) {
    try {
      tls.createSecureContext({ cert: creds.cert, key: creds.key });
    } catch (err) {
      throw new KubeconfigError(`${file}: users[].user.client-certificate and client-key: ${(err as Error).message}`);
    }
  }
  return creds;
}

export interface WebhookReply {
  status: number;
  body: string;
}

/**
 * One POST of `body` to `creds.server`. Without `agent` it goes over a
 * connection of its own; with one (keepAlive, made for these credentials) it
 * reuses the agent's idle connections.
 */
export function postJson(creds: Credentials, body: string, timeoutMs: number, maxBytes: number, agent?: https.Agent): Promise<WebhookReply> {
  // A client span when the call belongs to a trace, active while the request is sent, so its `traceparent` names it.
  return inClientSpan('POST', webhookSpanAttributes(creds.server), async (span) => {
    const reply = await post(creds, body, timeoutMs, maxBytes, agent);
    span?.setAttribute('http.response.status_code', reply.status);
    return reply;
  });
}

function webhookSpanAttributes(server: string): Record<string, string | number> {
  try {
    const url = new URL(server);
    return { 'http.request.method': 'POST', 'server.address': url.hostname, 'server.port': Number(url.port || 443), 'url.full': `${url.origin}${url.pathname}` };
  } catch {
    return { 'http.request.method': 'POST' };
  }
}

function post(creds: Credentials, body: string, timeoutMs: number, maxBytes: number, agent?: https.Agent): Promise<WebhookReply> {
  return new Promise((resolve, reject) => {
    // One deadline for the whole exchange: an idle timeout alone would let a
    // webhook that trickles its answer hold the caller indefinitely.
    const deadline = setTimeout(() => req.destroy(new Error(`the webhook did not answer within ${timeoutMs} ms`)), timeoutMs);
    // The first outcome stands: an answer over the limit is refused even when its end has already arrived.
    let settled = false;
    const settle = <T>(fn: (value: T) => void) => (value: T) => {
      if (settled) return;
      settled = true;
      clearTimeout(deadline);
      fn(value);
    };
    const req = https.request(
      creds.server,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          accept: 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          ...(creds.token ? { authorization: `Bearer ${creds.token}` } : {}),
          // W3C trace context (empty while tracing is off).
          ...traceCarrier(),
        },
        ...(creds.ca ? { ca: creds.ca } : {}),
        ...(creds.cert ? { cert: creds.cert } : {}),
        ...(creds.key ? { key: creds.key } : {}),
        agent: agent ?? false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) {
            settle(reject)(new Error(`the webhook's answer is larger than ${maxBytes} bytes`));
            req.destroy();
            return;
          }
          chunks.push(c);
        });
        res.on('end', settle(() => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') })));
        res.on('error', settle(reject));
      },
    );
    req.on('error', settle(reject));
    req.end(body);
  });
}
