import type { ApiObject, StatusCause } from '@svc/apimachinery';
import { serviceDefinition } from './service';

const service = serviceDefinition();
const strategy = service.strategy;

function svc(spec: Record<string, unknown>, name = 'web'): ApiObject {
  const obj: ApiObject = { apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec };
  strategy.prepareForCreate?.(obj);
  strategy.applyDefaults?.(obj);
  return obj;
}

function fields(causes: StatusCause[] | undefined): string[] {
  return (causes ?? []).map((c) => c.field ?? '');
}

describe('Service', () => {
  it('defaults type, port protocol and targetPort', () => {
    const obj = svc({ selector: { app: 'web' }, ports: [{ port: 80 }, { port: 443, targetPort: 'https', name: 'tls' }] });
    const spec = obj['spec'] as Record<string, unknown>;
    expect(spec['type']).toBe('ClusterIP');
    expect(spec['sessionAffinity']).toBe('None');
    expect(spec['ports']).toEqual([
      { port: 80, protocol: 'TCP', targetPort: 80 },
      { port: 443, protocol: 'TCP', targetPort: 'https', name: 'tls' },
    ]);
  });

  it('clears client-set status on create and keeps stored status on update', () => {
    const obj: ApiObject = { metadata: { name: 'a' }, spec: {}, status: { loadBalancer: { ingress: [{ ip: '1.2.3.4' }] } } };
    strategy.prepareForCreate?.(obj);
    expect(obj['status']).toEqual({ loadBalancer: {} });
    const update: ApiObject = { metadata: { name: 'a' }, spec: {}, status: {} };
    strategy.prepareForUpdate?.(update, { status: { loadBalancer: { ingress: [{ ip: '5.6.7.8' }] } } });
    expect(update['status']).toEqual({ loadBalancer: { ingress: [{ ip: '5.6.7.8' }] } });
  });

  it('accepts a valid service', () => {
    expect(strategy.validate?.(svc({ ports: [{ port: 80, name: 'http' }, { port: 443, name: 'https' }] }))).toEqual([]);
  });

  it('validates ports with field paths', () => {
    const obj = svc({ ports: [{ port: 0, name: 'a' }, { port: 80, name: 'a' }, { port: 81 }, { port: 82, name: 'x', protocol: 'ICMP' }] });
    const f = fields(strategy.validate?.(obj));
    expect(f).toEqual(expect.arrayContaining(['spec.ports[0].port', 'spec.ports[1].name', 'spec.ports[2].name', 'spec.ports[3].protocol']));
  });

  it('needs ports unless headless or ExternalName', () => {
    expect(fields(strategy.validate?.(svc({})))).toEqual(['spec.ports']);
    expect(strategy.validate?.(svc({ clusterIP: 'None' }))).toEqual([]);
    expect(strategy.validate?.(svc({ type: 'ExternalName', externalName: 'db.example.com' }))).toEqual([]);
    expect(fields(strategy.validate?.(svc({ type: 'ExternalName' })))).toEqual(['spec.externalName']);
  });

  it('rejects an unknown type and names that do not start with a letter', () => {
    expect(fields(strategy.validate?.(svc({ type: 'Magic', ports: [{ port: 1 }] })))).toEqual(['spec.type']);
    expect(fields(strategy.validate?.(svc({ ports: [{ port: 1 }] }, '1web')))).toEqual(['metadata.name']);
  });

  it('a status write reports load balancer ingress by valid IP or DNS name', () => {
    const old = svc({ type: 'LoadBalancer', ports: [{ port: 80 }] });
    const withIngress = (ingress: unknown[]): ApiObject => ({ ...old, status: { loadBalancer: { ingress } } });
    expect(strategy.validateUpdate?.(withIngress([{ ip: 'garbage' }, { hostname: '10.0.0.1' }, { hostname: 'Not A Name' }]), old)).toEqual([
      { reason: 'FieldValueInvalid', field: 'status.loadBalancer.ingress[0].ip', message: 'Invalid value: "garbage": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)' },
      { reason: 'FieldValueInvalid', field: 'status.loadBalancer.ingress[1].hostname', message: 'Invalid value: "10.0.0.1": must be a DNS name, not an IP address' },
      expect.objectContaining({ field: 'status.loadBalancer.ingress[2].hostname' }),
    ]);
    expect(strategy.validateUpdate?.(withIngress([{ ip: '203.0.113.7' }, { hostname: 'lb.example.com' }]), old)).toEqual([]);
  });

  it('node ports are in the node port range and not repeated', () => {
    const ports = (...nodePorts: number[]) => svc({ type: 'NodePort', ports: nodePorts.map((nodePort, i) => ({ port: 80 + i, name: `p${i}`, nodePort })) });
    expect(strategy.validate?.(ports(1))).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.ports[0].nodePort', message: 'Invalid value: 1: provided port is not in the valid range. The range of valid ports is 30000-32767' }]);
    expect(fields(strategy.validate?.(ports(30001, 30001)))).toEqual(['spec.ports[1].nodePort']);
    expect(strategy.validate?.(ports(30000, 32767))).toEqual([]);
  });

  it('keeps the cluster IP immutable', () => {
    const old = svc({ clusterIP: '10.0.0.10', ports: [{ port: 80 }] });
    expect(strategy.validateUpdate?.(svc({ clusterIP: '10.0.0.10', ports: [{ port: 81 }] }), old)).toEqual([]);
    expect(fields(strategy.validateUpdate?.(svc({ clusterIP: '10.0.0.11', ports: [{ port: 80 }] }), old))).toEqual(['spec.clusterIPs[0]']);
  });

  it('names spec.clusterIPs[0] when the address changes or is unset, as the original', () => {
    const old = svc({ clusterIP: '10.0.0.10', clusterIPs: ['10.0.0.10'], ports: [{ port: 80 }] });
    // A patch of clusterIP alone: the stored clusterIPs follow it, and validation refuses the change.
    const patched = svc({ clusterIP: '10.0.0.11', clusterIPs: ['10.0.0.10'], ports: [{ port: 80 }] });
    strategy.prepareForUpdate?.(patched, old);
    expect((patched['spec'] as Record<string, unknown>)['clusterIPs']).toEqual(['10.0.0.11']);
    expect(strategy.validateUpdate?.(patched, old)).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.clusterIPs[0]', message: 'Invalid value: ["10.0.0.11"]: may not change once set' }]);
    // A body without clusterIPs keeps the stored ones.
    const old2 = svc({ clusterIP: '10.0.0.10', clusterIPs: ['10.0.0.10'], ports: [{ port: 80 }] });
    const replaced = svc({ clusterIP: '10.0.0.10', ports: [{ port: 81 }] });
    strategy.prepareForUpdate?.(replaced, old2);
    expect((replaced['spec'] as Record<string, unknown>)['clusterIPs']).toEqual(['10.0.0.10']);
    expect(strategy.validateUpdate?.(replaced, old2)).toEqual([]);
    const unset = svc({ clusterIPs: [], ports: [{ port: 80 }] });
    expect(strategy.validateUpdate?.(unset, old)).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.clusterIPs[0]', message: 'Invalid value: []: primary clusterIP can not be unset' }]);
    // A created Service that names only clusterIP gets clusterIPs to match.
    const created = svc({ clusterIP: '10.0.0.12', ports: [{ port: 80 }] });
    strategy.prepareForCreate?.(created);
    expect((created['spec'] as Record<string, unknown>)['clusterIPs']).toEqual(['10.0.0.12']);
  });

  it('takes port names that are DNS-1123 labels, as kubectl makes them (`80-80`)', () => {
    expect(strategy.validate?.(svc({ ports: [{ port: 80, name: '80-80' }] }))).toEqual([]);
    expect(fields(strategy.validate?.(svc({ ports: [{ port: 80, name: 'Web' }] })))).toEqual(['spec.ports[0].name']);
  });

  it('prints type, addresses and ports', () => {
    const obj = svc({ type: 'NodePort', clusterIP: '10.0.0.1', ports: [{ port: 80, nodePort: 30080 }, { port: 53, protocol: 'UDP', name: 'dns' }] });
    const cells = service.printerColumns.map((c) => (c.compute ? c.compute(obj) : (obj['spec'] as Record<string, unknown>)[c.jsonPath.split('.')[2] ?? '']));
    expect(cells).toEqual(['NodePort', '10.0.0.1', '<none>', '80:30080/TCP,53/UDP', '<none>']);
    const lb = svc({ type: 'LoadBalancer', ports: [{ port: 80 }] });
    expect(service.printerColumns.find((c) => c.name === 'External-IP')?.compute?.(lb)).toBe('<pending>');
  });
});
