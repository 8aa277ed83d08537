import type { Request, Response } from 'express';
import { ApiError, checkAgainstSchema, duplicateJsonFields, groupVersion, isJsonObject, type ApiObject } from '@svc/apimachinery';
import { applyUpgradingClientSide, jsonPatch, mergePatch, strategicMergePatch } from '@svc/merge';
import { checkNesting, mediaTypeOf, parseJson, parseYaml } from '../negotiation';
import { writeBody } from '../responses';
import { createObject, updateObject, type ComputedWrite, type WriteContext } from '../registry/store';
import { undecodablePatch } from '../registry/decode-messages';
import { outputFormat, query, readBody, subresourceWrite, writeContext, writeDefinition, type ResourceRequest } from './common';
import { parseBoolParam } from '../query-bool';
import { queryValues } from '../context';

/**
 * PATCH: the patch document is applied to the current object inside the
 * generic update (so a concurrent change is retried, never lost), by its
 * content type: JSON patch, merge patch, strategic merge patch, or
 * server-side apply (which creates the object when it is missing).
 */
export const JSON_PATCH = 'application/json-patch+json';
export const MERGE_PATCH = 'application/merge-patch+json';
export const STRATEGIC = 'application/strategic-merge-patch+json';
export const APPLY_YAML = 'application/apply-patch+yaml';
export const APPLY_JSON = 'application/apply-patch+json';

/** Whether a patch's media type is a server-side apply. */
export function isApplyPatchType(type: string): boolean {
  return type === APPLY_YAML || type === APPLY_JSON;
}

/** The field manager and force of a server-side apply: the manager is required. */
export function applyOptions(req: Request): { fieldManager: string; force: boolean } {
  const fieldManager = query(req, 'fieldManager') ?? '';
  if (!fieldManager) {
    throw ApiError.invalid({ group: 'meta.svc.io', kind: 'PatchOptions' }, '', [{ reason: 'FieldValueRequired', field: 'fieldManager', message: 'Required value: is required for apply patch' }]);
  }
  return { fieldManager, force: parseBoolParam(queryValues(req, 'force')) };
}

/**
 * An apply configuration's YAML. A repeated key is the fieldValidation's to
 * judge, as the original's strict decoding does: Strict refuses it (400),
 * Warn warns of it, Ignore takes the last value.
 */
function parseApplyConfiguration(body: Buffer, ctx: Pick<WriteContext, 'fieldValidation' | 'warn'>): unknown {
  return parseYaml(body, (problem) => {
    if (ctx.fieldValidation === 'Strict') throw ApiError.badRequest(`error strict decoding YAML: error converting YAML to JSON: ${problem}`);
    if (ctx.fieldValidation === 'Warn') ctx.warn(problem);
  });
}

export async function handlePatch(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, false);
  const type = mediaTypeOf(req.headers['content-type']);
  if (![JSON_PATCH, MERGE_PATCH, STRATEGIC, APPLY_YAML, APPLY_JSON].includes(type)) {
    throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${JSON_PATCH}, ${MERGE_PATCH}, ${APPLY_YAML}, ${STRATEGIC}`);
  }
  if (type === STRATEGIC && r.def.strategicMergePatch === false) {
    throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: ${JSON_PATCH}, ${MERGE_PATCH}, ${APPLY_YAML}`);
  }
  const body = await readBody(req, r.deps.limits.maxBodyBytes);
  if (body.length === 0) throw ApiError.badRequest('the patch document is empty');
  const isApply = isApplyPatchType(type);
  // Apply records ownership itself; other patches are tracked as updates.
  const { fieldManager: updateManager, ...applyCtx } = writeContext(req, r);
  const patch = isApply ? parseApplyConfiguration(body, applyCtx) : parseJson(body);
  // A duplicate key of a merge patch is the patched object's: reported (or refused) by fieldValidation as a body's is.
  const duplicateFields = type === MERGE_PATCH || type === STRATEGIC ? duplicateJsonFields(body.toString('utf8')) : [];
  const ctx = isApply ? applyCtx : { ...applyCtx, fieldManager: updateManager, duplicateFields };
  const { fieldManager, force } = isApply ? applyOptions(req) : { fieldManager: '', force: false };
  if (isApply) {
    if (!isJsonObject(patch)) throw ApiError.badRequest('the apply configuration must be an object');
  } else if (query(req, 'force') !== undefined) {
    throw ApiError.badRequest('force: Forbidden: may not be specified for non-apply patch');
  }
  const sub = r.info.subresource;
  const def = writeDefinition(r.def, sub);
  const now = new Date();

  const patched = (current: ApiObject): ComputedWrite => {
    let next: unknown;
    switch (type) {
      case JSON_PATCH:
        next = jsonPatch(current, patch);
        break;
      case MERGE_PATCH:
        next = mergePatch(current, patch);
        break;
      case STRATEGIC:
        next = strategicMergePatch(current, patch, r.def.schema);
        break;
      default: {
        const applied = applyUpgradingClientSide({ live: current, applied: patch, manager: fieldManager, force, apiVersion: groupVersion(r.def), now, schema: r.def.schema, subresource: r.info.subresource });
        next = { ...applied.object, metadata: { ...((applied.object['metadata'] as object | undefined) ?? {}), managedFields: applied.managedFields } };
      }
    }
    if (!isJsonObject(next)) throw ApiError.badRequest('the patched object is not an object');
    checkNesting(next, 'the patched object');
    // The patched object's name and namespace are checked against the URL by
    // the update, so a patch that renames or moves the object is refused.
    const result = next as ApiObject;
    if (result.metadata !== undefined && !isJsonObject(result.metadata)) throw ApiError.badRequest('metadata must be an object');
    // A patched typed object that does not decode is the patch's fault: refused in the original patcher's words.
    if (!isApply && r.def.decoding !== 'unstructured') {
      const [undecodable] = checkAgainstSchema(result, r.def.schema, { formats: true }).typeErrors;
      if (undecodable) throw undecodablePatch(type === STRATEGIC, patch, result, undecodable);
    }
    return { sent: result, object: sub ? subresourceWrite(sub, result, current) : result };
  };

  try {
    const outcome = await updateObject({ ...ctx, def }, r.info.name, {}, (current) => {
      if (!current.metadata) {
        // Apply creates a missing object, but never through a subresource.
        if (!isApply || sub) throw ApiError.notFound({ group: r.def.group, resource: r.def.plural }, r.info.name);
        throw new MissingForApply();
      }
      return patched(current);
    });
    writeBody(req, res, outcome.created ? 201 : 200, outcome.result.object, format, r.deps.protobuf);
  } catch (err) {
    if (!(err instanceof MissingForApply)) throw err;
    // Server-side apply of a missing object creates it.
    const applied = applyUpgradingClientSide({ live: undefined, applied: patch, manager: fieldManager, force, apiVersion: groupVersion(r.def), now, schema: r.def.schema });
    const obj = { ...applied.object, metadata: { ...((applied.object['metadata'] as object | undefined) ?? {}), managedFields: applied.managedFields } } as ApiObject;
    const created = await createObject(ctx, obj, r.info.name);
    writeBody(req, res, 201, created.object, format, r.deps.protobuf);
  }
}

class MissingForApply extends Error {}
