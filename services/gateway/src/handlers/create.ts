import type { Request, Response } from 'express';
import { auditRecorderFrom } from '../context';
import { decodeBody } from '../negotiation';
import { writeStored } from '../responses';
import { createObject } from '../registry/store';
import { outputFormat, protobufFor, readBody, writeContext, type ResourceRequest } from './common';

/** POST to a collection: decode, then the generic create pipeline; 201 with the stored object. */
export async function handleCreate(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, false);
  const body = await readBody(req, r.deps.limits.maxBodyBytes);
  const { object: obj, duplicateFields } = decodeBody(req.headers['content-type'], body, protobufFor(r));
  auditRecorderFrom(req)?.requestObjectMeta(obj.metadata?.name, obj.metadata?.namespace);
  const ctx = { ...writeContext(req, r), duplicateFields };
  const created = await createObject(ctx, obj);
  writeStored(req, res, 201, created, format, r.deps.protobuf);
}
