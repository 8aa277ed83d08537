import type { Request } from 'express';
import type { UserInfo } from '@svc/apimachinery';
import type { Attributes, AuthorizerDecision } from '@svc/authz/client';
import type { Logger } from '@svc/service-kit';
import type { RequestInfo } from './request-info';

/**
 * State that filters hand to later filters and handlers, reached through
 * typed accessors rather than ad-hoc fields on the request.
 */
interface RequestState {
  requestId: string;
  log: Logger;
  info?: RequestInfo;
  user?: UserInfo;
  authorization?: RequestAuthorization;
  warnings: string[];
  /** The trace id of the request's server span (only when tracing is on). */
  traceId?: string;
  audit?: AuditRecorder;
  deadline?: RequestDeadline;
}

/** When a request that is not long-running arrived and when it must be answered by (epoch milliseconds). */
export interface RequestDeadline {
  receivedAt: number;
  deadline: number;
}

/**
 * The audit record of a request (present only when the gateway audits):
 * what handlers and filters below the audit filter tell it.
 */
export interface AuditRecorder {
  /** An annotation of the event (the first value given for a key stands). */
  annotate(key: string, value: string): void;
  /** The request body as received (kept at the Request level and above). */
  requestBody(body: Buffer, contentType: string | undefined): void;
  /** The name and namespace of the object a request sends, for the event's objectRef when the URL names none (a create). */
  requestObjectMeta(name: string | undefined, namespace: string | undefined): void;
  /** A long-running response (a watch) has started: its ResponseStarted event. */
  responseStarted(code: number): void;
}

/**
 * What the authorization filter allowed, and the authorizer it asked, so a
 * later step that finds the request does more (an update or apply that
 * creates) can ask again as what it does.
 */
export interface RequestAuthorization {
  attributes: Attributes;
  authorize(attrs: Attributes): Promise<AuthorizerDecision>;
}

const states = new WeakMap<Request, RequestState>();

export function initRequestState(req: Request, requestId: string, log: Logger): void {
  states.set(req, { requestId, log, warnings: [] });
}

function state(req: Request): RequestState {
  const s = states.get(req);
  if (!s) throw new Error('request state used before the chain initialised it');
  return s;
}

export function requestIdFrom(req: Request): string {
  return state(req).requestId;
}

export function logFrom(req: Request): Logger {
  return state(req).log;
}

export function withRequestInfo(req: Request, info: RequestInfo): void {
  state(req).info = info;
}

export function requestInfoFrom(req: Request): RequestInfo {
  const info = state(req).info;
  if (!info) throw new Error('request info read before the request-info filter ran');
  return info;
}

/** The request info when the path was parsed; undefined for a request refused before (for logging). */
export function parsedRequestInfoFrom(req: Request): RequestInfo | undefined {
  return states.get(req)?.info;
}

export function withUser(req: Request, user: UserInfo): void {
  state(req).user = user;
}

/** The user the request runs as now, when authentication has run (for the audit event: requester and impersonated user). */
export function currentUserFrom(req: Request): UserInfo | undefined {
  return states.get(req)?.user;
}

export function withAuditRecorder(req: Request, audit: AuditRecorder): void {
  state(req).audit = audit;
}

/** The request's audit record; undefined when the gateway does not audit. */
export function auditRecorderFrom(req: Request): AuditRecorder | undefined {
  return states.get(req)?.audit;
}

/** Adds an annotation to the request's audit event (nothing when the gateway does not audit). */
export function addAuditAnnotation(req: Request, key: string, value: string): void {
  states.get(req)?.audit?.annotate(key, value);
}

export function userFrom(req: Request): UserInfo {
  const user = state(req).user;
  if (!user) throw new Error('user read before the authentication filter ran');
  return user;
}

export function withAuthorizationState(req: Request, authorization: RequestAuthorization): void {
  state(req).authorization = authorization;
}

export function authorizationFrom(req: Request): RequestAuthorization {
  const authorization = state(req).authorization;
  if (!authorization) throw new Error('authorization read before the authorization filter ran');
  return authorization;
}

/** Adds a `Warning` header entry to the response. */
export function addWarning(req: Request, text: string): void {
  state(req).warnings.push(text);
}

export function warningsFrom(req: Request): string[] {
  return states.get(req)?.warnings ?? [];
}

const NO_QUERY = new URLSearchParams();

/** The values of a query parameter as the request-info filter parsed them (none before it ran). */
export function queryValues(req: Request, name: string): string[] {
  return (states.get(req)?.info?.query ?? NO_QUERY).getAll(name);
}

export function withDeadline(req: Request, deadline: RequestDeadline): void {
  state(req).deadline = deadline;
}

/** The request's deadline; undefined for a long-running request (or before the deadline filter ran). */
export function deadlineFrom(req: Request): RequestDeadline | undefined {
  return states.get(req)?.deadline;
}

export function withTraceId(req: Request, traceId: string): void {
  state(req).traceId = traceId;
}

/** The trace id of the request's server span; undefined when tracing is off (for logging). */
export function traceIdFrom(req: Request): string | undefined {
  return states.get(req)?.traceId;
}
