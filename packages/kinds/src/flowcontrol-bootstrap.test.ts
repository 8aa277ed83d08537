import type { ApiObject } from '@svc/apimachinery';
import {
  AUTOUPDATE_SPEC_ANNOTATION,
  mandatoryFlowSchemas,
  mandatoryPriorityLevelConfigurations,
  suggestedFlowSchemas,
  suggestedPriorityLevelConfigurations,
} from './flowcontrol-bootstrap';

const names = (objs: ApiObject[]): string[] => objs.map((o) => o.metadata?.name ?? '');
const spec = (o: ApiObject): Record<string, unknown> => o['spec'] as Record<string, unknown>;

describe('APF bootstrap configuration', () => {
  it('has the mandatory and suggested objects under their names', () => {
    expect(names(mandatoryPriorityLevelConfigurations()).sort()).toEqual(['catch-all', 'exempt']);
    expect(names(mandatoryFlowSchemas()).sort()).toEqual(['catch-all', 'exempt']);
    expect(names(suggestedPriorityLevelConfigurations()).sort()).toEqual(['global-default', 'leader-election', 'node-high', 'system', 'workload-high', 'workload-low']);
    expect(names(suggestedFlowSchemas()).sort()).toEqual([
      'global-default',
      'probes',
      'service-accounts',
      'svc-controller-manager',
      'svc-scheduler',
      'svc-system-service-accounts',
      'system-leader-election',
      'system-node-high',
      'system-nodes',
    ]);
  });

  it('gives every object its kind, apiVersion and the auto-update annotation', () => {
    const all = [...mandatoryPriorityLevelConfigurations(), ...mandatoryFlowSchemas(), ...suggestedPriorityLevelConfigurations(), ...suggestedFlowSchemas()];
    for (const o of all) {
      expect(o.apiVersion).toBe('flowcontrol.svc.io/v1');
      expect(['FlowSchema', 'PriorityLevelConfiguration']).toContain(o.kind);
      expect(o.metadata?.annotations?.[AUTOUPDATE_SPEC_ANNOTATION]).toBe('true');
    }
  });

  it('names an existing priority level in every flow schema', () => {
    const levels = new Set(names([...mandatoryPriorityLevelConfigurations(), ...suggestedPriorityLevelConfigurations()]));
    for (const fs of [...mandatoryFlowSchemas(), ...suggestedFlowSchemas()]) {
      const ref = spec(fs)['priorityLevelConfiguration'] as { name: string };
      expect(levels.has(ref.name)).toBe(true);
    }
  });

  it('keeps precedence 1 for the exempt schema only, within 1..10000, catch-all last', () => {
    const precedence = new Map([...mandatoryFlowSchemas(), ...suggestedFlowSchemas()].map((fs) => [fs.metadata?.name, spec(fs)['matchingPrecedence'] as number]));
    for (const [name, p] of precedence) {
      expect(p).toBeGreaterThanOrEqual(name === 'exempt' ? 1 : 2);
      expect(p).toBeLessThanOrEqual(10000);
    }
    expect(precedence.get('exempt')).toBe(1);
    expect(precedence.get('probes')).toBe(2);
    expect(precedence.get('catch-all')).toBe(10000);
    expect(Math.max(...[...precedence.values()].filter((p) => p < 10000))).toBe(9900);
  });

  it('has the original levels, shares and queuing parameters', () => {
    const byName = new Map([...mandatoryPriorityLevelConfigurations(), ...suggestedPriorityLevelConfigurations()].map((pl) => [pl.metadata?.name, spec(pl)]));
    expect(byName.get('exempt')).toEqual({ type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } });
    expect(byName.get('catch-all')).toEqual({ type: 'Limited', limited: { nominalConcurrencyShares: 5, lendablePercent: 0, limitResponse: { type: 'Reject' } } });
    expect(byName.get('leader-election')).toEqual({
      type: 'Limited',
      limited: { nominalConcurrencyShares: 10, lendablePercent: 0, limitResponse: { type: 'Queue', queuing: { queues: 16, handSize: 4, queueLengthLimit: 50 } } },
    });
    const shares = [...byName].map(([name, s]) => [name, ((s['limited'] ?? s['exempt']) as { nominalConcurrencyShares: number }).nominalConcurrencyShares]);
    expect(Object.fromEntries(shares)).toEqual({ 'catch-all': 5, exempt: 0, system: 30, 'node-high': 40, 'leader-election': 10, 'workload-high': 40, 'workload-low': 100, 'global-default': 20 });
  });

  it('returns fresh objects on every call', () => {
    const a = suggestedFlowSchemas();
    (spec(a[0]!)['priorityLevelConfiguration'] as { name: string }).name = 'changed';
    a[0]!.metadata!.annotations![AUTOUPDATE_SPEC_ANNOTATION] = 'false';
    const b = suggestedFlowSchemas();
    expect((spec(b[0]!)['priorityLevelConfiguration'] as { name: string }).name).toBe('system');
    expect(b[0]!.metadata?.annotations?.[AUTOUPDATE_SPEC_ANNOTATION]).toBe('true');
  });
});
