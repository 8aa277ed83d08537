import type { ApiObject, PrinterColumn, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import { invalid, isTimestamp, notSupported, required } from './field-errors';
import { asRecord, asString, isRecord } from './object-access';
import { OBJECT_REFERENCE_SCHEMA, objectSchema } from './object-meta';
import { described, int32, microTime, str, struct, time } from './schema-builders';

/**
 * Event (core v1): a report about something that happened to an object.
 * Events written in the newer style (with `eventTime`) must name their
 * reporter and action, as in the original server.
 */

const EVENT_TYPES = ['Normal', 'Warning'] as const;

export const EVENT_SCHEMA = objectSchema(
  'Event is a report of something that happened to an object.',
  {
    involvedObject: described(OBJECT_REFERENCE_SCHEMA, 'The object this event is about.'),
    reason: str('Short, machine-readable reason for the transition, in CamelCase.'),
    message: str('Human-readable description of what happened.'),
    source: struct({ component: str('Component that reported the event.'), host: str('Node name the event came from.') }, { description: 'Reporter of the event.' }),
    firstTimestamp: time('When the event was first recorded.'),
    lastTimestamp: time('When the most recent occurrence was recorded.'),
    count: int32('How many times the event occurred.'),
    type: str('Type of the event: Normal or Warning.'),
    eventTime: microTime('When the event was first observed, with microsecond precision.'),
    series: struct(
      { count: int32('Number of occurrences in the series so far.'), lastObservedTime: microTime('When the last occurrence was observed.') },
      { description: 'Data about a series of occurrences of the event.' },
    ),
    action: str('What action was taken or failed on the regarding object.'),
    related: described(OBJECT_REFERENCE_SCHEMA, 'A secondary object involved in the event.'),
    reportingComponent: str('Controller that emitted the event, such as `svc.io/scheduler`.'),
    reportingInstance: str('ID of the controller instance that emitted the event.'),
  },
  ['metadata', 'involvedObject'],
);

function validateEvent(obj: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const involved = obj['involvedObject'];
  if (!isRecord(involved)) return [required('involvedObject')];
  const involvedNamespace = asString(involved['namespace']) ?? '';
  const namespace = obj.metadata?.namespace ?? '';
  if (involvedNamespace !== '' && namespace !== '' && involvedNamespace !== namespace) {
    causes.push(invalid('involvedObject.namespace', involvedNamespace, 'does not match event.namespace'));
  }
  const type = obj['type'];
  const newStyle = obj['eventTime'] !== undefined && obj['eventTime'] !== null;
  if (newStyle) {
    if (!isTimestamp(obj['eventTime'])) causes.push(invalid('eventTime', obj['eventTime'], 'must be an RFC 3339 timestamp'));
    if (!asString(obj['reportingComponent'])) causes.push(required('reportingComponent'));
    if (!asString(obj['reportingInstance'])) causes.push(required('reportingInstance'));
    if (!asString(obj['action'])) causes.push(required('action'));
    if (!asString(obj['reason'])) causes.push(required('reason'));
    if (!(EVENT_TYPES as readonly unknown[]).includes(type)) causes.push(type === undefined ? required('type') : notSupported('type', type, EVENT_TYPES));
  } else if (type !== undefined && type !== '' && !(EVENT_TYPES as readonly unknown[]).includes(type)) {
    causes.push(notSupported('type', type, EVENT_TYPES));
  }
  for (const field of ['firstTimestamp', 'lastTimestamp']) {
    const v = obj[field];
    if (v !== undefined && v !== null && !isTimestamp(v)) causes.push(invalid(field, v, 'must be an RFC 3339 timestamp'));
  }
  const count = obj['count'];
  if (count !== undefined && !(typeof count === 'number' && count >= 0)) causes.push(invalid('count', count, 'must be greater than or equal to 0'));
  const reason = asString(obj['reason']);
  if (reason && reason.length > 128) causes.push(invalid('reason', reason, 'can have at most 128 characters'));
  const message = asString(obj['message']);
  if (message && message.length > 4096 && newStyle) causes.push(invalid('message', '<message redacted>', 'can have at most 4096 characters'));
  return causes;
}

function lastSeen(obj: ApiObject): string | null {
  return (
    asString(obj['lastTimestamp']) ??
    asString(asRecord(obj['series'])?.['lastObservedTime']) ??
    asString(obj['eventTime']) ??
    asString(obj['firstTimestamp']) ??
    obj.metadata?.creationTimestamp ??
    null
  );
}

/**
 * The columns of an event table, as kubectl shows events: when it was last
 * seen, its type and reason, the object it is about and what happened;
 * `fields` names where each form of the event keeps them.
 */
export function eventColumns(fields: { lastSeen: string; reference: string; message: string }, lastSeenOf: (obj: ApiObject) => string | null): PrinterColumn[] {
  return [
    { name: 'Last Seen', type: 'date', jsonPath: `.${fields.lastSeen}`, description: 'When the event last occurred.', compute: lastSeenOf },
    { name: 'Type', type: 'string', jsonPath: '.type', description: 'Normal or Warning.' },
    { name: 'Reason', type: 'string', jsonPath: '.reason', description: 'Why the event was reported.' },
    {
      name: 'Object',
      type: 'string',
      jsonPath: `.${fields.reference}`,
      description: 'The object the event is about.',
      compute: (obj) => {
        const reference = asRecord(obj[fields.reference]) ?? {};
        return `${(asString(reference['kind']) ?? '').toLowerCase()}/${asString(reference['name']) ?? ''}`;
      },
    },
    { name: 'Message', type: 'string', jsonPath: `.${fields.message}`, description: 'What happened.' },
  ];
}

export function eventDefinition(): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind: 'Event',
    listKind: 'EventList',
    plural: 'events',
    singular: 'event',
    shortNames: ['ev'],
    categories: [],
    namespaced: true,
    verbs: [...STANDARD_VERBS],
    subresources: [],
    schema: EVENT_SCHEMA,
    printerColumns: eventColumns({ lastSeen: 'lastTimestamp', reference: 'involvedObject', message: 'message' }, lastSeen),
    strategy: { validate: validateEvent },
    openApiName: 'io.svc.api.core.v1.Event',
    allowUnconditionalUpdate: true,
    allowCreateOnUpdate: true,
  };
}
