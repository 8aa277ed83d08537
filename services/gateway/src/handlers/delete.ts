import type { Request, Response } from 'express';
import { groupVersion, successStatus } from '@svc/apimachinery';
import { queryValues } from '../context';
import { writeBody } from '../responses';
import { deleteCollection, deleteObject, type DeleteOptions } from '../registry/store';
import { listReadOptions } from './list';
import { outputFormat, readBody, writeContext, type ResourceRequest } from './common';
import { parseDeleteOptions } from './delete-options';
import type { ProtobufCodec } from '../negotiation';

/** The request's DeleteOptions: see delete-options.ts for what is read, checked and refused. */
async function deleteOptions(req: Request, maxBytes: number, protobuf: ProtobufCodec | undefined): Promise<DeleteOptions> {
  const body = await readBody(req, maxBytes);
  return parseDeleteOptions((name) => queryValues(req, name), body, { contentType: req.headers['content-type'], protobuf });
}

/**
 * DELETE of one object. Most kinds answer with a success Status; kinds whose
 * registry entry says so answer with the object. An object with finalizers is
 * only marked for deletion and returned (202 would mean "later"; the
 * original server answers 200 with the object).
 */
export async function handleDelete(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, false);
  const options = await deleteOptions(req, r.deps.limits.maxBodyBytes, r.deps.protobuf);
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
  const options = await deleteOptions(req, r.deps.limits.maxBodyBytes, r.deps.protobuf);
  const ctx = { ...writeContext(req, r), dryRun: options.dryRun === true };
  const deleted = await deleteCollection(ctx, listReadOptions(req), options);
  writeBody(req, res, 200, { apiVersion: groupVersion(r.def), kind: r.def.listKind, metadata: { resourceVersion: String(deleted.revision) }, items: deleted.items }, format, r.deps.protobuf);
}
