import type { ApiObject } from '@svc/apimachinery';
import { convertEvent, eventsV1Definition, validateEventCreate, validateEventUpdate } from './events-v1';

const def = eventsV1Definition();

function newEvent(overrides: Record<string, unknown> = {}): ApiObject {
  return {
    apiVersion: 'events.svc.io/v1',
    kind: 'Event',
    metadata: { name: 'web.1', namespace: 'shop' },
    eventTime: '2026-01-02T03:04:05.123456Z',
    reportingController: 'svc.io/deployment-controller',
    reportingInstance: 'controller-manager-1',
    action: 'Scale',
    reason: 'ScalingReplicaSet',
    regarding: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web', uid: 'u-1' },
    note: 'Scaled up to 3',
    type: 'Normal',
    ...overrides,
  };
}

const fields = (causes: { field?: string; reason?: string }[]) => causes.map((c) => [c.field, c.reason]);

describe('events.svc.io/v1 Event', () => {
  it('is served in its own group and stored as core events, converted on the way', () => {
    expect([def.group, def.version, def.kind, def.plural, def.openApiName]).toEqual(['events.svc.io', 'v1', 'Event', 'events', 'io.svc.api.events.v1.Event']);
    expect(def.storedAs).toEqual({ group: '', resource: 'events' });
    expect(def.storageVersioning?.storageVersion).toBe('v1');
    expect(def.storageVersioning?.conversion.strategy).toBe('Builtin');
  });

  it('accepts a new event naming its time, reporter, action, reason and type', () => {
    expect(validateEventCreate(newEvent())).toEqual([]);
    expect(def.strategy.validate?.(newEvent())).toEqual([]);
  });

  it('requires eventTime, reportingController, reportingInstance, action and reason on create', () => {
    const obj = newEvent({ eventTime: undefined, reportingController: undefined, reportingInstance: '', action: undefined, reason: undefined });
    // Without eventTime the other fields are held to the old-style rules: eventTime itself is what is missing.
    expect(fields(validateEventCreate(obj))).toEqual([['eventTime', 'FieldValueRequired']]);
    const timed = newEvent({ reportingController: undefined, reportingInstance: '', action: undefined, reason: undefined });
    expect(fields(validateEventCreate(timed))).toEqual([
      ['reportingController', 'FieldValueRequired'],
      ['reportingInstance', 'FieldValueRequired'],
      ['action', 'FieldValueRequired'],
      ['reason', 'FieldValueRequired'],
    ]);
  });

  it('allows only Normal and Warning as the type', () => {
    expect(fields(validateEventCreate(newEvent({ type: 'Info' })))).toEqual([['type', 'FieldValueInvalid']]);
    expect(fields(validateEventCreate(newEvent({ type: undefined })))).toEqual([['type', 'FieldValueInvalid']]);
    expect(validateEventCreate(newEvent({ type: 'Warning' }))).toEqual([]);
  });

  it('refuses the deprecated fields in a new event', () => {
    const obj = newEvent({
      deprecatedSource: { component: 'kubelet' },
      deprecatedFirstTimestamp: '2026-01-02T03:04:05Z',
      deprecatedLastTimestamp: '2026-01-02T03:04:05Z',
      deprecatedCount: 4,
    });
    const causes = validateEventCreate(obj);
    expect(fields(causes)).toEqual([
      ['deprecatedSource', 'FieldValueInvalid'],
      ['deprecatedFirstTimestamp', 'FieldValueInvalid'],
      ['deprecatedLastTimestamp', 'FieldValueInvalid'],
      ['deprecatedCount', 'FieldValueInvalid'],
    ]);
    expect(causes[0]?.message).toContain('needs to be unset');
    // Empty values are unset.
    expect(validateEventCreate(newEvent({ deprecatedSource: {}, deprecatedCount: 0 }))).toEqual([]);
  });

  it('checks lengths, the reporter name and the series', () => {
    const long = 'x'.repeat(129);
    const obj = newEvent({ reportingController: 'not a name', reportingInstance: long, action: long, reason: long, note: 'n'.repeat(1025), series: { count: 1 } });
    expect(fields(validateEventCreate(obj))).toEqual([
      ['reportingController', 'FieldValueInvalid'],
      ['reportingInstance', 'FieldValueTooLong'],
      ['action', 'FieldValueTooLong'],
      ['reason', 'FieldValueTooLong'],
      ['note', 'FieldValueTooLong'],
      ['series.count', 'FieldValueInvalid'],
      ['series.lastObservedTime', 'FieldValueRequired'],
    ]);
  });

  it('refuses an event about an object without a namespace outside default and the system namespace', () => {
    const node = { kind: 'Node', name: 'n1' };
    expect(fields(validateEventCreate(newEvent({ regarding: node })))).toEqual([['regarding.namespace', 'FieldValueInvalid']]);
    expect(validateEventCreate(newEvent({ regarding: node, metadata: { name: 'e', namespace: 'default' } }))).toEqual([]);
  });

  it('lets an update move the series on and nothing else', () => {
    const old = newEvent();
    const next = newEvent({ series: { count: 2, lastObservedTime: '2026-01-02T03:05:00.000000Z' } });
    expect(validateEventUpdate(next, old)).toEqual([]);
    expect(fields(validateEventUpdate(newEvent({ note: 'changed', reason: 'Other' }), old))).toEqual([
      ['reason', 'FieldValueInvalid'],
      ['note', 'FieldValueInvalid'],
    ]);
    expect(fields(validateEventUpdate(newEvent({ series: { count: 0 } }), old))).toEqual([
      ['series.count', 'FieldValueInvalid'],
      ['series.lastObservedTime', 'FieldValueRequired'],
    ]);
  });

  it('holds an update to the update rules only: an old-style event with deprecated fields can still be updated', () => {
    const old = newEvent({ eventTime: undefined, deprecatedCount: 3, regarding: { kind: 'Pod', namespace: 'shop', name: 'p' } });
    const next = structuredClone(old);
    def.strategy.prepareForUpdate?.(next, old);
    expect(def.strategy.validate?.(next)).toEqual([]);
    expect(def.strategy.validateUpdate?.(next, old)).toEqual([]);
  });
});

describe('conversion between events.svc.io/v1 and core v1 events', () => {
  it('maps every field to its core name and back', () => {
    const v1 = newEvent({
      related: { kind: 'Pod', namespace: 'shop', name: 'web-1' },
      series: { count: 3, lastObservedTime: '2026-01-02T03:06:00.000000Z' },
      deprecatedSource: { component: 'kubelet', host: 'n1' },
      deprecatedFirstTimestamp: '2026-01-02T03:00:00Z',
      deprecatedLastTimestamp: '2026-01-02T03:01:00Z',
      deprecatedCount: 7,
    });
    const core = convertEvent(v1, 'v1');
    expect(core).toEqual({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'web.1', namespace: 'shop' },
      eventTime: '2026-01-02T03:04:05.123456Z',
      series: { count: 3, lastObservedTime: '2026-01-02T03:06:00.000000Z' },
      reportingComponent: 'svc.io/deployment-controller',
      reportingInstance: 'controller-manager-1',
      action: 'Scale',
      reason: 'ScalingReplicaSet',
      involvedObject: { apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'shop', name: 'web', uid: 'u-1' },
      related: { kind: 'Pod', namespace: 'shop', name: 'web-1' },
      message: 'Scaled up to 3',
      type: 'Normal',
      source: { component: 'kubelet', host: 'n1' },
      firstTimestamp: '2026-01-02T03:00:00Z',
      lastTimestamp: '2026-01-02T03:01:00Z',
      count: 7,
    });
    expect(convertEvent(core, 'events.svc.io/v1')).toEqual(v1);
  });

  it('reads an old-style core event with its old fields under the deprecated names', () => {
    const core: ApiObject = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name: 'p.1', namespace: 'shop' },
      involvedObject: { kind: 'Pod', name: 'p' },
      reason: 'Pulled',
      message: 'pulled the image',
      source: { component: 'kubelet' },
      count: 2,
      firstTimestamp: '2026-01-02T03:00:00Z',
    };
    const v1 = convertEvent(core, 'events.svc.io/v1');
    expect(v1).toEqual({
      apiVersion: 'events.svc.io/v1',
      kind: 'Event',
      metadata: { name: 'p.1', namespace: 'shop' },
      regarding: { kind: 'Pod', name: 'p' },
      reason: 'Pulled',
      note: 'pulled the image',
      deprecatedSource: { component: 'kubelet' },
      deprecatedCount: 2,
      deprecatedFirstTimestamp: '2026-01-02T03:00:00Z',
    });
    // The input is not changed.
    expect(core['involvedObject']).toEqual({ kind: 'Pod', name: 'p' });
  });

  it('leaves an object already in the asked version, or of another version, alone', () => {
    const v1 = newEvent();
    expect(convertEvent(v1, 'events.svc.io/v1')).toBe(v1);
    const other = { apiVersion: 'events.svc.io/v1beta1', kind: 'Event' };
    expect(convertEvent(other, 'v1')).toBe(other);
  });
});
