import { startEnvironment, type Environment } from '@svc/testenv';
import { run } from './helpers';
import { adminRequest } from './http';

/**
 * The access-control kinds as objects (what they allow is authz's): kubectl's
 * typed commands, which send protobuf under the upstream group name and
 * decode answers by it, manifests under our name, validation naming the
 * rule, and an immutable roleRef.
 */
describe('RBAC objects', () => {
  let env: Environment;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input === undefined ? {} : { input });

  beforeAll(async () => {
    env = await startEnvironment();
  });
  afterAll(async () => {
    await env?.stop(true);
  });

  test('kubectl create role, rolebinding, clusterrole and clusterrolebinding work unchanged', async () => {
    for (const args of [
      ['create', 'role', 'pod-reader', '--verb=get,list', '--resource=pods', '--resource-name=web'],
      ['create', 'rolebinding', 'read-pods', '--role=pod-reader', '--serviceaccount=default:robot', '--user=alice'],
      ['create', 'clusterrole', 'health', '--verb=get', '--non-resource-url=/healthz'],
      ['create', 'clusterrolebinding', 'health', '--clusterrole=health', '--group=ops'],
    ]) {
      const res = await kubectl(args);
      expect(res.stderr).toBe('');
      expect(res.stdout).toMatch(/\.rbac\.authorization\.k8s\.io\/\S+ created/);
    }
    const wide = await kubectl(['get', 'rolebinding', 'read-pods', '-o', 'wide', '--no-headers']);
    expect(wide.stdout.split(/\s+/).slice(0, 4)).toEqual(['read-pods', 'Role/pod-reader', 'alice', 'default/robot']);
    const role = (await adminRequest(env, 'GET', '/apis/rbac.authorization.svc.io/v1/namespaces/default/roles/pod-reader')).json();
    expect(role).toMatchObject({ apiVersion: 'rbac.authorization.svc.io/v1', kind: 'Role', rules: [{ verbs: ['get', 'list'], apiGroups: [''], resources: ['pods'], resourceNames: ['web'] }] });
    // The same object under the upstream path answers in the upstream group.
    const upstream = (await adminRequest(env, 'GET', '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/pod-reader')).json();
    expect(upstream['apiVersion']).toBe('rbac.authorization.k8s.io/v1');
    const list = (await adminRequest(env, 'GET', '/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles')).json() as { apiVersion: string; items: Array<{ apiVersion: string }> };
    expect([list.apiVersion, ...list.items.map((i) => i.apiVersion)]).toEqual(['rbac.authorization.k8s.io/v1', 'rbac.authorization.k8s.io/v1']);
  });

  test('manifests under our group name apply; invalid rules are 422 naming the rule; roleRef cannot change', async () => {
    const manifest = JSON.stringify({
      apiVersion: 'rbac.authorization.svc.io/v1',
      kind: 'ClusterRole',
      metadata: { name: 'aggregate-view', labels: { team: 'a' } },
      aggregationRule: { clusterRoleSelectors: [{ matchLabels: { 'rbac.authorization.svc.io/aggregate-to-view': 'true' } }] },
    });
    expect((await kubectl(['apply', '-f', '-'], manifest)).code).toBe(0);
    const bad = await adminRequest(env, 'POST', '/apis/rbac.authorization.svc.io/v1/namespaces/default/roles', JSON.stringify({ metadata: { name: 'bad' }, rules: [{ verbs: ['get'], nonResourceURLs: ['/metrics'] }] }));
    expect(bad.status).toBe(422);
    expect(bad.json()).toMatchObject({ reason: 'Invalid', details: { causes: [{ field: 'rules[0].nonResourceURLs' }] } });
    const changed = await kubectl(['patch', 'rolebinding', 'read-pods', '--type=merge', '-p', '{"roleRef":{"name":"other"}}']);
    expect(changed.stderr).toMatch(/roleRef: Invalid value: .*cannot change roleRef/);
    const subjects = await kubectl(['patch', 'rolebinding', 'read-pods', '--type=json', '-p', '[{"op":"remove","path":"/subjects/1"}]']);
    expect(subjects.code).toBe(0);
    // Names are path segments: a colon is fine (system: roles), a slash is not.
    expect((await adminRequest(env, 'POST', '/apis/rbac.authorization.svc.io/v1/clusterroles', JSON.stringify({ metadata: { name: 'system:custom' }, rules: [] }))).status).toBe(201);
    expect((await adminRequest(env, 'POST', '/apis/rbac.authorization.svc.io/v1/clusterroles', JSON.stringify({ metadata: { name: 'a/b' }, rules: [] }))).status).toBe(422);
  });

  test('manifests written for the original server (rbac.authorization.k8s.io/v1) apply unchanged, and are stored under our group', async () => {
    const manifest = 'apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: upstream-manifest\nrules:\n- apiGroups: [""]\n  resources: [configmaps]\n  verbs: [get]\n';
    const applied = await kubectl(['apply', '-f', '-'], manifest);
    expect([applied.code, applied.stderr, applied.stdout.trim()]).toEqual([0, '', 'role.rbac.authorization.k8s.io/upstream-manifest created']);
    const changed = await kubectl(['apply', '-f', '-'], manifest.replace('verbs: [get]', 'verbs: [get, list]'));
    expect([changed.code, changed.stdout.trim()]).toEqual([0, 'role.rbac.authorization.k8s.io/upstream-manifest configured']);
    const stored = await adminRequest(env, 'GET', '/apis/rbac.authorization.svc.io/v1/namespaces/default/roles/upstream-manifest');
    expect(stored.status).toBe(200);
    expect(stored.json()).toMatchObject({ apiVersion: 'rbac.authorization.svc.io/v1', rules: [{ verbs: ['get', 'list'] }] });
    // RBAC resources named without a group resolve to the upstream name, which kubectl's typed RBAC commands need; nothing warns about the second listing.
    const listed = await kubectl(['get', 'roles', '-o', 'name']);
    expect(listed.stderr).toBe('');
    expect(listed.stdout).toContain('role.rbac.authorization.k8s.io/upstream-manifest');
    expect((await kubectl(['get', 'roles.rbac.authorization.svc.io', '-o', 'name'])).stdout).toContain('role.rbac.authorization.svc.io/upstream-manifest');
  });

  test('kubectl set subject works on both binding kinds, as kubectl sends it', async () => {
    expect((await kubectl(['create', 'clusterrolebinding', 'subject-target', '--clusterrole=view', '--user=first'])).code).toBe(0);
    const cluster = await kubectl(['set', 'subject', 'clusterrolebinding', 'subject-target', '--user=second', '--group=readers']);
    expect([cluster.code, cluster.stderr, cluster.stdout.trim()]).toEqual([0, '', 'clusterrolebinding.rbac.authorization.k8s.io/subject-target subjects updated']);
    expect((await kubectl(['create', 'rolebinding', 'subject-target', '--clusterrole=view', '--user=first'])).code).toBe(0);
    const namespaced = await kubectl(['set', 'subject', 'rolebinding', 'subject-target', '--serviceaccount=default:robot']);
    expect([namespaced.code, namespaced.stderr]).toEqual([0, '']);
    const stored = await adminRequest(env, 'GET', '/apis/rbac.authorization.svc.io/v1/clusterrolebindings/subject-target');
    expect((stored.json() as { subjects: Array<{ kind: string; name: string }> }).subjects.map((s) => `${s.kind}:${s.name}`)).toEqual(['User:first', 'User:second', 'Group:readers']);
    const binding = await adminRequest(env, 'GET', '/apis/rbac.authorization.svc.io/v1/namespaces/default/rolebindings/subject-target');
    expect((binding.json() as { subjects: Array<{ kind: string; name: string; namespace?: string }> }).subjects).toEqual([
      { kind: 'User', apiGroup: 'rbac.authorization.k8s.io', name: 'first' },
      { kind: 'ServiceAccount', name: 'robot', namespace: 'default' },
    ]);
  });
});
