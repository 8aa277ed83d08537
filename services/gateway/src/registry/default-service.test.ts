import { ResourceRegistry, type ApiObject, type StoredKey } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import { createLogger } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { DefaultServiceReconciler, ENDPOINT_LEASE_LABEL, SKIP_MIRROR_LABEL, endpointLeaseName, endpointSubsets, type DefaultServiceOptions, type ReconcilerClock } from './default-service';
import { FakeStorage, fakeDeps } from './testing/fakes';

/**
 * The default/kubernetes Service reconciler against in-memory storage and a
 * clock the test moves: what one gateway and several write, how an expired
 * gateway drops out, and what a stopping gateway leaves behind.
 */

const SERVICE: StoredKey = { group: '', resource: 'services', namespace: 'default', name: 'kubernetes' };
const ENDPOINTS: StoredKey = { group: '', resource: 'endpoints', namespace: 'default', name: 'kubernetes' };
const leaseKey = (name: string): StoredKey => ({ group: 'coordination.svc.io', resource: 'leases', namespace: 'svc-system', name });

class FakeClock implements ReconcilerClock {
  ms = Date.parse('2026-01-01T00:00:00Z');
  now = (): number => this.ms;
  sleep = async (): Promise<void> => undefined;
}

const silent = createLogger('test', { level: 'error', write: () => undefined });

function setup() {
  const storage = new FakeStorage();
  const registry = new ResourceRegistry();
  registerBuiltins(registry);
  const deps: GatewayDeps = { ...fakeDeps({ storage }), registry };
  const clock = new FakeClock();
  const gateway = (address: string, port = 6443, extra: Partial<DefaultServiceOptions> = {}) =>
    new DefaultServiceReconciler(deps, { serviceIP: '10.0.0.1', advertiseAddress: address, port, intervalMs: 10_000, leaseDurationMs: 15_000, ...extra }, silent, clock);
  const addresses = () => ((storage.peek(ENDPOINTS)?.['subsets'] ?? []) as Array<{ addresses: Array<{ ip: string }>; ports: Array<{ port: number }> }>).map((s) => [s.ports[0]?.port, s.addresses.map((a) => a.ip)]);
  return { storage, deps, clock, gateway, addresses };
}

describe('the default/kubernetes Service reconciler', () => {
  it('creates its Lease, the Service as the original does and Endpoints listing the gateway', async () => {
    const { storage, gateway } = setup();
    await gateway('192.168.1.10').reconcile();

    const service = storage.peek(SERVICE) as ApiObject;
    expect(service.metadata?.labels).toEqual({ component: 'apiserver', provider: 'svc' });
    expect(service['spec']).toEqual({
      ports: [{ name: 'https', protocol: 'TCP', port: 443, targetPort: 6443 }],
      clusterIP: '10.0.0.1',
      clusterIPs: ['10.0.0.1'],
      type: 'ClusterIP',
      sessionAffinity: 'None',
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
      internalTrafficPolicy: 'Cluster',
    });
    const endpoints = storage.peek(ENDPOINTS) as ApiObject;
    expect(endpoints.metadata?.labels).toEqual({ [SKIP_MIRROR_LABEL]: 'true' });
    expect(endpoints['subsets']).toEqual([{ addresses: [{ ip: '192.168.1.10' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] }]);
    const lease = storage.peek(leaseKey('gateway-192.168.1.10-6443')) as ApiObject;
    expect(lease.metadata?.labels).toEqual({ [ENDPOINT_LEASE_LABEL]: 'kubernetes' });
    expect(lease['spec']).toMatchObject({ holderIdentity: '192.168.1.10:6443', leaseDurationSeconds: 15, renewTime: '2026-01-01T00:00:00.000000Z' });
  });

  it('lists every live gateway, sorted, one subset per port', async () => {
    const { gateway, addresses } = setup();
    const [a, b, c] = [gateway('10.1.0.2'), gateway('10.1.0.1'), gateway('127.0.0.1', 7443)];
    await a.reconcile();
    await b.reconcile();
    expect(addresses()).toEqual([[6443, ['10.1.0.1', '10.1.0.2']]]);
    await c.reconcile();
    expect(addresses()).toEqual([
      [6443, ['10.1.0.1', '10.1.0.2']],
      [7443, ['127.0.0.1']],
    ]);
  });

  it('writes nothing when all is as it should be, renewing only the Lease', async () => {
    const { storage, clock, gateway } = setup();
    const a = gateway('10.1.0.1');
    await a.reconcile();
    const writes = storage.calls.filter((c) => c.op !== 'get' && c.op !== 'list').length;
    clock.ms += 10_000;
    await a.reconcile();
    const later = storage.calls.filter((c) => c.op !== 'get' && c.op !== 'list').slice(writes);
    expect(later.map((c) => `${c.op} ${c.key.resource}`)).toEqual(['update leases']);
  });

  it('brings back a deleted Service or Endpoints, and Endpoints edited by hand, on the next pass', async () => {
    const { storage, gateway, addresses } = setup();
    const a = gateway('10.1.0.1');
    await a.reconcile();
    await storage.delete(SERVICE);
    await storage.delete(ENDPOINTS);
    await a.reconcile();
    expect(storage.peek(SERVICE)?.['spec']).toMatchObject({ clusterIP: '10.0.0.1' });
    expect(addresses()).toEqual([[6443, ['10.1.0.1']]]);

    const edited = storage.peek(ENDPOINTS) as ApiObject;
    storage.seed(ENDPOINTS, { ...edited, metadata: { ...edited.metadata, labels: {} }, subsets: [{ addresses: [{ ip: '1.2.3.4' }], ports: [{ port: 1, protocol: 'TCP' }] }] });
    await a.reconcile();
    expect(addresses()).toEqual([[6443, ['10.1.0.1']]]);
    expect(storage.peek(ENDPOINTS)?.metadata?.labels).toEqual({ [SKIP_MIRROR_LABEL]: 'true' });
  });

  it('leaves an existing Service as it is, as the original', async () => {
    const { storage, gateway } = setup();
    const a = gateway('10.1.0.1');
    await a.reconcile();
    const service = storage.peek(SERVICE) as ApiObject;
    storage.seed(SERVICE, { ...service, metadata: { ...service.metadata, labels: { mine: 'yes' } } });
    await a.reconcile();
    expect(storage.peek(SERVICE)?.metadata?.labels).toEqual({ mine: 'yes' });
  });

  it('drops a gateway whose Lease this gateway has not seen renewed for its duration, and deletes the Lease', async () => {
    const { storage, clock, gateway, addresses } = setup();
    const [a, b] = [gateway('10.1.0.1'), gateway('10.1.0.2')];
    await b.reconcile();
    await a.reconcile();
    expect(addresses()).toEqual([[6443, ['10.1.0.1', '10.1.0.2']]]);
    // b stops renewing: within the lease duration it stays.
    clock.ms += 10_000;
    await a.reconcile();
    clock.ms += 5_000;
    await a.reconcile();
    expect(addresses()).toEqual([[6443, ['10.1.0.1', '10.1.0.2']]]);
    clock.ms += 1;
    await a.reconcile();
    expect(addresses()).toEqual([[6443, ['10.1.0.1']]]);
    expect(storage.peek(leaseKey(endpointLeaseName('10.1.0.2', 6443)))).toBeUndefined();
  });

  it('judges expiry by what it observed, not by the Lease holder\'s clock', async () => {
    const { storage, clock, gateway, addresses } = setup();
    const [a, b] = [gateway('10.1.0.1'), gateway('10.1.0.2')];
    await b.reconcile();
    // b's renewTime says an hour ago (its clock is behind) but a saw it renewed just now.
    const key = leaseKey(endpointLeaseName('10.1.0.2', 6443));
    const lease = storage.peek(key) as ApiObject;
    storage.seed(key, { ...lease, spec: { ...(lease['spec'] as object), renewTime: '2025-12-31T23:00:00.000000Z' } });
    await a.reconcile();
    expect(addresses()).toEqual([[6443, ['10.1.0.1', '10.1.0.2']]]);
    clock.ms += 16_000;
    await a.reconcile();
    expect(addresses()).toEqual([[6443, ['10.1.0.1']]]);
  });

  it('takes a stopping gateway out at once, but never erases the last endpoint', async () => {
    const { storage, gateway, addresses } = setup();
    const [a, b] = [gateway('10.1.0.1'), gateway('10.1.0.2')];
    await a.reconcile();
    await b.reconcile();
    await b.stop();
    expect(addresses()).toEqual([[6443, ['10.1.0.1']]]);
    expect(storage.peek(leaseKey(endpointLeaseName('10.1.0.2', 6443)))).toBeUndefined();
    await b.reconcile();
    expect(addresses()).toEqual([[6443, ['10.1.0.1']]]);
    await a.stop();
    expect(addresses()).toEqual([[6443, ['10.1.0.1']]]);
    expect(storage.peek(leaseKey(endpointLeaseName('10.1.0.1', 6443)))).toBeUndefined();
  });

  it('with endpoints off keeps only the Service', async () => {
    const { storage, gateway } = setup();
    await gateway('10.1.0.1', 6443, { endpoints: false }).reconcile();
    expect(storage.peek(SERVICE)).toBeDefined();
    expect(storage.peek(ENDPOINTS)).toBeUndefined();
    expect(storage.callsOf('create').map((c) => c.key.resource)).toEqual(['services']);
  });

  it('names IPv6 endpoints in their Lease and holder as URLs do', () => {
    expect(endpointLeaseName('fd00::1', 6443)).toBe('gateway-fd00--1-6443');
    expect(endpointSubsets([{ address: 'fd00::2', port: 6443 }, { address: 'fd00::1', port: 6443 }])).toEqual([
      { addresses: [{ ip: 'fd00::1' }, { ip: 'fd00::2' }], ports: [{ name: 'https', port: 6443, protocol: 'TCP' }] },
    ]);
  });
});
