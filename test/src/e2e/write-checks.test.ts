import * as fs from 'node:fs';
import * as path from 'node:path';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest, tokenRequest, type HttpResponse } from './http';

const fixtures = path.join(__dirname, '..', '..', 'fixtures');
const NS = 'writes';
const ACCOUNT = `system:serviceaccount:${NS}:editor`;

/**
 * Two checks every write passes, against the running system: a write that
 * turns out to create (server-side apply of a missing name, PUT of a kind
 * that creates on update) needs `create` besides its own verb, and a body
 * whose name or namespace is not the URL's (after any patch) is 400 and
 * changes nothing, for every patch type, subresources and custom objects.
 */
describe('writes are authorized as what they do and stay on their URL', () => {
  let env: Environment;
  let token = '';
  let accountConfig = '';
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input === undefined ? {} : { input });
  const asAccount = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', accountConfig, ...args], input === undefined ? {} : { input });
  const expectStatus = (res: HttpResponse, code: number, reason: string, message: string): void => {
    expect(`${res.status} ${res.body}`).toMatch(new RegExp(`^${code} `));
    expect(res.json()).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message });
  };
  const grant = async (role: string, verbs: string, resource: string): Promise<void> => {
    expect((await kubectl(['create', 'role', role, '-n', NS, `--verb=${verbs}`, `--resource=${resource}`])).code).toBe(0);
    expect((await kubectl(['create', 'rolebinding', role, '-n', NS, `--role=${role}`, `--serviceaccount=${NS}:editor`])).code).toBe(0);
  };
  const revoke = async (role: string): Promise<void> => {
    expect((await kubectl(['delete', 'rolebinding', role, '-n', NS])).code).toBe(0);
    expect((await kubectl(['delete', 'role', role, '-n', NS])).code).toBe(0);
  };

  beforeAll(async () => {
    env = await startEnvironment({ authorizationMode: 'RBAC', crds: [path.join(fixtures, 'crds')] });
    expect((await kubectl(['create', 'namespace', NS])).code).toBe(0);
    expect((await kubectl(['create', 'serviceaccount', 'editor', '-n', NS])).code).toBe(0);
    token = (await kubectl(['create', 'token', 'editor', '-n', NS])).stdout.trim();
    accountConfig = path.join(env.dir, 'editor.kubeconfig');
    fs.writeFileSync(accountConfig, tokenKubeconfig(env.url, env.pki.caCert, token), { mode: 0o600 });
    await until(async () => ((await asAccount(['auth', 'whoami'])).code === 0 ? true : undefined), 30000);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  const configMapYaml = (name: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ${name}\n  namespace: ${NS}\ndata:\n  a: "1"\n`;

  test('server-side apply of a missing ConfigMap needs create: 403 with patch alone, then created once create is granted', async () => {
    await grant('patcher', 'get,patch', 'configmaps');
    const forbiddenMessage = `configmaps "applied" is forbidden: User "${ACCOUNT}" cannot create resource "configmaps" in API group "" in the namespace "${NS}": none of the authorization modes (RBAC) allowed it`;
    // The decision for patch is in place once an apply to the missing name is refused as create rather than patch.
    const refused = await until(async () => {
      const res = await tokenRequest(env, 'PATCH', `/api/v1/namespaces/${NS}/configmaps/applied?fieldManager=editor`, token, configMapYaml('applied'), { 'content-type': 'application/apply-patch+yaml' });
      return res.status === 403 && res.body.includes('cannot create') ? res : undefined;
    }, 15000);
    expectStatus(refused, 403, 'Forbidden', forbiddenMessage);
    expect(refused.json()['details']).toEqual({ name: 'applied', group: '', kind: 'configmaps' });
    const viaKubectl = await asAccount(['apply', '--server-side', '-f', '-'], configMapYaml('applied'));
    expect(viaKubectl.code).not.toBe(0);
    expect(viaKubectl.stderr).toContain(`cannot create resource "configmaps" in API group "" in the namespace "${NS}"`);
    expect((await kubectl(['get', 'configmap', 'applied', '-n', NS])).code).not.toBe(0);

    await revoke('patcher');
    await grant('creator', 'get,patch,create', 'configmaps');
    await until(async () => ((await asAccount(['apply', '--server-side', '-f', '-'], configMapYaml('applied'))).code === 0 ? true : undefined), 15000);
    expect((await kubectl(['get', 'configmap', 'applied', '-n', NS, '-o', 'jsonpath={.data.a}'])).stdout).toBe('1');
    // Applying again edits the existing object: patch is enough, create is not asked again.
    await revoke('creator');
    await grant('patcher', 'get,patch', 'configmaps');
    await until(async () => ((await asAccount(['apply', '--server-side', '-f', '-'], configMapYaml('applied').replace('"1"', '"2"'))).code === 0 ? true : undefined), 15000);
    expect((await kubectl(['get', 'configmap', 'applied', '-n', NS, '-o', 'jsonpath={.data.a}'])).stdout).toBe('2');
    await revoke('patcher');
  });

  test('PUT of a missing Event (created on update) needs create: 403 with update alone', async () => {
    await grant('event-updater', 'get,update', 'events');
    const event = JSON.stringify({ apiVersion: 'v1', kind: 'Event', metadata: { name: 'put-event', namespace: NS }, involvedObject: { kind: 'Pod', name: 'p', namespace: NS }, reason: 'Tested', message: 'by PUT' });
    const refused = await until(async () => {
      const res = await tokenRequest(env, 'PUT', `/api/v1/namespaces/${NS}/events/put-event`, token, event);
      return res.status === 403 && res.body.includes('cannot create') ? res : undefined;
    }, 15000);
    expectStatus(refused, 403, 'Forbidden', `events "put-event" is forbidden: User "${ACCOUNT}" cannot create resource "events" in API group "" in the namespace "${NS}": none of the authorization modes (RBAC) allowed it`);
    expect((await adminRequest(env, 'GET', `/api/v1/namespaces/${NS}/events/put-event`)).status).toBe(404);
    await revoke('event-updater');
    await grant('event-writer', 'get,update,create', 'events');
    const created = await until(async () => {
      const res = await tokenRequest(env, 'PUT', `/api/v1/namespaces/${NS}/events/put-event`, token, event);
      return res.status === 201 ? res : undefined;
    }, 15000);
    expect(created.json()).toMatchObject({ kind: 'Event', metadata: { name: 'put-event', namespace: NS }, reason: 'Tested' });
    await revoke('event-writer');
  });

  test('server-side apply of a missing custom object needs create', async () => {
    await grant('widget-patcher', 'get,patch', 'widgets.example.com');
    const widget = `apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w-applied\n  namespace: ${NS}\nspec:\n  size: 3\n`;
    const refused = await until(async () => {
      const res = await tokenRequest(env, 'PATCH', `/apis/example.com/v1/namespaces/${NS}/widgets/w-applied?fieldManager=editor`, token, widget, { 'content-type': 'application/apply-patch+yaml' });
      return res.status === 403 && res.body.includes('cannot create') ? res : undefined;
    }, 15000);
    expectStatus(refused, 403, 'Forbidden', `widgets.example.com "w-applied" is forbidden: User "${ACCOUNT}" cannot create resource "widgets" in API group "example.com" in the namespace "${NS}": none of the authorization modes (RBAC) allowed it`);
    expect((await adminRequest(env, 'GET', `/apis/example.com/v1/namespaces/${NS}/widgets/w-applied`)).status).toBe(404);
    await revoke('widget-patcher');
  });

  describe('a write whose body names another object is 400 and changes nothing', () => {
    const cmPath = `/api/v1/namespaces/${NS}/configmaps/stay`;
    const widgetPath = `/apis/example.com/v1/namespaces/${NS}/widgets/w-stay`;
    let cmBefore = '';
    let widgetBefore = '';

    beforeAll(async () => {
      expect((await adminRequest(env, 'POST', `/api/v1/namespaces/${NS}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'stay' }, data: { a: '1' } }))).status).toBe(201);
      expect((await adminRequest(env, 'POST', `/apis/example.com/v1/namespaces/${NS}/widgets`, JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w-stay' }, spec: { size: 1 } }))).status).toBe(201);
      cmBefore = (await adminRequest(env, 'GET', cmPath)).body;
      widgetBefore = (await adminRequest(env, 'GET', widgetPath)).body;
    });

    const renamed = (url: string) => `the name of the object (other) does not match the name on the URL (${url})`;
    const unnamed = (url: string) => `the name of the object () does not match the name on the URL (${url})`;
    const moved = `the namespace of the provided object (elsewhere) does not match the namespace sent on the request (${NS})`;
    const cases: Array<[string, 'PUT' | 'PATCH', string, string, unknown, string]> = [
      ['merge patch', 'PATCH', cmPath, 'application/merge-patch+json', { metadata: { name: 'other' }, data: { a: 'x' } }, renamed('stay')],
      ['merge patch removing the name', 'PATCH', cmPath, 'application/merge-patch+json', { metadata: { name: null }, data: { a: 'x' } }, unnamed('stay')],
      ['JSON patch', 'PATCH', cmPath, 'application/json-patch+json', [{ op: 'replace', path: '/metadata/name', value: 'other' }, { op: 'replace', path: '/data/a', value: 'x' }], renamed('stay')],
      ['JSON patch removing metadata', 'PATCH', cmPath, 'application/json-patch+json', [{ op: 'remove', path: '/metadata' }], unnamed('stay')],
      ['strategic merge patch', 'PATCH', cmPath, 'application/strategic-merge-patch+json', { metadata: { name: 'other' }, data: { a: 'x' } }, renamed('stay')],
      ['strategic merge patch to another namespace', 'PATCH', cmPath, 'application/strategic-merge-patch+json', { metadata: { namespace: 'elsewhere' }, data: { a: 'x' } }, moved],
      ['apply', 'PATCH', `${cmPath}?fieldManager=t&force=true`, 'application/apply-patch+yaml', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' }, data: { a: 'x' } }, renamed('stay')],
      ['PUT', 'PUT', cmPath, 'application/json', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'other' }, data: { a: 'x' } }, renamed('stay')],
      ['PUT without a name', 'PUT', cmPath, 'application/json', { apiVersion: 'v1', kind: 'ConfigMap', metadata: {}, data: { a: 'x' } }, unnamed('stay')],
      ['merge patch of a custom object', 'PATCH', widgetPath, 'application/merge-patch+json', { metadata: { name: 'other' }, spec: { size: 2 } }, renamed('w-stay')],
      ['JSON patch of a custom object', 'PATCH', widgetPath, 'application/json-patch+json', [{ op: 'replace', path: '/metadata/name', value: 'other' }], renamed('w-stay')],
      ['apply of a custom object', 'PATCH', `${widgetPath}?fieldManager=t&force=true`, 'application/apply-patch+yaml', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'other' }, spec: { size: 2 } }, renamed('w-stay')],
      ['merge patch through status', 'PATCH', `${widgetPath}/status`, 'application/merge-patch+json', { metadata: { name: 'other' }, status: { ready: true } }, renamed('w-stay')],
      ['PUT through status', 'PUT', `${widgetPath}/status`, 'application/json', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'other' }, spec: { size: 1 }, status: {} }, renamed('w-stay')],
    ];
    test.each(cases)('%s', async (_what, method, url, contentType, body, message) => {
      expectStatus(await adminRequest(env, method, url, JSON.stringify(body), { 'content-type': contentType }), 400, 'BadRequest', message);
      expect((await adminRequest(env, 'GET', cmPath)).body).toBe(cmBefore);
      expect((await adminRequest(env, 'GET', widgetPath)).body).toBe(widgetBefore);
      expect((await adminRequest(env, 'GET', `/api/v1/namespaces/${NS}/configmaps/other`)).status).toBe(404);
    });

    test('kubectl patch that renames is refused with the message', async () => {
      const res = await kubectl(['patch', 'configmap', 'stay', '-n', NS, '--type=merge', '-p', '{"metadata":{"name":"other"}}']);
      expect(res.code).not.toBe(0);
      expect(res.stderr).toContain(renamed('stay'));
      expect((await adminRequest(env, 'GET', cmPath)).body).toBe(cmBefore);
    });
  });
});
