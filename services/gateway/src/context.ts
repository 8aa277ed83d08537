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
