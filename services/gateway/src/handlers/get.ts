import type { Request, Response } from 'express';
import { writeBody, writeStored } from '../responses';
import { includeObjectParam, toTable } from '../table';
import { getObject } from '../registry/store';
import { outputFormat, parseResourceVersion, query, readContext, type ResourceRequest } from './common';

/** GET of one object: most recent when resourceVersion is unset, else not older than it. */
export async function handleGet(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, true);
  const rv = parseResourceVersion(query(req, 'resourceVersion'));
  const at = rv !== undefined && rv > 0 ? { minRevision: rv } : rv === 0 ? { any: true } : {};
  const stored = await getObject(readContext(req, r), r.info.name, at);
  if (format.kind === 'table') {
    const object = stored.object;
    const table = toTable(r.def, [object], format.group, format.version, includeObjectParam(query(req, 'includeObject')));
    table.metadata.resourceVersion = object.metadata?.resourceVersion ?? '';
    writeBody(req, res, 200, table, format);
    return;
  }
  writeStored(req, res, 200, stored, format, r.deps.protobuf);
}
