import type { Request, Response } from 'express';
import { ApiError, isJsonObject, type ApiObject, type ResourceDefinition, type ScaleSubresourcePaths } from '@svc/apimachinery';
import { AUTOSCALING_GROUP, SCALE_SCHEMA, UNSET_SPEC_REPLICAS, desiredReplicas, scaleFromObject, validateScale, withSpecReplicas } from '@svc/kinds';
import { jsonPatch, mergePatch, strategicMergePatch } from '@svc/merge';
import { decodeBody, mediaTypeOf, parseJson } from '../negotiation';
import { writeBody } from '../responses';
import { checkTypeMeta, decodeAgainstSchema, keyOf, updateObject, type WriteContext } from '../rest';
import { callOptions, outputFormat, parseResourceVersion, query, readBody, writeContext, type ResourceRequest } from './common';
import { JSON_PATCH, MERGE_PATCH, STRATEGIC } from './patch';

/**
 * `<resource>/<name>/scale` of a custom resource with `subresources.scale`:
 * an autoscaling/v1 Scale read from the object (get) and written back as
 * its spec replicas path only (update, patch), through the generic update
 * of the object, so its validation, admission, managed fields and
 * generation apply as for any write of it. A resourceVersion the Scale
 * carries is a precondition (409 when stale); without one the write is
 * retried on a concurrent change.
 */

/** The Scale kind as the body of a write is decoded against it (typed: a mistyped value is a 400). */
function scaleKind(def: ResourceDefinition): ResourceDefinition {
  return { ...def, group: AUTOSCALING_GROUP, version: 'v1', kind: 'Scale', listKind: 'ScaleList', schema: SCALE_SCHEMA, decoding: 'typed' };
}

function pathsOf(r: ResourceRequest): ScaleSubresourcePaths {
  if (!r.def.scale) throw new ApiError(404, 'NotFound', 'the server could not find the requested resource', {});
  return r.def.scale;
}

export async function handleScale(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const paths = pathsOf(r);
  const format = outputFormat(req, r, false);
  if (r.info.verb === 'get') {
    const rv = parseResourceVersion(query(req, 'resourceVersion'));
    const stored = await r.deps.storage.get(keyOf(r.def, r.info.namespace, r.info.name), rv ? { minRevision: rv } : {}, callOptions(req, r));
    const view = scaleFromObject(stored.object, paths);
    if (!view.specReplicasFound) throw ApiError.internal(`the spec replicas field ${JSON.stringify(paths.specReplicasPath)} does not exist`);
    writeBody(req, res, 200, view.scale, format);
    return;
  }
  const ctx = writeContext(req, r);
  const body = await readBody(req, r.deps.limits.maxBodyBytes);
  let scaleOf: (current: ApiObject) => ApiObject;
  if (r.info.verb === 'update') {
    const decoded = decodeBody(req.headers['content-type'], body, undefined);
    const sent = decodeScale({ ...ctx, duplicateFields: decoded.duplicateFields }, r, decoded.object);
    scaleOf = () => sent;
  } else {
    scaleOf = scalePatcher(req, ctx, r, body, paths);
  }
  const outcome = await updateObject(ctx, r.info.name, {}, (current) => {
    if (!current.metadata) throw ApiError.notFound({ group: r.def.group, resource: r.def.plural }, r.info.name);
    const scale = scaleOf(current);
    const next = withSpecReplicas(current, paths, desiredReplicas(scale));
    const causes = validateScale(scale);
    if (causes.length > 0) throw ApiError.invalid({ group: AUTOSCALING_GROUP, kind: 'Scale' }, r.info.name, causes);
    const rv = scale.metadata?.resourceVersion;
    // A resourceVersion in the Scale is the client's precondition; without one the latest object is scaled.
    next.metadata = { ...(next.metadata ?? {}), resourceVersion: rv ? rv : current.metadata.resourceVersion };
    return next;
  });
  writeBody(req, res, 200, scaleFromObject(outcome.result.object, paths).scale, format);
}

/** A Scale sent by the client: its type meta and field types checked, its name the URL's. */
function decodeScale(ctx: WriteContext, r: ResourceRequest, obj: ApiObject): ApiObject {
  const kind = scaleKind(r.def);
  checkTypeMeta(kind, obj);
  const scale = decodeAgainstSchema({ ...ctx, def: kind }, obj);
  const name = scale.metadata?.name;
  if (name !== undefined && name !== r.info.name) throw ApiError.badRequest(`the name of the object (${name}) does not match the name on the URL (${r.info.name})`);
  return scale;
}

/** Applies the patch to the Scale of the current object (JSON patch, merge patch or strategic merge patch). */
function scalePatcher(req: Request, ctx: WriteContext, r: ResourceRequest, body: Buffer, paths: ScaleSubresourcePaths): (current: ApiObject) => ApiObject {
  const type = mediaTypeOf(req.headers['content-type']);
  if (![JSON_PATCH, MERGE_PATCH, STRATEGIC].includes(type)) {
    throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${JSON_PATCH}, ${MERGE_PATCH}, ${STRATEGIC}`);
  }
  if (body.length === 0) throw ApiError.badRequest('the patch document is empty');
  const patch = parseJson(body);
  return (current) => {
    const view = scaleFromObject(current, paths);
    const scale = view.scale;
    // Without spec replicas in the object, a patch that sets none is refused rather than writing 0.
    if (!view.specReplicasFound) scale['spec'] = { replicas: UNSET_SPEC_REPLICAS };
    let patched: unknown;
    if (type === JSON_PATCH) patched = jsonPatch(scale, patch);
    else if (type === MERGE_PATCH) patched = mergePatch(scale, patch);
    else patched = strategicMergePatch(scale, patch, SCALE_SCHEMA);
    if (!isJsonObject(patched)) throw ApiError.badRequest('the patched object is not an object');
    return decodeScale(ctx, r, patched as ApiObject);
  };
}
