/**
 * `metadata.managedFields`: decoding entries into field sets per manager,
 * encoding them back in upstream order, the fields no manager ever owns, and
 * the cap on the number of `Update` entries.
 */
import { MergeError } from './errors';
import { FieldSet } from './field-set';
import { isJsonObject, JsonObject, JsonValue } from './json';

/** One entry of `metadata.managedFields` (SPEC section 2). */
export interface ManagedFieldsEntry {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  /** RFC 3339 time of the last change by this entry, at second precision. */
  time?: string;
  fieldsType: 'FieldsV1';
  fieldsV1: JsonObject;
  subresource?: string;
}

/** A decoded entry: who, how, and the set of fields owned. */
export interface ManagerRecord {
  manager: string;
  operation: 'Apply' | 'Update';
  apiVersion: string;
  time: string | undefined;
  subresource: string | undefined;
  fields: FieldSet;
}

/** Managers by identity; see managerId. */
export type ManagedSets = Map<string, ManagerRecord>;

/**
 * The identity of an entry. Appliers are one entry whatever the version they
 * applied with; updaters are one entry per API version.
 */
export function managerId(manager: string, operation: 'Apply' | 'Update', apiVersion: string, subresource: string | undefined): string {
  return JSON.stringify([manager, operation, operation === 'Update' ? apiVersion : '', subresource ?? '']);
}

export function recordId(r: Pick<ManagerRecord, 'manager' | 'operation' | 'apiVersion' | 'subresource'>): string {
  return managerId(r.manager, r.operation, r.apiVersion, r.subresource);
}

/** Decodes `metadata.managedFields`; a malformed entry is an Invalid error naming it. */
export function decodeManagedFields(entries: unknown, where = 'metadata.managedFields'): ManagedSets {
  const out: ManagedSets = new Map();
  if (entries === undefined || entries === null) return out;
  if (!Array.isArray(entries)) throw invalid(where, 'must be a list');
  entries.forEach((entry: unknown, i: number) => {
    const at = `${where}[${i}]`;
    if (!isJsonObject(entry)) throw invalid(at, 'must be an object');
    const { manager, operation, apiVersion, time, fieldsType, fieldsV1, subresource } = entry;
    if (operation !== 'Apply' && operation !== 'Update') throw invalid(`${at}.operation`, 'operation must be `Apply` or `Update`');
    if (typeof apiVersion !== 'string' || apiVersion === '') throw invalid(`${at}.apiVersion`, 'apiVersion must not be empty');
    if (fieldsType === undefined || fieldsType === '') throw invalid(`${at}.fieldsType`, `missing fieldsType in managed fields entry ${i}`);
    if (fieldsType !== 'FieldsV1') throw invalid(`${at}.fieldsType`, `invalid fieldsType ${JSON.stringify(fieldsType)} in managed fields entry ${i}`);
    if (manager !== undefined && typeof manager !== 'string') throw invalid(`${at}.manager`, 'must be a string');
    if (time !== undefined && time !== null && typeof time !== 'string') throw invalid(`${at}.time`, 'must be a string');
    if (subresource !== undefined && typeof subresource !== 'string') throw invalid(`${at}.subresource`, 'must be a string');
    let fields: FieldSet;
    try {
      fields = fieldsV1 === undefined || fieldsV1 === null ? FieldSet.empty() : FieldSet.fromFieldsV1(fieldsV1, `${at}.fieldsV1`);
    } catch (err) {
      if (err instanceof MergeError) throw MergeError.invalidDocument(err.message, err.causes);
      throw err;
    }
    const record: ManagerRecord = {
      manager: manager ?? '',
      operation,
      apiVersion,
      time: typeof time === 'string' ? time : undefined,
      subresource: subresource ? subresource : undefined,
      fields,
    };
    out.set(recordId(record), record);
  });
  return out;
}

/** Like decodeManagedFields, but a malformed list counts as no list (stored objects must stay writable). */
export function decodeManagedFieldsOrEmpty(entries: unknown): ManagedSets {
  try {
    return decodeManagedFields(entries);
  } catch (err) {
    if (err instanceof MergeError) return new Map();
    throw err;
  }
}

function invalid(field: string, message: string): MergeError {
  return MergeError.invalidDocument(`${field}: ${message}`, [{ field, message, reason: 'FieldValueInvalid' }]);
}

function seconds(time: string | undefined): number {
  if (time === undefined) return 0;
  const ms = Date.parse(time);
  return Number.isNaN(ms) ? 0 : Math.floor(ms / 1000);
}

/** Encodes managers as entries, sorted as upstream sorts them (operation, time, manager, version, subresource). */
export function encodeManagedFields(managed: ManagedSets): ManagedFieldsEntry[] {
  const records = [...managed.values()].filter((r) => !r.fields.isEmpty());
  records.sort((p, q) => {
    if (p.operation !== q.operation) return p.operation < q.operation ? -1 : 1;
    const ps = seconds(p.time);
    const qs = seconds(q.time);
    if (ps !== qs) return ps < qs ? -1 : 1;
    if (p.manager !== q.manager) return p.manager < q.manager ? -1 : 1;
    if (p.apiVersion !== q.apiVersion) return p.apiVersion < q.apiVersion ? -1 : 1;
    const pr = p.subresource ?? '';
    const qr = q.subresource ?? '';
    return pr < qr ? -1 : pr > qr ? 1 : 0;
  });
  return records.map((r) => {
    const entry: ManagedFieldsEntry = { manager: r.manager, operation: r.operation, apiVersion: r.apiVersion } as ManagedFieldsEntry;
    if (r.time !== undefined) entry.time = r.time;
    entry.fieldsType = 'FieldsV1';
    entry.fieldsV1 = r.fields.toFieldsV1();
    if (r.subresource) entry.subresource = r.subresource;
    return entry;
  });
}

/** Entries as plain JSON, for storing in an object. */
export function entriesToJson(entries: ManagedFieldsEntry[]): JsonValue[] {
  return entries as unknown as JsonValue[];
}

/**
 * Fields no manager owns: type information and the metadata the server sets.
 * Removing these is not recursive, so `metadata` itself is dropped while
 * fields below it (labels, annotations, ...) are kept.
 */
export const UNOWNED_FIELDS: FieldSet = FieldSet.fromFieldsV1({
  'f:apiVersion': {},
  'f:kind': {},
  'f:metadata': {
    '.': {},
    'f:name': {},
    'f:namespace': {},
    'f:creationTimestamp': {},
    'f:selfLink': {},
    'f:uid': {},
    'f:clusterName': {},
    'f:generation': {},
    'f:managedFields': {},
    'f:resourceVersion': {},
  },
});

/** RFC 3339 at second precision, as timestamps are written in objects. */
export function formatTime(now: Date): string {
  if (Number.isNaN(now.getTime())) throw MergeError.badRequest('the clock returned an invalid time');
  return now.toISOString().replace(/\.\d{3}Z$/, 'Z');
}

export const DEFAULT_MAX_UPDATE_MANAGERS = 10;
export const ANCIENT_CHANGES_MANAGER = 'ancient-changes';

/**
 * Keeps at most `max` Update entries: the oldest are folded, per API version,
 * into one entry named `ancient-changes` that owns the union of their fields
 * and carries the time of the newest update folded in.
 */
export function capUpdateManagers(managed: ManagedSets, max = DEFAULT_MAX_UPDATE_MANAGERS): ManagedSets {
  const updaters = [...managed.entries()].filter(([, r]) => r.operation === 'Update');
  if (updaters.length <= max) return managed;
  const out: ManagedSets = new Map(managed);
  updaters.sort(([ia, a], [ib, b]) => {
    const sa = seconds(a.time);
    const sb = seconds(b.time);
    if (sa !== sb) return sa < sb ? -1 : 1;
    return ia < ib ? -1 : ia > ib ? 1 : 0;
  });
  const firstByVersion = new Map<string, string>();
  let count = updaters.length;
  for (let i = 0; i < updaters.length && count > max; i++) {
    const [id, record] = updaters[i] as [string, ManagerRecord];
    const bucketId = managerId(ANCIENT_CHANGES_MANAGER, 'Update', record.apiVersion, undefined);
    if (id === bucketId) {
      if (!firstByVersion.has(record.apiVersion)) firstByVersion.set(record.apiVersion, id);
      continue;
    }
    const first = firstByVersion.get(record.apiVersion);
    if (first === undefined) {
      firstByVersion.set(record.apiVersion, id);
      continue;
    }
    if (!out.has(bucketId)) {
      const firstRecord = out.get(first) as ManagerRecord;
      out.delete(first);
      out.set(bucketId, { ...firstRecord, manager: ANCIENT_CHANGES_MANAGER, subresource: undefined });
      firstByVersion.set(record.apiVersion, bucketId);
    }
    const bucket = out.get(bucketId) as ManagerRecord;
    out.set(bucketId, { ...bucket, fields: bucket.fields.union(record.fields), time: record.time });
    out.delete(id);
    count--;
  }
  return out;
}
