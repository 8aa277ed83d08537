import { ApiError, checkFieldLabels, collectionPrefix, groupVersion, matchesSelectors, objectKey, parseFieldSelector, parseLabelSelector, type ApiObject } from '@svc/apimachinery';
import { activeContext, tracingEnabled, type Logger } from '@svc/service-kit';
import type { SharedConversion } from '../conversion/watch-conversion';
import type { Change, SharedObject } from '../watch/change';
import { sharedObjectsOf } from './storage-interface';
import { keyOf, listObjects, type ReadContext } from './store';

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

/**
 * What an event shows: the object, and when it is exactly a stored object
 * or a change every watcher shares, that too, so the event's bytes are
 * encoded once for all the watches that send it.
 */
export interface WatchPayload {
  object: unknown;
  /** The stored object the event shows unchanged (its JSON can be sent as it is). */
  shared?: SharedObject;
  /** The change the event comes from, shared by every watch it reaches. */
  change?: Change;
}

export interface WatchSink {
  /** Writes one event to the client; answers the bytes written but not yet read by the client. */
  send(type: WatchEventType, payload: WatchPayload): number;
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
  const { group, resource } = keyOf(def, namespace, '');
  const prefix = nameFilter && (namespace || !def.namespaced) ? objectKey({ group, resource, namespace, name: nameFilter }) : collectionPrefix({ group, resource, namespace });
  return { prefix, matches: (obj: ApiObject | undefined): boolean => obj !== undefined && matchesSelectors(obj, labels, fields) };
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

  const buffered: Change[] = [];
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

  const send = (type: WatchEventType, payload: WatchPayload): void => {
    if (closed) return;
    const unsent = sink.send(type, payload);
    if (unsent > limitBytes) abandon(`${unsent} bytes unsent`);
  };

  /** `shown` is the change as this watch's version shows it: the change's own objects, or their conversions. */
  const emitChange = (e: Change, obj: ApiObject | undefined, prev: ApiObject | undefined, shown: 'shared' | 'converted'): void => {
    const of = (object: unknown): WatchPayload => (shown === 'shared' ? { object, change: e, ...(e.object ? { shared: e.object } : {}) } : { object });
    // A kind stored as another is selected by its stored form's fields (as the original selects events by their core fields).
    const selected = (shownObject: ApiObject | undefined, stored: ApiObject | undefined): boolean => matches(shownObject !== undefined && def.storedAs ? stored : shownObject);
    if (e.type === 'DELETED') {
      if (selected(obj, e.object?.object)) send('DELETED', of(obj));
      return;
    }
    const now = selected(obj, e.object?.object);
    const before = e.type === 'MODIFIED' && selected(prev, e.prev?.object);
    if (now && before) send('MODIFIED', of(obj));
    else if (now) send('ADDED', of(obj));
    // Left the selector: the last state the watcher was shown, at this revision.
    else if (before && prev) send('DELETED', { object: { ...prev, metadata: { ...(prev.metadata ?? {}), resourceVersion: String(e.revision) } } });
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
  const convertAndEmit = (conversion: SharedConversion, e: Change, obj: ApiObject | undefined, prev: ApiObject | undefined): void => {
    const size = e.size;
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
        emitChange(e, obj ? shown[0] : undefined, prev ? shown[obj ? 1 : 0] : undefined, 'converted');
      } catch (err) {
        const apiError = ApiError.from(err);
        log.warn('watch ended: a change could not be converted', { resource: def.plural, version: def.version, err: apiError.message });
        finish(apiError);
      } finally {
        convertingBytes -= size;
      }
    });
  };

  const deliverChange = (e: Change): void => {
    if (e.revision <= cursor) return;
    cursor = e.revision;
    const obj = e.object?.object;
    const prev = e.prev?.object;
    if (shared) convertAndEmit(shared, e, obj, prev);
    else emitChange(e, obj, prev, 'shared');
  };

  // Register first, so nothing published while the starting state is read is missed.
  const registration = hub.register({
    prefix,
    deliver: (e) => {
      if (!live) {
        buffered.push(e);
        bufferedBytes += e.size;
        if (bufferedBytes > limitBytes) finish(ApiError.expired('the watch fell too far behind while it was starting'));
        return;
      }
      deliverChange(e);
    },
    expire: (reason) => finish(reason),
    end: () => finish(),
    resource: { group: def.group, version: def.version, plural: def.plural },
    ...(tracingEnabled() ? { traceContext: activeContext() } : {}),
  });
  // The resource may have stopped being served between routing and registering.
  if (deps.registry.lookup(def.group, def.version, def.plural) === undefined) finish();

  const start = async (): Promise<void> => {
    const rv = options.resourceVersion;
    try {
      if (rv === undefined || rv === 0 || options.sendInitialEvents) {
        const at = rv ? { minRevision: rv } : rv === 0 ? { any: true } : undefined;
        const page = await listObjects(ctx, { labelSelector: options.labelSelector, fieldSelector: options.fieldSelector, ...(at ? { at } : {}) });
        const objects = sharedObjectsOf(page);
        if (objects && !shared) for (const o of objects) send('ADDED', { object: o.object, shared: o });
        else for (const item of page.items) send('ADDED', { object: item });
        cursor = page.revision;
        if (options.sendInitialEvents && options.bookmarks) send('BOOKMARK', { object: bookmarkObject(ctx, cursor, true) });
      } else {
        cursor = rv;
      }
      // Fill in from the history what the hub dispatched before this watch registered.
      if (cursor < registration.from) {
        const { group, resource, namespace } = keyOf(def, ctx.namespace, '');
        const recent = deps.storage.changesAfter?.({ group, resource, namespace }, cursor, prefix);
        const events = recent ?? (await hub.catchUp(cursor, registration.from, prefix)).events;
        for (const e of events) if (e.revision <= registration.from) deliverChange(e);
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
        if (live && !closed) send('BOOKMARK', { object: bookmarkObject(ctx, Math.max(cursor, hub.revision), false) });
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
