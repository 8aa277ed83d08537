import type { Request, Response } from 'express';
import { ApiError, groupVersion, parseFieldSelector, parseLabelSelector, type ApiObject } from '@svc/apimachinery';
import type { ListRequestOptions } from '@svc/storage/client';
import type { ListPage } from '@svc/storage/client';
import { sharedJsonOf, sharedObjectsOf } from '../registry/storage-interface';
import type { ProtobufCodec } from '../negotiation';
import { presentAs, presentedAsStored, pretty, writeBody, writeChunks, writeJsonList } from '../responses';
import { includeObjectParam, toTable } from '../table';
import { listObjects } from '../registry/store';
import { int64Query, outputFormat, protobufFor, parseResourceVersion, query, readContext, type ResourceRequest } from './common';

/**
 * The resourceVersion table of SPEC section 4 for lists: which state to read
 * given resourceVersion, resourceVersionMatch, limit and continue.
 */
export function listReadOptions(req: Request): ListRequestOptions {
  const rvRaw = query(req, 'resourceVersion');
  const rv = parseResourceVersion(rvRaw);
  const match = query(req, 'resourceVersionMatch') ?? '';
  // int64, as the original converts it; zero or less means no limit, as there.
  const limit = int64Query(req, 'limit');
  // Converted (and refused when invalid) like the other list options; a list answers well within any timeout.
  int64Query(req, 'timeoutSeconds');
  const cont = query(req, 'continue') ?? '';
  const options: ListRequestOptions = {};
  if (limit !== undefined && limit > 0) options.limit = limit;
  const labelSelector = query(req, 'labelSelector');
  const fieldSelector = query(req, 'fieldSelector');
  if (labelSelector) {
    parseLabelSelector(labelSelector);
    options.labelSelector = labelSelector;
  }
  if (fieldSelector) {
    parseFieldSelector(fieldSelector);
    options.fieldSelector = fieldSelector;
  }
  // resourceVersionMatch and its companions were checked with the other ListOptions (request-options.ts).
  if (cont) {
    if (rv !== undefined && rv > 0) throw ApiError.badRequest('specifying resource version is not allowed when using continue');
    options.continueToken = cont;
    return options;
  }
  if (match === 'Exact' && rv !== undefined && rv > 0) {
    options.at = { revision: rv };
  } else if (match === 'NotOlderThan') {
    options.at = rv !== undefined && rv > 0 ? { minRevision: rv } : { any: true };
  } else if (rv !== undefined && rv > 0) {
    // A chunked list at a given version reads exactly that version.
    options.at = options.limit ? { revision: rv } : { minRevision: rv };
  } else if (rv === 0) {
    // "0": any state the server holds (its cache).
    options.at = { any: true };
  }
  return options;
}

export async function handleList(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, true);
  const options = listReadOptions(req);
  const page = await listObjects(readContext(req, r), options);
  const metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number } = { resourceVersion: String(page.revision) };
  if (page.continueToken) metadata.continue = page.continueToken;
  if (page.remainingItemCount !== undefined && !options.labelSelector && !options.fieldSelector) metadata.remainingItemCount = page.remainingItemCount;
  if (format.kind === 'table') {
    const include = includeObjectParam(query(req, 'includeObject'));
    const table = toTable(r.def, [], format.group, format.version, include);
    table.metadata = metadata;
    const shared = sharedObjectsOf(page);
    const count = shared?.length ?? page.items.length;
    // Rows are made a batch at a time, so only one batch of parsed objects is held.
    const rows = function* (): Generator<Buffer> {
      for (let at = 0; at < count; at += ROW_BATCH) {
        const objects = shared ? shared.slice(at, at + ROW_BATCH).map((o) => o.object) : page.items.slice(at, at + ROW_BATCH);
        for (const row of toTable(r.def, objects, format.group, format.version, include).rows) yield Buffer.from(JSON.stringify(row));
      }
    };
    await writeJsonList(req, res, format, table, 'rows', rows());
    return;
  }
  const list = { apiVersion: groupVersion(r.def), kind: r.def.listKind, metadata, items: [] as unknown[] };
  const codec = protobufFor(r);
  if (format.kind === 'protobuf' && codec) {
    await writeChunks(req, res, format.mediaType, codec.encodeListChunks(presentAs(req, list) as ApiObject, protobufItems(req, page, codec)));
    return;
  }
  if (format.kind !== 'json' || pretty(req)) {
    list.items = page.items;
    writeBody(req, res, 200, list, format, r.deps.protobuf);
    return;
  }
  await writeJsonList(req, res, format, presentAs(req, list) as object, 'items', encodedItems(req, page));
}

const ROW_BATCH = 500;

/**
 * Each item's own protobuf message: a cached object's is made once and
 * kept with it (every protobuf list of it shares those bytes, as a watch
 * event's encoding is shared), an object from storage is encoded here.
 */
function protobufItems(req: Request, page: ListPage, codec: ProtobufCodec): Uint8Array[] {
  const shared = sharedObjectsOf(page);
  if (shared && presentedAsStored(req)) return shared.map((o) => o.encoded(PROTOBUF_ITEM, () => Buffer.from(codec.encodeObjectMessage(o.object))));
  return page.items.map((item) => codec.encodeObjectMessage(presentAs(req, item) as ApiObject));
}

const PROTOBUF_ITEM = 'protobuf-item';

/**
 * The items' JSON, as fragments of one or more items joined by commas: the
 * cache's joined bytes when the page has them and the client sees the
 * objects as stored, else encoded one at a time.
 */
function* encodedItems(req: Request, page: ListPage): Generator<Buffer> {
  const joined = presentedAsStored(req) ? sharedJsonOf(page) : undefined;
  if (joined) {
    yield* joined;
    return;
  }
  const shared = sharedObjectsOf(page);
  if (shared) {
    for (const o of shared) yield Buffer.from(JSON.stringify(presentAs(req, o.object)));
    return;
  }
  for (const item of page.items) yield Buffer.from(JSON.stringify(presentAs(req, item)));
}
