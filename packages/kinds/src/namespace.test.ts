import type { ApiObject } from '@svc/apimachinery';
import { NAMESPACE_FINALIZER, NAMESPACE_NAME_LABEL, namespaceDefinition } from './namespace';
import { nodeDefinition } from './node';
import { prepareStatusSubresourceUpdate, prepareSubresourceUpdate } from './status';

const ns = namespaceDefinition();
const node = nodeDefinition();

describe('Namespace', () => {
  it('is cluster-scoped with status and finalize subresources', () => {
    expect(ns.namespaced).toBe(false);
    expect(ns.shortNames).toEqual(['ns']);
    expect(ns.subresources.map((s) => s.name)).toEqual(['status', 'finalize']);
    expect(ns.verbs).not.toContain('deletecollection');
  });

  it('starts Active with the system finalizer and its name label', () => {
    const obj: ApiObject = { metadata: { name: 'team-a' }, status: { phase: 'Terminating' } };
    ns.strategy.prepareForCreate?.(obj);
    ns.strategy.applyDefaults?.(obj);
    expect(obj['status']).toEqual({ phase: 'Active' });
    expect(obj['spec']).toEqual({ finalizers: [NAMESPACE_FINALIZER] });
    expect(obj.metadata?.labels).toEqual({ [NAMESPACE_NAME_LABEL]: 'team-a' });
    expect(ns.strategy.validate?.(obj)).toEqual([]);
  });

  it('keeps status and spec finalizers on update through the main resource', () => {
    const old: ApiObject = { metadata: { name: 'a' }, spec: { finalizers: ['svc'] }, status: { phase: 'Active' } };
    const obj: ApiObject = { metadata: { name: 'a' }, spec: { finalizers: [] }, status: { phase: 'Terminating' } };
    ns.strategy.prepareForUpdate?.(obj, old);
    expect(obj['status']).toEqual({ phase: 'Active' });
    expect(obj['spec']).toEqual({ finalizers: ['svc'] });
  });

  it('validates finalizer names', () => {
    const causes = ns.strategy.validate?.({ metadata: { name: 'a' }, spec: { finalizers: ['ok.io/x', 'bad name'] } }) ?? [];
    expect(causes.map((c) => c.field)).toEqual(['spec.finalizers[1]']);
  });

  it('a status write may set the phase only to Active, or Terminating once deletion was requested', () => {
    const validate = (phase: unknown, deleting: boolean, oldPhase = 'Active') =>
      ns.strategy.validateUpdate?.(
        { metadata: { name: 'a', ...(deleting ? { deletionTimestamp: '2024-01-01T00:00:00Z' } : {}) }, status: { phase } },
        { metadata: { name: 'a' }, status: { phase: oldPhase } },
      ) ?? [];
    expect(validate('Bogus', false)).toEqual([{ reason: 'FieldValueInvalid', field: 'status.Phase', message: 'Invalid value: "Bogus": may only be \'Active\' if `deletionTimestamp` is empty' }]);
    expect(validate('Terminating', false)).toHaveLength(1);
    expect(validate('Active', true, 'Terminating')).toEqual([{ reason: 'FieldValueInvalid', field: 'status.Phase', message: 'Invalid value: "Active": may only be \'Terminating\' if `deletionTimestamp` is not empty' }]);
    expect(validate('Terminating', true)).toEqual([]);
    expect(validate('Active', false)).toEqual([]);
  });

  it('shows the phase', () => {
    expect(ns.printerColumns).toEqual([expect.objectContaining({ name: 'Status', jsonPath: '.status.phase' })]);
  });
});

describe('Node', () => {
  it('may be registered with its status, which updates through the main resource keep', () => {
    expect(node.strategy.prepareForCreate).toBeUndefined();
    const obj: ApiObject = { metadata: { name: 'n1' }, spec: { unschedulable: true }, status: { phase: 'x' } };
    node.strategy.prepareForUpdate?.(obj, { status: { conditions: [{ type: 'Ready', status: 'True' }] } });
    expect(obj['status']).toEqual({ conditions: [{ type: 'Ready', status: 'True' }] });
  });

  it('shows readiness, roles and version', () => {
    const obj: ApiObject = {
      metadata: { name: 'n1', labels: { 'node-role.svc.io/control-plane': '' } },
      spec: { unschedulable: true },
      status: { conditions: [{ type: 'Ready', status: 'True' }], nodeInfo: { kubeletVersion: 'v1.32.0' } },
    };
    const [status, roles] = node.printerColumns.map((c) => c.compute?.(obj));
    expect(status).toBe('Ready,SchedulingDisabled');
    expect(roles).toBe('control-plane');
    expect(node.printerColumns[2]).toMatchObject({ name: 'Version', jsonPath: '.status.nodeInfo.kubeletVersion' });
  });

  it('validates taints', () => {
    const causes = node.strategy.validate?.({ spec: { taints: [{ key: 'k', effect: 'Sometimes' }, { effect: 'NoSchedule' }] } }) ?? [];
    expect(causes.map((c) => c.field)).toEqual(['spec.taints[0].effect', 'spec.taints[1].key']);
  });
});

describe('status subresource writes', () => {
  it('take everything but status from the stored object', () => {
    const old: ApiObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [{ name: 'a' }] }, status: { phase: 'Pending' } };
    const obj: ApiObject = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { containers: [] }, status: { phase: 'Running' } };
    prepareStatusSubresourceUpdate(obj, old);
    expect(obj['spec']).toEqual({ containers: [{ name: 'a' }] });
    expect(obj['status']).toEqual({ phase: 'Running' });
  });
});

describe('finalize subresource writes', () => {
  it('take only spec.finalizers from the request', () => {
    const old: ApiObject = { metadata: { name: 'a' }, spec: { finalizers: ['svc'] }, status: { phase: 'Terminating' } };
    const obj: ApiObject = { metadata: { name: 'a' }, spec: { finalizers: [] }, status: { phase: 'Active' } };
    expect(prepareSubresourceUpdate('finalize', obj, old)).toBe(true);
    expect(obj['spec']).toEqual({ finalizers: [] });
    expect(obj['status']).toEqual({ phase: 'Terminating' });
    expect(prepareSubresourceUpdate('scale', obj, old)).toBe(false);
  });
});
