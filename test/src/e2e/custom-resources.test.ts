import { spawn } from 'node:child_process';
import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest, type HttpResponse } from './http';
import { run, until } from './helpers';

/**
 * CustomResourceDefinitions end to end: the harness installs one before the
 * tests (and waits until it is Established on both gateways); kubectl,
 * @kubernetes/client-node and raw HTTP then use custom kinds as built-in ones.
 */
const fixtures = path.join(__dirname, '..', '..', 'fixtures');
const WIDGETS = '/apis/example.com/v1/namespaces/default/widgets';

const gadgetCrd = `apiVersion: apiextensions.svc.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.tools.example.org
spec:
  group: tools.example.org
  scope: Cluster
  names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: [gd]}
  versions:
    - name: v1
      served: true
      storage: true
      additionalPrinterColumns:
        - {name: Model, type: string, jsonPath: .spec.model}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                model: {type: string}
                count: {type: integer, default: 1}
`;

describe('custom resources end to end', () => {
  let env: Environment;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});
  const http = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResponse> =>
    adminRequest(env, method, p, body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body), headers);
  const widget = (name: string, spec: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, ...extra }, spec });

  beforeAll(async () => {
    env = await startEnvironment({ gateways: 2, crds: [path.join(fixtures, 'crds')] });
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('the harness installed the definition: Established, its names accepted, served by both gateways', async () => {
    const crd = (await http('GET', '/apis/apiextensions.svc.io/v1/customresourcedefinitions/widgets.example.com')).json() as { status: { conditions: Array<{ type: string; status: string }>; acceptedNames: { plural: string }; storedVersions: string[] } };
    expect(crd.status.conditions.map((c) => `${c.type}=${c.status}`)).toEqual(expect.arrayContaining(['NamesAccepted=True', 'Established=True']));
    expect(crd.status.acceptedNames.plural).toBe('widgets');
    expect(crd.status.storedVersions).toEqual(['v1']);
    for (const url of env.urls) {
      const list = await adminRequest({ ...env, url }, 'GET', WIDGETS);
      expect([url, list.status, list.json()['kind']]).toEqual([url, 200, 'WidgetList']);
    }
  });

  test('kubectl apply of a definition and of an object of it (default client-side validation), get with printer columns, api-resources', async () => {
    // Written as generators write definitions for the original server (apiextensions.k8s.io/v1).
    const applied = await kubectl(['apply', '-f', '-'], gadgetCrd.replace('apiVersion: apiextensions.svc.io/v1', 'apiVersion: apiextensions.k8s.io/v1'));
    expect([applied.code, applied.stderr]).toEqual([0, '']);
    expect(applied.stdout.trim()).toBe('customresourcedefinition.apiextensions.k8s.io/gadgets.tools.example.org created');
    const waited = await kubectl(['wait', '--for=condition=Established', '--timeout=20s', 'crd/gadgets.tools.example.org']);
    expect(waited.code).toBe(0);
    await until(async () => ((await http('GET', '/apis/tools.example.org/v1/gadgets')).status === 200 ? true : undefined), 10_000);
    const obj = await kubectl(['apply', '-f', '-'], 'apiVersion: tools.example.org/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  model: turbo\n');
    expect([obj.code, obj.stderr, obj.stdout.trim()]).toEqual([0, '', 'gadget.tools.example.org/g1 created']);
    // kubectl's client-side validation reads the published schema: an unknown field is reported.
    const strict = await kubectl(['apply', '--validate=strict', '-f', '-'], 'apiVersion: tools.example.org/v1\nkind: Gadget\nmetadata:\n  name: g2\nspec:\n  model: x\n  colour: red\n');
    expect(strict.code).not.toBe(0);
    expect(strict.stderr).toContain('unknown field "spec.colour"');
    const table = await kubectl(['get', 'gadgets']);
    expect(table.stdout).toMatch(/^NAME\s+MODEL\s+AGE$/m);
    expect(table.stdout).toMatch(/^g1\s+turbo\s+\d+s$/m);
    const got = JSON.parse((await kubectl(['get', 'gd', 'g1', '-o', 'json'])).stdout) as { spec: unknown; metadata: { generation: number } };
    expect(got.spec).toEqual({ model: 'turbo', count: 1 });
    expect(got.metadata.generation).toBe(1);
    // Applying a changed manifest again: kubectl sends a merge patch (the published PATCH takes no
    // strategic merge patch for custom resources), and the change lands.
    const reapplied = await kubectl(['apply', '-f', '-', '-v=6'], 'apiVersion: tools.example.org/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  model: mega\n');
    expect([reapplied.code, reapplied.stdout.trim()]).toEqual([0, 'gadget.tools.example.org/g1 configured']);
    expect(reapplied.stderr).toMatch(/PATCH https:\/\/\S+\/gadgets\/g1\S* 200 OK/);
    const changed = JSON.parse((await kubectl(['get', 'gd', 'g1', '-o', 'json'])).stdout) as { spec: unknown; metadata: { generation: number } };
    expect(changed.spec).toEqual({ model: 'mega', count: 1 });
    expect(changed.metadata.generation).toBe(2);
    const resources = await kubectl(['api-resources', '--api-group=tools.example.org', '--no-headers']);
    expect(resources.stdout).toMatch(/^gadgets\s+gd\s+tools\.example\.org\/v1\s+false\s+Gadget$/m);
    const crds = await kubectl(['get', 'crds']);
    expect(crds.stdout).toMatch(/^NAME\s+CREATED AT$/m);
    expect(crds.stdout).toMatch(/^widgets\.example\.com\s+\d{4}-\d\d-\d\dT/m);
    // Categories: widgets are in "all".
    expect((await kubectl(['get', 'all', '-n', 'default', '-o', 'name'])).code).toBe(0);
  });

  test('kubectl apply of a List of objects whose kind preserves unknown fields at its root (default validation): published open in v2, as the original does', async () => {
    const crd = `apiVersion: apiextensions.svc.io/v1
kind: CustomResourceDefinition
metadata:
  name: freeforms.tools.example.org
spec:
  group: tools.example.org
  scope: Namespaced
  names: {plural: freeforms, singular: freeform, kind: FreeForm}
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
`;
    expect((await kubectl(['apply', '-f', '-'], crd)).code).toBe(0);
    expect((await kubectl(['wait', '--for=condition=Established', '--timeout=20s', 'crd/freeforms.tools.example.org'])).code).toBe(0);
    await until(async () => ((await http('GET', '/apis/tools.example.org/v1/freeforms')).status === 200 ? true : undefined), 10_000);
    const v2 = (await http('GET', '/openapi/v2')).json() as { definitions: Record<string, { properties?: unknown; type?: string }> };
    const definition = Object.entries(v2.definitions).find(([name]) => name.endsWith('.v1.FreeForm'))?.[1];
    expect(definition).toMatchObject({ type: 'object' });
    expect(definition?.properties).toBeUndefined();
    const list = 'apiVersion: v1\nkind: List\nitems:\n- apiVersion: tools.example.org/v1\n  kind: FreeForm\n  metadata:\n    name: f1\n  spec:\n    anything: [1, 2]\n- apiVersion: tools.example.org/v1\n  kind: FreeForm\n  metadata:\n    name: f2\n  spec:\n    nested: {deep: true}\n';
    const applied = await kubectl(['apply', '-f', '-'], list);
    expect([applied.code, applied.stderr, applied.stdout.trim().split('\n')]).toEqual([0, '', ['freeform.tools.example.org/f1 created', 'freeform.tools.example.org/f2 created']]);
    expect((await http('GET', '/apis/tools.example.org/v1/namespaces/default/freeforms/f2')).json()).toMatchObject({ spec: { nested: { deep: true } } });
  });

  test('a definition created through one gateway is served by the other within a second', async () => {
    const crd = (await http('GET', '/apis/apiextensions.svc.io/v1/customresourcedefinitions/widgets.example.com')).json();
    const second = { ...env, url: env.urls[1] as string };
    const body = { apiVersion: 'apiextensions.svc.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'sprockets.example.com' }, spec: { ...(crd['spec'] as Record<string, unknown>), names: { plural: 'sprockets', kind: 'Sprocket' } } };
    expect((await http('POST', '/apis/apiextensions.svc.io/v1/customresourcedefinitions', body)).status).toBe(201);
    await until(async () => ((await http('GET', '/apis/example.com/v1/namespaces/default/sprockets')).status === 200 ? true : undefined), 10_000);
    const servedFirst = Date.now();
    await until(async () => ((await adminRequest(second, 'GET', '/apis/example.com/v1/namespaces/default/sprockets')).status === 200 ? true : undefined), 5_000);
    expect(Date.now() - servedFirst).toBeLessThan(1000);
    const discovery = (await adminRequest(second, 'GET', '/apis/example.com/v1')).json() as { resources: Array<{ name: string }> };
    expect(discovery.resources.map((r) => r.name)).toEqual(expect.arrayContaining(['widgets', 'widgets/status', 'sprockets', 'sprockets/status']));
    const openapi = (await adminRequest(second, 'GET', '/openapi/v3/apis/example.com/v1')).json() as { components: { schemas: Record<string, unknown> } };
    expect(Object.keys(openapi.components.schemas)).toEqual(expect.arrayContaining(['com.example.v1.Sprocket', 'com.example.v1.Widget']));
  });

  test('validation names the field (422), defaults are filled, unknown fields pruned or refused by fieldValidation', async () => {
    const invalid = await http('POST', WIDGETS, widget('bad', { size: 11, color: 'green', code: 'abc', port: 1.5 }));
    expect(invalid.status).toBe(422);
    const details = invalid.json()['details'] as { causes: Array<{ field: string; message: string }> };
    expect(details.causes.map((c) => c.field).sort()).toEqual(['spec.code', 'spec.color', 'spec.port', 'spec.size']);
    expect(invalid.json()['message']).toContain('spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10');
    const mistyped = await http('POST', WIDGETS, widget('bad', { size: 'big' }));
    expect([mistyped.status, mistyped.json()['message']]).toEqual([422, expect.stringContaining('spec.size in body must be of type integer: "string"')]);
    expect((await http('POST', WIDGETS, widget('bad', {}))).json()['message']).toContain('spec.size: Required value');

    const strict = await http('POST', `${WIDGETS}?fieldValidation=Strict`, widget('w1', { size: 2, bogus: 1 }));
    expect([strict.status, strict.json()['message']]).toEqual([400, expect.stringContaining('unknown field "spec.bogus"')]);
    const warned = await http('POST', WIDGETS, widget('w1', { size: 2, bogus: 1, extra: { kept: { deep: true } }, rules: [{ name: 'a' }] }));
    expect(warned.status).toBe(201);
    expect(String(warned.headers['warning'])).toBe('299 - "unknown field \\"spec.bogus\\""');
    expect(warned.json()['spec']).toEqual({ size: 2, color: 'red', extra: { kept: { deep: true } }, rules: [{ name: 'a', weight: 1 }] });
    expect((warned.json()['metadata'] as { generation: number }).generation).toBe(1);
  });

  test('status subresource, generation, patches (merge, JSON, apply with list maps), strategic merge 415, protobuf 415 and 406', async () => {
    expect((await http('POST', WIDGETS, widget('w2', { size: 1, rules: [{ name: 'a', weight: 2 }] }))).status).toBe(201);
    // The main resource ignores status; /status changes only status.
    const main = await http('PATCH', `${WIDGETS}/w2`, { status: { ready: true }, metadata: { labels: { x: 'y' } } }, { 'content-type': 'application/merge-patch+json' });
    expect([main.status, main.json()['status'], (main.json()['metadata'] as { generation: number }).generation]).toEqual([200, undefined, 1]);
    const status = await http('PATCH', `${WIDGETS}/w2/status`, { status: { ready: true }, spec: { size: 9 } }, { 'content-type': 'application/merge-patch+json' });
    expect([status.status, status.json()['status'], (status.json()['spec'] as { size: number }).size]).toEqual([200, { ready: true }, 1]);
    const json = await http('PATCH', `${WIDGETS}/w2`, [{ op: 'replace', path: '/spec/size', value: 5 }], { 'content-type': 'application/json-patch+json' });
    expect([json.status, (json.json()['spec'] as { size: number }).size, (json.json()['metadata'] as { generation: number }).generation]).toEqual([200, 5, 2]);
    // Apply merges the list map by its key: rule "a" keeps its weight, "b" is added.
    const applied = await http('PATCH', `${WIDGETS}/w2?fieldManager=e2e&force=true`, 'apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w2\nspec:\n  size: 5\n  rules:\n  - name: b\n    weight: 3\n', { 'content-type': 'application/apply-patch+yaml' });
    expect(applied.status).toBe(200);
    expect((applied.json()['spec'] as { rules: unknown }).rules).toEqual([{ name: 'a', weight: 2 }, { name: 'b', weight: 3 }]);
    const smp = await http('PATCH', `${WIDGETS}/w2`, { spec: { size: 6 } }, { 'content-type': 'application/strategic-merge-patch+json' });
    expect([smp.status, smp.json()['reason']]).toEqual([415, 'UnsupportedMediaType']);
    const proto = await http('POST', WIDGETS, Buffer.from([0x6b, 0x38, 0x73, 0x00, 1, 2]), { 'content-type': 'application/vnd.svc.protobuf' });
    expect(proto.status).toBe(415);
    const onlyProto = await http('GET', `${WIDGETS}/w2`, undefined, { accept: 'application/vnd.svc.protobuf' });
    expect(onlyProto.status).toBe(406);
    const yaml = await http('GET', `${WIDGETS}/w2`, undefined, { accept: 'application/yaml' });
    expect([yaml.status, yaml.body]).toEqual([200, expect.stringContaining('kind: Widget')]);
  });

  test('list with paging and selectors, watch, deletecollection', async () => {
    for (const [name, team] of [['p1', 'a'], ['p2', 'a'], ['p3', 'b']] as const) {
      expect((await http('POST', WIDGETS, widget(name, { size: 1 }, { labels: { team } }))).status).toBe(201);
    }
    const page = (await http('GET', `${WIDGETS}?labelSelector=team&limit=2`)).json() as { items: unknown[]; metadata: { continue: string } };
    expect(page.items).toHaveLength(2);
    const rest = (await http('GET', `${WIDGETS}?labelSelector=team&limit=2&continue=${encodeURIComponent(page.metadata.continue)}`)).json() as { items: unknown[] };
    expect(rest.items).toHaveLength(1);
    const byField = (await http('GET', `${WIDGETS}?fieldSelector=metadata.name%3Dp3`)).json() as { items: Array<{ metadata: { name: string } }> };
    expect(byField.items.map((i) => i.metadata.name)).toEqual(['p3']);

    const watcher = spawn('kubectl', ['--kubeconfig', env.kubeconfigPath, 'get', 'widgets', '-n', 'default', '-l', 'team=b', '-w', '-o', 'custom-columns=NAME:.metadata.name,SIZE:.spec.size', '--no-headers']);
    let seen = '';
    watcher.stdout.on('data', (c: Buffer) => (seen += c.toString()));
    try {
      await until(() => (/p3\s+1/.test(seen) ? true : undefined), 15_000);
      expect((await kubectl(['patch', 'widget', 'p3', '-n', 'default', '--type=merge', '-p', '{"spec":{"size":7}}'])).code).toBe(0);
      await until(() => (/p3\s+7/.test(seen) ? true : undefined), 15_000);
    } finally {
      watcher.kill();
    }
    const removed = await http('DELETE', `${WIDGETS}?labelSelector=team%3Da`);
    expect(removed.status).toBe(200);
    const left = (await http('GET', `${WIDGETS}?labelSelector=team`)).json() as { items: Array<{ metadata: { name: string } }> };
    expect(left.items.map((i) => i.metadata.name)).toEqual(['p3']);
  });

  test('@kubernetes/client-node CustomObjectsApi: create, get, list, and the 422 of an invalid object', async () => {
    const res = await run(process.execPath, [path.join(fixtures, 'client-node-custom.mjs'), env.kubeconfigPath], { timeoutMs: 40_000 });
    expect(res.stderr).toBe('');
    const out = JSON.parse(res.stdout) as Record<string, unknown>;
    expect(out['created']).toEqual({ name: 'from-node', spec: { size: 4, color: 'red' }, generation: 1 });
    expect(out['read']).toEqual({ size: 4, color: 'red' });
    expect([out['listed'], out['listKind']]).toEqual([['from-node'], 'WidgetList']);
    expect(out['invalid']).toEqual({ code: 422, body: expect.objectContaining({ reason: 'Invalid' }) });
  });

  test('kubectl delete crd removes its objects, and its paths answer 404 on every gateway', async () => {
    expect((await http('POST', '/apis/tools.example.org/v1/gadgets', { apiVersion: 'tools.example.org/v1', kind: 'Gadget', metadata: { name: 'g9' }, spec: {} })).status).toBe(201);
    const deleted = await kubectl(['delete', 'crd', 'gadgets.tools.example.org', '--timeout=30s']);
    expect([deleted.code, deleted.stdout.trim()]).toEqual([0, 'customresourcedefinition.apiextensions.svc.io "gadgets.tools.example.org" deleted']);
    expect((await http('GET', '/apis/apiextensions.svc.io/v1/customresourcedefinitions/gadgets.tools.example.org')).status).toBe(404);
    for (const url of env.urls) {
      await until(async () => ((await adminRequest({ ...env, url }, 'GET', '/apis/tools.example.org/v1/gadgets')).status === 404 ? true : undefined), 5_000);
    }
    // Recreated, the definition starts empty: the old objects went with it.
    expect((await kubectl(['apply', '-f', '-'], gadgetCrd)).code).toBe(0);
    await until(async () => ((await http('GET', '/apis/tools.example.org/v1/gadgets')).status === 200 ? true : undefined), 10_000);
    expect(((await http('GET', '/apis/tools.example.org/v1/gadgets')).json()['items'] as unknown[]).length).toBe(0);
  });
});
