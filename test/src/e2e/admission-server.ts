import * as https from 'node:https';
import type { WebhookServing } from '@svc/testenv';

/**
 * Admission webhooks served by an end-to-end test over HTTPS, with the
 * certificate and address the harness made (`env.webhooks`): one handler
 * per path, every call recorded, and answers that can also misbehave
 * (hang, fail, send garbage or another uid).
 */

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

export interface AdmittedObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; [field: string]: unknown };
  [field: string]: unknown;
}

export interface AdmissionRequest {
  uid: string;
  kind: GroupVersionKind;
  resource: { group: string; version: string; resource: string };
  subResource?: string;
  requestKind?: GroupVersionKind;
  requestResource?: { group: string; version: string; resource: string };
  requestSubResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo: { username?: string; uid?: string; groups?: string[]; extra?: Record<string, string[]> };
  object?: AdmittedObject | null;
  oldObject?: AdmittedObject | null;
  dryRun?: boolean;
  options?: Record<string, unknown> | null;
}

export interface Call {
  path: string;
  /** The AdmissionReview's apiVersion. */
  apiVersion: string;
  request: AdmissionRequest;
  /** When it arrived (ms since the epoch). */
  at: number;
}

export interface JsonPatchOperation {
  op: 'add' | 'remove' | 'replace' | 'move' | 'copy' | 'test';
  path: string;
  value?: unknown;
  from?: string;
}

/** An AdmissionReview response (the uid is filled in unless given). */
export interface Answer {
  allowed: boolean;
  uid?: string;
  status?: { code?: number; message?: string; reason?: string };
  patch?: JsonPatchOperation[];
  /** Default JSONPatch when there is a patch. */
  patchType?: string;
  warnings?: string[];
  auditAnnotations?: Record<string, string>;
}

/** What a handler can do instead of answering a review: never answer, or answer with an HTTP status and a body of its own. */
export type Misbehaviour = { hang: true } | { httpStatus: number; body: string };

export type Handler = (request: AdmissionRequest, call: Call) => Answer | Misbehaviour | Promise<Answer | Misbehaviour>;

/** The name of the object a request is about (the object's, the old object's or the request's). */
export function nameOf(request: AdmissionRequest): string {
  return request.object?.metadata?.name ?? request.oldObject?.metadata?.name ?? request.name ?? '';
}

/** JSON patch operations that set one label. */
export function setLabel(object: AdmittedObject | null | undefined, key: string, value: string): JsonPatchOperation[] {
  const labels = object?.metadata?.labels;
  if (!labels) return [{ op: 'add', path: '/metadata/labels', value: { [key]: value } }];
  return [{ op: key in labels ? 'replace' : 'add', path: `/metadata/labels/${key.replace(/~/g, '~0').replace(/\//g, '~1')}`, value }];
}

export class WebhookServer {
  readonly calls: Call[] = [];
  private readonly handlers = new Map<string, Handler>();
  private readonly server: https.Server;

  constructor(private readonly serving: WebhookServing) {
    this.server = https.createServer(serving.tls, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const path = (req.url ?? '/').split('?')[0] ?? '/';
        let review: { apiVersion: string; request: AdmissionRequest };
        try {
          review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { apiVersion: string; request: AdmissionRequest };
        } catch {
          res.writeHead(400).end('not an AdmissionReview');
          return;
        }
        const call: Call = { path, apiVersion: review.apiVersion, request: review.request, at: Date.now() };
        this.calls.push(call);
        const handler = this.handlers.get(path);
        if (!handler) {
          res.writeHead(404).end(`no webhook at ${path}`);
          return;
        }
        Promise.resolve(handler(review.request, call)).then(
          (answer) => {
            if ('hang' in answer) return; // the connection is left open; the caller's timeout ends it
            if ('httpStatus' in answer) {
              res.writeHead(answer.httpStatus, { 'content-type': 'text/plain' }).end(answer.body);
              return;
            }
            const { patch, ...rest } = answer;
            const response = {
              uid: review.request.uid,
              ...rest,
              ...(patch ? { patchType: answer.patchType ?? 'JSONPatch', patch: Buffer.from(JSON.stringify(patch)).toString('base64') } : {}),
            };
            res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', response }));
          },
          (err: unknown) => res.writeHead(500).end(String(err)),
        );
      });
    });
  }

  /** Serves `handler` at `path` (replacing one there). */
  on(path: string, handler: Handler): void {
    this.handlers.set(path, handler);
  }

  /** The URL the webhook at `path` is called on. */
  url(path: string): string {
    return this.serving.url(path);
  }

  /** The calls to `path`, only those about the object `name` when given. */
  callsTo(path: string, name?: string): Call[] {
    return this.calls.filter((c) => c.path === path && (name === undefined || nameOf(c.request) === name));
  }

  start(): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(this.serving.localServingPort, this.serving.localServingHost, () => resolve());
    });
  }

  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise((r) => this.server.close(r));
  }
}
