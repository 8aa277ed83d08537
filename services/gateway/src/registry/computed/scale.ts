import type { Request, Response } from 'express';
import { ApiError, groupVersion, isJsonObject, type ApiObject, type ManagedFieldsEntry, type ResourceDefinition, type ScaleSubresourcePaths } from '@svc/apimachinery';
import { AUTOSCALING_GROUP, SCALE_PRINTER_COLUMNS, SCALE_SCHEMA, UNSET_SPEC_REPLICAS, desiredReplicas, objectManagedFields, scaleFromObject, scaleManagedFields, validateScale, withSpecReplicas } from '@svc/kinds';
import { apply, jsonPatch, mergePatch, strategicMergePatch } from '@svc/merge';
import { decodeBody, mediaTypeOf, parseJson, parseYaml } from '../../negotiation';
import { writeBody } from '../../responses';
import { includeObjectParam, toTable } from '../../table';
import { checkTypeMeta, decodeAgainstSchema, getObject, updateObject, type WriteContext } from '../store';
import type { AdmissionView } from '../write-context';
import { outputFormat, parseResourceVersion, query, readBody, readContext, writeContext, type ResourceRequest } from '../../handlers/common';
import { APPLY_JSON, APPLY_YAML, JSON_PATCH, MERGE_PATCH, STRATEGIC, applyOptions } from '../../handlers/patch';

/**
 * `<resource>/<name>/scale` of a custom resource with `subresources.scale`:
 * an autoscaling/v1 Scale read from the object (get) and written back as
 * its spec replicas path only (update, patch, server-side apply), through
 * the generic update of the object, so its validation, admission, managed
 * fields and generation apply as for any write of it. A resourceVersion the
 * Scale carries is a precondition (409 when stale); without one the write is
 * retried on a concurrent change. An apply owns fields of the Scale, which
 * are recorded on the object: `spec.replicas` is its spec replicas path.
 */

/** The Scale a write makes of the current object, and the object's managed fields when the write records them itself (apply). */
interface ScaleWrite {
  scale: ApiObject;
  managedFields?: ManagedFieldsEntry[];
}

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
  if (r.info.verb === 'get') {
    const format = outputFormat(req, r, true);
    const rv = parseResourceVersion(query(req, 'resourceVersion'));
    const stored = await getObject(readContext(req, r), r.info.name, rv ? { minRevision: rv } : {});
    const view = scaleFromObject(stored.object, paths);
    if (!view.specReplicasFound) throw ApiError.internal(`the spec replicas field ${JSON.stringify(paths.specReplicasPath)} does not exist`);
    if (format.kind === 'table') {
      const def = { ...scaleKind(r.def), printerColumns: SCALE_PRINTER_COLUMNS };
      const table = toTable(def, [view.scale], format.group, format.version, includeObjectParam(query(req, 'includeObject')));
      table.metadata.resourceVersion = view.scale.metadata?.resourceVersion ?? '';
      writeBody(req, res, 200, table, format);
      return;
    }
    writeBody(req, res, 200, view.scale, format);
    return;
  }
  const format = outputFormat(req, r, false);
  const type = mediaTypeOf(req.headers['content-type']);
  const isApply = r.info.verb === 'patch' && (type === APPLY_YAML || type === APPLY_JSON);
  // Apply records ownership itself; other writes are tracked as updates.
  const { fieldManager, ...applyCtx } = writeContext(req, r);
  const ctx = isApply ? applyCtx : { ...applyCtx, fieldManager };
  const body = await readBody(req, r.deps.limits.maxBodyBytes);
  let scaleOf: (current: ApiObject) => ScaleWrite;
  if (r.info.verb === 'update') {
    const decoded = decodeBody(req.headers['content-type'], body, undefined);
    const sent = decodeScale({ ...ctx, duplicateFields: decoded.duplicateFields }, r, decoded.object);
    scaleOf = () => ({ scale: sent });
  } else if (isApply) {
    scaleOf = scaleApplier(req, ctx, r, body, paths);
  } else {
    const patcher = scalePatcher(req, ctx, r, body, paths);
    scaleOf = (current) => ({ scale: patcher(current) });
  }
  const outcome = await updateObject({ ...ctx, admissionView: scaleAdmissionView(r, paths) }, r.info.name, {}, (current) => {
    if (!current.metadata) throw ApiError.notFound({ group: r.def.group, resource: r.def.plural }, r.info.name);
    const { scale, managedFields } = scaleOf(current);
    const next = withSpecReplicas(current, paths, desiredReplicas(scale));
    if (managedFields) next.metadata = { ...(next.metadata ?? {}), managedFields };
    const causes = validateScale(scale);
    if (causes.length > 0) throw ApiError.invalid({ group: AUTOSCALING_GROUP, kind: 'Scale' }, r.info.name, causes);
    const rv = scale.metadata?.resourceVersion;
    // A resourceVersion in the Scale is the client's precondition; without one the latest object is scaled.
    next.metadata = { ...(next.metadata ?? {}), resourceVersion: rv ? rv : current.metadata.resourceVersion };
    return { sent: scale, object: next };
  });
  writeBody(req, res, 200, scaleFromObject(outcome.result.object, paths).scale, format);
}

/**
 * Admission sees the Scale of the object, as the original admits a scale
 * subresource's write: a webhook that changes its replicas changes the
 * object's spec replicas path.
 */
function scaleAdmissionView(r: ResourceRequest, paths: ScaleSubresourcePaths): AdmissionView {
  return {
    kind: { group: AUTOSCALING_GROUP, version: 'v1', kind: 'Scale' },
    of: (obj) => scaleFromObject(obj, paths).scale,
    onto: (scale, obj) => {
      const causes = validateScale(scale);
      if (causes.length > 0) throw ApiError.invalid({ group: AUTOSCALING_GROUP, kind: 'Scale' }, r.info.name, causes);
      return withSpecReplicas(obj, paths, desiredReplicas(scale));
    },
  };
}

/** A Scale sent by the client: its type meta and field types checked (its name and namespace are the update's to check). */
function decodeScale(ctx: WriteContext, r: ResourceRequest, obj: ApiObject): ApiObject {
  const kind = scaleKind(r.def);
  checkTypeMeta(kind, obj);
  return decodeAgainstSchema({ ...ctx, def: kind }, obj);
}

/** The Scale of the current object, spec replicas unset marked so that a write setting none is refused. */
function currentScale(current: ApiObject, paths: ScaleSubresourcePaths): ApiObject {
  const view = scaleFromObject(current, paths);
  if (!view.specReplicasFound) view.scale['spec'] = { replicas: UNSET_SPEC_REPLICAS };
  return view.scale;
}

/**
 * Server-side apply of a Scale: the object's managers of its spec replicas
 * path become managers of the Scale's `spec.replicas`, the configuration is
 * applied to the Scale (a change of a field another manager owns is a 409
 * unless forced), and ownership goes back to the object under subresource
 * `scale`.
 */
function scaleApplier(req: Request, ctx: WriteContext, r: ResourceRequest, body: Buffer, paths: ScaleSubresourcePaths): (current: ApiObject) => ScaleWrite {
  const { fieldManager, force } = applyOptions(req);
  if (body.length === 0) throw ApiError.badRequest('the patch document is empty');
  const config = parseYaml(body);
  if (!isJsonObject(config)) throw ApiError.badRequest('the apply configuration must be an object');
  const kind = scaleKind(r.def);
  if (config['apiVersion'] !== groupVersion(kind)) {
    throw ApiError.badRequest(`Incorrect version specified in apply patch. Specified patch version: ${String(config['apiVersion'] ?? '')}, expected: ${groupVersion(kind)}`);
  }
  const now = ctx.now ?? new Date();
  return (current) => {
    const scale = currentScale(current, paths);
    const live = { ...scale, metadata: { ...(scale.metadata ?? {}), managedFields: scaleManagedFields(current.metadata?.managedFields, paths) } };
    const applied = apply({ live, applied: config, manager: fieldManager, force, apiVersion: groupVersion(kind), now, schema: SCALE_SCHEMA, subresource: 'scale' });
    const { managedFields: _owned, ...meta } = (applied.object['metadata'] ?? {}) as NonNullable<ApiObject['metadata']>;
    const sent = decodeScale(ctx, r, { ...(applied.object as ApiObject), metadata: meta });
    return { scale: sent, managedFields: objectManagedFields(current.metadata?.managedFields, applied.managedFields as ManagedFieldsEntry[], paths, groupVersion(r.def)) };
  };
}

/** Applies the patch to the Scale of the current object (JSON patch, merge patch or strategic merge patch). */
function scalePatcher(req: Request, ctx: WriteContext, r: ResourceRequest, body: Buffer, paths: ScaleSubresourcePaths): (current: ApiObject) => ApiObject {
  const type = mediaTypeOf(req.headers['content-type']);
  if (![JSON_PATCH, MERGE_PATCH, STRATEGIC].includes(type)) {
    throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${JSON_PATCH}, ${MERGE_PATCH}, ${APPLY_YAML}, ${STRATEGIC}`);
  }
  if (body.length === 0) throw ApiError.badRequest('the patch document is empty');
  const patch = parseJson(body);
  return (current) => {
    const scale = currentScale(current, paths);
    let patched: unknown;
    if (type === JSON_PATCH) patched = jsonPatch(scale, patch);
    else if (type === MERGE_PATCH) patched = mergePatch(scale, patch);
    else patched = strategicMergePatch(scale, patch, SCALE_SCHEMA);
    if (!isJsonObject(patched)) throw ApiError.badRequest('the patched object is not an object');
    return decodeScale(ctx, r, patched as ApiObject);
  };
}
