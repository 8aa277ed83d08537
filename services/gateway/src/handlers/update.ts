import type { Request, Response } from 'express';
import type { ApiObject } from '@svc/apimachinery';
import { decodeBody } from '../negotiation';
import { writeBody } from '../responses';
import { updateObject } from '../rest';
import { outputFormat, readBody, writeContext, type ResourceRequest } from './common';

/**
 * PUT of one object (200, or 201 when it created one). On the `status`
 * subresource only the status is taken from the body; on the main resource
 * the kind's strategy keeps the stored status.
 */
export async function handleUpdate(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, false);
  const body = await readBody(req, r.deps.limits.maxBodyBytes);
  const obj = decodeBody(req.headers['content-type'], body, r.deps.protobuf);
  const ctx = writeContext(req, r);
  if (r.info.subresource === 'status') {
    const statusOnly = (current: ApiObject): ApiObject => ({
      ...current,
      status: obj['status'],
      metadata: { ...(current.metadata ?? {}), resourceVersion: obj.metadata?.resourceVersion ?? current.metadata?.resourceVersion },
    });
    const def = { ...r.def, strategy: { ...r.def.strategy, prepareForUpdate: undefined } };
    const outcome = await updateObject({ ...ctx, def }, r.info.name, obj, statusOnly);
    writeBody(req, res, 200, outcome.result.object, format, r.deps.protobuf);
    return;
  }
  const outcome = await updateObject(ctx, r.info.name, obj);
  writeBody(req, res, outcome.created ? 201 : 200, outcome.result.object, format, r.deps.protobuf);
}
