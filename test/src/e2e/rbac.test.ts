import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest, tokenRequest } from './http';

/**
 * RBAC end to end, with a service account's token (`kubectl create token`):
 * forbidden, then a Role and RoleBinding applied, then allowed for exactly
 * the granted verbs and names, then forbidden again soon after the binding
 * goes; the default roles (basic-user, discovery, aggregated view) and the
 * public cluster-info.
 */
describe('RBAC', () => {
  let env: Environment;
  let token = '';
  let robotConfig = '';
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input === undefined ? {} : { input });
  const asRobot = (args: string[]) => run('kubectl', ['--kubeconfig', robotConfig, ...args]);

  beforeAll(async () => {
    env = await startEnvironment({ authorizationMode: 'RBAC' });
    expect((await kubectl(['create', 'namespace', 'team'])).code).toBe(0);
    expect((await kubectl(['create', 'serviceaccount', 'robot', '-n', 'team'])).code).toBe(0);
    expect((await kubectl(['create', 'configmap', 'app-config', '-n', 'team', '--from-literal=a=1'])).code).toBe(0);
    expect((await kubectl(['create', 'configmap', 'other', '-n', 'team', '--from-literal=b=2'])).code).toBe(0);
    token = (await kubectl(['create', 'token', 'robot', '-n', 'team'])).stdout.trim();
    robotConfig = path.join(env.dir, 'robot.kubeconfig');
    fs.writeFileSync(robotConfig, tokenKubeconfig(env.url, env.pki.caCert, token), { mode: 0o600 });
    // The default policy is in place once basic-user lets the robot see itself.
    await until(async () => ((await asRobot(['auth', 'whoami'])).code === 0 ? true : undefined), 30000);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('every authenticated user may review itself and read discovery (system:basic-user, system:discovery)', async () => {
    const me = await asRobot(['auth', 'whoami', '-o', 'jsonpath={.status.userInfo.username}']);
    expect(me.stdout).toBe('system:serviceaccount:team:robot');
    expect((await tokenRequest(env, 'GET', '/apis', token)).status).toBe(200);
    expect((await tokenRequest(env, 'GET', '/version', token)).status).toBe(200);
  });

  test('forbidden, granted exactly, forbidden again after the binding is deleted', async () => {
    const denied = await asRobot(['get', 'configmap', 'app-config', '-n', 'team']);
    expect(denied.stderr).toMatch(/configmaps "app-config" is forbidden: User "system:serviceaccount:team:robot" cannot get resource "configmaps" in API group "" in the namespace "team": none of the authorization modes \(RBAC\) allowed it/);
    expect((await kubectl(['create', 'role', 'config-reader', '-n', 'team', '--verb=get,update,list', '--resource=configmaps', '--resource-name=app-config'])).code).toBe(0);
    expect((await kubectl(['create', 'rolebinding', 'robot-config', '-n', 'team', '--role=config-reader', '--serviceaccount=team:robot'])).code).toBe(0);
    await until(async () => ((await asRobot(['get', 'configmap', 'app-config', '-n', 'team'])).code === 0 ? true : undefined), 10000);
    // Exactly the granted verbs and names.
    expect((await asRobot(['get', 'configmap', 'other', '-n', 'team'])).stderr).toMatch(/forbidden/);
    expect((await asRobot(['delete', 'configmap', 'app-config', '-n', 'team'])).stderr).toMatch(/forbidden/);
    expect((await asRobot(['get', 'configmaps', '-n', 'team'])).stderr).toMatch(/cannot list resource "configmaps"/);
    // A list limited to the granted name by its field selector is allowed.
    const named = await asRobot(['get', 'configmaps', '-n', 'team', '--field-selector=metadata.name=app-config', '-o', 'name']);
    expect(named.stdout.trim()).toBe('configmap/app-config');
    expect((await asRobot(['get', 'configmap', 'app-config', '-n', 'default'])).stderr).toMatch(/forbidden/);
    expect((await asRobot(['label', 'configmap', 'app-config', '-n', 'team', 'x=y'])).stderr).toMatch(/cannot patch resource/);
    const updated = await tokenRequest(env, 'PUT', '/api/v1/namespaces/team/configmaps/app-config', token, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'app-config', namespace: 'team' }, data: { a: '2' } }));
    expect(updated.status).toBe(200);
    // Gone within about a second of the binding's deletion.
    expect((await kubectl(['delete', 'rolebinding', 'robot-config', '-n', 'team'])).code).toBe(0);
    const deletedAt = Date.now();
    await until(async () => ((await tokenRequest(env, 'GET', '/api/v1/namespaces/team/configmaps/app-config', token)).status === 403 ? true : undefined), 10000);
    expect(Date.now() - deletedAt).toBeLessThan(5000);
  });

  test('a binding to a ClusterRole in a namespace, and the aggregated view role', async () => {
    const view = await until(async () => {
      const res = await adminRequest(env, 'GET', '/apis/rbac.authorization.svc.io/v1/clusterroles/view');
      const rules = (res.json()['rules'] ?? []) as unknown[];
      return rules.length > 0 ? rules : undefined;
    }, 20000);
    expect(view).toEqual(expect.arrayContaining([expect.objectContaining({ resources: expect.arrayContaining(['configmaps', 'pods']) })]));
    expect((await kubectl(['create', 'rolebinding', 'robot-view', '-n', 'team', '--clusterrole=view', '--serviceaccount=team:robot'])).code).toBe(0);
    await until(async () => ((await asRobot(['get', 'configmaps', '-n', 'team'])).code === 0 ? true : undefined), 10000);
    expect((await asRobot(['get', 'configmaps', '-n', 'default'])).stderr).toMatch(/forbidden/);
    expect((await asRobot(['get', 'secrets', '-n', 'team'])).stderr).toMatch(/forbidden/);
    // A role labelled to aggregate into view adds its rules.
    const extra = JSON.stringify({ apiVersion: 'rbac.authorization.svc.io/v1', kind: 'ClusterRole', metadata: { name: 'view-secrets', labels: { 'rbac.authorization.svc.io/aggregate-to-view': 'true' } }, rules: [{ verbs: ['list'], apiGroups: [''], resources: ['secrets'] }] });
    expect((await kubectl(['apply', '-f', '-'], extra)).code).toBe(0);
    await until(async () => ((await asRobot(['get', 'secrets', '-n', 'team'])).code === 0 ? true : undefined), 20000);
  });

  test('kubectl auth can-i (SelfSubjectAccessReview) and SubjectAccessReview answer from the same policy', async () => {
    expect((await kubectl(['create', 'role', 'pod-deleter', '-n', 'team', '--verb=delete', '--resource=pods'])).code).toBe(0);
    expect((await kubectl(['create', 'rolebinding', 'robot-pods', '-n', 'team', '--role=pod-deleter', '--serviceaccount=team:robot'])).code).toBe(0);
    await until(async () => ((await asRobot(['auth', 'can-i', 'delete', 'pods', '-n', 'team'])).stdout.trim() === 'yes' ? true : undefined), 10000);
    const no = await asRobot(['auth', 'can-i', 'create', 'pods', '-n', 'team']);
    expect(no.stdout.trim()).toBe('no');
    expect(no.code).not.toBe(0);
    expect((await kubectl(['auth', 'can-i', 'delete', 'pods', '-n', 'team', '--as=system:serviceaccount:team:robot'])).stdout.trim()).toBe('yes');
    const sar = (spec: Record<string, unknown>) => adminRequest(env, 'POST', '/apis/authorization.svc.io/v1/subjectaccessreviews', JSON.stringify({ apiVersion: 'authorization.svc.io/v1', kind: 'SubjectAccessReview', spec }));
    const allowed = await sar({ user: 'system:serviceaccount:team:robot', groups: ['system:serviceaccounts'], resourceAttributes: { namespace: 'team', verb: 'delete', resource: 'pods', name: 'p' } });
    expect(allowed.status).toBe(201);
    expect(allowed.json()['status']).toMatchObject({ allowed: true, reason: expect.stringContaining('RoleBinding "robot-pods/team"') });
    expect((await sar({ user: 'nobody', resourceAttributes: { namespace: 'team', verb: 'get', resource: 'pods' } })).json()['status']).toEqual({ allowed: false });
    expect((await sar({ user: 'nobody', nonResourceAttributes: { path: '/version', verb: 'get' } })).json()['status']).toEqual({ allowed: false });
    expect((await sar({ user: 'nobody', groups: ['system:authenticated'], nonResourceAttributes: { path: '/version', verb: 'get' } })).json()['status']).toMatchObject({ allowed: true });
    // A value of the wrong type is a 400 naming the field; bad questions are 422 naming the field.
    const mistyped = await sar({ user: 'x', extra: { k: 5 }, nonResourceAttributes: { path: '/version', verb: 'get' } });
    expect(mistyped.status).toBe(400);
    expect(mistyped.json()).toMatchObject({ details: { causes: [{ field: 'spec.extra[k]' }] } });
    const both = await sar({ user: 'x', resourceAttributes: { verb: 'get' }, nonResourceAttributes: { path: '/', verb: 'get' } });
    expect(both.status).toBe(422);
    expect((await sar({ resourceAttributes: { verb: 'get', resource: 'pods' } })).json()).toMatchObject({ details: { causes: [{ field: 'spec.user' }] } });
    const local = await adminRequest(env, 'POST', '/apis/authorization.svc.io/v1/namespaces/team/localsubjectaccessreviews', JSON.stringify({ apiVersion: 'authorization.svc.io/v1', kind: 'LocalSubjectAccessReview', spec: { user: 'x', resourceAttributes: { namespace: 'other', verb: 'get', resource: 'pods' } } }));
    expect(local.json()).toMatchObject({ code: 422, details: { causes: [{ field: 'spec.resourceAttributes.namespace' }] } });
  });

  test('escalation: a role or binding may grant only what its writer holds, unless it may escalate or bind', async () => {
    // The robot may manage roles and bindings in team, and holds view there (from the test above).
    const manager = JSON.stringify({
      apiVersion: 'rbac.authorization.svc.io/v1',
      kind: 'Role',
      metadata: { name: 'rbac-manager', namespace: 'team' },
      rules: [{ verbs: ['create', 'update', 'get', 'delete'], apiGroups: ['rbac.authorization.svc.io'], resources: ['roles', 'rolebindings'] }],
    });
    expect((await kubectl(['apply', '-f', '-'], manager)).code).toBe(0);
    expect((await kubectl(['create', 'rolebinding', 'robot-rbac', '-n', 'team', '--role=rbac-manager', '--serviceaccount=team:robot'])).code).toBe(0);
    await until(async () => ((await asRobot(['auth', 'can-i', 'create', 'roles', '-n', 'team'])).stdout.trim() === 'yes' ? true : undefined), 10000);
    // Granting what it holds (list configmaps, from view) is fine; secrets it cannot get are not.
    expect((await asRobot(['create', 'role', 'cm-lister', '-n', 'team', '--verb=list', '--resource=configmaps'])).stderr).toBe('');
    const escalation = await asRobot(['create', 'role', 'secret-getter', '-n', 'team', '--verb=get', '--resource=secrets']);
    expect(escalation.stderr).toMatch(/roles.rbac.authorization.k8s.io "secret-getter" is forbidden: user "system:serviceaccount:team:robot" .* is attempting to grant RBAC permissions not currently held:\n\{APIGroups:\[""\], Resources:\["secrets"\], Verbs:\["get"\]\}/);
    // Binding itself to cluster-admin is refused; binding to a role it holds is not.
    const bindAdmin = await asRobot(['create', 'rolebinding', 'grab', '-n', 'team', '--clusterrole=cluster-admin', '--serviceaccount=team:robot']);
    expect(bindAdmin.stderr).toMatch(/rolebindings.rbac.authorization.k8s.io "grab" is forbidden: .*not currently held/);
    expect((await asRobot(['create', 'rolebinding', 'lister', '-n', 'team', '--role=cm-lister', '--user=someone'])).code).toBe(0);
    // A binding to a role that does not exist grants nothing, and is accepted.
    expect((await asRobot(['create', 'rolebinding', 'ghost', '-n', 'team', '--role=does-not-exist', '--user=someone'])).code).toBe(0);
    // With the bind verb on cluster-admin the binding is allowed (by an admin's grant).
    const bindGrant = JSON.stringify({ apiVersion: 'rbac.authorization.svc.io/v1', kind: 'Role', metadata: { name: 'may-bind-admin', namespace: 'team' }, rules: [{ verbs: ['bind'], apiGroups: ['rbac.authorization.svc.io'], resources: ['clusterroles'], resourceNames: ['cluster-admin'] }] });
    expect((await kubectl(['apply', '-f', '-'], bindGrant)).code).toBe(0);
    expect((await kubectl(['create', 'rolebinding', 'robot-may-bind', '-n', 'team', '--role=may-bind-admin', '--serviceaccount=team:robot'])).code).toBe(0);
    await until(async () => ((await asRobot(['create', 'rolebinding', 'grab', '-n', 'team', '--clusterrole=cluster-admin', '--user=someone'])).code === 0 ? true : undefined), 10000);
    // What the robot holds in team, as kubectl auth can-i --list shows it.
    const list = await asRobot(['auth', 'can-i', '--list', '-n', 'team']);
    expect(list.code).toBe(0);
    expect(list.stdout).toMatch(/configmaps\s+\[\]\s+\[\]\s+\[get list watch\]/);
    expect(list.stdout).toMatch(/selfsubjectreviews.authentication.svc.io/);
  });

  test('the public cluster-info ConfigMap is readable without credentials; other objects there are not', async () => {
    const anonymousGet = (p: string): Promise<number> =>
      new Promise((resolve, reject) => {
        https.get(`${env.url}${p}`, { ca: fs.readFileSync(env.pki.caCert), agent: false }, (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        }).on('error', reject);
      });
    await until(async () => ((await anonymousGet('/api/v1/namespaces/svc-public/configmaps/cluster-info')) === 200 ? true : undefined), 20000);
    expect(await anonymousGet('/api/v1/namespaces/svc-public/configmaps')).toBe(403);
    expect(await anonymousGet('/api/v1/namespaces/default/configmaps')).toBe(403);
    expect(await anonymousGet('/version')).toBe(200);
  });
});
