import type { Request, Response } from 'express';
import * as yaml from 'js-yaml';
import { ApiError, type ApiObject, type Status } from '@svc/apimachinery';
import { addWarning, logFrom, warningsFrom, queryValues, parsedRequestInfoFrom } from './context';
import type { StoredResult } from '@svc/storage/client';
import type { OutputFormat, ProtobufCodec } from './negotiation';
import { parseBoolParam } from './query-bool';

/**
 * Writing responses. `writeError` is the one place a failure becomes a
 * Status on the wire; `writeBody` encodes everything else in the negotiated
 * representation.
 */
/** The request's warnings as `Warning` headers (before the response starts; a watch sets them itself). */
export function setWarnings(req: Request, res: Response): void {
  const warnings = warningsFrom(req);
  if (warnings.length > 0 && !res.headersSent) {
    res.setHeader('Warning', warnings.map((w) => `299 - ${JSON.stringify(w)}`));
  }
}

export function writeError(req: Request, res: Response, err: unknown): void {
  const apiError = ApiError.from(err);
  const log = (() => {
    try {
      return logFrom(req);
    } catch {
      return undefined;
    }
  })();
  if (apiError.code >= 500) log?.error('request failed', { code: apiError.code, reason: apiError.reason, err: apiError.cause ?? apiError });
  if (res.headersSent) {
    // A stream already started (a watch): the best we can do is end it.
    res.end();
    return;
  }
  const retryAfter = apiError.retryAfterSeconds;
  if (retryAfter !== undefined) res.setHeader('Retry-After', String(retryAfter));
  for (const w of apiError.warnings) addWarning(req, w);
  setWarnings(req, res);
  const requested = parsedRequestInfoFrom(req);
  const status = requested?.requestedGroup ? statusAsRequested(apiError.toStatus(), requested.apiGroup, requested.requestedGroup) : apiError.toStatus();
  res.status(apiError.code).type('application/json').send(JSON.stringify(status));
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * A Status as the client named the group: a request through the upstream
 * name of one of our groups (`/apis/rbac.authorization.k8s.io/...`) is told
 * about `roles.rbac.authorization.k8s.io`, as the original server answers
 * it, in `details.group`, in the qualified names of the message
 * (`<resource>.<group>`, `<Kind>.<group>`) and in its `API group "<group>"`.
 * Values the message quotes (a roleRef as sent) are left as they are.
 */
export function statusAsRequested(status: Status, ours: string, theirs: string): Status {
  if (ours === theirs || ours === '') return status;
  const out: Status = { ...status };
  if (status.details?.group === ours) out.details = { ...status.details, group: theirs };
  if (status.message !== undefined) {
    const group = escapeRegExp(ours);
    out.message = status.message
      .replace(new RegExp(`(?<=[A-Za-z0-9])\\.${group}(?=[\\s":,]|$)`, 'g'), `.${theirs}`)
      .replace(new RegExp(`API group "${group}"`, 'g'), `API group "${theirs}"`);
  }
  return out;
}

export function pretty(req: Request): boolean {
  return parseBoolParam(queryValues(req, 'pretty'));
}

/**
 * The body as the client named its group. A request that used the upstream
 * name of one of our groups (`/apis/rbac.authorization.k8s.io/...`) gets
 * objects whose `apiVersion` says that group too, so clients built against
 * the upstream types decode them; everything else is untouched. Objects are
 * copied, never changed in place.
 */
export function presentAs(req: Request, body: unknown): unknown {
  const info = parsedRequestInfoFrom(req);
  if (!info?.requestedGroup || typeof body !== 'object' || body === null || Array.isArray(body)) return body;
  const ours = `${info.apiGroup}/${info.apiVersion}`;
  const theirs = `${info.requestedGroup}/${info.apiVersion}`;
  const rename = (value: unknown): unknown => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
    const obj = value as Record<string, unknown>;
    let out = obj;
    if (obj['apiVersion'] === ours) out = { ...out, apiVersion: theirs };
    if (obj['kind'] === 'Status' && obj['apiVersion'] === 'v1') out = statusAsRequested(out as unknown as Status, info.apiGroup, info.requestedGroup as string) as unknown as Record<string, unknown>;
    if (Array.isArray(obj['items'])) out = { ...out, items: (obj['items'] as unknown[]).map(rename) };
    if (typeof obj['type'] === 'string' && typeof obj['object'] === 'object') out = { ...out, object: rename(obj['object']) };
    return out;
  };
  return rename(body);
}

/** Whether the client sees objects as they are stored (under our group names, not renamed by presentAs). */
export function presentedAsStored(req: Request): boolean {
  return !parsedRequestInfoFrom(req)?.requestedGroup;
}

/** Whether a stored object's JSON is exactly what this response shows: plain JSON, not pretty, not renamed. */
export function sendsStoredJson(req: Request, format: OutputFormat): boolean {
  return format.kind === 'json' && !pretty(req) && presentedAsStored(req);
}

export function encodeBody(req: Request, rawBody: unknown, format: OutputFormat, protobuf: ProtobufCodec | undefined): Buffer {
  const body = presentAs(req, rawBody);
  switch (format.kind) {
    case 'yaml':
      return Buffer.from(yaml.dump(body, { noRefs: true, lineWidth: -1 }));
    case 'protobuf':
      if (!protobuf) throw ApiError.notAcceptable('protobuf is not available for this resource');
      return Buffer.from(protobuf.encode(body as ApiObject));
    default:
      return Buffer.from(pretty(req) ? JSON.stringify(body, null, 2) + '\n' : JSON.stringify(body));
  }
}

export function writeBody(req: Request, res: Response, code: number, body: unknown, format: OutputFormat, protobuf?: ProtobufCodec): void {
  const encoded = encodeBody(req, body, format, protobuf);
  setWarnings(req, res);
  res.status(code).setHeader('Content-Type', format.mediaType);
  res.end(encoded);
}

/**
 * Writes an object as storage answered it. A plain JSON answer reuses
 * storage's bytes when nothing has read (and so changed) the object, which
 * saves parsing and encoding it again.
 */
export function writeStored(req: Request, res: Response, code: number, stored: StoredResult, format: OutputFormat, protobuf?: ProtobufCodec): void {
  const raw = sendsStoredJson(req, format) ? stored.json : undefined;
  if (!raw) {
    writeBody(req, res, code, stored.object, format, protobuf);
    return;
  }
  setWarnings(req, res);
  res.status(code).setHeader('Content-Type', format.mediaType);
  res.end(raw);
}

/** Bytes written to a streamed response before it waits for the socket to drain. */
const STREAM_WRITE_BYTES = 512 * 1024;
/**
 * Chunks this large are written as they are: they are held elsewhere (the
 * cache's joined items), so copying them into a batch would only cost;
 * smaller ones are gathered into one buffer per write.
 */
const DIRECT_WRITE_BYTES = 32 * 1024;

/** Resolves true once `res` has drained, false when it closed first. */
function drained(res: Response): Promise<boolean> {
  if (res.destroyed || res.writableEnded) return Promise.resolve(false);
  return new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => () => {
      res.off('drain', onDrain);
      res.off('close', onClose);
      resolve(ok);
    };
    const onDrain = done(true);
    const onClose = done(false);
    res.once('drain', onDrain);
    res.once('close', onClose);
  });
}

/**
 * A 200 response written as its chunks come, about 512 KiB at a time (small
 * chunks gathered into one buffer, large ones written as they are); when
 * the client reads slower than we write, the next 512 KiB wait for the
 * socket to drain, so a response of any length holds a bounded number of
 * bytes in the gateway beyond what its chunks reference (the original
 * server's streaming list encoder). A client that goes away ends the
 * writing.
 */
export async function writeChunks(req: Request, res: Response, mediaType: string, chunks: Iterable<Uint8Array>): Promise<void> {
  setWarnings(req, res);
  res.status(200).setHeader('Content-Type', mediaType);
  let batch: Uint8Array[] = [];
  let gathered = 0;
  // Bytes written since the last wait, and whether a write since then found the socket's buffer full.
  let sent = 0;
  let full = false;
  const gather = (): void => {
    if (gathered === 0) return;
    if (!res.write(batch.length === 1 ? (batch[0] as Uint8Array) : Buffer.concat(batch, gathered))) full = true;
    batch = [];
    gathered = 0;
  };
  for (const chunk of chunks) {
    if (chunk.length >= DIRECT_WRITE_BYTES) {
      gather();
      if (!res.write(chunk)) full = true;
    } else {
      batch.push(chunk);
      gathered += chunk.length;
    }
    sent += chunk.length;
    if (sent < STREAM_WRITE_BYTES) continue;
    gather();
    sent = 0;
    if (full) {
      full = false;
      if (!(await drained(res))) return;
    }
  }
  res.end(Buffer.concat(batch, gathered));
}

/**
 * A JSON list written item by item (see writeChunks): the envelope (`body`
 * without its `field`), then the items as they come, then the end. Each of
 * `items` is one item's JSON or several joined by commas (the cache's
 * joined runs); a comma goes between them.
 */
export function writeJsonList(req: Request, res: Response, format: OutputFormat, body: object, field: string, items: Iterable<Buffer>): Promise<void> {
  return writeChunks(req, res, format.mediaType, jsonListChunks(body, field, items));
}

function* jsonListChunks(body: object, field: string, items: Iterable<Buffer>): Generator<Buffer> {
  const envelope: Record<string, unknown> = { ...body };
  delete envelope[field];
  const head = JSON.stringify(envelope);
  // The envelope with the list's field last, up to its opening bracket.
  yield Buffer.from(`${head.slice(0, -1)}${head.length > 2 ? ',' : ''}${JSON.stringify(field)}:[`);
  let first = true;
  for (const item of items) {
    if (!first) yield COMMA;
    first = false;
    yield item;
  }
  yield LIST_END;
}

const COMMA = Buffer.from(',');
const LIST_END = Buffer.from(']}');
