import { ApiError, type UserInfo } from '@svc/apimachinery';
import type { AuditRecorder } from '../context';
import type { Auditor } from './auditor';
import { auditUser, bodyObject, formatMicros, nowMicros, objectRef, omitManagedFields, sourceIPs, truncatedUserAgent, type RefAttributes } from './event';
import type { AuditAttributes, RequestAuditConfig } from './policy';
import { AUDIT_API_VERSION, atLeast, type AuditEvent, type ResponseStatus, type Stage } from './types';

/** What the audit of a request reads of it (from the request and its state, so it can be built without a server). */
export interface AuditedRequest {
  auditID: string;
  requestURI: string;
  headers: Record<string, string | string[] | undefined>;
  remoteAddress: string | undefined;
  attributes: Omit<AuditAttributes, 'user'> & Pick<RefAttributes, 'apiVersion'>;
  /** Who the request runs as now (the impersonated user once impersonation ran). */
  currentUser(): UserInfo | undefined;
  /** Which credentials a request refused with 401 tried (the message of its event). */
  authMethods(): string;
}

/** What the audit reads of the response: its status and type, and (at RequestResponse) its bytes. */
export interface AuditedResponse {
  statusCode: number;
  getHeader(name: string): unknown;
}

/** Response bytes kept for the event at most; a larger response is logged without its object. */
const MAX_RESPONSE_CAPTURE = 3 * 1024 * 1024;

/**
 * The audit of one request. `begin` (once the requester is known) decides
 * the level and writes RequestReceived; a long-running response writes
 * ResponseStarted when it starts; `complete` writes ResponseComplete when
 * the response is over (or `failed` writes Panic for an unexpected
 * failure). A request that never began (refused with 401, or a path served
 * without authentication) is decided at its end without a user, and a 401
 * is written as the original's failed-authentication event: stage
 * ResponseStarted, with the credentials tried.
 */
export class RequestAudit implements AuditRecorder {
  private config: RequestAuditConfig | undefined;
  private event: AuditEvent | undefined;
  private requester: UserInfo | undefined;
  private annotations: Record<string, string> | undefined;
  private requestPayload: { body: Buffer; contentType: string | undefined } | undefined;
  private responseChunks: Buffer[] | undefined;
  private responseBytes = 0;
  private error: ApiError | undefined;
  private done = false;
  private readonly receivedMicros = nowMicros();

  constructor(
    private readonly auditor: Auditor,
    private readonly req: AuditedRequest,
    private readonly res: AuditedResponse,
  ) {}

  begin(user: UserInfo): void {
    if (this.config) return;
    this.requester = user;
    this.config = this.auditor.policy.evaluate({ ...this.req.attributes, user });
    if (this.config.level === 'None') return;
    this.event = this.newEvent(user);
    this.emit('RequestReceived');
  }

  annotate(key: string, value: string): void {
    this.annotations ??= {};
    if (!(key in this.annotations)) this.annotations[key] = value;
  }

  requestBody(body: Buffer, contentType: string | undefined): void {
    if (this.event && atLeast(this.event.level, 'Request')) this.requestPayload = { body, contentType };
  }

  requestObjectMeta(name: string | undefined, namespace: string | undefined): void {
    const ref = this.event?.objectRef;
    if (!ref) return;
    if (!ref.name && name) ref.name = name;
    if (!ref.namespace && namespace) ref.namespace = namespace;
  }

  /** Whether the response's bytes are wanted (RequestResponse; never a watch's stream). */
  get wantsResponseBody(): boolean {
    return this.event?.level === 'RequestResponse' && this.req.attributes.verb !== 'watch';
  }

  /** A chunk of the response as written (kept up to a bound, at RequestResponse). */
  responseChunk(chunk: unknown): void {
    if (!this.wantsResponseBody || this.responseBytes > MAX_RESPONSE_CAPTURE) return;
    const buf = typeof chunk === 'string' ? Buffer.from(chunk) : chunk instanceof Uint8Array ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : undefined;
    if (!buf) return;
    this.responseBytes += buf.length;
    if (this.responseBytes > MAX_RESPONSE_CAPTURE) this.responseChunks = undefined;
    else (this.responseChunks ??= []).push(buf);
  }

  responseStarted(code: number): void {
    if (!this.event || this.done || this.event.responseStatus) return;
    this.event.responseStatus = { metadata: {}, code };
    this.emit('ResponseStarted');
  }

  /**
   * What went wrong below the audit filter. An ApiError is the response's
   * Status (written when the response completes); anything else is a
   * Panic, written now, as the original writes it instead of
   * ResponseComplete.
   */
  failed(err: unknown): void {
    this.error = ApiError.from(err);
    // Admission's annotations of a refused write travel with its Status.
    for (const [key, value] of Object.entries(this.error.auditAnnotations)) this.annotate(key, value);
    if (err instanceof ApiError || !this.event || this.done) return;
    this.done = true;
    this.finish();
    this.event.responseStatus = { metadata: {}, status: 'Failure', reason: 'InternalError', message: `APIServer panic'd: ${err instanceof Error ? err.message : String(err)}`, code: 500 };
    this.emit('Panic');
  }

  /** The response is over (sent, or the connection went): ResponseComplete. */
  complete(): void {
    if (this.done) return;
    this.done = true;
    if (!this.config) {
      this.config = this.auditor.policy.evaluate({ ...this.req.attributes, user: undefined });
      if (this.config.level === 'None') return;
      this.event = this.newEvent(undefined);
    }
    const event = this.event;
    if (!event) return;
    this.finish();
    if (!this.requester && this.error?.code === 401) {
      event.responseStatus = { metadata: {}, message: this.req.authMethods(), code: 401 };
      this.emit('ResponseStarted');
      return;
    }
    event.responseStatus = this.responseStatus();
    if (this.responseChunks && atLeast(event.level, 'RequestResponse')) {
      const body = bodyObject(Buffer.concat(this.responseChunks), String(this.res.getHeader('content-type') ?? ''));
      this.responseChunks = undefined;
      if (body !== undefined) event.responseObject = this.config.omitManagedFields ? omitManagedFields(body) : body;
    }
    this.emit('ResponseComplete');
  }

  /** What only the end knows: the annotations, the impersonated user, the request's object. */
  private finish(): void {
    const event = this.event as AuditEvent;
    if (this.annotations) event.annotations = this.annotations;
    const current = this.req.currentUser();
    if (this.requester && current && current !== this.requester) event.impersonatedUser = auditUser(current);
    if (this.requestPayload) {
      const body = bodyObject(this.requestPayload.body, this.requestPayload.contentType);
      this.requestPayload = undefined;
      if (body !== undefined) event.requestObject = this.config?.omitManagedFields ? omitManagedFields(body) : body;
    }
  }

  private responseStatus(): ResponseStatus {
    const code = this.res.statusCode;
    const err = this.error;
    if (!err || code < 400) return { metadata: {}, code };
    const status: ResponseStatus = { metadata: {}, status: 'Failure', message: err.message, reason: err.reason, code: err.code };
    if (err.details) status.details = err.details;
    return status;
  }

  private newEvent(user: UserInfo | undefined): AuditEvent {
    const a = this.req.attributes;
    const event: AuditEvent = {
      kind: 'Event',
      apiVersion: AUDIT_API_VERSION,
      level: (this.config as RequestAuditConfig).level,
      auditID: this.req.auditID,
      stage: 'RequestReceived',
      requestURI: this.req.requestURI,
      verb: a.verb,
      user: auditUser(user),
      sourceIPs: sourceIPs(this.req.headers, this.req.remoteAddress),
      requestReceivedTimestamp: formatMicros(this.receivedMicros),
      stageTimestamp: '',
    };
    const agent = truncatedUserAgent(this.req.headers['user-agent'] as string | undefined);
    if (agent) event.userAgent = agent;
    if (a.isResourceRequest) event.objectRef = objectRef(a);
    return event;
  }

  private emit(stage: Stage): void {
    const event = this.event as AuditEvent;
    if ((this.config as RequestAuditConfig).omitStages.has(stage)) return;
    event.stage = stage;
    event.stageTimestamp = stage === 'RequestReceived' ? event.requestReceivedTimestamp : formatMicros(nowMicros());
    this.auditor.emit(JSON.stringify(event));
  }
}
