import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest } from './http';

/**
 * Service accounts: the controller-manager gives every namespace a
 * `default` ServiceAccount (and restores it when deleted); the ServiceAccount
 * admission plugin makes a pod without an account run as it.
 */
describe('service accounts', () => {
  let env: Environment;
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);
  const exists = async (ns: string): Promise<true | undefined> => ((await adminRequest(env, 'GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`)).status === 200 ? true : undefined);

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('every namespace, the system ones and a new one, gets a default service account', async () => {
    for (const ns of ['default', 'svc-system', 'svc-public']) await until(() => exists(ns), 20000);
    expect((await kubectl(['create', 'namespace', 'team'])).code).toBe(0);
    await until(() => exists('team'), 20000);
    const listed = await kubectl(['get', 'serviceaccounts', '-n', 'team', '-o', 'name']);
    expect(listed.stdout.trim()).toBe('serviceaccount/default');
  });

  test('a deleted default service account comes back', async () => {
    await until(() => exists('team'), 20000);
    const before = (await adminRequest(env, 'GET', '/api/v1/namespaces/team/serviceaccounts/default')).json() as { metadata: { uid: string } };
    expect((await kubectl(['delete', 'serviceaccount', 'default', '-n', 'team'])).code).toBe(0);
    const uid = await until(async () => {
      const res = await adminRequest(env, 'GET', '/api/v1/namespaces/team/serviceaccounts/default');
      return res.status === 200 ? (res.json() as { metadata: { uid: string } }).metadata.uid : undefined;
    }, 20000);
    expect(uid).not.toBe(before.metadata.uid);
  });

  test('a pod without an account runs as default; a named one is kept', async () => {
    const pod = (name: string, spec: Record<string, unknown> = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'Pod', metadata: { name }, spec: { containers: [{ name: 'c', image: 'busybox' }], ...spec } });
    const plain = await adminRequest(env, 'POST', '/api/v1/namespaces/team/pods', pod('plain'));
    expect(plain.status).toBe(201);
    expect((plain.json()['spec'] as Record<string, unknown>)['serviceAccountName']).toBe('default');
    const named = await adminRequest(env, 'POST', '/api/v1/namespaces/team/pods', pod('named', { serviceAccountName: 'robot' }));
    expect(named.status).toBe(201);
    expect((named.json()['spec'] as Record<string, unknown>)['serviceAccountName']).toBe('robot');
    expect((await kubectl(['get', 'pod', 'plain', '-n', 'team', '-o', 'jsonpath={.spec.serviceAccountName}'])).stdout).toBe('default');
  });

  test('deleting the namespace takes its service accounts with it and does not bring them back', async () => {
    expect((await kubectl(['create', 'namespace', 'brief'])).code).toBe(0);
    await until(() => exists('brief'), 20000);
    const deleted = await kubectl(['delete', 'namespace', 'brief', '--timeout=60s']);
    expect(deleted.stdout.trim()).toBe('namespace "brief" deleted');
    expect((await adminRequest(env, 'GET', '/api/v1/namespaces/brief/serviceaccounts/default')).status).toBe(404);
  });
});
