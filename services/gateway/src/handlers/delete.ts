import type { Request, Response } from 'express';
import { ApiError, groupVersion, isJsonObject, successStatus } from '@svc/apimachinery';
import { parseJson } from '../negotiation';
import { writeBody } from '../responses';
import { deleteObject, resourceStorage, type DeleteOptions } from '../rest';
import { listReadOptions } from './list';
import { callOptions, dryRunOf, int64Query, outputFormat, parseDryRun, query, readBody, writeContext, type ResourceRequest } from './common';

/**
 * DeleteOptions from the body and the query, parsed once: a field set in
 * the body wins over the same query parameter, as the original server
 * decodes the body over the query's values. Wrong types are 400 naming the
 * field, never ignored.
 */
async function deleteOptions(req: Request, maxBytes: number): Promise<DeleteOptions> {
  const body = await readBody(req, maxBytes);
  const options: DeleteOptions = { dryRun: parseDryRun(req) };
  const policy = query(req, 'propagationPolicy');
  if (policy !== undefined) options.propagationPolicy = policy;
  const grace = int64Query(req, 'gracePeriodSeconds');
  if (grace !== undefined) options.gracePeriodSeconds = grace;
  if (body.length > 0) {
    const parsed = parseJson(body);
    if (!isJsonObject(parsed)) throw ApiError.badRequest('DeleteOptions must be a JSON object');
    const invalid = (field: string, value: unknown, want: string): ApiError => ApiError.badRequest(`DeleteOptions.${field}: Invalid value: ${JSON.stringify(value)}: must be ${want}`);
    const pre = parsed['preconditions'];
    if (pre !== undefined && pre !== null) {
      if (!isJsonObject(pre)) throw invalid('preconditions', pre, 'an object');
      options.preconditions = {};
      for (const field of ['uid', 'resourceVersion'] as const) {
        const v = pre[field];
        if (v === undefined || v === null) continue;
        if (typeof v !== 'string') throw invalid(`preconditions.${field}`, v, 'a string');
        options.preconditions[field] = v;
      }
    }
    const bodyPolicy = parsed['propagationPolicy'];
    if (bodyPolicy !== undefined && bodyPolicy !== null) {
      if (typeof bodyPolicy !== 'string') throw invalid('propagationPolicy', bodyPolicy, 'a string');
      options.propagationPolicy = bodyPolicy;
    }
    const bodyGrace = parsed['gracePeriodSeconds'];
    if (bodyGrace !== undefined && bodyGrace !== null) {
      if (typeof bodyGrace !== 'number' || !Number.isInteger(bodyGrace)) throw invalid('gracePeriodSeconds', bodyGrace, 'an integer');
      options.gracePeriodSeconds = bodyGrace;
    }
    const dryRun = parsed['dryRun'];
    if (dryRun !== undefined && dryRun !== null) {
      if (!Array.isArray(dryRun) || dryRun.some((v) => typeof v !== 'string')) throw invalid('dryRun', dryRun, 'a list of strings');
      options.dryRun = dryRunOf(dryRun as string[]) || options.dryRun === true;
    }
  }
  if (options.propagationPolicy !== undefined && !['Orphan', 'Background', 'Foreground'].includes(options.propagationPolicy)) {
    throw ApiError.badRequest(`propagationPolicy ${JSON.stringify(options.propagationPolicy)} is invalid: supported values: "Orphan", "Background", "Foreground"`);
  }
  return options;
}

/**
 * DELETE of one object. Most kinds answer with a success Status; kinds whose
 * registry entry says so answer with the object. An object with finalizers is
 * only marked for deletion and returned (202 would mean "later"; the
 * original server answers 200 with the object).
 */
export async function handleDelete(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, false);
  const options = await deleteOptions(req, r.deps.limits.maxBodyBytes);
  const ctx = { ...writeContext(req, r), dryRun: options.dryRun === true };
  const outcome = await deleteObject(ctx, r.info.name, options);
  if (!outcome.removed || r.def.returnDeletedObject) {
    writeBody(req, res, 200, outcome.object, format, r.deps.protobuf);
    return;
  }
  const status = { ...successStatus({ name: r.info.name, group: r.def.group, kind: r.def.plural, uid: outcome.object.metadata?.uid ?? '' }), code: 200 };
  writeBody(req, res, 200, status, { kind: format.kind === 'yaml' ? 'yaml' : 'json', mediaType: format.kind === 'yaml' ? format.mediaType : 'application/json' });
}

/** DELETE of a collection: every matching object, answered with the list of what was deleted. */
export async function handleDeleteCollection(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, false);
  const options = await deleteOptions(req, r.deps.limits.maxBodyBytes);
  const ctx = { ...writeContext(req, r), dryRun: options.dryRun === true };
  const page = await resourceStorage(r.deps, r.def).list(
    { group: r.def.group, resource: r.def.plural, namespace: r.def.namespaced ? r.info.namespace : '' },
    { ...listReadOptions(req), limit: 0 },
    callOptions(req, r),
  );
  const deleted = [];
  for (const item of page.items) {
    try {
      const outcome = await deleteObject({ ...ctx, namespace: item.metadata?.namespace ?? '' }, item.metadata?.name ?? '', options);
      deleted.push(outcome.object);
    } catch (err) {
      // Gone in the meantime: nothing left to delete.
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
  }
  writeBody(req, res, 200, { apiVersion: groupVersion(r.def), kind: r.def.listKind, metadata: { resourceVersion: String(page.revision) }, items: deleted }, format, r.deps.protobuf);
}
