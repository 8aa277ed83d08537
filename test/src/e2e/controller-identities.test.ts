import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';

/**
 * The controllers run with least privilege: the controller-manager's
 * certificate is not in system:masters and may only create the controllers'
 * service accounts and tokens; each controller acts as its own service
 * account in svc-system, bound to its `system:controller:<account>` role. A
 * controller whose binding is removed stops being able to act, and acts
 * again once the binding is back.
 */
describe('controller identities', () => {
  let env: Environment;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});
  const asControllerManager = (args: string[]) => run('kubectl', ['--kubeconfig', path.join(env.dir, 'controller-manager.kubeconfig'), ...args]);
  const canI = async (as: string, args: string[]): Promise<string> => (await kubectl(['auth', 'can-i', `--as=${as}`, ...args])).stdout.trim();
  const account = (name: string): string => `system:serviceaccount:svc-system:${name}`;

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('each controller has its service account in svc-system', async () => {
    const names = await until(async () => {
      const res = await kubectl(['get', 'serviceaccounts', '-n', 'svc-system', '-o', 'jsonpath={.items[*].metadata.name}']);
      const found = res.stdout.split(' ');
      return ['namespace-controller', 'service-account-controller', 'clusterrole-aggregation-controller', 'bootstrap-signer', 'token-cleaner'].every((n) => found.includes(n)) ? found : undefined;
    }, 20000);
    expect(names).toContain('namespace-controller');
  });

  test("the controller-manager's own certificate holds only what it needs to mint the controllers' tokens", async () => {
    const whoami = await asControllerManager(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username} {.status.userInfo.groups}']);
    expect(whoami.code).toBe(0);
    expect(whoami.stdout).toContain('system:svc-controller-manager');
    expect(whoami.stdout).not.toContain('system:masters');
    const secrets = await asControllerManager(['get', 'secrets', '-n', 'default']);
    expect(secrets.code).not.toBe(0);
    expect(secrets.stderr).toContain('cannot list resource "secrets"');
    expect((await asControllerManager(['auth', 'can-i', 'create', 'serviceaccounts/token', '-n', 'svc-system'])).stdout.trim()).toBe('yes');
    expect((await asControllerManager(['auth', 'can-i', 'create', 'serviceaccounts/token', '-n', 'default'])).stdout.trim()).toBe('no');
  });

  test('each controller may do its own work and nothing else', async () => {
    await until(async () => ((await canI(account('namespace-controller'), ['delete', 'configmaps', '-n', 'default'])) === 'yes' ? true : undefined), 20000);
    expect(await canI(account('namespace-controller'), ['create', 'configmaps', '-n', 'default'])).toBe('no');
    expect(await canI(account('namespace-controller'), ['update', 'namespaces', '--subresource=finalize'])).toBe('yes');
    expect(await canI(account('service-account-controller'), ['create', 'serviceaccounts', '-n', 'default'])).toBe('yes');
    expect(await canI(account('service-account-controller'), ['get', 'secrets', '-n', 'default'])).toBe('no');
    expect(await canI(account('token-cleaner'), ['delete', 'secrets', '-n', 'svc-system'])).toBe('yes');
    expect(await canI(account('token-cleaner'), ['delete', 'secrets', '-n', 'default'])).toBe('no');
    expect(await canI(account('bootstrap-signer'), ['update', 'configmaps/cluster-info', '-n', 'svc-public'])).toBe('yes');
    expect(await canI(account('bootstrap-signer'), ['update', 'configmaps/other', '-n', 'svc-public'])).toBe('no');
    expect(await canI(account('clusterrole-aggregation-controller'), ['escalate', 'clusterroles.rbac.authorization.svc.io'])).toBe('yes');
    expect(await canI(account('clusterrole-aggregation-controller'), ['create', 'clusterrolebindings.rbac.authorization.svc.io'])).toBe('no');
  });

  test('the namespace controller acts as its service account: without its binding a namespace stays Terminating', async () => {
    const binding = (await kubectl(['get', 'clusterrolebinding', 'system:controller:namespace-controller', '-o', 'json'])).stdout;
    expect(binding).toContain('namespace-controller');
    expect((await kubectl(['delete', 'clusterrolebinding', 'system:controller:namespace-controller'])).code).toBe(0);
    // The policy change is in force within about a second.
    await until(async () => ((await canI(account('namespace-controller'), ['delete', 'configmaps', '-n', 'default'])) === 'no' ? true : undefined));
    expect((await kubectl(['create', 'namespace', 'orphaned'])).code).toBe(0);
    expect((await kubectl(['create', 'configmap', 'left', '--from-literal=a=b', '-n', 'orphaned'])).code).toBe(0);
    expect((await kubectl(['delete', 'namespace', 'orphaned', '--wait=false'])).code).toBe(0);
    await new Promise((r) => setTimeout(r, 3000));
    expect((await kubectl(['get', 'configmap', 'left', '-n', 'orphaned', '-o', 'name'])).stdout.trim()).toBe('configmap/left');
    expect((await kubectl(['get', 'namespace', 'orphaned', '-o', 'jsonpath={.status.phase}'])).stdout).toBe('Terminating');

    const restored = JSON.parse(binding) as { metadata: Record<string, unknown> };
    restored.metadata = { name: 'system:controller:namespace-controller', labels: restored.metadata['labels'], annotations: restored.metadata['annotations'] };
    expect((await kubectl(['create', '-f', '-'], JSON.stringify(restored))).code).toBe(0);
    // The controller retries; the namespace and what is in it go.
    await until(async () => ((await kubectl(['get', 'namespace', 'orphaned'])).code !== 0 ? true : undefined), 45000);
  }, 90000);
});
