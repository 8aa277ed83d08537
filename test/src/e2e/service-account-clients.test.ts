import * as fs from 'node:fs';
import * as path from 'node:path';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { tokenRequest } from './http';

const fixtures = path.join(__dirname, '..', '..', 'fixtures');
const NAMESPACE = 'sa-clients';
const ACCOUNT = `system:serviceaccount:${NAMESPACE}:app`;

/** What a fixture reports for one operation: done, or what the library threw. */
interface Outcome {
  ok?: boolean;
  names?: string[];
  name?: string;
  events?: string[];
  /** client-node: the HTTP code of an ApiException; the watch's error carries `statusCode`. */
  code?: number;
  statusCode?: number;
  message?: string;
  /** python3-kubernetes: ApiException.status and .reason. */
  status?: number;
  reason?: string;
  body?: Record<string, unknown>;
}
type Report = Record<'list' | 'create' | 'watch' | 'delete', Outcome>;

/**
 * The official client libraries as a service account (a token from `kubectl
 * create token`): @kubernetes/client-node and Debian's python3-kubernetes
 * are refused with 403 Forbidden before any grant, may do exactly what a
 * Role bound to the account grants (list, create, watch) and nothing else
 * (delete), and are refused again within seconds of the binding's deletion.
 */
describe('client libraries as a service account', () => {
  let env: Environment;
  let token = '';
  let accountConfig = '';
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);

  const clientNode = async (name: string): Promise<Report> => {
    const res = await run(process.execPath, [path.join(fixtures, 'client-node-as-account.mjs'), accountConfig, NAMESPACE, name], { timeoutMs: 40000 });
    expect(res.stderr).toBe('');
    return JSON.parse(res.stdout) as Report;
  };
  const python = async (name: string): Promise<Report> => {
    const res = await run('/usr/bin/python3', [path.join(fixtures, 'python-as-account.py'), accountConfig, NAMESPACE, name], { timeoutMs: 40000 });
    expect(res.code).toBe(0);
    return JSON.parse(res.stdout) as Report;
  };

  /** The Status of a refusal, as the server sends it and the libraries hand it on. */
  const forbidden = (verb: string, name?: string) =>
    expect.objectContaining({
      kind: 'Status',
      apiVersion: 'v1',
      status: 'Failure',
      reason: 'Forbidden',
      code: 403,
      details: { ...(name ? { name } : {}), group: '', kind: 'configmaps' },
      message: expect.stringContaining(`User "${ACCOUNT}" cannot ${verb} resource "configmaps" in API group "" in the namespace "${NAMESPACE}"`),
    });
  const expectClientNodeRefused = (r: Report, name: string): void => {
    expect(r.list).toEqual({ code: 403, body: forbidden('list') });
    expect(r.create).toEqual({ code: 403, body: forbidden('create') });
    expect(r.delete).toEqual({ code: 403, body: forbidden('delete', name) });
    // client-node's Watch reports a refused watch by its HTTP status only.
    expect(r.watch).toEqual({ statusCode: 403, message: 'Forbidden' });
  };
  const expectPythonRefused = (r: Report, name: string): void => {
    expect(r.list).toEqual({ status: 403, reason: 'Forbidden', body: forbidden('list') });
    expect(r.create).toEqual({ status: 403, reason: 'Forbidden', body: forbidden('create') });
    expect(r.watch).toEqual({ status: 403, reason: 'Forbidden', body: forbidden('watch') });
    expect(r.delete).toEqual({ status: 403, reason: 'Forbidden', body: forbidden('delete', name) });
  };

  beforeAll(async () => {
    env = await startEnvironment({ authorizationMode: 'RBAC' });
    expect((await kubectl(['create', 'namespace', NAMESPACE])).code).toBe(0);
    expect((await kubectl(['create', 'serviceaccount', 'app', '-n', NAMESPACE])).code).toBe(0);
    expect((await kubectl(['create', 'configmap', 'existing', '-n', NAMESPACE, '--from-literal=a=1'])).code).toBe(0);
    token = (await kubectl(['create', 'token', 'app', '-n', NAMESPACE])).stdout.trim();
    expect(token.split('.')).toHaveLength(3);
    accountConfig = path.join(env.dir, 'app.kubeconfig');
    fs.writeFileSync(accountConfig, tokenKubeconfig(env.url, env.pki.caCert, token), { mode: 0o600 });
    // The default roles are in place once the account may review itself.
    await until(async () => ((await run('kubectl', ['--kubeconfig', accountConfig, 'auth', 'whoami'])).code === 0 ? true : undefined), 30000);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('before any grant, both libraries get 403 Forbidden for every verb', async () => {
    expectClientNodeRefused(await clientNode('from-node'), 'from-node');
    expectPythonRefused(await python('from-python'), 'from-python');
    expect((await kubectl(['get', 'configmaps', '-n', NAMESPACE, '-o', 'name'])).stdout.trim()).toBe('configmap/existing');
  });

  test('with a Role and RoleBinding, exactly the granted verbs: list, create and watch, but not delete', async () => {
    expect((await kubectl(['create', 'role', 'cm-user', '-n', NAMESPACE, '--verb=get,list,watch,create', '--resource=configmaps'])).code).toBe(0);
    expect((await kubectl(['create', 'rolebinding', 'app-cm-user', '-n', NAMESPACE, '--role=cm-user', `--serviceaccount=${NAMESPACE}:app`])).code).toBe(0);
    await until(async () => ((await tokenRequest(env, 'GET', `/api/v1/namespaces/${NAMESPACE}/configmaps`, token)).status === 200 ? true : undefined), 10000);

    const node = await clientNode('from-node');
    expect(node.list).toEqual({ ok: true, names: ['existing'] });
    expect(node.create).toEqual({ ok: true, name: 'from-node' });
    expect(node.watch).toMatchObject({ ok: true });
    expect(node.watch.events).toContain('ADDED:from-node');
    expect(node.delete).toEqual({ code: 403, body: forbidden('delete', 'from-node') });

    const py = await python('from-python');
    expect(py.list).toEqual({ ok: true, names: ['existing', 'from-node'] });
    expect(py.create).toEqual({ ok: true, name: 'from-python' });
    expect(py.watch.ok).toBe(true);
    expect(py.watch.events).toEqual(expect.arrayContaining(['ADDED:existing', 'ADDED:from-node', 'ADDED:from-python']));
    expect(py.delete).toEqual({ status: 403, reason: 'Forbidden', body: forbidden('delete', 'from-python') });

    // Both creates happened, and the refused deletes deleted nothing.
    expect((await kubectl(['get', 'configmaps', '-n', NAMESPACE, '-o', 'jsonpath={.items[*].metadata.name}'])).stdout.split(' ').sort()).toEqual(['existing', 'from-node', 'from-python']);
  });

  test('after the binding is deleted, both libraries get 403 again within a few seconds', async () => {
    expect((await kubectl(['delete', 'rolebinding', 'app-cm-user', '-n', NAMESPACE])).code).toBe(0);
    const deletedAt = Date.now();
    // Polled with a plain list and a dry-run create, so that no library run can create while the
    // grant is still in force: the gateway keeps each decision (per verb) for up to a second.
    const refused = async (): Promise<boolean> => {
      const list = await tokenRequest(env, 'GET', `/api/v1/namespaces/${NAMESPACE}/configmaps`, token);
      const probe = JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'probe' } });
      const create = await tokenRequest(env, 'POST', `/api/v1/namespaces/${NAMESPACE}/configmaps?dryRun=All`, token, probe, { 'content-type': 'application/json' });
      return list.status === 403 && create.status === 403;
    };
    await until(async () => ((await refused()) ? true : undefined), 10000);
    expect(Date.now() - deletedAt).toBeLessThan(5000);
    const node = await clientNode('after-node');
    const py = await python('after-python');
    expect(Date.now() - deletedAt).toBeLessThan(10000);
    expectClientNodeRefused(node, 'after-node');
    expectPythonRefused(py, 'after-python');
    expect((await kubectl(['get', 'configmap', 'after-node', 'after-python', '-n', NAMESPACE, '--ignore-not-found', '-o', 'name'])).stdout.trim()).toBe('');
  });
});
