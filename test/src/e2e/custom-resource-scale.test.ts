import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest, type HttpResponse } from './http';
import { run, until } from './helpers';

/**
 * Custom resources beyond the basics, end to end: the scale subresource
 * (kubectl scale, HTTP, both client libraries), categories, kubectl explain,
 * nulls, and watches that end when their definition goes.
 */
const fixtures = path.join(__dirname, '..', '..', 'fixtures');
const REPLICATORS = '/apis/scale.example.com/v1/namespaces/default/replicators';

/** A definition the watch-removal test creates and deletes. */
const ephemeralVersion = { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', 'x-svc-preserve-unknown-fields': true } } } } };
const ephemeralCrd = { apiVersion: 'apiextensions.svc.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'ephemerals.scale.example.com' }, spec: { group: 'scale.example.com', scope: 'Namespaced', names: { plural: 'ephemerals', kind: 'Ephemeral' }, versions: [ephemeralVersion] } };

/** A watch kept open as a stream: its lines as they come, and whether the server ended it. */
interface OpenWatch {
  lines: string[];
  ended: Promise<void>;
  close(): void;
}

function openWatch(env: Environment, p: string): OpenWatch {
  const lines: string[] = [];
  let buffered = '';
  let done: () => void = () => undefined;
  const ended = new Promise<void>((resolve) => (done = resolve));
  const req = https.request(`${env.url}${p}`, { ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey), agent: false }, (res) => {
    res.on('data', (c: Buffer) => {
      buffered += c.toString('utf8');
      const parts = buffered.split('\n');
      buffered = parts.pop() ?? '';
      lines.push(...parts.filter(Boolean));
    });
    res.on('end', () => done());
  });
  req.on('error', () => done());
  req.end();
  return { lines, ended, close: () => req.destroy() };
}

describe('custom resources: scale, categories, explain, nulls, removal, clients', () => {
  let env: Environment;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});
  const http = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResponse> =>
    adminRequest(env, method, p, body === undefined ? undefined : JSON.stringify(body), headers);
  const replicator = (name: string, spec: Record<string, unknown>) => ({ apiVersion: 'scale.example.com/v1', kind: 'Replicator', metadata: { name }, spec });
  const merge = { 'content-type': 'application/merge-patch+json' };

  beforeAll(async () => {
    env = await startEnvironment({ crds: [path.join(fixtures, 'crds-scale')] });
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('discovery lists <plural>/scale as autoscaling/v1 Scale, and OpenAPI v3 describes the Scale', async () => {
    const list = (await http('GET', '/apis/scale.example.com/v1')).json() as { resources: Array<Record<string, unknown>> };
    expect(list.resources.find((r) => r['name'] === 'replicators/scale')).toEqual({ name: 'replicators/scale', singularName: '', namespaced: true, group: 'autoscaling', version: 'v1', kind: 'Scale', verbs: ['get', 'patch', 'update'] });
    expect(list.resources.find((r) => r['name'] === 'replicators')?.['categories']).toEqual(['all', 'fleet']);
    const doc = (await http('GET', '/openapi/v3/apis/scale.example.com/v1')).json() as { components: { schemas: Record<string, Record<string, unknown>> }; paths: Record<string, unknown> };
    expect(doc.components.schemas['io.svc.api.autoscaling.v1.Scale']?.['x-kubernetes-group-version-kind']).toEqual([{ group: 'autoscaling', kind: 'Scale', version: 'v1' }]);
    expect(Object.keys(doc.paths)).toContain('/apis/scale.example.com/v1/namespaces/{namespace}/replicators/{name}/scale');
  });

  test('kubectl scale writes the spec replicas path; get -o jsonpath reads it; --current-replicas is a precondition', async () => {
    expect((await kubectl(['apply', '-f', '-'], 'apiVersion: scale.example.com/v1\nkind: Replicator\nmetadata:\n  name: r1\nspec:\n  replicas: 1\n  image: busybox\n')).code).toBe(0);
    const scaled = await kubectl(['scale', '--replicas=5', 'replicator/r1']);
    expect([scaled.code, scaled.stderr, scaled.stdout.trim()]).toEqual([0, '', 'replicator.scale.example.com/r1 scaled']);
    expect((await kubectl(['get', 'replicator', 'r1', '-o', 'jsonpath={.spec.replicas} {.spec.image} {.metadata.generation}'])).stdout).toBe('5 busybox 2');
    expect((await kubectl(['get', 'replicator', 'r1', '--subresource=scale', '-o', 'jsonpath={.kind} {.spec.replicas}'])).stdout).toBe('Scale 5');
    const table = await kubectl(['get', 'replicator', 'r1', '--subresource=scale']);
    expect([table.code, table.stderr]).toEqual([0, '']);
    expect(table.stdout).toMatch(/^NAME\s+DESIRED\s+AVAILABLE\s+AGE\nr1\s+5\s+0\s+\d+s\n$/);
    const stale = await kubectl(['scale', '--current-replicas=4', '--replicas=6', 'replicator/r1']);
    expect(stale.code).not.toBe(0);
    expect(stale.stderr).toMatch(/Expected replicas to be 4, was 5/);
    expect((await kubectl(['scale', '--current-replicas=5', '--replicas=6', 'rpl/r1'])).code).toBe(0);
    expect((await kubectl(['get', 'rpl', 'r1', '-o', 'jsonpath={.spec.replicas}'])).stdout).toBe('6');
  });

  test('the Scale over HTTP: status and selector, resourceVersion precondition, errors naming the field', async () => {
    expect((await http('PATCH', `${REPLICATORS}/r1/status`, { status: { replicas: 3, selector: 'app=r1' } }, merge)).status).toBe(200);
    const got = await http('GET', `${REPLICATORS}/r1/scale`);
    const scale = got.json() as { apiVersion: string; kind: string; metadata: { name: string; resourceVersion: string }; spec: unknown; status: unknown };
    expect([got.status, scale.apiVersion, scale.kind, scale.metadata.name, scale.spec, scale.status]).toEqual([200, 'autoscaling/v1', 'Scale', 'r1', { replicas: 6 }, { replicas: 3, selector: 'app=r1' }]);
    const table = await http('GET', `${REPLICATORS}/r1/scale`, undefined, { accept: 'application/json;as=Table;g=meta.svc.io;v=v1' });
    const rows = table.json() as { kind: string; columnDefinitions: Array<{ name: string; type: string }>; rows: Array<{ cells: unknown[]; object: { kind: string } }> };
    expect([rows.kind, rows.columnDefinitions.map((c) => `${c.name}:${c.type}`), rows.rows[0]?.cells.slice(0, 3), rows.rows[0]?.object.kind]).toEqual([
      'Table',
      ['Name:string', 'Desired:integer', 'Available:integer', 'Age:string'],
      ['r1', 6, 3],
      'PartialObjectMetadata',
    ]);

    const put = await http('PUT', `${REPLICATORS}/r1/scale`, { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'r1', resourceVersion: scale.metadata.resourceVersion }, spec: { replicas: 2 } });
    expect([put.status, (put.json()['spec'] as { replicas: number }).replicas]).toEqual([200, 2]);
    const object = (await http('GET', `${REPLICATORS}/r1`)).json() as { spec: unknown; status: unknown };
    expect([object.spec, object.status]).toEqual([{ replicas: 2, image: 'busybox' }, { replicas: 3, selector: 'app=r1' }]);
    const stale = await http('PUT', `${REPLICATORS}/r1/scale`, { apiVersion: 'autoscaling/v1', kind: 'Scale', metadata: { name: 'r1', resourceVersion: scale.metadata.resourceVersion }, spec: { replicas: 3 } });
    expect([stale.status, stale.json()['reason']]).toEqual([409, 'Conflict']);

    const negative = await http('PATCH', `${REPLICATORS}/r1/scale`, { spec: { replicas: -1 } }, merge);
    expect([negative.status, negative.json()['message']]).toEqual([422, 'Scale.autoscaling "r1" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0']);
    const tooMany = await http('PATCH', `${REPLICATORS}/r1/scale`, { spec: { replicas: 21 } }, merge);
    expect([tooMany.status, tooMany.json()['message']]).toEqual([422, expect.stringContaining('spec.replicas: Invalid value: 21: spec.replicas in body should be less than or equal to 20')]);
    const mistyped = await http('PATCH', `${REPLICATORS}/r1/scale`, { spec: { replicas: 'two' } }, merge);
    expect([mistyped.status, mistyped.json()['message']]).toEqual([400, expect.stringContaining('spec.replicas')]);
    expect((await http('GET', `${REPLICATORS}/missing/scale`)).status).toBe(404);
    expect((await http('PATCH', `${REPLICATORS}/missing/scale`, { spec: { replicas: 1 } }, merge)).status).toBe(404);

    // An object without spec replicas has no Scale to read, and a patch must set them.
    expect((await http('POST', REPLICATORS, replicator('r0', { image: 'x' }))).status).toBe(201);
    const unset = await http('GET', `${REPLICATORS}/r0/scale`);
    expect([unset.status, unset.json()['message']]).toEqual([500, 'Internal error occurred: the spec replicas field ".spec.replicas" does not exist']);
    const empty = await http('PATCH', `${REPLICATORS}/r0/scale`, { metadata: { labels: { a: 'b' } } }, merge);
    expect([empty.status, empty.json()['message']]).toEqual([400, 'the spec replicas field ".spec.replicas" cannot be empty']);
    expect((await http('PATCH', `${REPLICATORS}/r0/scale`, { spec: { replicas: 1 } }, merge)).status).toBe(200);
  });

  test('server-side apply of a Scale: the replicas change, ownership is recorded on the object under scale, a conflict needs force', async () => {
    const manifest = 'apiVersion: scale.example.com/v1\nkind: Replicator\nmetadata:\n  name: ssa\nspec:\n  replicas: 1\n  image: busybox\n';
    expect((await kubectl(['apply', '--server-side', '-f', '-'], manifest)).code).toBe(0);
    // kubectl apply --subresource=scale sends the manifest's own kind, which an apply to /scale refuses as the original server does.
    const parentKind = await kubectl(['apply', '--server-side', '--subresource=scale', '--field-manager=scaler', '-f', '-'], manifest.replace('replicas: 1', 'replicas: 4'));
    expect([parentKind.code, parentKind.stderr.trim()]).toEqual([1, 'Error from server (BadRequest): Incorrect version specified in apply patch. Specified patch version: scale.example.com/v1, expected: autoscaling/v1']);

    const applyScale = (manager: string, replicas: number, force = false) =>
      adminRequest(env, 'PATCH', `${REPLICATORS}/ssa/scale?fieldManager=${manager}${force ? '&force=true' : ''}`, `apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: ssa\nspec:\n  replicas: ${replicas}\n`, {
        'content-type': 'application/apply-patch+yaml',
      });
    const refused = await applyScale('scaler', 4);
    expect([refused.status, refused.json()['reason'], refused.json()['message']]).toEqual([409, 'Conflict', 'Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas']);
    const forced = await applyScale('scaler', 4, true);
    expect([forced.status, forced.json()['kind'], forced.json()['spec']]).toEqual([200, 'Scale', { replicas: 4 }]);
    const managed = (await kubectl(['get', 'replicator', 'ssa', '--show-managed-fields', '-o', 'json'])).stdout;
    const object = JSON.parse(managed) as { spec: unknown; metadata: { managedFields: Array<Record<string, unknown>> } };
    expect(object.spec).toEqual({ replicas: 4, image: 'busybox' });
    expect(object.metadata.managedFields.map(({ time: _time, ...e }) => e)).toEqual([
      { manager: 'kubectl', operation: 'Apply', apiVersion: 'scale.example.com/v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:image': {} } } },
      { manager: 'scaler', operation: 'Apply', apiVersion: 'scale.example.com/v1', fieldsType: 'FieldsV1', fieldsV1: { 'f:spec': { 'f:replicas': {} } }, subresource: 'scale' },
    ]);
    // The scaler now owns the replicas: another manager conflicts with it, the same manager does not.
    const other = await applyScale('other', 2);
    expect([other.status, other.json()['message']]).toEqual([409, 'Apply failed with 1 conflict: conflict with "scaler" with subresource "scale": .spec.replicas']);
    expect((await applyScale('scaler', 3)).status).toBe(200);
    expect((await kubectl(['get', 'replicator', 'ssa', '-o', 'jsonpath={.spec.replicas}'])).stdout).toBe('3');
    // kubectl apply of the object conflicts with the scaler over the replicas it no longer owns.
    const reapplied = await kubectl(['apply', '--server-side', '-f', '-'], manifest);
    expect([reapplied.code, reapplied.stderr]).toEqual([1, expect.stringMatching(/conflict with "scaler" with subresource "scale": \.spec\.replicas/)]);

    const noManager = await adminRequest(env, 'PATCH', `${REPLICATORS}/ssa/scale`, 'apiVersion: autoscaling/v1\nkind: Scale\nspec:\n  replicas: 1\n', { 'content-type': 'application/apply-patch+yaml' });
    expect([noManager.status, noManager.json()['message']]).toEqual([422, 'PatchOptions.meta.svc.io "" is invalid: fieldManager: Required value: is required for apply patch']);
    expect((await applyScale('scaler', -1)).status).toBe(422);
    expect((await adminRequest(env, 'PATCH', `${REPLICATORS}/missing/scale?fieldManager=scaler`, 'apiVersion: autoscaling/v1\nkind: Scale\nspec:\n  replicas: 1\n', { 'content-type': 'application/apply-patch+yaml' })).status).toBe(404);
  });

  test('a null in a field neither nullable nor defaulted is dropped; a null list item is 422 naming it', async () => {
    const created = await http('POST', REPLICATORS, replicator('nulls', { replicas: 1, image: null }));
    expect([created.status, created.json()['spec']]).toEqual([201, { replicas: 1 }]);
    const item = await http('POST', REPLICATORS, replicator('null-item', { replicas: 1, tags: ['a', null] }));
    expect([item.status, item.json()['message']]).toEqual([422, 'Replicator.scale.example.com "null-item" is invalid: spec.tags[1]: Invalid value: "null": spec.tags[1] in body must be of type string: "null"']);
  });

  test('kubectl get of a category (all, or the definition’s own) lists the custom objects', async () => {
    const fleet = await kubectl(['get', 'fleet', '-n', 'default', '-o', 'name']);
    expect([fleet.code, fleet.stderr]).toEqual([0, '']);
    expect(fleet.stdout.split('\n').filter(Boolean).sort()).toEqual(['replicator.scale.example.com/nulls', 'replicator.scale.example.com/r0', 'replicator.scale.example.com/r1', 'replicator.scale.example.com/ssa']);
    const all = await kubectl(['get', 'all', '-n', 'default', '-o', 'name']);
    expect(all.stdout).toContain('replicator.scale.example.com/r1');
  });

  test('kubectl explain reads the definition’s schema, down to a field', async () => {
    const kind = await kubectl(['explain', 'replicator']);
    expect([kind.code, kind.stderr]).toEqual([0, '']);
    expect(kind.stdout).toMatch(/KIND:\s+Replicator/);
    expect(kind.stdout).toMatch(/GROUP:\s+scale\.example\.com/);
    expect(kind.stdout).toContain('A Replicator keeps a number of copies of an image running.');
    const field = await kubectl(['explain', 'replicator.spec.replicas']);
    expect([field.code, field.stderr]).toEqual([0, '']);
    expect(field.stdout).toMatch(/FIELD:\s+replicas <integer>/);
    expect(field.stdout).toContain('How many copies should run.');
  });

  test('a watch of a custom resource ends when its definition is deleted, after the DELETED of its objects', async () => {
    expect((await http('POST', '/apis/apiextensions.svc.io/v1/customresourcedefinitions', ephemeralCrd)).status).toBe(201);
    const base = '/apis/scale.example.com/v1/namespaces/default/ephemerals';
    await until(async () => ((await http('GET', base)).status === 200 ? true : undefined), 15_000);
    expect((await http('POST', base, { apiVersion: 'scale.example.com/v1', kind: 'Ephemeral', metadata: { name: 'e1' }, spec: {} })).status).toBe(201);
    const w = openWatch(env, `${base}?watch=true`);
    try {
      await until(() => (w.lines.length > 0 ? true : undefined), 10_000);
      expect((await kubectl(['delete', 'crd', 'ephemerals.scale.example.com', '--timeout=30s'])).code).toBe(0);
      let timer: NodeJS.Timeout | undefined;
      const outcome = await Promise.race([w.ended.then(() => 'ended'), new Promise((r) => (timer = setTimeout(() => r('still open'), 15_000)))]);
      clearTimeout(timer);
      expect(outcome).toBe('ended');
      expect(w.lines.map((l) => (JSON.parse(l) as { type: string }).type)).toEqual(['ADDED', 'DELETED']);
    } finally {
      w.close();
    }
    expect((await http('GET', `${base}?watch=true`)).status).toBe(404);
  });

  test('@kubernetes/client-node: Watch on the custom resource path sees ADDED, MODIFIED and DELETED; CustomObjectsApi scales', async () => {
    const res = await run(process.execPath, [path.join(fixtures, 'client-node-custom-watch.mjs'), env.kubeconfigPath], { timeoutMs: 40_000 });
    expect(res.stderr).toBe('');
    const out = JSON.parse(res.stdout) as Record<string, unknown>;
    expect(out['outcome']).toBe('deleted');
    expect(out['events']).toEqual([
      { type: 'ADDED', replicas: 1 },
      { type: 'MODIFIED', replicas: 2 },
      { type: 'MODIFIED', replicas: 3 },
      { type: 'DELETED', replicas: 3 },
    ]);
    expect(out['scale']).toEqual({ kind: 'Scale', apiVersion: 'autoscaling/v1', replicas: 3 });
  });

  test("Debian's python3-kubernetes CustomObjectsApi: create, get, list, patch, scale, delete", async () => {
    const res = await run('/usr/bin/python3', [path.join(fixtures, 'python-custom.py'), env.kubeconfigPath], { timeoutMs: 40_000 });
    expect(res.stderr).toBe('');
    const out = JSON.parse(res.stdout) as Record<string, unknown>;
    expect(out).toEqual({
      created: { name: 'from-python', spec: { replicas: 1, image: 'busybox' }, generation: 1 },
      read: { replicas: 1, image: 'busybox' },
      listed: ['from-python'],
      patched: { spec: { replicas: 1, image: 'alpine' }, generation: 2 },
      scaled: { kind: 'Scale', replicas: 4 },
      scale: { replicas: 4 },
      invalid: { status: 422, reason: 'Invalid' },
      after_delete: 404,
    });
  });
});
