import { checkAgainstSchema, type ApiObject } from '@svc/apimachinery';
import { endpointsDefinition } from './endpoints';
import { eventDefinition } from './event';
import { eventsV1Definition } from './events-v1';
import { leaseDefinition } from './lease';
import { serviceAccountDefinition } from './service-account';

const lease = leaseDefinition();
const event = eventDefinition();
const endpoints = endpointsDefinition();
const sa = serviceAccountDefinition();

describe('Event times', () => {
  it('writes eventTime and series.lastObservedTime as MicroTimes and the rest as Times, in both versions', () => {
    const core = { metadata: { name: 'e' }, eventTime: '2024-05-01T10:00:00.5Z', series: { count: 2, lastObservedTime: '2024-05-01T10:00:01+00:00' }, firstTimestamp: '2024-05-01T10:00:00.858899+00:00' };
    expect(checkAgainstSchema(core, event.schema, { formats: true }).pruned).toMatchObject({
      eventTime: '2024-05-01T10:00:00.500000Z',
      series: { lastObservedTime: '2024-05-01T10:00:01.000000Z' },
      firstTimestamp: '2024-05-01T10:00:00Z',
    });
    const v1 = { metadata: { name: 'e' }, eventTime: '2024-05-01T10:00:00.5Z', series: { count: 2, lastObservedTime: '2024-05-01T10:00:01+00:00' }, deprecatedFirstTimestamp: '2024-05-01T10:00:00.858899+00:00' };
    expect(checkAgainstSchema(v1, eventsV1Definition().schema, { formats: true }).pruned).toMatchObject({
      eventTime: '2024-05-01T10:00:00.500000Z',
      series: { lastObservedTime: '2024-05-01T10:00:01.000000Z' },
      deprecatedFirstTimestamp: '2024-05-01T10:00:00Z',
    });
  });
});

describe('Lease', () => {
  it('lives in coordination.svc.io/v1 and shows its holder', () => {
    expect([lease.group, lease.version, lease.openApiName]).toEqual(['coordination.svc.io', 'v1', 'io.svc.api.coordination.v1.Lease']);
    expect(lease.printerColumns).toEqual([expect.objectContaining({ name: 'Holder', jsonPath: '.spec.holderIdentity' })]);
  });

  it('accepts a typical leader-election lease', () => {
    const obj: ApiObject = {
      metadata: { name: 'controller', namespace: 'svc-system' },
      spec: { holderIdentity: 'pod-1', leaseDurationSeconds: 15, acquireTime: '2024-05-01T10:00:00.123456Z', renewTime: '2024-05-01T10:00:10.000000Z', leaseTransitions: 2 },
    };
    expect(lease.strategy.validate?.(obj)).toEqual([]);
  });

  it('writes its MicroTimes with six fraction digits in UTC, as the original does', () => {
    // Date#toISOString's milliseconds and Python's isoformat() offset, which Go's MicroTime parser refuses as they are.
    const spec = { holderIdentity: 'pod-1', acquireTime: '2024-05-01T10:00:00.123Z', renewTime: '2024-05-01T12:00:10.632849+02:00' };
    const decoded = checkAgainstSchema({ metadata: { name: 'l' }, spec }, lease.schema, { formats: true }).pruned as ApiObject;
    expect(decoded['spec']).toEqual({ holderIdentity: 'pod-1', acquireTime: '2024-05-01T10:00:00.123000Z', renewTime: '2024-05-01T10:00:10.632849Z' });
  });

  it('rejects mistyped and out-of-range fields', () => {
    const obj: ApiObject = {
      metadata: { name: 'l' },
      spec: { holderIdentity: 7, leaseDurationSeconds: 0, leaseTransitions: 1.5, renewTime: 'yesterday', preferredHolder: 'x' },
    };
    const causes = lease.strategy.validate?.(obj) ?? [];
    expect(causes.map((c) => [c.field, c.reason])).toEqual([
      ['spec.holderIdentity', 'FieldValueTypeInvalid'],
      ['spec.leaseDurationSeconds', 'FieldValueInvalid'],
      ['spec.leaseTransitions', 'FieldValueTypeInvalid'],
      ['spec.renewTime', 'FieldValueInvalid'],
      ['spec.preferredHolder', 'FieldValueForbidden'],
    ]);
  });
});

describe('Event', () => {
  it('requires the involved object', () => {
    expect(event.strategy.validate?.({ metadata: { name: 'e', namespace: 'default' }, reason: 'Started' })).toEqual([
      expect.objectContaining({ field: 'involvedObject', reason: 'FieldValueRequired' }),
    ]);
  });

  it('accepts an old-style event and checks the namespace of the involved object', () => {
    const base = { metadata: { name: 'e', namespace: 'default' }, type: 'Normal', reason: 'Pulled', count: 1, lastTimestamp: '2024-01-01T00:00:00Z' };
    expect(event.strategy.validate?.({ ...base, involvedObject: { kind: 'Pod', name: 'p', namespace: 'default' } })).toEqual([]);
    const causes = event.strategy.validate?.({ ...base, involvedObject: { kind: 'Pod', name: 'p', namespace: 'other' } }) ?? [];
    expect(causes.map((c) => c.field)).toEqual(['involvedObject.namespace']);
  });

  it('requires reporter fields for new-style events', () => {
    const causes = event.strategy.validate?.({ metadata: { name: 'e' }, involvedObject: { kind: 'Node', name: 'n' }, eventTime: '2024-01-01T00:00:00.000000Z', type: 'Odd' }) ?? [];
    expect(causes.map((c) => c.field)).toEqual(['reportingComponent', 'reportingInstance', 'action', 'reason', 'type']);
  });

  it('describes the involved object in its table', () => {
    const obj: ApiObject = { involvedObject: { kind: 'Pod', name: 'web' }, lastTimestamp: '2024-01-01T00:00:00Z' };
    const object = event.printerColumns.find((c) => c.name === 'Object');
    expect(object?.compute?.(obj)).toBe('pod/web');
    expect(event.printerColumns.find((c) => c.name === 'Last Seen')).toMatchObject({ type: 'date' });
  });
});

describe('Endpoints and ServiceAccount', () => {
  it('defaults endpoint port protocols and validates ports', () => {
    const obj: ApiObject = { metadata: { name: 'web' }, subsets: [{ addresses: [{ ip: '10.0.0.1' }, {}], ports: [{ port: 80, name: 'http' }, { port: 99999 }] }] };
    endpoints.strategy.applyDefaults?.(obj);
    const causes = endpoints.strategy.validate?.(obj) ?? [];
    expect(causes.map((c) => c.field)).toEqual(['subsets[0].addresses[1].ip', 'subsets[0].ports[1].name', 'subsets[0].ports[1].port']);
    expect(endpoints.printerColumns[0]?.compute?.(obj)).toBe('10.0.0.1:80,10.0.0.1:99999');
  });

  it('has no service account defaults and rejects duplicate secret references', () => {
    expect(sa.strategy.applyDefaults).toBeUndefined();
    const causes = sa.strategy.validate?.({ secrets: [{ name: 'a' }, { name: 'a' }] }) ?? [];
    expect(causes).toEqual([expect.objectContaining({ field: 'secrets[1].name', reason: 'FieldValueDuplicate' })]);
  });
});
