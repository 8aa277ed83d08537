import type { ApiObject } from '@svc/apimachinery';
import { podDisruptionBudgetDefinition } from './pod-disruption-budget';

const pdb = podDisruptionBudgetDefinition();
const budget = (spec: Record<string, unknown>, status?: Record<string, unknown>): ApiObject => ({ metadata: { name: 'b', namespace: 'n' }, spec, ...(status ? { status } : {}) });
const fieldsOf = (obj: ApiObject) => (pdb.strategy.validate?.(obj) ?? []).map((c) => [c.field, c.reason]);

describe('PodDisruptionBudget', () => {
  it('lives in policy/v1, namespaced, with a status subresource and the original columns', () => {
    expect([pdb.group, pdb.version, pdb.plural, pdb.namespaced, pdb.shortNames, pdb.openApiName]).toEqual(['policy', 'v1', 'poddisruptionbudgets', true, ['pdb'], 'io.svc.api.policy.v1.PodDisruptionBudget']);
    expect(pdb.subresources.map((s) => s.name)).toEqual(['status']);
    const columns = pdb.printerColumns.map((c) => c.compute?.(budget({ minAvailable: '50%' }, { disruptionsAllowed: 2 })));
    expect(columns).toEqual(['50%', 'N/A', 2]);
  });

  it('accepts a number, a percentage, an empty selector (every pod) and the eviction policies', () => {
    expect(fieldsOf(budget({ minAvailable: 2, selector: { matchLabels: { app: 'web' } } }))).toEqual([]);
    expect(fieldsOf(budget({ maxUnavailable: '25%', selector: {}, unhealthyPodEvictionPolicy: 'AlwaysAllow' }))).toEqual([]);
    expect(fieldsOf(budget({}))).toEqual([]);
  });

  it('refuses both minAvailable and maxUnavailable, bad numbers and percentages, a bad selector and an unknown policy, naming each field', () => {
    expect(fieldsOf(budget({ minAvailable: 1, maxUnavailable: 1 }))).toEqual([['spec', 'FieldValueInvalid']]);
    expect(fieldsOf(budget({ minAvailable: -1 }))).toEqual([['spec.minAvailable', 'FieldValueInvalid']]);
    expect(fieldsOf(budget({ maxUnavailable: '120%' }))).toEqual([['spec.maxUnavailable', 'FieldValueInvalid']]);
    expect(fieldsOf(budget({ maxUnavailable: 'half' }))).toEqual([['spec.maxUnavailable', 'FieldValueInvalid']]);
    expect(fieldsOf(budget({ selector: { matchExpressions: [{ key: 'app', operator: 'Near', values: ['x'] }] } }))).toEqual([['spec.selector.matchExpressions[0].operator', 'FieldValueNotSupported']]);
    expect(fieldsOf(budget({ selector: { matchLabels: { 'bad key!': 'x' } } }))[0]?.[0]).toBe('spec.selector.matchLabels');
    expect(fieldsOf(budget({ unhealthyPodEvictionPolicy: 'Sometimes' }))).toEqual([['spec.unhealthyPodEvictionPolicy', 'FieldValueNotSupported']]);
    expect(fieldsOf(budget({}, { disruptionsAllowed: -1 }))).toEqual([['status.disruptionsAllowed', 'FieldValueInvalid']]);
  });

  it('starts at generation 1 without status; a spec change moves the generation, the status stays', () => {
    const created = budget({ minAvailable: 1 }, { disruptionsAllowed: 5 });
    pdb.strategy.prepareForCreate?.(created);
    expect([created.metadata?.generation, created['status']]).toEqual([1, undefined]);
    const old = { ...created, status: { disruptionsAllowed: 1 } };
    const same: ApiObject = { ...budget({ minAvailable: 1 }, { disruptionsAllowed: 9 }), metadata: { ...created.metadata } };
    pdb.strategy.prepareForUpdate?.(same, old);
    expect([same.metadata?.generation, same['status']]).toEqual([1, { disruptionsAllowed: 1 }]);
    const changed = { ...budget({ minAvailable: 2 }), metadata: { ...created.metadata } };
    pdb.strategy.prepareForUpdate?.(changed, old);
    expect(changed.metadata?.generation).toBe(2);
  });
});
