import { ApiError, checkFieldLabels, collectionPrefix, groupVersion, matchesSelectors, objectKey, parseFieldSelector, parseLabelSelector, type ApiObject } from '@svc/apimachinery';
import { watch } from '@svc/proto';
import type { Logger } from '@svc/service-kit';
import type { SharedConversion } from '../conversion/watch-conversion';
import { listObjects, type ReadContext } from './store';

/**
 * The store's watch: the changes of a collection (or of one object) after a
 * resourceVersion, selected by label and field selectors, in revision order,
 * once each, for every kind. It registers with the gateway's watch hub
 * before it reads the starting state, so nothing published meanwhile is
 * missed; fills in from watch-fanout's history what the hub dispatched
 * before it registered; converts events of kinds stored in another version;
 * and ends (with a Status the client sees as an ERROR event) when it cannot
 * keep these promises. What it sees it hands to a sink: the handler that
 * encodes events for the client.
 */
export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchOptions {
  /** Start after this revision; undefined or 0: start with the current state as ADDED events. */
  resourceVersion?: number;
  labelSelector: string;
  fieldSelector: string;
  /** Send the current state first even when a resourceVersion is given, then a bookmark marking its end (with `bookmarks`). */
  sendInitialEvents: boolean;
  bookmarks: boolean;
  /** How long the watch runs before the server ends it (clients re-watch). */
  lifetimeMs: number;
}

export interface WatchSink {
  /** Writes one event to the client; answers the bytes written but not yet read by the client. */
  send(type: WatchEventType, object: unknown): number;
  /** The client does not keep up: drop what it has not read (end follows). */
  abandon(): void;
  /** The watch is over: the client's stream ends (after an ERROR event with `err`'s Status, when there is one). */
  end(err?: ApiError): void;
}

export interface WatchHandle {
  /** Settles when the watch has ended, for whatever reason. */
  ended: Promise<void>;
  /** Ends the watch (the client went away). */
  stop(): void;
}

/** A watch's options as the store reads them: the selectors parsed, the key prefix it follows. */
function watchScope(ctx: ReadContext, options: WatchOptions) {
  const labels = parseLabelSelector(options.labelSelector);
  const fields = parseFieldSelector(options.fieldSelector);
  const { def } = ctx;
  const namespace = def.namespaced ? ctx.namespace : '';
  const nameFilter = fields.requirements.find((q) => q.field === 'metadata.name' && q.operator === '=')?.value;
  const prefix =
    nameFilter && (namespace || !def.namespaced)
      ? objectKey({ group: def.group, resource: def.plural, namespace, name: nameFilter })
      : collectionPrefix({ group: def.group, resource: def.plural, namespace });
  return { prefix, matches: (obj: ApiObject | undefined): boolean => obj !== undefined && matchesSelectors(obj, labels, fields) };
}

function parseObject(bytes: Uint8Array): ApiObject | undefined {
  if (bytes.length === 0) return undefined;
  return JSON.parse(Buffer.from(bytes).toString('utf8')) as ApiObject;
}

/** Refuses a watch the gateway cannot serve now: 503 until it follows the change stream, 429 at the cap of watches. */
export function admitWatch(ctx: ReadContext): void {
  const hub = ctx.deps.hub;
  if (!hub.isReady) throw ApiError.serviceUnavailable('the gateway is not yet following the change stream; try again', 1);
  if (hub.watcherCount >= ctx.deps.limits.maxWatches) {
    throw ApiError.tooManyRequests(`too many watches on this server (the limit is ${ctx.deps.limits.maxWatches}); try again later`, 1);
  }
}

export function bookmarkObject(ctx: Pick<ReadContext, 'def'>, revision: number, initialEventsEnd: boolean): ApiObject {
  const metadata: ApiObject['metadata'] = { resourceVersion: String(revision) };
  if (initialEventsEnd) metadata.annotations = { 'svc.io/initial-events-end': 'true', 'k8s.io/initial-events-end': 'true' };
  return { kind: ctx.def.kind, apiVersion: groupVersion(ctx.def), metadata };
}

export function watchObjects(ctx: ReadContext, options: WatchOptions, sink: WatchSink, log: Logger): WatchHandle {
  checkFieldLabels(ctx.def, options.fieldSelector);
  admitWatch(ctx);
  const { def, deps } = ctx;
  const hub = deps.hub;
  const { prefix, matches } = watchScope(ctx, options);
  const limitBytes = deps.limits.watchBufferBytes;

  const buffered: watch.ChangeEvent[] = [];
  let bufferedBytes = 0;
  let live = false;
  let closed = false;
  let cursor = 0;

  let finish: (err?: ApiError) => void = () => undefined;
  const ended = new Promise<void>((resolve) => {
    finish = (err) => {
      if (closed) return;
      closed = true;
      sink.end(err);
      resolve();
    };
  });

  /**
   * A client that does not read fills the socket's buffer; past the limit
   * the watch ends, its memory goes, and the client re-watches from the
   * last resourceVersion it saw (what the original server does with an
   * unresponsive watcher).
   */
  const abandon = (why: string): void => {
    if (closed) return;
    log.warn('watch ended: the client does not keep up', { why, limitBytes, resource: def.plural });
    sink.abandon();
    finish();
  };

  const send = (type: WatchEventType, object: unknown): void => {
    if (closed) return;
    const unsent = sink.send(type, object);
    if (unsent > limitBytes) abandon(`${unsent} bytes unsent`);
  };

  const emitChange = (e: watch.ChangeEvent, obj: ApiObject | undefined, prev: ApiObject | undefined): void => {
    if (e.type === watch.EventType.EVENT_TYPE_DELETED) {
      if (matches(obj)) send('DELETED', obj);
      return;
    }
    const now = matches(obj);
    const before = e.type === watch.EventType.EVENT_TYPE_MODIFIED && matches(prev);
    if (now && before) send('MODIFIED', obj);
    else if (now) send('ADDED', obj);
    // Left the selector: the last state the watcher was shown, at this revision.
    else if (before && prev) send('DELETED', { ...prev, metadata: { ...(prev.metadata ?? {}), resourceVersion: String(e.revision) } });
  };

  /**
   * A kind stored in another version shows its events converted, in order:
   * each change is converted once for every watch of this version (see
   * SharedConversion), this watch takes the conversions in the order of its
   * changes, and the bytes waiting for them count against the watch's
   * buffer like unsent ones. A failed conversion ends the watch with its
   * Status.
   */
  const shared = deps.watchConversions.for(def);
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
        log.warn('watch ended: a change could not be converted', { resource: def.plural, version: def.version, err: apiError.message });
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

  // Register first, so nothing published while the starting state is read is missed.
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
    resource: { group: def.group, version: def.version, plural: def.plural },
  });
  // The resource may have stopped being served between routing and registering.
  if (deps.registry.lookup(def.group, def.version, def.plural) === undefined) finish();

  const start = async (): Promise<void> => {
    const rv = options.resourceVersion;
    try {
      if (rv === undefined || rv === 0 || options.sendInitialEvents) {
        const page = await listObjects(ctx, { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector, ...(rv ? { at: { minRevision: rv } } : {}) });
        for (const item of page.items) send('ADDED', item);
        cursor = page.revision;
        if (options.sendInitialEvents && options.bookmarks) send('BOOKMARK', bookmarkObject(ctx, cursor, true));
      } else {
        cursor = rv;
      }
      // Fill in from the history what the hub dispatched before this watch registered.
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
      finish(apiError);
    }
  };

  const bookmarkTimer = options.bookmarks
    ? setInterval(() => {
        if (live && !closed) send('BOOKMARK', bookmarkObject(ctx, Math.max(cursor, hub.revision), false));
      }, 30000)
    : undefined;
  const lifetime = setTimeout(() => finish(), options.lifetimeMs);
  const done = start().then(() => ended);
  void ended.then(() => {
    clearTimeout(lifetime);
    if (bookmarkTimer) clearInterval(bookmarkTimer);
    registration.detach();
  });
  return { ended: done, stop: () => finish() };
}
