import * as https from 'node:https';
import { ApiError, type ApiObject, type Status } from '@svc/apimachinery';
import type { Credentials } from '@svc/service-kit';

/**
 * The controllers' way to the API: plain HTTPS to the gateway with the
 * credentials of a kubeconfig, as any client of the server. Error answers
 * become the ApiError their Status describes.
 */
export { loadKubeconfig, type Credentials } from '@svc/service-kit';

export interface WatchEvent {
  type: string;
  object: ApiObject;
}

/**
 * Where a client's bearer token comes from when it is not fixed in the
 * kubeconfig: a service account's token, asked for and renewed by the
 * controller-manager (`--use-service-account-credentials`).
 */
export interface TokenSource {
  /** A token that is valid now. */
  token(): Promise<string>;
  /** The server refused `token` (401): the next call asks for a new one. */
  invalidate(token: string): void;
}

export interface ApiClientOptions {
  userAgent?: string;
  /** Bearer tokens from here instead of the kubeconfig's credentials. */
  tokenSource?: TokenSource;
}

export class ApiClient {
  private readonly agent: https.Agent;
  private readonly userAgent: string;
  private readonly tokenSource: TokenSource | undefined;

  constructor(
    private readonly creds: Credentials,
    options: ApiClientOptions = {},
  ) {
    this.userAgent = options.userAgent ?? 'svc-controller-manager';
    this.tokenSource = options.tokenSource;
    // A client of a service account presents only its token, never the process's certificate.
    const cert = this.tokenSource ? {} : { ...(creds.cert ? { cert: creds.cert } : {}), ...(creds.key ? { key: creds.key } : {}) };
    this.agent = new https.Agent({ keepAlive: true, ...(creds.ca ? { ca: creds.ca } : {}), ...cert });
  }

  close(): void {
    this.agent.destroy();
  }

  /** One request; resolves with the decoded body of a 2xx answer. A refused service-account token is renewed once. */
  async request<T = ApiObject>(method: string, urlPath: string, body?: unknown): Promise<T> {
    const token = await this.tokenSource?.token();
    try {
      return await this.requestWith<T>(method, urlPath, body, token);
    } catch (err) {
      if (!(token && this.tokenSource && err instanceof ApiError && err.code === 401)) throw err;
      this.tokenSource.invalidate(token);
      return this.requestWith<T>(method, urlPath, body, await this.tokenSource.token());
    }
  }

  private requestWith<T>(method: string, urlPath: string, body: unknown, token: string | undefined): Promise<T> {
    // The length is always sent: Node frames no body of a DELETE by itself, and the server would read it as the next request.
    const payload = body !== undefined ? Buffer.from(JSON.stringify(body)) : undefined;
    const headers = { ...this.headers(payload !== undefined, token), ...(payload ? { 'content-length': String(payload.length) } : {}) };
    return new Promise<T>((resolve, reject) => {
      const req = https.request(`${this.creds.server}${urlPath}`, { method, agent: this.agent, headers, timeout: 30000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status >= 200 && status < 300) {
            try {
              resolve((text ? JSON.parse(text) : {}) as T);
            } catch (err) {
              reject(new Error(`${method} ${urlPath}: undecodable answer: ${(err as Error).message}`));
            }
            return;
          }
          reject(errorFrom(status, text));
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${urlPath}: no answer in time`)));
      req.on('error', reject);
      if (payload) req.write(payload);
      req.end();
    });
  }

  /**
   * Streams a watch; resolves when the server ends it (its timeout, or a
   * restart) and rejects on an error answer or a broken connection.
   */
  async watch(urlPath: string, onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> {
    const token = await this.tokenSource?.token();
    return new Promise<void>((resolve, reject) => {
      const req = https.request(`${this.creds.server}${urlPath}`, { agent: this.agent, headers: this.headers(false, token), signal }, (res) => {
        if ((res.statusCode ?? 0) !== 200) {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            if (res.statusCode === 401 && token) this.tokenSource?.invalidate(token);
            reject(errorFrom(res.statusCode ?? 0, Buffer.concat(chunks).toString('utf8')));
          });
          return;
        }
        let buffered = '';
        res.on('data', (c: Buffer) => {
          buffered += c.toString('utf8');
          for (let nl = buffered.indexOf('\n'); nl >= 0; nl = buffered.indexOf('\n')) {
            const line = buffered.slice(0, nl).trim();
            buffered = buffered.slice(nl + 1);
            if (line) onEvent(JSON.parse(line) as WatchEvent);
          }
        });
        res.on('end', () => resolve());
        res.on('error', reject);
      });
      req.on('error', (err) => (signal.aborted ? resolve() : reject(err)));
      req.end();
    });
  }

  private headers(withBody: boolean, sourcedToken: string | undefined): Record<string, string> {
    const h: Record<string, string> = { accept: 'application/json', 'user-agent': this.userAgent };
    if (withBody) h['content-type'] = 'application/json';
    const token = this.tokenSource ? sourcedToken : this.creds.token;
    if (token) h['authorization'] = `Bearer ${token}`;
    return h;
  }
}

function errorFrom(code: number, text: string): ApiError {
  try {
    const status = JSON.parse(text) as Status;
    if (status.kind === 'Status') return ApiError.fromStatus({ ...status, code: status.code || code });
  } catch {
    // not a Status
  }
  return code >= 500 ? ApiError.serviceUnavailable(`the server answered ${code}: ${text.slice(0, 200)}`) : ApiError.badRequest(`the server answered ${code}: ${text.slice(0, 200)}`);
}
