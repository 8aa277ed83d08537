import * as path from 'node:path';
import { ProtobufObjectCodec } from '@svc/protobuf-codec';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest } from './http';

/**
 * kubectl workflows as its users drive them: moving between client-side and
 * server-side apply, ownership-only writes, `replace -f` of a pod, an
 * unconditional update with resourceVersion "0", a DELETE whose
 * DeleteOptions are protobuf, and the original's messages where kubectl shows
 * them (decoding a body of the wrong kind, a label patched to a string, a
 * changed clusterIP) and its discovery key order.
 */
describe('kubectl fidelity', () => {
  let env: Environment;
  const codec = new ProtobufObjectCodec();
  const PROTOBUF = 'application/vnd.kubernetes.protobuf';
  const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration';
  const kubectl = (args: string[], input?: string) =>
    run('kubectl', ['--kubeconfig', env.kubeconfigPath, `--cache-dir=${path.join(env.dir, 'kubectl-cache')}`, ...args], input !== undefined ? { input } : {});
  const configMap = (name: string, data: Record<string, string>) =>
    `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\ndata:\n${Object.entries(data)
      .map(([k, v]) => `  ${k}: ${v}\n`)
      .join('')}`;

  interface Entry {
    manager: string;
    operation: string;
    fieldsV1: { 'f:data'?: Record<string, unknown> };
  }
  interface Got {
    data?: Record<string, string>;
    metadata: { resourceVersion: string; annotations?: Record<string, string>; managedFields?: Entry[] };
  }
  const getConfigMap = async (name: string): Promise<Got> => JSON.parse((await kubectl(['get', 'configmap', name, '-o', 'json', '--show-managed-fields'])).stdout) as Got;
  /** The data keys each manager owns, by `manager/operation`. */
  const dataOwners = (got: Got): Record<string, string[]> =>
    Object.fromEntries(
      (got.metadata.managedFields ?? []).map((e) => [
        `${e.manager}/${e.operation}`,
        Object.keys(e.fieldsV1['f:data'] ?? {})
          .filter((k) => k !== '.')
          .map((k) => k.replace(/^f:/, ''))
          .sort(),
      ]),
    );

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('client-side apply, then server-side apply of a changed manifest, then client-side again: no conflict, ownership moves', async () => {
    const csa = await kubectl(['apply', '-f', '-'], configMap('upgrade', { key: 'one', extra: 'x' }));
    expect([csa.code, csa.stdout.trim()]).toEqual([0, 'configmap/upgrade created']);
    expect(dataOwners(await getConfigMap('upgrade'))).toEqual({ 'kubectl-client-side-apply/Update': ['extra', 'key'] });

    // The diff a server-side apply would make is shown, not refused as a conflict (exit 1: differences found).
    const diff = await kubectl(['diff', '--server-side', '-f', '-'], configMap('upgrade', { key: 'two', extra: 'x', added: 'new' }));
    expect([diff.code, diff.stderr]).toEqual([1, '']);
    expect(diff.stdout).toMatch(/^\+ {2}key: two$/m);

    const ssa = await kubectl(['apply', '--server-side', '-f', '-'], configMap('upgrade', { key: 'two', extra: 'x', added: 'new' }));
    expect([ssa.code, ssa.stderr, ssa.stdout.trim()]).toEqual([0, '', 'configmap/upgrade serverside-applied']);
    const upgraded = await getConfigMap('upgrade');
    expect(upgraded.data).toEqual({ key: 'two', extra: 'x', added: 'new' });
    // kubectl's migration of managers was stored: every data field is the server-side applier's now.
    const owners = dataOwners(upgraded);
    expect(owners['kubectl/Apply']).toEqual(['added', 'extra', 'key']);
    expect(owners['kubectl-client-side-apply/Update'] ?? []).toEqual([]);
    // The annotation follows the server-side apply...
    expect(JSON.parse(upgraded.metadata.annotations?.[LAST_APPLIED] ?? '{}')).toMatchObject({ data: { key: 'two', extra: 'x', added: 'new' } });

    // ... so going back to client-side apply removes what the new manifest leaves out, `added` included.
    const back = await kubectl(['apply', '-f', '-'], configMap('upgrade', { key: 'three' }));
    expect([back.code, back.stderr, back.stdout.trim()]).toEqual([0, '', 'configmap/upgrade configured']);
    const downgraded = await getConfigMap('upgrade');
    expect(downgraded.data).toEqual({ key: 'three' });
    expect(dataOwners(downgraded)['kubectl-client-side-apply/Update']).toEqual(['key']);
  });

  test('another server-side applier without the annotation upgrade still gets the conflict', async () => {
    expect((await kubectl(['apply', '-f', '-'], configMap('guarded', { key: 'one' }))).code).toBe(0);
    const other = await kubectl(['apply', '--server-side', '--field-manager=my-tool', '-f', '-'], configMap('guarded', { key: 'two' }));
    expect(other.code).not.toBe(0);
    expect(other.stderr).toContain('conflict with "kubectl-client-side-apply" using v1: .data.key');
    expect((await getConfigMap('guarded')).data).toEqual({ key: 'one' });
  });

  test('a second manager applying the same values is recorded as a co-owner; repeating it changes nothing', async () => {
    const manifest = configMap('shared', { key: 'same' });
    expect((await kubectl(['apply', '--server-side', '--field-manager=first', '-f', '-'], manifest)).code).toBe(0);
    const before = await getConfigMap('shared');
    expect((await kubectl(['apply', '--server-side', '--field-manager=second', '-f', '-'], manifest)).code).toBe(0);
    const after = await getConfigMap('shared');
    expect(dataOwners(after)).toEqual({ 'first/Apply': ['key'], 'second/Apply': ['key'] });
    expect(after.metadata.resourceVersion).not.toBe(before.metadata.resourceVersion);
    expect((await kubectl(['apply', '--server-side', '--field-manager=second', '-f', '-'], manifest)).code).toBe(0);
    expect((await getConfigMap('shared')).metadata.resourceVersion).toBe(after.metadata.resourceVersion);
    // A later change by one of them conflicts with the other.
    const change = await kubectl(['apply', '--server-side', '--field-manager=second', '-f', '-'], configMap('shared', { key: 'changed' }));
    expect(change.code).not.toBe(0);
    expect(change.stderr).toContain('conflict with "first": .data.key');
  });

  test('replace -f of a pod whose manifest names only serviceAccountName', async () => {
    await until(async () => ((await kubectl(['get', 'serviceaccount', 'default', '-o', 'name'])).code === 0 ? true : undefined), 30000);
    const pod = 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  labels:\n    app: web\nspec:\n  serviceAccountName: default\n  containers:\n  - name: app\n    image: nginx:1.27\n';
    expect((await kubectl(['create', '-f', '-'], pod)).code).toBe(0);
    const created = JSON.parse((await kubectl(['get', 'pod', 'web', '-o', 'json'])).stdout) as { spec: Record<string, unknown> };
    expect([created.spec['serviceAccountName'], created.spec['serviceAccount']]).toEqual(['default', 'default']);
    const replaced = await kubectl(['replace', '-f', '-'], pod.replace('app: web', 'app: web-2'));
    expect([replaced.code, replaced.stderr, replaced.stdout.trim()]).toEqual([0, '', 'pod/web replaced']);
    const got = JSON.parse((await kubectl(['get', 'pod', 'web', '-o', 'json'])).stdout) as { metadata: { labels: Record<string, string> } };
    expect(got.metadata.labels).toEqual({ app: 'web-2' });
    // Changing the account is still refused, with the original's message.
    const moved = await kubectl(['replace', '-f', '-'], pod.replace('serviceAccountName: default', 'serviceAccountName: other'));
    expect(moved.code).not.toBe(0);
    expect(moved.stderr).toContain('pod updates may not change fields other than');
  });

  test('a PUT with resourceVersion "0" is an unconditional update of a node', async () => {
    expect((await adminRequest(env, 'POST', '/api/v1/nodes', JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'rv0' } }), { 'content-type': 'application/json' })).status).toBe(201);
    const put = await adminRequest(env, 'PUT', '/api/v1/nodes/rv0', JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'rv0', resourceVersion: '0', labels: { zone: 'a' } } }), { 'content-type': 'application/json' });
    expect(put.status).toBe(200);
    const node = put.json() as { metadata: { labels: Record<string, string>; resourceVersion: string } };
    expect(node.metadata.labels).toMatchObject({ zone: 'a' });
    expect(node.metadata.resourceVersion).not.toBe('0');
    // A stale resourceVersion is still a conflict.
    const stale = await adminRequest(env, 'PUT', '/api/v1/nodes/rv0', JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'rv0', resourceVersion: '1' } }), { 'content-type': 'application/json' });
    expect(stale.status).toBe(409);
  });

  test('a DELETE with protobuf DeleteOptions is read as such', async () => {
    expect((await kubectl(['create', 'configmap', 'pb-delete', '--from-literal=a=b'])).code).toBe(0);
    const url = '/api/v1/namespaces/default/configmaps/pb-delete';
    const options = (fields: Record<string, unknown>) => Buffer.from(codec.encode({ apiVersion: 'v1', kind: 'DeleteOptions', ...fields }));
    const dry = await adminRequest(env, 'DELETE', url, options({ dryRun: ['All'] }), { 'content-type': PROTOBUF });
    expect(dry.status).toBe(200);
    expect((await kubectl(['get', 'configmap', 'pb-delete', '-o', 'name'])).stdout.trim()).toBe('configmap/pb-delete');
    const wrongUid = await adminRequest(env, 'DELETE', url, options({ preconditions: { uid: 'not-the-uid' } }), { 'content-type': PROTOBUF });
    expect(wrongUid.status).toBe(409);
    expect((wrongUid.json() as { message: string }).message).toContain('Precondition failed: UID in precondition: not-the-uid');
    const bad = await adminRequest(env, 'DELETE', url, options({ propagationPolicy: 'Sideways' }), { 'content-type': PROTOBUF });
    expect([bad.status, (bad.json() as { message: string }).message]).toEqual([422, expect.stringMatching(/^DeleteOptions\.meta\.svc\.io "" is invalid: propagationPolicy: Unsupported value: "Sideways"/)]);
    const deleted = await adminRequest(env, 'DELETE', url, options({ propagationPolicy: 'Background' }), { 'content-type': PROTOBUF });
    expect(deleted.status).toBe(200);
    expect((await kubectl(['get', 'configmap', 'pb-delete', '-o', 'name'])).code).not.toBe(0);
  });

  test('a body of the wrong kind or version is refused in the original decoder\'s words; one without kind or apiVersion is the endpoint\'s', async () => {
    const url = '/api/v1/namespaces/default/secrets';
    const post = (body: Record<string, unknown>) => adminRequest(env, 'POST', url, JSON.stringify({ metadata: { name: 'decoded' }, ...body }), { 'content-type': 'application/json' });
    const refused = async (body: Record<string, unknown>) => {
      const res = await post(body);
      const status = res.json() as { code: number; reason: string; message: string };
      return [res.status, status.reason, status.message];
    };
    expect(await refused({ apiVersion: 'v1', kind: 'ConfigMap' })).toEqual([400, 'BadRequest', 'ConfigMap in version "v1" cannot be handled as a Secret: converting (v1.ConfigMap) to (core.Secret): unknown conversion']);
    expect(await refused({ apiVersion: 'v2', kind: 'Secret' })).toEqual([
      400,
      'BadRequest',
      'Secret in version "v2" cannot be handled as a Secret: no kind "Secret" is registered for version "v2" in scheme "pkg/api/legacyscheme/scheme.go:30"',
    ]);
    expect(await refused({ apiVersion: 'v1', kind: ['Secret'] })).toEqual([
      400,
      'BadRequest',
      expect.stringMatching(/^the object provided is unrecognized \(must be of type Secret\): couldn't get version\/kind; json parse error: json: cannot unmarshal array into Go struct field \.kind of type string \(/),
    ]);
    // A review is decoded as any other body.
    const review = await adminRequest(env, 'POST', '/apis/authentication.svc.io/v1/selfsubjectreviews', JSON.stringify({ apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview' }), { 'content-type': 'application/json' });
    expect([review.status, (review.json() as { message: string }).message]).toEqual([
      400,
      'TokenReview in version "v1" cannot be handled as a SelfSubjectReview: converting (v1.TokenReview) to (authentication.SelfSubjectReview): unknown conversion',
    ]);
    const bare = await post({ stringData: { a: 'b' } });
    expect([bare.status, (bare.json() as { kind: string }).kind]).toEqual([201, 'Secret']);
  });

  test('a label patch to a string is refused with the original\'s message, by merge and strategic merge patch', async () => {
    expect((await kubectl(['create', 'configmap', 'labelled', '--from-literal=a=b'])).code).toBe(0);
    const merge = await kubectl(['patch', 'configmap', 'labelled', '--type=merge', '-p', '{"metadata":{"labels":"x"}}']);
    expect(merge.code).not.toBe(0);
    // kubectl words a 422 without kind or name as "The request is invalid".
    expect(merge.stderr).toMatch(/^The request is invalid: patch: Invalid value: ".*": json: cannot unmarshal string into Go struct field ObjectMeta\.metadata\.labels of type map\[string\]string\n$/);
    const strategic = await kubectl(['patch', 'configmap', 'labelled', '-p', '{"metadata":{"labels":"x"}}']);
    expect(strategic.stderr).toBe('The request is invalid: patch: Invalid value: "map[metadata:map[labels:x]]": cannot restore map from string\n');
    const put = await adminRequest(env, 'PUT', '/api/v1/namespaces/default/configmaps/labelled', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'labelled', labels: 'x' } }), { 'content-type': 'application/json' });
    expect([put.status, (put.json() as { message: string }).message]).toEqual([
      400,
      'ConfigMap in version "v1" cannot be handled as a ConfigMap: json: cannot unmarshal string into Go struct field ObjectMeta.metadata.labels of type map[string]string',
    ]);
  });

  test('a changed clusterIP names spec.clusterIPs[0], as the original', async () => {
    expect((await kubectl(['create', 'service', 'clusterip', 'fixed-ip', '--clusterip=10.0.0.40', '--tcp=80:8080'])).code).toBe(0);
    const changed = await kubectl(['patch', 'service', 'fixed-ip', '-p', '{"spec":{"clusterIP":"10.0.0.41"}}']);
    expect(changed.stderr).toBe('The Service "fixed-ip" is invalid: spec.clusterIPs[0]: Invalid value: ["10.0.0.41"]: may not change once set\n');
  });

  test('/api/v1 lists each resource\'s keys in the original\'s order', async () => {
    const res = await adminRequest(env, 'GET', '/api/v1');
    const pods = (res.json()['resources'] as Array<Record<string, unknown>>).find((r) => r['name'] === 'pods');
    expect(Object.keys(pods ?? {})).toEqual(['name', 'singularName', 'namespaced', 'kind', 'verbs', 'shortNames', 'categories', 'storageVersionHash']);
  });
});
