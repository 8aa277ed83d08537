import type { Request, Response } from 'express';
import { apiGroupDiscoveryList, type AggregatedDiscoveryDocument, type DiscoveryScope } from '@svc/openapi';
import type { GatewayDeps } from './backends';
import { DISCOVERY_GROUPS, DISCOVERY_LIST_KIND, negotiateDiscovery, type DiscoveryFormat } from './negotiation';
import { encodeBody, pretty, setWarnings } from './responses';

/**
 * `/api` and `/apis` as aggregated discovery lists, for clients whose Accept
 * asks for one (kubectl does, with the upstream group name, before the
 * legacy type). The answer names the group and version asked for in its
 * Content-Type and apiVersion, carries an ETag (a hash of the groups, the
 * same for every encoding: caches vary by Accept) and is 304 Not Modified to
 * a request whose If-None-Match has it. Each encoding is made once per
 * document: a change of the registry makes a new document, and what was
 * encoded from the old one goes with it.
 */
const encodings = new WeakMap<AggregatedDiscoveryDocument, Map<string, Buffer>>();

/** Answers the request when it asks for the aggregated list and the gateway serves one; false leaves it to the legacy documents. */
export function serveAggregatedDiscovery(req: Request, res: Response, deps: GatewayDeps, scope: DiscoveryScope): boolean {
  const documents = deps.documents.aggregatedDiscovery;
  if (!documents) return false;
  const protobuf = deps.protobuf?.supports(`${DISCOVERY_GROUPS[0]}/v2`, DISCOVERY_LIST_KIND) ?? false;
  const format = negotiateDiscovery(req.headers.accept, { protobuf });
  if (!format) return false;
  const doc = documents(deps.registry, scope);
  const etag = `"${doc.etag}"`;
  const cacheHeaders = { ETag: etag, Vary: 'Accept', 'Cache-Control': 'public' };
  if (etagMatches(req.headers['if-none-match'], etag)) {
    res.status(304).set(cacheHeaders).end();
    return true;
  }
  const body = encoded(req, doc, format, deps);
  setWarnings(req, res);
  res
    .status(200)
    .set(cacheHeaders)
    .setHeader('Content-Type', `${format.output.mediaType};g=${format.group};v=${format.version};as=${DISCOVERY_LIST_KIND}`);
  res.end(body);
  return true;
}

function encoded(req: Request, doc: AggregatedDiscoveryDocument, format: DiscoveryFormat, deps: GatewayDeps): Buffer {
  let byFormat = encodings.get(doc);
  if (!byFormat) {
    byFormat = new Map();
    encodings.set(doc, byFormat);
  }
  const key = `${format.output.kind};${format.group};${format.version};${pretty(req) ? 'pretty' : ''}`;
  let body = byFormat.get(key);
  if (!body) {
    body = encodeBody(req, apiGroupDiscoveryList(doc.items, format.group, format.version), format.output, deps.protobuf);
    byFormat.set(key, body);
  }
  return body;
}

/** Whether an If-None-Match header names the entity tag (`*`, or one of a list; weak tags compare by their value). */
export function etagMatches(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  return header.split(',').some((candidate) => {
    const tag = candidate.trim();
    return tag === '*' || tag.replace(/^W\//, '') === etag;
  });
}
