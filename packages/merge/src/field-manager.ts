/**
 * Field ownership for writes: server-side apply (`apply`) and the tracking of
 * ordinary writes (`trackUpdate`), both recording ownership in
 * `metadata.managedFields` (SPEC section 9, server-side apply rules).
 *
 * Both are pure: they copy their inputs, take the time from the caller, and
 * either return a complete result or throw a MergeError.
 */
import { FieldConflict, MergeError, MergeErrorCause, MergeErrorReason } from './errors';
import { FieldSet } from './field-set';
import { isJsonObject, jsonEqual, JsonObject, JsonValue, toJson } from './json';
import {
  capUpdateManagers,
  decodeManagedFields,
  decodeManagedFieldsOrEmpty,
  encodeManagedFields,
  formatTime,
  ManagedFieldsEntry,
  ManagedSets,
  managerId,
  ManagerRecord,
  UNOWNED_FIELDS,
} from './managed-fields';
import { serializedPathToString } from './path';
import type { Schema } from '@svc/apimachinery';
import { rootSchema } from './topology';
import { compareValues, fieldSetOfValue, LENIENT, mergeValues, pruneValue, reconcileWithSchema, WalkContext } from './typed';

/** The set of fields `obj` sets according to `schema`; a value that does not fit the schema is a BadRequest. */
export function fieldSetOf(obj: unknown, schema?: Schema): FieldSet {
  const value = toJson(obj, 'object');
  const ctx = new WalkContext(true);
  const set = fieldSetOfValue(value, rootSchema(schema), ctx);
  if (ctx.causes.length > 0) throw MergeError.fromCauses('BadRequest', 'the object does not match its schema', ctx.causes);
  return set;
}

export interface ApplyOptions {
  /** The stored object, or undefined when the apply creates it. */
  live: unknown;
  /** The applied configuration: a partial object with `metadata`, without `metadata.managedFields`. */
  applied: unknown;
  manager: string;
  /** Take conflicting fields from their owners instead of failing. */
  force?: boolean;
  /** API version of the request; recorded in the manager's entry. */
  apiVersion: string;
  /** The current time (the caller's clock). */
  now: Date;
  /** Structural schema of the kind; undefined for unstructured objects. */
  schema?: Schema;
  subresource?: string;
  /** Fields the request may not set (reset by the kind's strategy): never owned, never in conflict. */
  ignoredFields?: FieldSet;
  /**
   * Fields whose conflicts do not stop the apply (see last-applied.ts): when
   * every conflict is on one of them the apply proceeds as forced; otherwise
   * the conflict error names only the others.
   */
  forgivenConflicts?: FieldSet;
}

export interface ApplyResult {
  /** The merged object, `metadata.managedFields` included. */
  object: JsonObject;
  managedFields: ManagedFieldsEntry[];
  /** False when the object (apart from managedFields) is unchanged. */
  changed: boolean;
}

/**
 * Server-side apply. The manager ends up owning exactly the fields of this
 * configuration; fields it applied last time and no longer applies are
 * released and, when nobody owns them any more, removed (or reset to their
 * schema default). Changing a field another manager owns is a Conflict
 * unless `force` moves the field to this manager.
 */
export function apply(options: ApplyOptions): ApplyResult {
  const { manager, force = false, apiVersion, now, subresource } = options;
  requireManager(manager, apiVersion);
  const schema = rootSchema(options.schema);
  const applied = toJson(options.applied, 'the applied configuration');
  if (!isJsonObject(applied)) throw badInput('BadRequest', '', 'the applied configuration must be an object');
  const appliedMeta = applied.metadata;
  if (!isJsonObject(appliedMeta)) {
    throw badInput('BadRequest', '.metadata', 'only objects with metadata can be applied');
  }
  if (appliedMeta.managedFields !== undefined && appliedMeta.managedFields !== null) {
    throw badInput('BadRequest', '.metadata.managedFields', 'metadata.managedFields must be nil');
  }

  const creating = options.live === undefined || options.live === null;
  const live = creating ? {} : toJson(options.live, 'the live object');
  if (!isJsonObject(live)) throw badInput('Invalid', '', 'only objects with metadata can be applied');
  const liveMeta = live.metadata;
  if (!creating && liveMeta !== undefined && !isJsonObject(liveMeta)) throw badInput('Invalid', '.metadata', 'only objects with metadata can be applied');
  const managed = reconcileAll(decodeManagedFields(isJsonObject(liveMeta) ? liveMeta.managedFields : undefined), schema);
  const base = withoutManagedFields(live);

  const ctx = new WalkContext(true);
  let appliedSet = fieldSetOfValue(applied, schema, ctx);
  if (ctx.causes.length > 0) throw MergeError.fromCauses('BadRequest', 'the applied configuration does not match the schema', ctx.causes);
  if (options.ignoredFields) appliedSet = appliedSet.recursiveDifference(options.ignoredFields);

  let merged = mergeValues(base, applied, schema) as JsonObject;

  const applierId = managerId(manager, 'Apply', apiVersion, subresource);
  const previous = managed.get(applierId);
  const next: ManagedSets = new Map(managed);
  next.set(applierId, { manager, operation: 'Apply', apiVersion, time: previous?.time, subresource: subresource || undefined, fields: appliedSet });

  if (previous && !previous.fields.isEmpty()) {
    let owned = FieldSet.empty();
    for (const r of next.values()) owned = owned.union(r.fields);
    merged = pruneValue(merged, previous.fields, owned, schema) as JsonObject;
  }

  const cmp = compareValues(base, merged, schema, LENIENT);
  let changedFields = cmp.modified.union(cmp.added).union(cmp.replaced);
  let removed = cmp.removed;
  if (options.ignoredFields) {
    changedFields = changedFields.recursiveDifference(options.ignoredFields);
    removed = removed.recursiveDifference(options.ignoredFields);
  }

  const conflicts: Array<[ManagerRecord, FieldSet]> = [];
  for (const [id, r] of next) {
    if (id === applierId) continue;
    const c = r.fields.intersection(changedFields);
    if (!c.isEmpty()) conflicts.push([r, c]);
  }
  if (conflicts.length > 0 && !force) {
    const { forgivenConflicts } = options;
    const left = forgivenConflicts ? unforgiven(conflicts, forgivenConflicts) : conflicts;
    if (left.length > 0) throw conflictError(left);
  }

  for (const [id, r] of next) {
    if (id === applierId) continue;
    const kept = r.fields.difference(changedFields).difference(removed);
    if (kept.isEmpty()) next.delete(id);
    else if (kept !== r.fields) next.set(id, { ...r, fields: kept });
  }

  const changed = creating || !jsonEqual(base, merged);
  const own = appliedSet.difference(UNOWNED_FIELDS);
  if (own.isEmpty()) next.delete(applierId);
  else {
    const time = changed || previous === undefined || previous.time === undefined ? formatTime(now) : previous.time;
    next.set(applierId, { manager, operation: 'Apply', apiVersion, time, subresource: subresource || undefined, fields: own });
  }

  const managedFields = encodeManagedFields(next);
  return { object: withManagedFields(merged, managedFields), managedFields, changed };
}

export interface TrackUpdateOptions {
  /** The stored object before the write, or undefined on create. */
  old: unknown;
  /** The object about to be stored, with `metadata.managedFields` as the client sent it. */
  new: unknown;
  manager: string;
  /** API version of the request; recorded in the manager's entry. */
  apiVersion: string;
  /** The current time (the caller's clock). */
  now: Date;
  schema?: Schema;
  subresource?: string;
  /** Fields the request may not set (reset by the kind's strategy): never owned. */
  ignoredFields?: FieldSet;
  /** Update entries kept before the oldest are folded into `ancient-changes`; 10 as upstream. */
  maxUpdateManagers?: number;
}

export interface TrackUpdateResult {
  object: JsonObject;
  managedFields: ManagedFieldsEntry[];
}

/**
 * Records an ordinary write (create, update, non-apply patch): the manager
 * takes every field whose value changed, and loses nothing; other managers
 * lose the fields changed or removed. Writes never conflict.
 *
 * managedFields in the new object: a single empty entry (`[{}]`) resets
 * ownership before the change is recorded; an empty or missing list keeps the
 * stored entries; a valid non-empty list replaces them (writes to a
 * subresource always keep the stored entries).
 */
export function trackUpdate(options: TrackUpdateOptions): TrackUpdateResult {
  const { manager, apiVersion, now, subresource } = options;
  requireManager(manager, apiVersion);
  const schema = rootSchema(options.schema);
  const incoming = toJson(options.new, 'the new object');
  if (!isJsonObject(incoming)) throw badInput('Invalid', '', 'the new object must be an object');
  const old = options.old === undefined || options.old === null ? {} : toJson(options.old, 'the old object');
  if (!isJsonObject(old)) throw badInput('Invalid', '', 'the old object must be an object');

  const oldMeta = isJsonObject(old.metadata) ? old.metadata : undefined;
  const newMeta = isJsonObject(incoming.metadata) ? incoming.metadata : undefined;
  let managed: ManagedSets;
  if (subresource) managed = decodeManagedFieldsOrEmpty(oldMeta?.managedFields);
  else if (isResetRequest(newMeta?.managedFields)) managed = new Map();
  else {
    const sent = decodeManagedFieldsOrEmpty(newMeta?.managedFields);
    managed = sent.size > 0 ? sent : decodeManagedFieldsOrEmpty(oldMeta?.managedFields);
  }
  managed = reconcileAll(managed, schema);

  const before = withoutManagedFields(old);
  const after = withoutManagedFields(incoming);
  // Writes are validated elsewhere and never fail on ownership: only list
  // items that cannot be told apart stop the tracking.
  const ctx = new WalkContext(true, false);
  const cmp = compareValues(before, after, schema, ctx);
  if (ctx.causes.length > 0) throw MergeError.fromCauses('Invalid', 'list items of the object cannot be identified', ctx.causes);
  let changedFields = cmp.modified.union(cmp.added);
  let removed = cmp.removed;
  if (options.ignoredFields) {
    changedFields = changedFields.recursiveDifference(options.ignoredFields);
    removed = removed.recursiveDifference(options.ignoredFields);
  }

  const next: ManagedSets = new Map();
  for (const [id, r] of managed) {
    const kept = r.fields.difference(changedFields).difference(removed);
    if (!kept.isEmpty()) next.set(id, kept === r.fields ? r : { ...r, fields: kept });
  }
  const taken = changedFields.difference(UNOWNED_FIELDS);
  if (!taken.isEmpty()) {
    const id = managerId(manager, 'Update', apiVersion, subresource);
    const prior = next.get(id);
    next.set(id, {
      manager,
      operation: 'Update',
      apiVersion,
      time: formatTime(now),
      subresource: subresource || undefined,
      fields: prior ? prior.fields.union(taken) : taken,
    });
  }
  const capped = capUpdateManagers(next, options.maxUpdateManagers);
  const managedFields = encodeManagedFields(capped);
  return { object: withManagedFields(after, managedFields), managedFields };
}

function requireManager(manager: string, apiVersion: string): void {
  if (typeof manager !== 'string' || manager === '') throw badInput('BadRequest', '', 'a field manager is required');
  if (typeof apiVersion !== 'string' || apiVersion === '') throw badInput('BadRequest', '.apiVersion', 'apiVersion must not be empty');
}

/** True for the one shape that asks to clear managedFields: a list holding a single empty entry. */
function isResetRequest(entries: JsonValue | undefined): boolean {
  return Array.isArray(entries) && entries.length === 1 && isJsonObject(entries[0]) && Object.keys(entries[0]).length === 0;
}

function reconcileAll(managed: ManagedSets, schema: Schema | undefined): ManagedSets {
  for (const [id, r] of managed) {
    const fields = reconcileWithSchema(r.fields, schema);
    if (fields !== r.fields) managed.set(id, { ...r, fields });
  }
  return managed;
}

function withoutManagedFields(obj: JsonObject): JsonObject {
  const meta = obj.metadata;
  if (!isJsonObject(meta) || !('managedFields' in meta)) return obj;
  const rest: JsonObject = { ...meta };
  delete rest.managedFields;
  return { ...obj, metadata: rest };
}

function withManagedFields(obj: JsonObject, entries: ManagedFieldsEntry[]): JsonObject {
  const meta: JsonObject = isJsonObject(obj.metadata) ? { ...obj.metadata } : {};
  if (entries.length > 0) meta.managedFields = entries as unknown as JsonValue[];
  else delete meta.managedFields;
  return { ...obj, metadata: meta };
}

function badInput(reason: MergeErrorReason, field: string, message: string): MergeError {
  return new MergeError(reason, message, [{ field: field || '.', message, reason: 'FieldValueInvalid' }]);
}

/** Upstream's display of a manager in conflicts: `"name"`, with its subresource, and `using <version>` for updaters. */
function describeManager(r: ManagerRecord): string {
  let s = JSON.stringify(r.manager);
  if (r.subresource) s += ` with subresource ${JSON.stringify(r.subresource)}`;
  if (r.operation === 'Update') s += ` using ${r.apiVersion}`;
  return s;
}

/** The conflicts on fields not in `forgiven` (a member of `forgiven` covers that exact field only). */
function unforgiven(conflicts: Array<[ManagerRecord, FieldSet]>, forgiven: FieldSet): Array<[ManagerRecord, FieldSet]> {
  const left: Array<[ManagerRecord, FieldSet]> = [];
  for (const [r, set] of conflicts) {
    const rest = set.difference(forgiven);
    if (!rest.isEmpty()) left.push([r, rest]);
  }
  return left;
}

function conflictError(conflicts: Array<[ManagerRecord, FieldSet]>): MergeError {
  const byManager = conflicts
    .map(([r, set]) => ({ r, who: describeManager(r), paths: [...set.serializedPaths()].map(serializedPathToString) }))
    .sort((a, b) => (a.who < b.who ? -1 : a.who > b.who ? 1 : 0));
  const causes: MergeErrorCause[] = [];
  const fields: FieldConflict[] = [];
  for (const { r, who, paths } of byManager) {
    for (const p of paths) {
      causes.push({ field: p, message: `conflict with ${who}`, reason: 'FieldManagerConflict' });
      const c: FieldConflict = { field: p, manager: r.manager, operation: r.operation, apiVersion: r.apiVersion };
      if (r.subresource) c.subresource = r.subresource;
      fields.push(c);
    }
  }
  let message: string;
  if (causes.length === 1) {
    message = `Apply failed with 1 conflict: conflict with ${byManager[0]?.who}: ${causes[0]?.field}`;
  } else {
    const lines: string[] = [];
    for (const { who, paths } of byManager) {
      lines.push(`conflicts with ${who}:`);
      for (const p of paths) lines.push(`- ${p}`);
    }
    message = `Apply failed with ${causes.length} conflicts: ${lines.join('\n')}`;
  }
  return MergeError.applyConflict(message, causes, fields);
}
