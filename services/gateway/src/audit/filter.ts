import type { TLSSocket } from 'node:tls';
import type { Request, Response } from 'express';
import { currentUserFrom, requestIdFrom, requestInfoFrom, userFrom, withAuditRecorder, auditRecorderFrom } from '../context';
import { connectionSocketOf } from '../express-http2';
import type { Handler } from '../filters/chain';
import type { Auditor } from './auditor';
import { RequestAudit, type AuditedRequest } from './request-audit';

/**
 * The audit filters. `withAudit` sits outside authentication: it gives the
 * request its audit record and writes the events of its end, so requests
 * refused with 401 (and paths served without authentication) are audited
 * too. `withAuditBegin` sits right after authentication, before
 * impersonation and authorization, as the original's audit filter: the
 * policy is asked about the authenticated requester, and a request then
 * refused with 403 is audited with the authorizer's decision. Without an
 * auditor neither is in the chain.
 */
export function withAudit(handler: Handler, auditor: Auditor | undefined): Handler {
  if (!auditor) return handler;
  return async (req, res) => {
    const audit = new RequestAudit(auditor, auditedRequest(req), res);
    withAuditRecorder(req, audit);
    const complete = (): void => audit.complete();
    res.once('finish', complete);
    res.once('close', complete);
    try {
      await handler(req, res);
    } catch (err) {
      audit.failed(err);
      throw err;
    }
  };
}

export function withAuditBegin(handler: Handler, auditor: Auditor | undefined): Handler {
  if (!auditor) return handler;
  return async (req, res) => {
    const audit = auditRecorderFrom(req);
    if (audit instanceof RequestAudit) {
      audit.begin(userFrom(req));
      if (audit.wantsResponseBody) captureResponse(res, audit);
    }
    await handler(req, res);
  };
}

/** Passes what the response writes to the audit record as well (RequestResponse). */
function captureResponse(res: Response, audit: RequestAudit): void {
  const target = res as unknown as { write: (...args: unknown[]) => boolean; end: (...args: unknown[]) => unknown };
  const write = target.write.bind(res);
  const end = target.end.bind(res);
  target.write = (...args: unknown[]) => {
    audit.responseChunk(args[0]);
    return write(...args);
  };
  target.end = (...args: unknown[]) => {
    if (typeof args[0] !== 'function') audit.responseChunk(args[0]);
    return end(...args);
  };
}

function auditedRequest(req: Request): AuditedRequest {
  // The authorizer's attributes of the request, as the policy is asked about them (the name is the URL's).
  const { verb, isResourceRequest, path, apiGroup, apiVersion, resource, subresource, namespace, name } = requestInfoFrom(req);
  return {
    auditID: requestIdFrom(req),
    requestURI: req.originalUrl || req.url,
    headers: req.headers,
    remoteAddress: req.socket?.remoteAddress,
    attributes: { verb, isResourceRequest, path, apiGroup, apiVersion, resource, subresource, namespace, name },
    currentUser: () => currentUserFrom(req),
    authMethods: () => authMethods(req),
  };
}

/** The credentials a request refused with 401 tried, as the original's message names them. */
function authMethods(req: Request): string {
  const methods: string[] = [];
  const auth = (req.headers.authorization ?? '').trim().split(/\s+/);
  if (auth.length > 1 && auth[0]?.toLowerCase() === 'basic') methods.push('basic');
  if (auth.length > 1 && auth[0]?.toLowerCase() === 'bearer') methods.push('bearer');
  const socket = connectionSocketOf(req) as TLSSocket;
  if (typeof socket.getPeerCertificate === 'function' && socket.getPeerCertificate()?.raw) methods.push('x509');
  return methods.length > 0 ? `Authentication failed, attempted: ${methods.join(', ')}` : 'Authentication failed, no credentials provided';
}
