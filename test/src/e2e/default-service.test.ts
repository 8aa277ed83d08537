import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest } from './http';

/**
 * The `default/kubernetes` Service with two gateways: both are its endpoints
 * once they are up, the Service and Endpoints come back when deleted, no
 * other Service may take its ClusterIP, and a gateway that dies without
 * saying goodbye leaves the Endpoints once its Lease expires (short here,
 * by flag).
 */
describe('the default/kubernetes Service', () => {
  let env: Environment;
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, `--cache-dir=${path.join(env.dir, 'kubectl-cache')}`, ...args]);
  const ports = (): number[] => env.urls.map((u) => Number(new URL(u).port));
  /** The Endpoints' `ip:port`s, sorted; undefined while they do not exist. */
  const endpoints = async (): Promise<string[] | undefined> => {
    const res = await adminRequest(env, 'GET', '/api/v1/namespaces/default/endpoints/kubernetes');
    if (res.status !== 200) return undefined;
    const subsets = (res.json()['subsets'] ?? []) as Array<{ addresses: Array<{ ip: string }>; ports: Array<{ port: number }> }>;
    return subsets.flatMap((s) => s.addresses.flatMap((a) => s.ports.map((p) => `${a.ip}:${p.port}`))).sort();
  };
  const both = () => ports().map((p) => `127.0.0.1:${p}`).sort();

  beforeAll(async () => {
    env = await startEnvironment({
      gateways: 2,
      supervise: false,
      serviceArgs: { gateway: ['--endpoint-reconciler-interval=300ms', '--endpoint-lease-duration=2s'] },
    });
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('exists after start as the original keeps it, with both gateways as endpoints', async () => {
    await until(async () => (JSON.stringify(await endpoints()) === JSON.stringify(both()) ? true : undefined));
    const svc = await kubectl(['get', 'svc', 'kubernetes', '-o', 'json']);
    expect(svc.code).toBe(0);
    const service = JSON.parse(svc.stdout) as { metadata: { labels: Record<string, string> }; spec: Record<string, unknown> };
    expect(service.metadata.labels).toEqual({ component: 'apiserver', provider: 'svc' });
    expect(service.spec).toEqual({
      clusterIP: '10.0.0.1',
      clusterIPs: ['10.0.0.1'],
      internalTrafficPolicy: 'Cluster',
      ipFamilies: ['IPv4'],
      ipFamilyPolicy: 'SingleStack',
      ports: [{ name: 'https', port: 443, protocol: 'TCP', targetPort: expect.any(Number) }],
      sessionAffinity: 'None',
      type: 'ClusterIP',
    });
    expect(ports()).toContain((service.spec['ports'] as Array<{ targetPort: number }>)[0]?.targetPort);

    const all = await kubectl(['get', 'all', '-n', 'default']);
    expect(all.code).toBe(0);
    expect(all.stdout).toMatch(/^NAME\s+TYPE\s+CLUSTER-IP\s+EXTERNAL-IP\s+PORT\(S\)\s+AGE\nservice\/kubernetes\s+ClusterIP\s+10\.0\.0\.1\s+<none>\s+443\/TCP\s+\S+\n$/);
    const ep = await kubectl(['get', 'endpoints', 'kubernetes', '-o', 'jsonpath={.metadata.labels}']);
    expect(JSON.parse(ep.stdout)).toEqual({ 'endpointslice.svc.io/skip-mirror': 'true' });
  });

  test('deleted, the Service and its Endpoints come back', async () => {
    const deleted = await kubectl(['delete', 'service/kubernetes', 'endpoints/kubernetes']);
    expect(deleted.stdout).toContain('service "kubernetes" deleted');
    expect(deleted.stdout).toContain('endpoints "kubernetes" deleted');
    await until(async () => ((await adminRequest(env, 'GET', '/api/v1/namespaces/default/services/kubernetes')).status === 200 ? true : undefined));
    await until(async () => (JSON.stringify(await endpoints()) === JSON.stringify(both()) ? true : undefined));
  });

  test('its ClusterIP is refused to any other Service', async () => {
    const res = await kubectl(['create', 'service', 'clusterip', 'squatter', '--clusterip=10.0.0.1', '--tcp=80:80']);
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('Service "squatter" is invalid: spec.clusterIPs: Invalid value: ["10.0.0.1"]: failed to allocate IP 10.0.0.1: provided IP is already allocated');
  });

  test('a gateway that dies leaves the Endpoints once its Lease expires', async () => {
    const [first] = ports();
    const gateway1 = env.processes.find((p) => p.name === 'gateway-1');
    gateway1?.kill('SIGKILL');
    await gateway1?.exited;
    await until(async () => (JSON.stringify(await endpoints()) === JSON.stringify([`127.0.0.1:${first}`]) ? true : undefined));
    const leases = await adminRequest(env, 'GET', '/apis/coordination.svc.io/v1/namespaces/svc-system/leases?labelSelector=svc.io%2Fapiserver-endpoint%3Dkubernetes');
    expect((leases.json()['items'] as Array<{ metadata: { name: string } }>).map((l) => l.metadata.name)).toEqual([`gateway-127.0.0.1-${first}`]);
  });
});
