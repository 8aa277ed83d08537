import type { Request, Response } from 'express';
import { SpanStatusCode, startServerSpan, tracingEnabled, type Span } from '@svc/service-kit';
import { requestIdFrom, parsedRequestInfoFrom, withTraceId } from '../context';
import type { RequestInfo } from '../request-info';
import type { Handler } from './chain';

/**
 * The request's server span, as the original server's tracing filter makes
 * it: the trace an incoming W3C `traceparent` names is continued (else the
 * sampler starts one), the span is active while the request is served, so
 * every internal call (authn, authz, admission, storage) is its child, and
 * it ends when the response does. Its name is the method and, for a
 * resource request, the route with the namespace and name left out
 * (`POST /api/v1/namespaces/{:namespace}/configmaps`); its attributes are
 * the HTTP method, path, user agent and status code, the audit id, and the
 * verb and resource once parsed. Without tracing the filter is not in the
 * chain at all.
 */
export function withTracing(handler: Handler): Handler {
  if (!tracingEnabled()) return handler;
  return async (req, res) => {
    const started = startServerSpan(req.method, req.headers, {
      'http.request.method': req.method,
      'url.path': req.path,
      'url.scheme': 'https',
      'user_agent.original': req.headers['user-agent'] ?? '',
      'network.protocol.version': req.httpVersion,
      'client.address': req.socket.remoteAddress ?? '',
      'audit-id': requestIdFrom(req),
    });
    if (!started) return handler(req, res);
    const { span, run } = started;
    withTraceId(req, span.spanContext().traceId);
    let ended = false;
    const end = (): void => {
      if (ended) return;
      ended = true;
      finishSpan(span, req, res);
    };
    res.once('finish', end);
    res.once('close', end);
    await run(() => handler(req, res));
  };
}

/** `/apis/apps/v1/namespaces/{:namespace}/deployments/{:name}/scale`, as the original names its spans. */
export function spanRoute(info: RequestInfo): string {
  let route = `/${info.apiPrefix}`;
  if (info.apiGroup) route += `/${info.apiGroup}`;
  route += `/${info.apiVersion}`;
  if (info.namespace) route += '/namespaces/{:namespace}';
  route += `/${info.resource}`;
  if (info.name) route += '/{:name}';
  if (info.subresource) route += `/${info.subresource}`;
  return route;
}

function finishSpan(span: Span, req: Request, res: Response): void {
  const info = parsedRequestInfoFrom(req);
  if (info?.isResourceRequest) {
    const route = spanRoute(info);
    span.updateName(`${req.method} ${route}`);
    span.setAttributes({
      'http.route': route,
      'apiserver.verb': info.verb,
      'apiserver.group': info.apiGroup,
      'apiserver.version': info.apiVersion,
      'apiserver.resource': info.resource,
      ...(info.subresource ? { 'apiserver.subresource': info.subresource } : {}),
      ...(info.namespace ? { 'apiserver.namespace': info.namespace } : {}),
    });
  } else if (info) {
    span.setAttribute('apiserver.verb', info.verb);
  }
  span.setAttribute('http.response.status_code', res.statusCode);
  if (res.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
  span.end();
}
