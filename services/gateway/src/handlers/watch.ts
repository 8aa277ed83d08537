import type { Request, Response } from 'express';
import type { ApiObject } from '@svc/apimachinery';
import { auditRecorderFrom, logFrom, queryValues } from '../context';
import { parseBoolParam } from '../query-bool';
import { startWatchRecorder, type WatchRecorder } from '../apiserver-metrics';
import { watchObjects, type WatchEventType, type WatchPayload } from '../registry/watch';
import { encodeBody, presentAs, pretty, sendsStoredJson, setWarnings } from '../responses';
import { parsedRequestInfoFrom } from '../context';
import { includeObjectParam, toTable, type IncludeObject } from '../table';
import { int64Query, outputFormat, parseResourceVersion, query, readContext, type ResourceRequest } from './common';

/**
 * A watch: a chunked stream of `{type, object}` documents, one per line (or
 * protobuf watch events). Without a resourceVersion (or with "0") it starts
 * with the current state as ADDED events; with one it continues exactly
 * after it. A version the history no longer holds ends the stream with an
 * ERROR event carrying a 410 Status, so the client re-lists. The store's
 * watch (registry/watch.ts) decides what is sent; this handler reads the
 * request's options and encodes the events.
 */
export async function handleWatch(req: Request, res: Response, r: ResourceRequest): Promise<void> {
  const format = outputFormat(req, r, true);
  const rv = parseResourceVersion(query(req, 'resourceVersion'));
  let fieldSelector = query(req, 'fieldSelector') ?? '';
  const sendInitialEvents = parseBoolParam(queryValues(req, 'sendInitialEvents'));
  const bookmarks = parseBoolParam(queryValues(req, 'allowWatchBookmarks'));
  // resourceVersionMatch with sendInitialEvents was checked with the other ListOptions (request-options.ts).
  // A watch of one object by its URL (the legacy /watch/ path) selects it by name.
  if (r.info.name && r.info.parts[1] === r.info.name && !fieldSelector.includes('metadata.name')) {
    fieldSelector = fieldSelector ? `${fieldSelector},metadata.name=${r.info.name}` : `metadata.name=${r.info.name}`;
  }
  // int64, as the original converts it; zero or less leaves the server's choice.
  const timeoutSeconds = int64Query(req, 'timeoutSeconds') ?? 0;
  // A watch has no pages, but its limit is converted (and refused when invalid) as a list's is.
  int64Query(req, 'limit');
  const maxSeconds = r.deps.limits.maxWatchSeconds;
  const lifetimeMs = (timeoutSeconds > 0 ? Math.min(timeoutSeconds, maxSeconds) : maxSeconds * (0.5 + Math.random() / 2)) * 1000;
  const include: IncludeObject = format.kind === 'table' ? includeObjectParam(query(req, 'includeObject')) : 'Metadata';

  let headWritten = false;
  const writeHead = (): void => {
    if (headWritten || res.headersSent) return;
    headWritten = true;
    setWarnings(req, res);
    res.writeHead(200, { 'Content-Type': format.mediaType, 'Cache-Control': 'no-cache, private', 'Transfer-Encoding': 'chunked' });
    res.flushHeaders();
    auditRecorderFrom(req)?.responseStarted(200);
  };
  const encode = (type: WatchEventType, object: unknown): Buffer => {
    let payload = object;
    if (format.kind === 'table' && type !== 'ERROR' && type !== 'BOOKMARK') {
      payload = toTable(r.def, [object as ApiObject], format.group, format.version, include);
    }
    if (format.kind === 'protobuf' && r.deps.protobuf) return Buffer.from(r.deps.protobuf.encodeWatchEvent(type, presentAs(req, payload) as ApiObject));
    const line = encodeBody(req, { type, object: payload }, { kind: 'json', mediaType: 'application/json' }, undefined);
    return Buffer.concat([line, Buffer.from('\n')]);
  };
  /**
   * An event's bytes: a change every watcher shares is encoded once per
   * event type and representation (the key names both), and a stored
   * object sent as plain JSON is its stored bytes inside the event's frame.
   */
  const asStored = sendsStoredJson(req, format);
  const representation = `${format.kind}|${format.mediaType}|${include}|${pretty(req)}|${parsedRequestInfoFrom(req)?.requestedGroup ?? ''}`;
  /**
   * On HTTP/1.1 each event is one chunk of the chunked body, and a shared
   * change keeps its event already framed as that chunk (size line, bytes,
   * CRLF): it goes to each watcher's socket as one write of the same
   * buffer, beside the HTTP layer (which would frame and copy it for every
   * watcher). The response itself still ends through the HTTP layer, which
   * writes the last chunk. HTTP/2 frames its own streams.
   */
  const socket = req.httpVersion === '1.1' ? res.socket : null;
  const keys = eventKeys(socket ? `chunk|${representation}` : representation);
  const encodePayload = (type: WatchEventType, payload: WatchPayload): Buffer => {
    const { shared, change } = payload;
    const line = asStored && shared ? () => jsonEventLine(type, shared.json) : () => encode(type, payload.object);
    const make = socket ? () => chunkOf(line()) : line;
    return change ? change.encoded(keys[type], make) : make();
  };
  // The watcher is registered (apiserver_registered_watchers) once the watch is admitted, until it ends.
  let recorder: WatchRecorder | undefined;
  const encodeRecorded = (type: WatchEventType, payload: WatchPayload): Buffer => {
    const bytes = encodePayload(type, payload);
    (recorder ??= startWatchRecorder(r.def)).sent(bytes.length);
    return bytes;
  };

  const watch = watchObjects(
    readContext(req, r),
    { ...(rv !== undefined ? { resourceVersion: rv } : {}), labelSelector: query(req, 'labelSelector') ?? '', fieldSelector, sendInitialEvents, bookmarks, lifetimeMs },
    {
      send: (type, payload) => {
        writeHead();
        if (socket) {
          if (socket.destroyed) return 0;
          // The events of one batching interval leave in one write.
          r.deps.watchWrites.hold(socket);
          socket.write(encodeRecorded(type, payload));
          return socket.writableLength;
        }
        res.write(encodeRecorded(type, payload));
        return res.writableLength;
      },
      abandon: () => res.destroy(),
      end: (err) => {
        writeHead();
        if (err) res.write(encode('ERROR', err.toStatus()));
        res.end();
      },
    },
    logFrom(req),
  );
  writeHead();
  req.on('close', () => watch.stop());
  res.on('close', () => watch.stop());
  recorder ??= startWatchRecorder(r.def);
  try {
    await watch.ended;
  } finally {
    recorder.end();
  }
}

const LINE_END = Buffer.from('}\n');
const EVENT_PREFIXES = new Map<WatchEventType, Buffer>();

/** `{"type":...,"object":<json>}` and a newline, around an object's JSON as it is. */
export function jsonEventLine(type: WatchEventType, json: Buffer): Buffer {
  let prefix = EVENT_PREFIXES.get(type);
  if (!prefix) {
    prefix = Buffer.from(`{"type":${JSON.stringify(type)},"object":`);
    EVENT_PREFIXES.set(type, prefix);
  }
  return Buffer.concat([prefix, json, LINE_END]);
}

const CRLF = Buffer.from('\r\n');

/** One chunk of a chunked HTTP/1.1 body. */
function chunkOf(data: Buffer): Buffer {
  return Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`, 'latin1'), data, CRLF]);
}

/** The keys under which a watch's events are shared, made once per watch (a lookup then hashes no new string). */
function eventKeys(representation: string): Record<WatchEventType, string> {
  const types: WatchEventType[] = ['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR'];
  return Object.fromEntries(types.map((t) => [t, `${t}|${representation}`])) as Record<WatchEventType, string>;
}
