import type { ApiObject, ResourceDefinition, StatusCause, StorageVersioning } from '@svc/apimachinery';
import { SYSTEM_NAMESPACE } from '@svc/apimachinery';
import { EVENT_SCHEMA, eventColumns, eventDefinition } from './event';
import { invalid, qualifiedNameErrors, required, tooLong } from './field-errors';
import { asRecord, asString, deepEqual } from './object-access';
import { OBJECT_REFERENCE_SCHEMA, objectSchema } from './object-meta';
import { described, int32, microTime, str, struct, time } from './schema-builders';

/**
 * Event of `events.svc.io/v1`: the newer form of the core v1 Event, stored
 * as one (the original server keeps both in the same storage), so an event
 * written through either is read through both. Fields that only the old
 * form had are kept under `deprecated*` names and may not be set in new
 * objects.
 */

export const EVENTS_GROUP = 'events.svc.io';
export const EVENTS_API_VERSION = `${EVENTS_GROUP}/v1`;
const CORE_API_VERSION = 'v1';

const EVENT_TYPES = ['Normal', 'Warning'] as const;
/** Length limits of the original server's event validation. */
const REPORTING_INSTANCE_MAX = 128;
const ACTION_MAX = 128;
const REASON_MAX = 128;
const NOTE_MAX = 1024;

export const EVENTS_V1_SCHEMA = objectSchema(
  'Event is a report of something that happened to an object: best-effort, informative data kept for a limited time.',
  {
    eventTime: microTime('When the event was first observed, with microsecond precision. Required.'),
    series: struct(
      {
        count: int32('Number of occurrences in the series up to the last heartbeat.'),
        lastObservedTime: microTime('When the last occurrence of the series was seen before the last heartbeat.'),
      },
      { description: 'Data about a series of occurrences of the event; unset for a singleton event.' },
    ),
    reportingController: str('Name of the controller that emitted the event, such as `svc.io/scheduler`. Required on create.'),
    reportingInstance: str('ID of the controller instance that emitted the event. Required on create, at most 128 characters.'),
    action: str('What action was taken or failed on the regarding object. Required on create, at most 128 characters.'),
    reason: str('Why the action was taken, in CamelCase. Required on create, at most 128 characters.'),
    regarding: described(OBJECT_REFERENCE_SCHEMA, 'The object this event is about.'),
    related: described(OBJECT_REFERENCE_SCHEMA, 'A secondary object the event involves.'),
    note: str('Human-readable description of the status of the action, at most 1024 characters.'),
    type: str('Type of the event: Normal or Warning.'),
    deprecatedSource: struct(
      { component: str('Component that reported the event.'), host: str('Node name the event came from.') },
      { description: 'The core v1 event\'s `source`, for compatibility; may not be set in new events.' },
    ),
    deprecatedFirstTimestamp: time('The core v1 event\'s `firstTimestamp`, for compatibility; may not be set in new events.'),
    deprecatedLastTimestamp: time('The core v1 event\'s `lastTimestamp`, for compatibility; may not be set in new events.'),
    deprecatedCount: int32('The core v1 event\'s `count`, for compatibility; may not be set in new events.'),
  },
  ['metadata', 'eventTime'],
);

/** Fields named alike in both forms. */
const SAME_FIELDS = ['eventTime', 'series', 'reportingInstance', 'action', 'reason', 'related', 'type'] as const;
/** `events.svc.io/v1` field and the core v1 field it is stored in. */
const RENAMED: ReadonlyArray<readonly [string, string]> = [
  ['regarding', 'involvedObject'],
  ['note', 'message'],
  ['reportingController', 'reportingComponent'],
  ['deprecatedSource', 'source'],
  ['deprecatedFirstTimestamp', 'firstTimestamp'],
  ['deprecatedLastTimestamp', 'lastTimestamp'],
  ['deprecatedCount', 'count'],
];

function copyFields(from: ApiObject, to: ApiObject, pairs: ReadonlyArray<readonly [string, string]>): void {
  for (const [source, target] of pairs) {
    const value = from[source];
    if (value !== undefined) to[target] = structuredClone(value);
  }
}

const SAME_PAIRS = SAME_FIELDS.map((f) => [f, f] as const);
const TO_CORE = [...SAME_PAIRS, ...RENAMED];
const FROM_CORE = [...SAME_PAIRS, ...RENAMED.map(([v1, core]) => [core, v1] as const)];

function converted(obj: ApiObject, apiVersion: string, pairs: ReadonlyArray<readonly [string, string]>): ApiObject {
  const out: ApiObject = { apiVersion, kind: 'Event' };
  if (obj.metadata !== undefined) out.metadata = structuredClone(obj.metadata);
  copyFields(obj, out, pairs);
  return out;
}

/**
 * An event in the other form, field by field as the original server
 * converts it: `regarding` is `involvedObject`, `note` is `message`,
 * `reportingController` is `reportingComponent`, the `deprecated*` fields
 * are the old ones, and the rest keep their names. An object already in
 * `apiVersion` (or of a version neither form knows) is returned as it is.
 */
export function convertEvent(obj: ApiObject, apiVersion: string): ApiObject {
  if (obj.apiVersion === apiVersion) return obj;
  if (apiVersion === CORE_API_VERSION && obj.apiVersion === EVENTS_API_VERSION) return converted(obj, apiVersion, TO_CORE);
  if (apiVersion === EVENTS_API_VERSION && obj.apiVersion === CORE_API_VERSION) return converted(obj, apiVersion, FROM_CORE);
  return obj;
}

function isSet(value: unknown): boolean {
  return value !== undefined && value !== null && value !== '';
}

function seriesErrors(obj: ApiObject): StatusCause[] {
  const series = obj['series'];
  if (series === undefined || series === null) return [];
  const record = asRecord(series) ?? {};
  const causes: StatusCause[] = [];
  const count = record['count'];
  if (typeof count !== 'number' || count < 2) causes.push(invalid('series.count', count ?? 0, 'should be at least 2'));
  if (!isSet(record['lastObservedTime'])) causes.push(required('series.lastObservedTime'));
  return causes;
}

function lengthErrors(field: string, value: string | undefined, max: number, isRequired: boolean): StatusCause[] {
  if (!value) return isRequired ? [required(field)] : [];
  return value.length > max ? [tooLong(field, max)] : [];
}

/**
 * What every event of this version must satisfy, created or updated (the
 * original's checks): one without eventTime (an old-style event read
 * through this version) only that its namespace agrees with the regarding
 * object's; one with it also names its reporter, action and reason.
 */
function commonErrors(obj: ApiObject): StatusCause[] {
  const namespace = obj.metadata?.namespace ?? '';
  const regardingNamespace = asString(asRecord(obj['regarding'])?.['namespace']) ?? '';
  const mismatch = invalid('regarding.namespace', regardingNamespace, 'does not match event.namespace');
  if (!isSet(obj['eventTime'])) {
    const agrees = regardingNamespace === '' ? namespace === '' || namespace === 'default' : namespace === regardingNamespace;
    return agrees ? [] : [mismatch];
  }
  const causes: StatusCause[] = [];
  if (regardingNamespace === '' && namespace !== 'default' && namespace !== SYSTEM_NAMESPACE) causes.push(mismatch);
  const controller = asString(obj['reportingController']);
  if (!controller) causes.push(required('reportingController'));
  else causes.push(...qualifiedNameErrors('reportingController', controller));
  causes.push(...lengthErrors('reportingInstance', asString(obj['reportingInstance']), REPORTING_INSTANCE_MAX, true));
  causes.push(...lengthErrors('action', asString(obj['action']), ACTION_MAX, true));
  causes.push(...lengthErrors('reason', asString(obj['reason']), REASON_MAX, true));
  causes.push(...lengthErrors('note', asString(obj['note']), NOTE_MAX, false));
  return causes;
}

const DEPRECATED_FIELDS = ['deprecatedSource', 'deprecatedFirstTimestamp', 'deprecatedLastTimestamp', 'deprecatedCount'] as const;

function deprecatedIsSet(obj: ApiObject, field: (typeof DEPRECATED_FIELDS)[number]): boolean {
  const value = obj[field];
  if (field === 'deprecatedSource') {
    const source = asRecord(value) ?? {};
    return isSet(source['component']) || isSet(source['host']);
  }
  return field === 'deprecatedCount' ? typeof value === 'number' && value !== 0 : isSet(value);
}

/** A new event: eventTime, the reporter, action and reason named, type Normal or Warning, no old-style field. */
export function validateEventCreate(obj: ApiObject): StatusCause[] {
  const causes = commonErrors(obj);
  causes.push(...seriesErrors(obj));
  if (!isSet(obj['eventTime'])) causes.push(required('eventTime'));
  const type = obj['type'];
  if (!(EVENT_TYPES as readonly unknown[]).includes(type)) {
    causes.push(invalid('type', type ?? '', `has invalid value: ${String(type ?? '')}; supported values: "Normal", "Warning"`));
  }
  for (const field of DEPRECATED_FIELDS) if (deprecatedIsSet(obj, field)) causes.push(invalid(field, '', 'needs to be unset'));
  return causes;
}

/** Fields an update may not change: everything but the series (and metadata). */
const IMMUTABLE_FIELDS = ['eventTime', 'reportingController', 'reportingInstance', 'action', 'reason', 'regarding', 'related', 'note', 'type', ...DEPRECATED_FIELDS];

/** An update may only move the series on (the original server's rule for events written through this version). */
export function validateEventUpdate(obj: ApiObject, old: ApiObject): StatusCause[] {
  const causes = commonErrors(obj);
  if (!deepEqual(obj['series'] ?? null, old['series'] ?? null)) causes.push(...seriesErrors(obj));
  for (const field of IMMUTABLE_FIELDS) {
    if (!deepEqual(obj[field] ?? null, old[field] ?? null)) causes.push(invalid(field, obj[field] ?? null, 'field is immutable'));
  }
  return causes;
}

function lastSeen(obj: ApiObject): string | null {
  return (
    asString(asRecord(obj['series'])?.['lastObservedTime']) ??
    asString(obj['deprecatedLastTimestamp']) ??
    asString(obj['eventTime']) ??
    asString(obj['deprecatedFirstTimestamp']) ??
    obj.metadata?.creationTimestamp ??
    null
  );
}

/** Objects being updated (marked by prepareForUpdate, which the store calls before validating an update). */
const UPDATING = new WeakSet<ApiObject>();

/** Stored as core v1 events, converted on every read and write. */
const STORED_AS_CORE: StorageVersioning = {
  storageVersion: 'v1',
  conversion: { strategy: 'Builtin', convert: convertEvent },
  applyVersionDefaults: () => undefined,
  schemaOf: (apiVersion) => (apiVersion === CORE_API_VERSION ? EVENT_SCHEMA : apiVersion === EVENTS_API_VERSION ? EVENTS_V1_SCHEMA : undefined),
};

export function eventsV1Definition(): ResourceDefinition {
  return {
    // Named, scoped and served as the core event is.
    ...eventDefinition(),
    group: EVENTS_GROUP,
    schema: EVENTS_V1_SCHEMA,
    printerColumns: eventColumns({ lastSeen: 'series.lastObservedTime', reference: 'regarding', message: 'note' }, lastSeen),
    strategy: {
      // The create rules hold for new events only: an update is held to the update rules.
      prepareForUpdate: (obj) => void UPDATING.add(obj),
      validate: (obj) => (UPDATING.has(obj) ? [] : validateEventCreate(obj)),
      validateUpdate: validateEventUpdate,
    },
    openApiName: 'io.svc.api.events.v1.Event',
    storageVersioning: STORED_AS_CORE,
    storedAs: { group: '', resource: 'events' },
    // Field selectors are evaluated on the stored (core) form, as in the original server.
    selectableFields: ['involvedObject.kind', 'involvedObject.namespace', 'involvedObject.name', 'involvedObject.uid', 'involvedObject.apiVersion', 'involvedObject.resourceVersion', 'involvedObject.fieldPath', 'reason', 'reportingComponent', 'source', 'type'],
  };
}
