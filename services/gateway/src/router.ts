import type { Request, Response } from 'express';
import { ApiError, canonicalGroup } from '@svc/apimachinery';
import { versionInfo } from '@svc/service-kit';
import type { GatewayDeps } from './backends';
import { serveAggregatedDiscovery } from './aggregated-discovery';
import { addAuditAnnotation, addWarning, queryValues, requestInfoFrom } from './context';
import type { Handler } from './filters/chain';
import { handleCreate } from './handlers/create';
import { handleDelete, handleDeleteCollection } from './handlers/delete';
import { OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_ALT, apiGroup, apiGroupList, apiResourceList, apiVersions, asRequestedGroup, withUpstreamGroupNames } from '@svc/openapi';
import { handleGet } from './handlers/get';
import { handleHealth } from './handlers/health';
import { handleList } from './handlers/list';
import { handlePatch } from './handlers/patch';
import { computedHandler } from './registry/computed';
import { handleScale } from './registry/computed/scale';
import { handleUpdate } from './handlers/update';
import { handleWatch } from './handlers/watch';
import { checkQueryOptions } from './handlers/request-options';
import type { ResourceHandler } from './handlers/common';
import { parseMediaRanges } from './negotiation';
import { pretty, writeBody } from './responses';

/**
 * Dispatch after the filters: resource requests by verb to one handler file
 * each, non-resource requests (discovery, OpenAPI, version, health) by path.
 */
const NOT_FOUND = (): ApiError => new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});

const VERB_HANDLERS: Record<string, ResourceHandler> = {
  get: handleGet,
  list: handleList,
  watch: handleWatch,
  create: handleCreate,
  update: handleUpdate,
  patch: handlePatch,
  delete: handleDelete,
  deletecollection: handleDeleteCollection,
};

/** The build's version (build-info.json, overridden by SVC_GIT_VERSION, SVC_GIT_COMMIT, SVC_BUILD_DATE). */
export const SERVER_VERSION = versionInfo();

const JSON_OUT = { kind: 'json', mediaType: 'application/json' } as const;

export const HEALTH_ENDPOINTS = ['livez', 'readyz', 'healthz'];

export function healthRoute(deps: GatewayDeps): Handler {
  return async (req: Request, res: Response) => {
    const [endpoint, check] = requestInfoFrom(req).segments as [string, string | undefined];
    const checks = endpoint === 'livez' ? { ping: async () => undefined } : { ping: async () => undefined, ...deps.readiness };
    await handleHealth(req, res, endpoint, checks, check);
  };
}

/** The audit annotation of a request through a deprecated version (SPEC section 6). */
export const DEPRECATED_ANNOTATION = 'svc.io/deprecated';

export function buildRouter(deps: GatewayDeps): Handler {
  const health = healthRoute(deps);
  return async (req, res) => {
    const info = requestInfoFrom(req);
    if (!info.isResourceRequest) {
      await routeNonResource(req, res, deps, health);
      return;
    }
    const def = deps.registry.lookup(info.apiGroup, info.apiVersion, info.resource);
    if (!def) throw NOT_FOUND();
    // Every request through a deprecated version is told so, its errors too (as upstream's handler does).
    if (def.deprecationWarning) {
      addWarning(req, def.deprecationWarning);
      addAuditAnnotation(req, DEPRECATED_ANNOTATION, 'true');
    }
    if (info.subresource && !def.subresources.some((s) => s.name === info.subresource)) throw NOT_FOUND();
    const clusterWideOk = info.verb === 'list' || info.verb === 'watch' || info.verb === 'deletecollection';
    if (def.namespaced && !info.namespace && !clusterWideOk) throw NOT_FOUND();
    if (def.namespaced && !info.namespace && info.verb === 'deletecollection') throw NOT_FOUND();
    if (!def.namespaced && info.namespace) throw NOT_FOUND();
    const handler = VERB_HANDLERS[info.verb];
    const allowedVerbs = info.subresource ? (def.subresources.find((s) => s.name === info.subresource)?.verbs ?? []) : def.verbs;
    if (!handler || !(allowedVerbs as string[]).includes(info.verb)) {
      throw ApiError.methodNotAllowed(`the server does not allow this method on the requested resource`);
    }
    // The query's options, checked once for every handler (computed ones and subresources too).
    checkQueryOptions(info.verb, (name) => queryValues(req, name), req.headers['content-type']);
    const r = { deps, def, info };
    const computed = computedHandler(r);
    if (computed) return computed(req, res, r);
    if (def.virtual) throw ApiError.methodNotAllowed(`the server does not allow this method on the requested resource`);
    if (info.subresource === 'scale' && def.scale) return handleScale(req, res, r);
    await handler(req, res, r);
  };
}

async function routeNonResource(req: Request, res: Response, deps: GatewayDeps, health: Handler): Promise<void> {
  const { segments: parts, path } = requestInfoFrom(req);
  const [first, second, third, fourth] = parts;
  if (first && HEALTH_ENDPOINTS.includes(first) && parts.length <= 2) return health(req, res);
  if (req.method !== 'GET' && req.method !== 'HEAD') throw ApiError.methodNotAllowed(`${req.method} is not allowed on ${path}`);
  const reg = deps.registry;
  if (first === 'version' && parts.length === 1) return writeBody(req, res, 200, SERVER_VERSION, JSON_OUT);
  if ((first === 'api' || first === 'apis') && parts.length === 1 && serveAggregatedDiscovery(req, res, deps, first === 'api' ? 'core' : 'named')) return;
  if (first === 'api') {
    if (parts.length === 1) return writeBody(req, res, 200, apiVersions(`${req.socket.localAddress ?? '127.0.0.1'}:${req.socket.localPort ?? 0}`), JSON_OUT);
    if (parts.length === 2 && second === 'v1') return writeBody(req, res, 200, apiResourceList(reg, '', 'v1'), JSON_OUT);
  }
  if (first === 'apis') {
    if (parts.length === 1) return writeBody(req, res, 200, withUpstreamGroupNames(apiGroupList(reg)), JSON_OUT);
    // A group asked for by its upstream name is ours, answered under the name asked for.
    const group = second ? canonicalGroup(second) : undefined;
    if (parts.length === 2 && second && group && reg.hasGroup(group)) return writeBody(req, res, 200, asRequestedGroup(apiGroup(reg, group), second), JSON_OUT);
    if (parts.length === 3 && second && group && third && reg.hasGroupVersion(group, third)) return writeBody(req, res, 200, asRequestedGroup(apiResourceList(reg, group, third), second), JSON_OUT);
  }
  if (first === 'openapi') {
    const docs = deps.documents;
    if (second === 'v2' && parts.length === 2 && docs.openApiV2) {
      if (docs.openApiV2Protobuf && wantsOpenApiV2Protobuf(req.headers.accept)) {
        // Go's media-type parser refuses the '@' of the older spelling, so the answer names the dotted one.
        res.status(200).setHeader('Content-Type', OPENAPI_V2_PROTOBUF_ALT);
        res.end(docs.openApiV2Protobuf(reg));
        return;
      }
      if (docs.openApiV2Json && !pretty(req)) {
        res.status(200).setHeader('Content-Type', 'application/json');
        res.end(docs.openApiV2Json(reg));
        return;
      }
      return writeBody(req, res, 200, docs.openApiV2(reg), JSON_OUT);
    }
    if (second === 'v3' && parts.length === 2 && docs.openApiV3Index) return writeBody(req, res, 200, docs.openApiV3Index(reg), JSON_OUT);
    if (second === 'v3' && docs.openApiV3GroupVersion) {
      if (third === 'api' && fourth === 'v1' && parts.length === 4) return writeBody(req, res, 200, docs.openApiV3GroupVersion(reg, '', 'v1'), JSON_OUT);
      const [, , , group, version] = parts;
      if (third === 'apis' && group && version && parts.length === 5 && reg.hasGroupVersion(group, version)) {
        return writeBody(req, res, 200, docs.openApiV3GroupVersion(reg, group, version), JSON_OUT);
      }
    }
  }
  throw NOT_FOUND();
}

/**
 * Whether the client asks for the protobuf form of `/openapi/v2` (kubectl
 * does, for client-side validation) before JSON: of its Accept ranges, by
 * preference, the first that names either form (and is not refused with `q=0`).
 */
export function wantsOpenApiV2Protobuf(accept: string | undefined): boolean {
  for (const range of parseMediaRanges(accept)) {
    if (Number(range.params['q'] ?? '1') === 0) continue;
    if (range.type === OPENAPI_V2_PROTOBUF || range.type === OPENAPI_V2_PROTOBUF_ALT) return true;
    if (range.type === 'application/json' || range.type === '*/*' || range.type === 'application/*') return false;
  }
  return false;
}
