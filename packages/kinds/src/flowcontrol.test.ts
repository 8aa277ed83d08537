import type { ApiObject, StatusCause } from '@svc/apimachinery';
import {
  applyFlowSchemaDefaults,
  applyPriorityLevelConfigurationDefaults,
  flowSchemaDefinition,
  priorityLevelConfigurationDefinition,
  requiredEntropyBits,
  validateFlowSchema,
  validatePriorityLevelConfiguration,
} from './flowcontrol';
import { mandatoryFlowSchemas, mandatoryPriorityLevelConfigurations, suggestedFlowSchemas, suggestedPriorityLevelConfigurations } from './flowcontrol-bootstrap';
import { cloneJson } from './object-access';

const fields = (causes: StatusCause[]): Array<string | undefined> => causes.map((c) => c.field);

function flowSchema(spec: Record<string, unknown>, name = 'fs'): ApiObject {
  return { metadata: { name }, spec };
}

function pl(spec: Record<string, unknown>, name = 'pl'): ApiObject {
  return { metadata: { name }, spec };
}

const everyoneEverything = {
  subjects: [{ kind: 'Group', group: { name: 'system:authenticated' } }],
  resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], clusterScope: true, namespaces: ['*'] }],
};

function queued(queuing: Record<string, unknown>, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { type: 'Limited', limited: { nominalConcurrencyShares: 10, limitResponse: { type: 'Queue', queuing }, ...extra } };
}

describe('PriorityLevelConfiguration defaults', () => {
  it('gives an unspecified nominalConcurrencyShares 30 and keeps an explicit 0', () => {
    const unset = pl({ type: 'Limited', limited: { limitResponse: { type: 'Reject' } } });
    applyPriorityLevelConfigurationDefaults(unset);
    expect(unset['spec']).toEqual({ type: 'Limited', limited: { nominalConcurrencyShares: 30, lendablePercent: 0, limitResponse: { type: 'Reject' } } });
    const zero = pl({ type: 'Limited', limited: { nominalConcurrencyShares: 0, limitResponse: { type: 'Reject' } } });
    applyPriorityLevelConfigurationDefaults(zero);
    expect((zero['spec'] as { limited: { nominalConcurrencyShares: number } }).limited.nominalConcurrencyShares).toBe(0);
    expect(validatePriorityLevelConfiguration(zero)).toEqual([]);
  });

  it('fills queuing parameters left out (64 queues, hand of 8, 50 per queue)', () => {
    const obj = pl(queued({ queues: 16 }));
    applyPriorityLevelConfigurationDefaults(obj);
    expect((obj['spec'] as { limited: { limitResponse: unknown } }).limited.limitResponse).toEqual({ type: 'Queue', queuing: { queues: 16, handSize: 8, queueLengthLimit: 50 } });
    const empty = pl(queued({}));
    applyPriorityLevelConfigurationDefaults(empty);
    expect((empty['spec'] as { limited: { limitResponse: { queuing: unknown } } }).limited.limitResponse.queuing).toEqual({ queues: 64, handSize: 8, queueLengthLimit: 50 });
  });

  it('gives the exempt level an exempt block with zeros', () => {
    const obj = pl({ type: 'Exempt' }, 'exempt');
    applyPriorityLevelConfigurationDefaults(obj);
    expect(obj['spec']).toEqual({ type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } });
    expect(validatePriorityLevelConfiguration(obj)).toEqual([]);
  });
});

describe('FlowSchema defaults', () => {
  it('sets matchingPrecedence 1000 when unset', () => {
    const obj = flowSchema({ priorityLevelConfiguration: { name: 'global-default' }, rules: [everyoneEverything] });
    applyFlowSchemaDefaults(obj);
    expect((obj['spec'] as { matchingPrecedence: number }).matchingPrecedence).toBe(1000);
    expect(validateFlowSchema(obj)).toEqual([]);
  });
});

describe('bootstrap objects', () => {
  it('are valid and already in their defaulted form', () => {
    for (const obj of [...mandatoryPriorityLevelConfigurations(), ...suggestedPriorityLevelConfigurations()]) {
      const defaulted = cloneJson(obj);
      applyPriorityLevelConfigurationDefaults(defaulted);
      expect(defaulted).toEqual(obj);
      expect(validatePriorityLevelConfiguration(obj)).toEqual([]);
    }
    for (const obj of [...mandatoryFlowSchemas(), ...suggestedFlowSchemas()]) {
      const defaulted = cloneJson(obj);
      applyFlowSchemaDefaults(defaulted);
      expect(defaulted).toEqual(obj);
      expect(validateFlowSchema(obj)).toEqual([]);
    }
  });
});

describe('FlowSchema validation', () => {
  it('limits matchingPrecedence to 1..10000 and 1 to the exempt schema', () => {
    const at = (p: number, name = 'fs') => validateFlowSchema(flowSchema({ priorityLevelConfiguration: { name: 'x' }, matchingPrecedence: p, rules: [everyoneEverything] }, name));
    expect(fields(at(0))).toEqual(['spec.matchingPrecedence']);
    expect(fields(at(10001))).toEqual(['spec.matchingPrecedence']);
    expect(at(1)[0]?.message).toContain("only the schema named 'exempt' may have matchingPrecedence 1");
    expect(at(10000)).toEqual([]);
  });

  it('names what a missing spec lacks', () => {
    expect(fields(validateFlowSchema({ metadata: { name: 'fs' } }))).toEqual(['spec.priorityLevelConfiguration.name']);
    expect(fields(validatePriorityLevelConfiguration({ metadata: { name: 'pl' } }))).toEqual(['spec.type']);
    expect(validateFlowSchema({ metadata: { name: 'fs' }, spec: 'x' })).toEqual([expect.objectContaining({ field: 'spec', reason: 'FieldValueTypeInvalid' })]);
  });

  it('requires a priority level name and a known distinguisher', () => {
    const causes = validateFlowSchema(flowSchema({ priorityLevelConfiguration: {}, matchingPrecedence: 500, distinguisherMethod: { type: 'ByPod' } }));
    expect(fields(causes)).toEqual(['spec.distinguisherMethod.type', 'spec.priorityLevelConfiguration.name']);
    expect(causes.map((c) => c.reason)).toEqual(['FieldValueNotSupported', 'FieldValueRequired']);
  });

  it('checks subjects: the kind and exactly its member', () => {
    const rules = [
      {
        subjects: [
          { kind: 'User', group: { name: 'g' } },
          { kind: 'Robot', user: { name: 'r' } },
          { kind: 'ServiceAccount', serviceAccount: { name: '*' } },
          { kind: 'Group', group: { name: '' } },
        ],
        nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz'] }],
      },
    ];
    const causes = validateFlowSchema(flowSchema({ priorityLevelConfiguration: { name: 'x' }, matchingPrecedence: 500, rules }));
    expect(fields(causes)).toEqual([
      'spec.rules[0].subjects[0].group',
      'spec.rules[0].subjects[0].user',
      'spec.rules[0].subjects[1].kind',
      'spec.rules[0].subjects[2].serviceAccount.namespace',
      'spec.rules[0].subjects[3].group.name',
    ]);
    expect(causes[0]?.reason).toBe('FieldValueForbidden');
    expect(causes[1]?.message).toContain("user is required when subject kind is 'User'");
  });

  it('checks rules: verbs, groups, resources, namespaces, wildcards alone, URL paths', () => {
    const rules = [
      {
        subjects: [{ kind: 'User', user: { name: 'u' } }],
        resourceRules: [
          { verbs: [], apiGroups: [], resources: ['*', 'pods'], namespaces: [] },
          { verbs: ['*', 'get'], apiGroups: [''], resources: ['pods'], namespaces: ['Bad_NS'] },
          { verbs: ['fly'], apiGroups: ['*'], resources: ['pods'], clusterScope: true },
        ],
        nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['healthz', '/a//b', '/x*', '/ok/*', '/'] }, { verbs: ['get'], nonResourceURLs: [] }],
      },
      { subjects: [{ kind: 'User', user: { name: 'u' } }] },
    ];
    const causes = validateFlowSchema(flowSchema({ priorityLevelConfiguration: { name: 'x' }, matchingPrecedence: 500, rules }));
    expect(fields(causes)).toEqual([
      'spec.rules[0].resourceRules[0].verbs',
      'spec.rules[0].resourceRules[0].apiGroups',
      'spec.rules[0].resourceRules[0].resources',
      'spec.rules[0].resourceRules[0].namespaces',
      'spec.rules[0].resourceRules[1].verbs',
      'spec.rules[0].resourceRules[1].namespaces[0]',
      'spec.rules[0].resourceRules[2].verbs',
      'spec.rules[0].nonResourceRules[0].nonResourceURLs[0]',
      'spec.rules[0].nonResourceRules[0].nonResourceURLs[1]',
      'spec.rules[0].nonResourceRules[0].nonResourceURLs[2]',
      'spec.rules[0].nonResourceRules[1].nonResourceURLs',
      'spec.rules[1]',
    ]);
    expect(causes[5]?.message).toContain("each member of this list must be '*' or a DNS-1123 label");
    expect(causes[7]?.message).toContain('must start with slash');
  });

  it('keeps the mandatory schemas fixed', () => {
    const exempt = mandatoryFlowSchemas().find((f) => f.metadata?.name === 'exempt') as ApiObject;
    const changed = cloneJson(exempt);
    (changed['spec'] as { distinguisherMethod?: unknown }).distinguisherMethod = { type: 'ByUser' };
    expect(validateFlowSchema(changed).map((c) => [c.field, c.message?.endsWith("spec of 'exempt' must equal the fixed value")])).toEqual([['spec', true]]);
    // The same spec written with its zero values spelled out is equal.
    const spelled = cloneJson(exempt);
    (spelled['spec'] as { rules: Array<Record<string, unknown>> }).rules[0]!['nonResourceRules'] = [{ verbs: ['*'], nonResourceURLs: ['*'] }];
    expect(validateFlowSchema(spelled)).toEqual([]);
    // A suggested one may change.
    const suggested = cloneJson(suggestedFlowSchemas()[0] as ApiObject);
    (suggested['spec'] as { matchingPrecedence: number }).matchingPrecedence = 4242;
    expect(validateFlowSchema(suggested)).toEqual([]);
  });

  it('rejects duplicate and empty status condition types', () => {
    const obj = flowSchema({ priorityLevelConfiguration: { name: 'x' }, matchingPrecedence: 500, rules: [everyoneEverything] });
    obj['status'] = { conditions: [{ type: 'Dangling', status: 'True' }, { type: 'Dangling', status: 'False' }, { status: 'True' }] };
    expect(fields(validateFlowSchema(obj))).toEqual(['status.conditions[1].type', 'status.conditions[2].type']);
  });
});

describe('PriorityLevelConfiguration validation', () => {
  it('allows type Exempt only for the level named exempt', () => {
    expect(fields(validatePriorityLevelConfiguration(pl({ type: 'Exempt', exempt: {} }, 'mine')))).toEqual(['spec.type']);
    expect(fields(validatePriorityLevelConfiguration(pl({ type: 'Limited', limited: { nominalConcurrencyShares: 1, limitResponse: { type: 'Reject' } } }, 'exempt')))).toEqual(['spec.type', 'spec']);
    expect(fields(validatePriorityLevelConfiguration(pl({ type: 'Sometimes' })))).toEqual(['spec.type']);
  });

  it('requires limited for Limited and forbids the other block', () => {
    expect(fields(validatePriorityLevelConfiguration(pl({ type: 'Limited' })))).toEqual(['spec.limited']);
    expect(fields(validatePriorityLevelConfiguration(pl({ type: 'Limited', exempt: {}, limited: { limitResponse: { type: 'Reject' } } })))).toEqual(['spec.exempt']);
  });

  it('checks shares, lendable and borrowing percents', () => {
    const causes = validatePriorityLevelConfiguration(pl({ type: 'Limited', limited: { nominalConcurrencyShares: -1, lendablePercent: 101, borrowingLimitPercent: -5, limitResponse: { type: 'Reject' } } }));
    expect(fields(causes)).toEqual(['spec.limited.nominalConcurrencyShares', 'spec.limited.lendablePercent', 'spec.limited.borrowingLimitPercent']);
    expect(validatePriorityLevelConfiguration(pl({ type: 'Limited', limited: { lendablePercent: 100, borrowingLimitPercent: 0, limitResponse: { type: 'Reject' } } }))).toEqual([]);
  });

  it('allows queuing only for Queue and requires it there', () => {
    expect(fields(validatePriorityLevelConfiguration(pl({ type: 'Limited', limited: { limitResponse: { type: 'Reject', queuing: { queues: 1, handSize: 1, queueLengthLimit: 1 } } } })))).toEqual([
      'spec.limited.limitResponse.queuing',
    ]);
    expect(fields(validatePriorityLevelConfiguration(pl({ type: 'Limited', limited: { limitResponse: { type: 'Queue' } } })))).toEqual(['spec.limited.limitResponse.queuing']);
    expect(fields(validatePriorityLevelConfiguration(pl({ type: 'Limited', limited: { limitResponse: { type: 'Drop' } } })))).toEqual(['spec.limited.limitResponse.type']);
  });

  it('checks queues, hand size and queue length', () => {
    const q = (queuing: Record<string, unknown>) => fields(validatePriorityLevelConfiguration(pl(queued(queuing))));
    expect(q({ queues: 0, handSize: 0, queueLengthLimit: 0 })).toEqual([
      'spec.limited.limitResponse.queuing.queueLengthLimit',
      'spec.limited.limitResponse.queuing.queues',
      'spec.limited.limitResponse.queuing.handSize',
    ]);
    expect(q({ queues: 10_000_001, handSize: 1, queueLengthLimit: 1 })).toEqual(['spec.limited.limitResponse.queuing.queues']);
    expect(q({ queues: 4, handSize: 5, queueLengthLimit: 1 })).toEqual(['spec.limited.limitResponse.queuing.handSize']);
    expect(q({ queues: 128, handSize: 8, queueLengthLimit: 1 })).toEqual([]);
  });

  it('refuses a hand whose shuffle sharding needs more than 60 bits of hash', () => {
    expect(requiredEntropyBits(64, 8)).toBe(48);
    expect(requiredEntropyBits(128, 9)).toBe(63);
    const causes = validatePriorityLevelConfiguration(pl(queued({ queues: 128, handSize: 9, queueLengthLimit: 50 })));
    expect(causes).toEqual([
      {
        reason: 'FieldValueInvalid',
        field: 'spec.limited.limitResponse.queuing.handSize',
        message: 'Invalid value: 9: required entropy bits of deckSize 128 and handSize 9 should not be greater than 60',
      },
    ]);
  });

  it('keeps catch-all fixed and lets the exempt level tune its shares and lendable percent', () => {
    const catchAll = cloneJson(mandatoryPriorityLevelConfigurations().find((p) => p.metadata?.name === 'catch-all') as ApiObject);
    (catchAll['spec'] as { limited: { nominalConcurrencyShares: number } }).limited.nominalConcurrencyShares = 50;
    expect(fields(validatePriorityLevelConfiguration(catchAll))).toEqual(['spec']);
    const exempt = pl({ type: 'Exempt', exempt: { nominalConcurrencyShares: 7, lendablePercent: 20 } }, 'exempt');
    expect(validatePriorityLevelConfiguration(exempt)).toEqual([]);
    expect(fields(validatePriorityLevelConfiguration(pl({ type: 'Exempt', exempt: { nominalConcurrencyShares: -1, lendablePercent: 200 } }, 'exempt')))).toEqual([
      'spec.exempt.nominalConcurrencyShares',
      'spec.exempt.lendablePercent',
    ]);
  });
});

describe('definitions', () => {
  it('are cluster-scoped with a status subresource and the original columns', () => {
    const fs = flowSchemaDefinition();
    const plc = priorityLevelConfigurationDefinition();
    expect([fs.group, fs.version, fs.plural, fs.namespaced, fs.openApiName]).toEqual(['flowcontrol.svc.io', 'v1', 'flowschemas', false, 'io.svc.api.flowcontrol.v1.FlowSchema']);
    expect(plc.subresources.map((s) => s.name)).toEqual(['status']);
    expect(fs.printerColumns.map((c) => c.name)).toEqual(['PriorityLevel', 'MatchingPrecedence', 'DistinguisherMethod', 'Age', 'MissingPL']);
    expect(plc.printerColumns.map((c) => c.name)).toEqual(['Type', 'NominalConcurrencyShares', 'Queues', 'HandSize', 'QueueLengthLimit']);
  });

  it('computes the table cells as the original prints them', () => {
    const fs = flowSchemaDefinition();
    const cell = (name: string, obj: ApiObject) => fs.printerColumns.find((c) => c.name === name)?.compute?.(obj);
    const obj = flowSchema({ priorityLevelConfiguration: { name: 'x' }, matchingPrecedence: 500 });
    expect([cell('DistinguisherMethod', obj), cell('MissingPL', obj)]).toEqual(['<none>', '?']);
    obj['status'] = { conditions: [{ type: 'Dangling', status: 'False' }] };
    expect(cell('MissingPL', obj)).toBe('False');
    const plc = priorityLevelConfigurationDefinition();
    const row = (obj: ApiObject) => plc.printerColumns.filter((c) => c.compute).map((c) => c.compute?.(obj));
    expect(row(mandatoryPriorityLevelConfigurations()[1] as ApiObject)).toEqual(['<none>', '<none>', '<none>', '<none>']);
    expect(row(suggestedPriorityLevelConfigurations()[2] as ApiObject)).toEqual([10, 16, 4, 50]);
    expect(row(mandatoryPriorityLevelConfigurations()[0] as ApiObject)).toEqual([5, '<none>', '<none>', '<none>']);
  });

  it('resets status on create, keeps it on update and counts spec changes in generation', () => {
    const def = priorityLevelConfigurationDefinition();
    const obj = pl({ type: 'Limited', limited: { limitResponse: { type: 'Reject' } } });
    obj['status'] = { conditions: [{ type: 'X', status: 'True' }] };
    def.strategy.prepareForCreate?.(obj);
    expect(obj['status']).toBeUndefined();
    expect(obj.metadata?.generation).toBe(1);
    const next = cloneJson(obj);
    (next['spec'] as { limited: Record<string, unknown> }).limited['lendablePercent'] = 10;
    next['status'] = { conditions: [{ type: 'Y', status: 'True' }] };
    def.strategy.prepareForUpdate?.(next, obj);
    expect(next['status']).toBeUndefined();
    expect(next.metadata?.generation).toBe(2);
  });
});
