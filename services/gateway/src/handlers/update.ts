import type { Request, Response } from 'express';
import { decodeBody } from '../negotiation';
import { writeStored } from '../responses';
import { updateObject } from '../registry/store';
import { outputFormat, protobufFor, readBody, subresourceWrite, writeContext, writeDefinition, type ResourceRequest } from './common';

/**
 * PUT of one object (200, or 201 when it created one). Through a
 * subresource only what it owns is taken from the body (`status`: the
 * status; `finalize`: spec.finalizers); on the main resource the kind's
 * strategy keeps the stored status.
 */
export async function handleUpdate(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, false);
  const body = await readBody(req, r.deps.limits.maxBodyBytes);
  const { object: obj, duplicateFields } = decodeBody(req.headers['content-type'], body, protobufFor(r));
  const ctx = { ...writeContext(req, r), duplicateFields };
  const sub = r.info.subresource;
  if (sub) {
    const outcome = await updateObject({ ...ctx, def: writeDefinition(r.def, sub) }, r.info.name, obj, (current) => ({ sent: obj, object: subresourceWrite(sub, obj, current) }));
    writeStored(req, res, 200, outcome.result, format, r.deps.protobuf);
    return;
  }
  const outcome = await updateObject(ctx, r.info.name, obj);
  writeStored(req, res, outcome.created ? 201 : 200, outcome.result, format, r.deps.protobuf);
}
