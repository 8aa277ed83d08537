import { spawn } from 'node:child_process';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';

/** Unchanged kubectl against the whole system, started as real processes. */
describe('kubectl end to end', () => {
  let env: Environment;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});
  const configMap = (name: string, extra = '') => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  labels:\n    app: e2e\n${extra}data:\n  key: value\n`;

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('discovery: api-versions and api-resources list the served groups and kinds', async () => {
    const versions = await kubectl(['api-versions']);
    expect(versions.code).toBe(0);
    expect(versions.stdout.split('\n')).toEqual(expect.arrayContaining(['v1', 'coordination.svc.io/v1']));
    const resources = await kubectl(['api-resources', '--no-headers']);
    expect(resources.code).toBe(0);
    expect(resources.stdout).toMatch(/^configmaps\s+cm\s+v1\s+true\s+ConfigMap$/m);
    expect(resources.stdout).toMatch(/^leases\s+coordination\.svc\.io\/v1\s+true\s+Lease$/m);
  });

  test('the system namespaces exist', async () => {
    const res = await kubectl(['get', 'namespaces', '-o', 'name']);
    expect(res.stdout.split('\n')).toEqual(expect.arrayContaining(['namespace/default', 'namespace/svc-system', 'namespace/svc-public']));
  });

  test("typed create commands send protobuf bodies, and what they create reads back as JSON", async () => {
    expect((await kubectl(['create', 'namespace', 'typed'])).stdout.trim()).toBe('namespace/typed created');
    expect((await kubectl(['create', 'configmap', 'game', '--from-literal=lives=3', '--from-literal=level=7', '-n', 'typed'])).stdout.trim()).toBe('configmap/game created');
    expect((await kubectl(['create', 'secret', 'generic', 'db', '--from-literal=password=hunter2', '-n', 'typed'])).stdout.trim()).toBe('secret/db created');
    expect((await kubectl(['create', 'serviceaccount', 'robot', '-n', 'typed'])).stdout.trim()).toBe('serviceaccount/robot created');
    const ns = JSON.parse((await kubectl(['get', 'namespace', 'typed', '-o', 'json'])).stdout);
    expect(ns.status.phase).toBe('Active');
    const cm = JSON.parse((await kubectl(['get', 'configmap', 'game', '-n', 'typed', '-o', 'json'])).stdout);
    expect(cm.data).toEqual({ lives: '3', level: '7' });
    expect(cm.metadata).not.toHaveProperty('generation');
    // The create is recorded for kubectl's field manager, as an Update owning what it set.
    const managed = JSON.parse((await kubectl(['get', 'configmap', 'game', '-n', 'typed', '-o', 'json', '--show-managed-fields'])).stdout).metadata.managedFields;
    expect(managed).toEqual([expect.objectContaining({ manager: 'kubectl-create', operation: 'Update', apiVersion: 'v1', fieldsType: 'FieldsV1' })]);
    expect(managed[0].fieldsV1['f:data']).toEqual({ '.': {}, 'f:level': {}, 'f:lives': {} });
    const secret = JSON.parse((await kubectl(['get', 'secret', 'db', '-n', 'typed', '-o', 'json'])).stdout);
    expect(secret.type).toBe('Opaque');
    expect(Buffer.from(secret.data.password, 'base64').toString()).toBe('hunter2');
    const sa = JSON.parse((await kubectl(['get', 'serviceaccount', 'robot', '-n', 'typed', '-o', 'json'])).stdout);
    expect(sa.metadata.name).toBe('robot');
    // A typed create into a missing namespace is refused like any other.
    const missing = await kubectl(['create', 'configmap', 'x', '--from-literal=a=b', '-n', 'no-such-namespace']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('namespaces "no-such-namespace" not found');
  });

  test('create, get and list a ConfigMap', async () => {
    const created = await kubectl(['create', '--validate=false', '-f', '-'], configMap('first'));
    expect(created.stderr).toBe('');
    expect(created.stdout.trim()).toBe('configmap/first created');
    const got = JSON.parse((await kubectl(['get', 'configmap', 'first', '-o', 'json'])).stdout);
    expect(got.data).toEqual({ key: 'value' });
    expect(got.metadata.namespace).toBe('default');
    expect(got.metadata.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(got.metadata.resourceVersion)).toBeGreaterThan(0);
    const table = await kubectl(['get', 'cm', '-l', 'app=e2e']);
    expect(table.stdout).toMatch(/^NAME\s+/);
    expect(table.stdout).toMatch(/^first\s+/m);
  });

  test('create -f and apply -f work with kubectl default validation (OpenAPI)', async () => {
    const created = await kubectl(['create', '-f', '-'], configMap('validated'));
    expect(created.stderr).toBe('');
    expect(created.stdout.trim()).toBe('configmap/validated created');
    const strict = await kubectl(['create', '-f', '-'], 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: unknown-field\nbogus: 1\ndata:\n  key: value\n');
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toContain('unknown field "bogus"');
    expect((await kubectl(['apply', '-f', '-'], configMap('applied-csa'))).stdout.trim()).toBe('configmap/applied-csa created');
    const reapplied = await kubectl(['apply', '-f', '-'], configMap('applied-csa').replace('key: value', 'key: second'));
    expect(reapplied.stderr).toBe('');
    expect(reapplied.stdout.trim()).toBe('configmap/applied-csa configured');
  });

  test('explain reads the published schemas', async () => {
    const res = await kubectl(['explain', 'configmap']);
    expect(res.code).toBe(0);
    expect(res.stdout).toContain('binaryData');
    const lease = await kubectl(['explain', 'leases.spec']);
    expect(lease.stdout).toContain('holderIdentity');
  });

  test('a second create of the same name is AlreadyExists', async () => {
    const again = await kubectl(['create', '--validate=false', '-f', '-'], configMap('first'));
    expect(again.code).not.toBe(0);
    expect(again.stderr).toContain('Error from server (AlreadyExists): error when creating "STDIN": configmaps "first" already exists');
  });

  test('replace with the current resourceVersion succeeds; with a stale one it is a Conflict', async () => {
    const current = JSON.parse((await kubectl(['get', 'cm', 'first', '-o', 'json'])).stdout);
    current.data = { key: 'changed' };
    const ok = await kubectl(['replace', '--validate=false', '-f', '-'], JSON.stringify(current));
    expect(ok.stdout.trim()).toBe('configmap/first replaced');
    current.data = { key: 'stale' };
    const stale = await kubectl(['replace', '--validate=false', '-f', '-'], JSON.stringify(current));
    expect(stale.code).not.toBe(0);
    expect(stale.stderr).toContain('Error from server (Conflict)');
    expect(stale.stderr).toContain('the object has been modified');
    const after = JSON.parse((await kubectl(['get', 'cm', 'first', '-o', 'json'])).stdout);
    expect(after.data).toEqual({ key: 'changed' });
  });

  test('label, merge patch and JSON patch change the object', async () => {
    expect((await kubectl(['label', 'configmap', 'first', 'tier=web'])).stdout.trim()).toBe('configmap/first labeled');
    expect((await kubectl(['patch', 'configmap', 'first', '--type=merge', '-p', '{"data":{"extra":"1"}}'])).stdout.trim()).toBe('configmap/first patched');
    expect((await kubectl(['patch', 'configmap', 'first', '--type=json', '-p', '[{"op":"remove","path":"/data/extra"}]'])).stdout.trim()).toBe('configmap/first patched');
    const failed = await kubectl(['patch', 'configmap', 'first', '--type=json', '-p', '[{"op":"test","path":"/data/key","value":"other"}]']);
    expect(failed.code).not.toBe(0);
    expect(failed.stderr).toContain('test failed');
    const got = JSON.parse((await kubectl(['get', 'cm', 'first', '-o', 'json'])).stdout);
    expect(got.metadata.labels).toEqual({ app: 'e2e', tier: 'web' });
    expect(got.data).toEqual({ key: 'changed' });
  });

  test('server-side apply creates, tracks managers, and reports conflicts', async () => {
    const applied = await kubectl(['apply', '--server-side', '--validate=false', '-f', '-'], configMap('applied'));
    expect(applied.stdout.trim()).toBe('configmap/applied serverside-applied');
    const conflicting = configMap('applied').replace('key: value', 'key: other');
    const conflict = await kubectl(['apply', '--server-side', '--validate=false', '--field-manager=other', '-f', '-'], conflicting);
    expect(conflict.code).not.toBe(0);
    expect(conflict.stderr).toContain('Apply failed with 1 conflict: conflict with "kubectl": .data.key');
    const forced = await kubectl(['apply', '--server-side', '--validate=false', '--field-manager=other', '--force-conflicts', '-f', '-'], conflicting);
    expect(forced.code).toBe(0);
    const got = JSON.parse((await kubectl(['get', 'cm', 'applied', '-o', 'json', '--show-managed-fields'])).stdout);
    expect(got.data).toEqual({ key: 'other' });
    expect(got.metadata.managedFields.map((m: { manager: string }) => m.manager).sort()).toEqual(['kubectl', 'other']);
  });

  test('a bad name is a clear 422 naming the field', async () => {
    const bad = await kubectl(['create', '--validate=false', '-f', '-'], configMap('Not_Valid'));
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('The ConfigMap "Not_Valid" is invalid: metadata.name: Invalid value: "Not_Valid"');
  });

  test('creating in a namespace that does not exist is NotFound', async () => {
    const res = await kubectl(['create', '--validate=false', '-n', 'nowhere', '-f', '-'], configMap('x'));
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('namespaces "nowhere" not found');
  });

  test('get -w shows changes as they happen', async () => {
    const watcher = spawn('kubectl', ['--kubeconfig', env.kubeconfigPath, 'get', 'configmaps', '-w', '-o', 'name', '--request-timeout=20s']);
    let out = '';
    watcher.stdout.on('data', (d: Buffer) => (out += d.toString()));
    try {
      await until(() => (out.includes('configmap/first') ? true : undefined));
      expect((await kubectl(['create', '--validate=false', '-f', '-'], configMap('watched'))).code).toBe(0);
      await until(() => (out.includes('configmap/watched') ? true : undefined));
      expect((await kubectl(['delete', 'configmap', 'watched'])).stdout.trim()).toBe('configmap "watched" deleted');
      await until(() => (out.split('\n').filter((l) => l === 'configmap/watched').length >= 2 ? true : undefined));
    } finally {
      watcher.kill();
    }
  });

  test('delete removes the object and a second delete is NotFound', async () => {
    expect((await kubectl(['delete', 'configmap', 'first'])).stdout.trim()).toBe('configmap "first" deleted');
    const missing = await kubectl(['get', 'configmap', 'first']);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain('Error from server (NotFound): configmaps "first" not found');
    const again = await kubectl(['delete', 'configmap', 'first']);
    expect(again.stderr).toContain('NotFound');
  });
});
