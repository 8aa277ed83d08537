import { mandatoryFlowSchemas, mandatoryPriorityLevelConfigurations, suggestedFlowSchemas, suggestedPriorityLevelConfigurations } from '@svc/kinds';
import { ProtobufObjectCodec } from './codec';

const codec = new ProtobufObjectCodec();

describe('flowcontrol.svc.io/v1 in protobuf', () => {
  it('round-trips every bootstrap object, explicit zeros included', () => {
    for (const obj of [...mandatoryPriorityLevelConfigurations(), ...suggestedPriorityLevelConfigurations(), ...mandatoryFlowSchemas(), ...suggestedFlowSchemas()]) {
      expect(codec.decode(codec.encode(obj))).toEqual(obj);
    }
    const exempt = mandatoryPriorityLevelConfigurations().find((p) => p.metadata?.name === 'exempt');
    expect(codec.decode(codec.encode(exempt ?? {}))['spec']).toEqual({ type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } });
  });

  it('encodes lists and status conditions (items carry no type meta, as upstream)', () => {
    const { apiVersion: _v, kind: _k, ...item } = suggestedFlowSchemas()[0] ?? {};
    const list = {
      apiVersion: 'flowcontrol.svc.io/v1',
      kind: 'FlowSchemaList',
      metadata: { resourceVersion: '7' },
      items: [{ ...item, status: { conditions: [{ type: 'Dangling', status: 'False', lastTransitionTime: '2026-01-01T00:00:00Z', reason: 'Found', message: 'ok' }] } }],
    };
    expect(codec.decode(codec.encode(list))).toEqual(list);
  });
});
