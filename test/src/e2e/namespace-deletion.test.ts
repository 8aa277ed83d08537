import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest } from './http';

/** Deleting a namespace deletes what is in it (the controller-manager's namespace controller). */
describe('namespace deletion end to end', () => {
  let env: Environment;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});
  const phase = async (ns: string): Promise<string | undefined> => {
    const res = await kubectl(['get', 'namespace', ns, '-o', 'jsonpath={.status.phase}']);
    return res.code === 0 ? res.stdout : undefined;
  };

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('kubectl delete namespace waits until the namespace and its objects of every group are gone', async () => {
    expect((await kubectl(['create', 'namespace', 'doomed'])).code).toBe(0);
    expect((await kubectl(['create', 'configmap', 'settings', '--from-literal=a=b', '-n', 'doomed'])).code).toBe(0);
    expect((await kubectl(['create', 'secret', 'generic', 'token', '--from-literal=t=x', '-n', 'doomed'])).code).toBe(0);
    const lease = 'apiVersion: coordination.svc.io/v1\nkind: Lease\nmetadata:\n  name: leader\nspec:\n  holderIdentity: me\n';
    expect((await kubectl(['apply', '-n', 'doomed', '-f', '-'], lease)).code).toBe(0);
    expect((await kubectl(['create', 'configmap', 'bystander', '--from-literal=a=b', '-n', 'default'])).code).toBe(0);

    const deleted = await kubectl(['delete', 'namespace', 'doomed', '--timeout=60s']);
    expect(deleted.stderr).toBe('');
    expect(deleted.stdout.trim()).toBe('namespace "doomed" deleted');
    const gone = await kubectl(['get', 'namespace', 'doomed']);
    expect(gone.code).not.toBe(0);
    expect(gone.stderr).toContain('namespaces "doomed" not found');

    // A namespace of the same name starts empty; other namespaces are untouched.
    expect((await kubectl(['create', 'namespace', 'doomed'])).code).toBe(0);
    for (const kind of ['configmaps', 'secrets', 'leases.coordination.svc.io']) {
      const res = await kubectl(['get', kind, '-n', 'doomed', '-o', 'name']);
      expect(res.code).toBe(0);
      expect(res.stdout.split('\n').filter((l) => l && !l.startsWith('configmap/kube-root'))).toEqual([]);
    }
    expect((await kubectl(['get', 'configmap', 'bystander', '-n', 'default', '-o', 'name'])).stdout.trim()).toBe('configmap/bystander');
  });

  test('a terminating namespace refuses new objects and waits for objects held by finalizers', async () => {
    expect((await kubectl(['create', 'namespace', 'held'])).code).toBe(0);
    const held = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: pinned\n  finalizers:\n  - example.com/keep\ndata:\n  a: b\n';
    expect((await kubectl(['apply', '-n', 'held', '-f', '-'], held)).code).toBe(0);
    expect((await kubectl(['delete', 'namespace', 'held', '--wait=false'])).code).toBe(0);
    expect(await phase('held')).toBe('Terminating');

    // Admission remembers an Active namespace for up to --namespace-cache-ttl-ms
    // (1 s); after that, creates are refused. Anything created in that window
    // is removed by the namespace controller like the rest.
    let attempt = 0;
    const refused = await until(async () => {
      const res = await kubectl(['create', 'configmap', `late-${attempt++}`, '--from-literal=a=b', '-n', 'held']);
      return res.code !== 0 ? res : undefined;
    }, 10000);
    expect(refused.stderr).toContain('because it is being terminated');

    // The held object is marked for deletion, and the namespace stays until it goes.
    await until(async () => {
      const res = await kubectl(['get', 'configmap', 'pinned', '-n', 'held', '-o', 'jsonpath={.metadata.deletionTimestamp}']);
      return res.stdout ? true : undefined;
    }, 20000);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await phase('held')).toBe('Terminating');
    // The namespace says why it waits, as the original controller's conditions do.
    const conditions = await until(async () => {
      const res = await kubectl(['get', 'namespace', 'held', '-o', 'json']);
      const list = (JSON.parse(res.stdout).status?.conditions ?? []) as Array<{ type: string; status: string; message: string }>;
      return list.some((c) => c.type === 'NamespaceFinalizersRemaining' && c.status === 'True') ? list : undefined;
    }, 20000);
    expect(conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'NamespaceContentRemaining', status: 'True', message: expect.stringContaining('configmaps. has 1 resource instances') }),
        expect.objectContaining({ type: 'NamespaceFinalizersRemaining', status: 'True', message: expect.stringContaining('example.com/keep in 1 resource instances') }),
        expect.objectContaining({ type: 'NamespaceDeletionDiscoveryFailure', status: 'False' }),
      ]),
    );

    expect((await kubectl(['patch', 'configmap', 'pinned', '-n', 'held', '--type=merge', '-p', '{"metadata":{"finalizers":null}}'])).code).toBe(0);
    await until(async () => ((await phase('held')) === undefined ? true : undefined), 20000);
  });
  test('objects created while the namespace is being deleted do not outlive it', async () => {
    const nsBody = JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'racy' } });
    expect((await adminRequest(env, 'POST', '/api/v1/namespaces', nsBody)).status).toBe(201);
    let stop = false;
    const accepted: string[] = [];
    const writers = Array.from({ length: 4 }, async (_, w) => {
      for (let i = 0; !stop && i < 500; i++) {
        const name = `w${w}-${i}`;
        const res = await adminRequest(env, 'POST', '/api/v1/namespaces/racy/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name } }));
        if (res.status === 201) accepted.push(name);
        else expect([403, 404]).toContain(res.status); // terminating, or gone
      }
    });
    await until(() => (accepted.length >= 20 ? true : undefined), 30000);
    expect((await adminRequest(env, 'DELETE', '/api/v1/namespaces/racy')).status).toBe(200);
    await until(async () => ((await adminRequest(env, 'GET', '/api/v1/namespaces/racy')).status === 404 ? true : undefined), 60000);
    stop = true;
    await Promise.all(writers);
    expect(accepted.length).toBeGreaterThan(0);
    // The same name starts empty: nothing accepted during the deletion survived it.
    expect((await adminRequest(env, 'POST', '/api/v1/namespaces', nsBody)).status).toBe(201);
    const list = (await adminRequest(env, 'GET', '/api/v1/namespaces/racy/configmaps')).json() as { items: unknown[] };
    expect(list.items).toEqual([]);
  });
});
