import { startEnvironment, type Environment } from '@svc/testenv';
import { run } from './helpers';
import { adminRequest, type HttpResponse } from './http';

/**
 * Requests that used to take the server down or do the wrong thing: bodies
 * that expand without bound, a dry run that deleted, a finalizer added to
 * an object on its way out, apply without a manager, a delete that lost a
 * race with an update. Each gets its Status, the server keeps serving, and
 * nothing stored changes unless it should.
 */
describe('hostile and tricky requests', () => {
  let env: Environment;
  const ns = '/api/v1/namespaces/default';
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);
  const configMap = (name: string, extra: Record<string, unknown> = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...extra }, data: { k: 'v' } });
  const expectStatus = (res: HttpResponse, code: number, reason: string, message: RegExp): void => {
    expect(`${res.status} ${res.body}`).toMatch(new RegExp(`^${code} `));
    expect(res.json()).toMatchObject({ kind: 'Status', status: 'Failure', code, reason });
    expect(String(res.json()['message'])).toMatch(message);
  };

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('a YAML alias bomb in an apply body is 400 and the gateway keeps serving', async () => {
    const lines = ['apiVersion: v1', 'kind: ConfigMap', 'metadata: {name: bomb}', 'x0: &a0 ["x","x","x","x","x","x","x","x","x"]'];
    for (let i = 1; i <= 8; i++) lines.push(`x${i}: &a${i} [${Array.from({ length: 9 }, () => `*a${i - 1}`).join(',')}]`);
    const body = lines.join('\n') + '\n';
    expect(body.length).toBeLessThan(1000);
    const res = await adminRequest(env, 'PATCH', `${ns}/configmaps/bomb?fieldManager=fuzz`, body, { 'content-type': 'application/apply-patch+yaml' });
    expectStatus(res, 400, 'BadRequest', /excessive aliasing/);
    // The same body as a create.
    expectStatus(await adminRequest(env, 'POST', `${ns}/configmaps`, body, { 'content-type': 'application/yaml' }), 400, 'BadRequest', /excessive aliasing/);
    expect((await adminRequest(env, 'GET', '/readyz')).status).toBe(200);
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/bomb`)).status).toBe(404);
  });

  test('JSON nested past the limit is 400 naming it', async () => {
    const deep = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"deep"},"data":${'['.repeat(100_000)}${']'.repeat(100_000)}}`;
    expectStatus(await adminRequest(env, 'POST', `${ns}/configmaps`, deep), 400, 'BadRequest', /nested deeper than the limit of \d+ levels/);
    expect((await adminRequest(env, 'GET', '/readyz')).status).toBe(200);
  });

  test('kubectl delete --dry-run=server leaves the object, as does dryRun in a DeleteOptions body', async () => {
    expect((await adminRequest(env, 'POST', `${ns}/configmaps`, configMap('dry'))).status).toBe(201);
    const dry = await kubectl(['delete', 'configmap', 'dry', '--dry-run=server']);
    expect(dry.stdout + dry.stderr).toMatch(/deleted \(server dry run\)/);
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/dry`)).status).toBe(200);
    const body = await adminRequest(env, 'DELETE', `${ns}/configmaps/dry`, JSON.stringify({ kind: 'DeleteOptions', apiVersion: 'v1', dryRun: ['All'] }));
    expect(body.status).toBe(200);
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/dry`)).status).toBe(200);
  });

  test('every DeleteOptions field of the body is read, and a wrong one is 400 naming it', async () => {
    expect((await adminRequest(env, 'POST', `${ns}/configmaps`, configMap('opts'))).status).toBe(201);
    expectStatus(await adminRequest(env, 'DELETE', `${ns}/configmaps/opts`, JSON.stringify({ dryRun: ['Sometimes'] })), 422, 'Invalid', /dryRun: Unsupported value: \[\]string\{"Sometimes"\}/);
    expectStatus(await adminRequest(env, 'DELETE', `${ns}/configmaps/opts`, JSON.stringify({ gracePeriodSeconds: 'soon' })), 400, 'BadRequest', /gracePeriodSeconds/);
    expectStatus(await adminRequest(env, 'DELETE', `${ns}/configmaps/opts`, JSON.stringify({ propagationPolicy: 'Sideways' })), 422, 'Invalid', /propagationPolicy: Unsupported value: "Sideways"/);
    expectStatus(await adminRequest(env, 'DELETE', `${ns}/configmaps/opts`, JSON.stringify({ preconditions: { uid: 'not-the-uid' } })), 409, 'Conflict', /Precondition failed: UID in precondition: not-the-uid/);
    expectStatus(await adminRequest(env, 'DELETE', `${ns}/configmaps/opts`, JSON.stringify({ preconditions: { resourceVersion: '1' } })), 409, 'Conflict', /Precondition failed: ResourceVersion in precondition: 1/);
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/opts`)).status).toBe(200);
    const current = (await adminRequest(env, 'GET', `${ns}/configmaps/opts`)).json() as { metadata: { uid: string } };
    expect((await adminRequest(env, 'DELETE', `${ns}/configmaps/opts`, JSON.stringify({ preconditions: { uid: current.metadata.uid }, propagationPolicy: 'Background', gracePeriodSeconds: 0 }))).status).toBe(200);
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/opts`)).status).toBe(404);
  });

  test('no new finalizer on an object that is being deleted (422)', async () => {
    expect((await adminRequest(env, 'POST', `${ns}/configmaps`, configMap('held', { finalizers: ['example.com/hold'] }))).status).toBe(201);
    expect((await adminRequest(env, 'DELETE', `${ns}/configmaps/held`)).status).toBe(200);
    const add = await adminRequest(env, 'PATCH', `${ns}/configmaps/held`, JSON.stringify({ metadata: { finalizers: ['example.com/hold', 'example.com/more'] } }), { 'content-type': 'application/merge-patch+json' });
    expectStatus(add, 422, 'Invalid', /metadata\.finalizers: Forbidden: no new finalizers can be added if the object is being deleted.*example\.com\/more/);
    // Removing the last finalizer still finishes the deletion.
    const release = await adminRequest(env, 'PATCH', `${ns}/configmaps/held`, JSON.stringify({ metadata: { finalizers: null } }), { 'content-type': 'application/merge-patch+json' });
    expect(release.status).toBe(200);
    expect((await adminRequest(env, 'GET', `${ns}/configmaps/held`)).status).toBe(404);
  });

  test('apply without fieldManager is 422 Invalid for PatchOptions', async () => {
    const res = await adminRequest(env, 'PATCH', `${ns}/configmaps/unmanaged`, configMap('unmanaged'), { 'content-type': 'application/apply-patch+yaml' });
    expectStatus(res, 422, 'Invalid', /PatchOptions\.meta\.svc\.io "" is invalid: fieldManager: Required value: is required for apply patch/);
    expect(res.json()['details']).toMatchObject({ kind: 'PatchOptions', group: 'meta.svc.io', causes: [{ reason: 'FieldValueRequired', field: 'fieldManager' }] });
  });

  test('a DELETE without preconditions that races updates succeeds instead of answering 409', async () => {
    for (let round = 0; round < 5; round++) {
      const name = `race-${round}`;
      expect((await adminRequest(env, 'POST', `${ns}/configmaps`, configMap(name))).status).toBe(201);
      const patches = Array.from({ length: 20 }, (_, i) =>
        adminRequest(env, 'PATCH', `${ns}/configmaps/${name}`, JSON.stringify({ data: { [`k${i}`]: String(i) } }), { 'content-type': 'application/merge-patch+json' }),
      );
      const [deleted, ...patched] = await Promise.all([adminRequest(env, 'DELETE', `${ns}/configmaps/${name}`), ...patches]);
      expect(`${deleted?.status} ${deleted?.body}`).toMatch(/^200 /);
      // A patch after the delete finds nothing; none fails otherwise.
      for (const p of patched) expect(`${p.status} ${p.status === 409 ? p.body : ""}`).toMatch(/^(200|404) /);
      expect((await adminRequest(env, 'GET', `${ns}/configmaps/${name}`)).status).toBe(404);
    }
  });

  test('boolean parameters follow the original conversion: True and t are true, FALSE is false', async () => {
    const pretty = await adminRequest(env, 'GET', `${ns}/configmaps/dry?pretty=True`);
    expect(pretty.body).toContain('\n  ');
    const compact = await adminRequest(env, 'GET', `${ns}/configmaps/dry?pretty=FALSE`);
    expect(compact.body).not.toContain('\n  ');
  });
});
