import type { Request, Response } from 'express';
import {
  ApiError,
  collectionPrefix,
  groupVersion,
  objectKey,
  parseFieldSelector,
  parseLabelSelector,
  matchesSelectors,
  type ApiObject,
} from '@svc/apimachinery';
import { watch } from '@svc/proto';
import { logFrom, queryValues } from '../context';
import type { SharedConversion } from '../conversion/watch-conversion';
import { encodeBody, presentAs, setWarnings } from '../responses';
import { listObjects } from '../registry/store';
import { toTable, type IncludeObject } from '../table';
import { int64Query, outputFormat, parseResourceVersion, query, readContext, type ResourceRequest } from './common';
import { parseBoolParam } from '../query-bool';

/**
 * A watch: a chunked stream of `{type, object}` documents, one per line.
 * Without a resourceVersion (or with "0") it starts with the current state
 * as ADDED events; with one it continues exactly after it. A version the
 * history no longer holds ends the stream with an ERROR event carrying a 410
 * Status, so the client re-lists.
 */
type EventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

function parseObject(bytes: Uint8Array): ApiObject | undefined {
  if (bytes.length === 0) return undefined;
  return JSON.parse(Buffer.from(bytes).toString('utf8')) as ApiObject;
}

export async function handleWatch(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, true);
  const log = logFrom(req);
  const hub = r.deps.hub;
  // A watch is served only from a known position in the change stream.
  if (!hub.isReady) throw ApiError.serviceUnavailable('the gateway is not yet following the change stream; try again', 1);
  if (hub.watcherCount >= r.deps.limits.maxWatches) {
    throw ApiError.tooManyRequests(`too many watches on this server (the limit is ${r.deps.limits.maxWatches}); try again later`, 1);
  }
  const rv = parseResourceVersion(query(req, 'resourceVersion'));
  const labels = parseLabelSelector(query(req, 'labelSelector'));
  let fieldSelectorText = query(req, 'fieldSelector') ?? '';
  const sendInitialEvents = parseBoolParam(queryValues(req, 'sendInitialEvents'));
  const bookmarks = parseBoolParam(queryValues(req, 'allowWatchBookmarks'));
  const match = query(req, 'resourceVersionMatch');
  if (sendInitialEvents && match !== 'NotOlderThan') {
    throw ApiError.badRequest('resourceVersionMatch: Invalid value: must be "NotOlderThan" when sendInitialEvents is true');
  }
  if (!sendInitialEvents && match !== undefined && match !== '') {
    throw ApiError.badRequest('resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided');
  }
  if (r.info.name && r.info.parts[1] === r.info.name && !fieldSelectorText.includes('metadata.name')) {
    fieldSelectorText = fieldSelectorText ? `${fieldSelectorText},metadata.name=${r.info.name}` : `metadata.name=${r.info.name}`;
  }
  const fields = parseFieldSelector(fieldSelectorText);
  const namespace = r.def.namespaced ? r.info.namespace : '';
  const nameFilter = fields.requirements.find((q) => q.field === 'metadata.name' && q.operator === '=')?.value;
  const prefix = nameFilter && (namespace || !r.def.namespaced)
    ? objectKey({ group: r.def.group, resource: r.def.plural, namespace, name: nameFilter })
    : collectionPrefix({ group: r.def.group, resource: r.def.plural, namespace });
  const matches = (obj: ApiObject | undefined): boolean => obj !== undefined && matchesSelectors(obj, labels, fields);
  // int64, as the original converts it; zero or less leaves the server's choice.
  const timeoutSeconds = int64Query(req, 'timeoutSeconds') ?? 0;
  // A watch has no pages, but its limit is converted (and refused when invalid) as a list's is.
  int64Query(req, 'limit');
  const maxSeconds = r.deps.limits.maxWatchSeconds;
  const lifetimeMs = (timeoutSeconds > 0 ? Math.min(timeoutSeconds, maxSeconds) : maxSeconds * (0.5 + Math.random() / 2)) * 1000;
  const include = (query(req, 'includeObject') as IncludeObject | undefined) ?? 'Metadata';

  // Register first, so nothing published while we read the starting state is missed.
  const buffered: watch.ChangeEvent[] = [];
  let bufferedBytes = 0;
  let live = false;
  let closed = false;
  let cursor = 0;
  const limitBytes = r.deps.limits.watchBufferBytes;

  /**
   * A client that does not read fills the socket's buffer; past the limit
   * the watch ends, its memory goes, and the client re-watches from the
   * last resourceVersion it saw (what the original server does with an
   * unresponsive watcher).
   */
  const abandon = (why: string): void => {
    if (closed) return;
    log.warn('watch ended: the client does not keep up', { why, limitBytes, resource: r.def.plural });
    res.destroy();
    finish();
  };

  const write = (type: EventType, object: unknown): void => {
    if (closed) return;
    let payload = object;
    if (format.kind === 'table' && type !== 'ERROR' && type !== 'BOOKMARK') {
      payload = toTable(r.def, [object as ApiObject], format.group, format.version, include);
    }
    if (format.kind === 'protobuf' && r.deps.protobuf) {
      res.write(r.deps.protobuf.encodeWatchEvent(type, presentAs(req, payload) as ApiObject));
    } else {
      const line = encodeBody(req, { type, object: payload }, { kind: 'json', mediaType: 'application/json' }, undefined);
      res.write(Buffer.concat([line, Buffer.from('\n')]));
    }
    if (res.writableLength > limitBytes) abandon(`${res.writableLength} bytes unsent`);
  };

  const emitChange = (e: watch.ChangeEvent, obj: ApiObject | undefined, prev: ApiObject | undefined): void => {
    if (e.type === watch.EventType.EVENT_TYPE_DELETED) {
      if (matches(obj)) write('DELETED', obj);
      return;
    }
    const now = matches(obj);
    const before = e.type === watch.EventType.EVENT_TYPE_MODIFIED && matches(prev);
    if (now && before) write('MODIFIED', obj);
    else if (now) write('ADDED', obj);
    // Left the selector: the last state the watcher was shown, at this revision.
    else if (before && prev) write('DELETED', { ...prev, metadata: { ...(prev.metadata ?? {}), resourceVersion: String(e.revision) } });
  };

  /**
   * A kind stored in another version shows its events converted, in order:
   * each change is converted once for every watch of this version (see
   * SharedConversion), this watch takes the conversions in the order of its
   * changes, and the bytes waiting for them count against the watch's
   * buffer like unsent ones. A failed conversion ends the watch with its
   * Status.
   */
  const shared = r.deps.watchConversions.for(r.def);
  let converting = Promise.resolve();
  let convertingBytes = 0;
  const convertAndEmit = (conversion: SharedConversion, e: watch.ChangeEvent, obj: ApiObject | undefined, prev: ApiObject | undefined): void => {
    const size = e.object.length + e.prevObject.length;
    convertingBytes += size;
    if (convertingBytes > limitBytes) {
      convertingBytes -= size;
      abandon(`${convertingBytes + size} bytes waiting for conversion`);
      return;
    }
    const stored = [obj, prev].filter((o): o is ApiObject => o !== undefined);
    const claim = conversion.claim(`${e.revision}:${e.key}`, stored);
    converting = converting.then(async () => {
      try {
        if (closed) return claim.release();
        const shown = await claim.take();
        emitChange(e, obj ? shown[0] : undefined, prev ? shown[obj ? 1 : 0] : undefined);
      } catch (err) {
        const apiError = ApiError.from(err);
        log.warn('watch ended: a change could not be converted', { resource: r.def.plural, version: r.def.version, err: apiError.message });
        finish(apiError);
      } finally {
        convertingBytes -= size;
      }
    });
  };

  const deliverChange = (e: watch.ChangeEvent): void => {
    if (e.revision <= cursor) return;
    cursor = e.revision;
    const obj = parseObject(e.object);
    const prev = parseObject(e.prevObject);
    if (shared) convertAndEmit(shared, e, obj, prev);
    else emitChange(e, obj, prev);
  };

  let finish: (err?: ApiError) => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    finish = (err) => {
      if (closed) return;
      if (err) write('ERROR', err.toStatus());
      closed = true;
      res.end();
      resolve();
    };
  });

  const registration = hub.register({
    prefix,
    deliver: (e) => {
      if (!live) {
        buffered.push(e);
        bufferedBytes += e.object.length + e.prevObject.length + e.key.length;
        if (bufferedBytes > limitBytes) finish(ApiError.expired('the watch fell too far behind while it was starting'));
        return;
      }
      deliverChange(e);
    },
    expire: (reason) => finish(reason),
    end: () => finish(),
    resource: { group: r.def.group, version: r.def.version, plural: r.def.plural },
  });
  // The resource may have stopped being served between routing and registering.
  if (r.deps.registry.lookup(r.def.group, r.def.version, r.def.plural) === undefined) finish();
  req.on('close', () => finish());
  res.on('close', () => finish());

  try {
    setWarnings(req, res);
    res.writeHead(200, { 'Content-Type': format.mediaType, 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    if (rv === undefined || rv === 0 || sendInitialEvents) {
      const page = await listObjects(readContext(req, r), { labelSelector: query(req, 'labelSelector') ?? '', fieldSelector: fieldSelectorText, ...(rv ? { at: { minRevision: rv } } : {}) });
      for (const item of page.items) write('ADDED', item);
      cursor = page.revision;
      if (sendInitialEvents && bookmarks) {
        write('BOOKMARK', bookmarkObject(r, cursor, true));
      }
    } else {
      cursor = rv;
    }
    // Fill in from the history what the hub dispatched before we registered.
    if (cursor < registration.from) {
      const { events } = await hub.catchUp(cursor, registration.from, prefix);
      for (const e of events) deliverChange(e);
      cursor = Math.max(cursor, registration.from);
    }
    live = true;
    for (const e of buffered.splice(0)) deliverChange(e);
  } catch (err) {
    const apiError = ApiError.from(err);
    if (apiError.code >= 500) log.error('watch failed to start', { err: apiError.cause ?? apiError });
    finish(apiError.code === 410 ? apiError : ApiError.from(err));
  }

  const bookmarkTimer = bookmarks
    ? setInterval(() => {
        if (live && !closed) write('BOOKMARK', bookmarkObject(r, Math.max(cursor, hub.revision), false));
      }, 30000)
    : undefined;
  const lifetime = setTimeout(() => finish(), lifetimeMs);
  await ended;
  clearTimeout(lifetime);
  if (bookmarkTimer) clearInterval(bookmarkTimer);
  registration.detach();
}

function bookmarkObject(r: ResourceRequest, revision: number, initialEventsEnd: boolean): ApiObject {
  const metadata: ApiObject['metadata'] = { resourceVersion: String(revision) };
  if (initialEventsEnd) metadata.annotations = { 'svc.io/initial-events-end': 'true', 'k8s.io/initial-events-end': 'true' };
  return { kind: r.def.kind, apiVersion: groupVersion(r.def), metadata };
}
