import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { tokenRequest } from './http';

/**
 * The ABAC mode end to end (`--authorization-mode=ABAC,RBAC` with
 * `--authorization-policy-file`), with service-account tokens from
 * `kubectl create token`: a read-only policy lets kubectl get and list but a
 * create is 403; an unversioned (v0) line grants writes; what ABAC does not
 * match is left to RBAC.
 */
describe('ABAC', () => {
  let env: Environment;
  let policyDir = '';
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);
  const tokens: Record<string, string> = {};
  const configs: Record<string, string> = {};
  const as = (account: string, args: string[]) => run('kubectl', ['--kubeconfig', configs[account] as string, ...args]);

  beforeAll(async () => {
    policyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'abac-e2e-'));
    const policyFile = path.join(policyDir, 'policy.jsonl');
    fs.writeFileSync(
      policyFile,
      [
        '# read-only for the robot in team (line 2), writes of configmaps in team for the writer (line 4, unversioned)',
        JSON.stringify({ apiVersion: 'abac.authorization.svc.io/v1beta1', kind: 'Policy', spec: { user: 'system:serviceaccount:team:robot', readonly: true, namespace: 'team', resource: '*', apiGroup: '*' } }),
        '',
        '{"user":"system:serviceaccount:team:writer","namespace":"team","resource":"configmaps"}',
      ].join('\n') + '\n',
    );
    env = await startEnvironment({ authorizationMode: 'ABAC,RBAC', authorizationPolicyFile: policyFile });
    expect((await kubectl(['create', 'namespace', 'team'])).code).toBe(0);
    expect((await kubectl(['create', 'configmap', 'app-config', '-n', 'team', '--from-literal=a=1'])).code).toBe(0);
    for (const account of ['robot', 'writer']) {
      expect((await kubectl(['create', 'serviceaccount', account, '-n', 'team'])).code).toBe(0);
      const token = (await kubectl(['create', 'token', account, '-n', 'team'])).stdout.trim();
      expect(token.split('.')).toHaveLength(3);
      tokens[account] = token;
      configs[account] = path.join(env.dir, `${account}.kubeconfig`);
      fs.writeFileSync(configs[account] as string, tokenKubeconfig(env.url, env.pki.caCert, token), { mode: 0o600 });
    }
    // RBAC's default discovery roles are in place once a service account may read /apis.
    await until(async () => ((await tokenRequest(env, 'GET', '/apis', tokens['robot'] as string)).status === 200 ? true : undefined), 30000);
  });

  afterAll(async () => {
    await env?.stop(true);
    if (policyDir) fs.rmSync(policyDir, { recursive: true, force: true });
  });

  test('a read-only policy: get and list are allowed, a create is 403', async () => {
    const got = await as('robot', ['get', 'configmap', 'app-config', '-n', 'team', '-o', 'jsonpath={.data.a}']);
    expect(got).toMatchObject({ code: 0, stdout: '1' });
    const listed = await as('robot', ['get', 'configmaps', '-n', 'team', '-o', 'name']);
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n')).toContain('configmap/app-config');
    // Watch is read-only too (a watch request answers 200 and streams).
    expect((await as('robot', ['auth', 'can-i', 'watch', 'configmaps', '-n', 'team'])).stdout.trim()).toBe('yes');

    const created = await as('robot', ['create', 'configmap', 'from-robot', '-n', 'team', '--from-literal=b=2']);
    expect(created.code).not.toBe(0);
    expect(created.stderr).toMatch(/configmaps is forbidden: User "system:serviceaccount:team:robot" cannot create resource "configmaps" in API group "" in the namespace "team": none of the authorization modes \(ABAC, RBAC\) allowed it/);
    const raw = await tokenRequest(env, 'POST', '/api/v1/namespaces/team/configmaps', tokens['robot'] as string, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'raw' } }));
    expect(raw.status).toBe(403);
    expect(raw.json()).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'Forbidden', code: 403, details: { kind: 'configmaps' } });
    // Other writes and other namespaces are refused as well.
    expect((await as('robot', ['delete', 'configmap', 'app-config', '-n', 'team'])).stderr).toMatch(/cannot delete resource "configmaps"/);
    expect((await as('robot', ['get', 'configmaps', '-n', 'default'])).stderr).toMatch(/cannot list resource "configmaps" in API group "" in the namespace "default"/);
  });

  test('an unversioned (v0) line grants every verb on its resource in its namespace', async () => {
    expect((await as('writer', ['create', 'configmap', 'from-writer', '-n', 'team', '--from-literal=c=3'])).code).toBe(0);
    expect((await as('writer', ['label', 'configmap', 'from-writer', '-n', 'team', 'x=y'])).code).toBe(0);
    expect((await as('writer', ['delete', 'configmap', 'from-writer', '-n', 'team'])).code).toBe(0);
    expect((await as('writer', ['get', 'secrets', '-n', 'team'])).stderr).toMatch(/cannot list resource "secrets"/);
  });

  test('kubectl auth can-i --list shows what the policies grant, beside RBAC’s rules, and the list is complete', async () => {
    const writer = await as('writer', ['auth', 'can-i', '--list', '-n', 'team']);
    expect([writer.code, writer.stderr]).toEqual([0, '']);
    expect(writer.stdout).toMatch(/^configmaps\.\*\s+\[\]\s+\[\]\s+\[\*\]$/m);
    // RBAC's discovery roles are listed too.
    expect(writer.stdout).toMatch(/^\s+\[\/api\/\*\]\s+\[\]\s+\[get\]$/m);
    const robot = await as('robot', ['auth', 'can-i', '--list', '-n', 'team']);
    expect([robot.code, robot.stderr]).toEqual([0, '']);
    expect(robot.stdout).toMatch(/^\*\.\*\s+\[\]\s+\[\]\s+\[get list watch\]$/m);
    // Elsewhere the policies grant nothing.
    expect((await as('robot', ['auth', 'can-i', '--list', '-n', 'default'])).stdout).not.toMatch(/^\*\.\*/m);
  });

  test('what ABAC does not match, RBAC may allow', async () => {
    expect((await kubectl(['create', 'role', 'cm-writer', '-n', 'team', '--verb=create', '--resource=configmaps'])).code).toBe(0);
    expect((await kubectl(['create', 'rolebinding', 'robot-cm-writer', '-n', 'team', '--role=cm-writer', '--serviceaccount=team:robot'])).code).toBe(0);
    await until(async () => ((await as('robot', ['create', 'configmap', 'by-rbac', '-n', 'team', '--from-literal=d=4'])).code === 0 ? true : undefined), 10000);
    expect((await kubectl(['get', 'configmap', 'by-rbac', '-n', 'team', '-o', 'jsonpath={.data.d}'])).stdout).toBe('4');
  });
});
