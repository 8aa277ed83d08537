import { ApiError, ResourceRegistry, type ApiObject } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import type { GatewayDeps } from '../backends';
import { createObject } from './store';
import { systemWriteContext } from './system-namespaces';
import { FakeStorage, fakeDeps } from './testing/fakes';

/** The write guards the store runs after admission, through the store against in-memory backends. */

function setup() {
  const registry = new ResourceRegistry();
  registerBuiltins(registry);
  const deps: GatewayDeps = { ...fakeDeps({ storage: new FakeStorage() }), registry, kubernetesServiceIP: '10.0.0.1' };
  return { deps };
}

describe('the reserved ClusterIP', () => {
  const service = (name: string, spec: Record<string, unknown>): ApiObject => ({ apiVersion: 'v1', kind: 'Service', metadata: { name }, spec: { ports: [{ port: 80 }], ...spec } });

  it('is refused to any other Service, with the message of an address already allocated', async () => {
    const { deps } = setup();
    const def = deps.registry.lookup('', 'v1', 'services');
    if (!def) throw new Error('services are not registered');
    const ctx = systemWriteContext(deps, def, 'test', 'team');
    const refused = await createObject(ctx, service('web', { clusterIP: '10.0.0.1' })).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ApiError);
    expect((refused as ApiError).code).toBe(422);
    expect((refused as ApiError).message).toBe('Service "web" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.1"]: failed to allocate IP 10.0.0.1: provided IP is already allocated');
    await expect(createObject(ctx, service('web', { clusterIP: '10.0.0.2' }))).resolves.toBeDefined();
    await expect(createObject({ ...ctx, namespace: 'default' }, service('kubernetes', { clusterIP: '10.0.0.1' }))).resolves.toBeDefined();
  });
});
