import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run } from './helpers';

const fixtures = path.join(__dirname, '..', '..', 'fixtures');

/** The official client libraries, unchanged, against the whole system. */
describe('client libraries end to end', () => {
  let env: Environment;

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('@kubernetes/client-node: CoreV1Api CRUD of a ConfigMap and a Watch', async () => {
    const res = await run(process.execPath, [path.join(fixtures, 'client-node.mjs'), env.kubeconfigPath], { timeoutMs: 40000 });
    expect(res.stderr).toBe('');
    const out = JSON.parse(res.stdout);
    expect(out.created.name).toBe('from-node');
    expect(out.created.data).toEqual({ a: '1' });
    expect(out.read).toEqual({ a: '1' });
    expect(out.replaced).toEqual({ a: '2' });
    expect(out.listed).toEqual(['from-node']);
    expect(out.afterDelete).toBe(404);
    expect(out.watched).toEqual(['ADDED:from-node', 'MODIFIED:from-node', 'DELETED:from-node']);
  });

  test("Debian's python3-kubernetes: list namespaces and create a ConfigMap", async () => {
    const res = await run('/usr/bin/python3', [path.join(fixtures, 'python-client.py'), env.kubeconfigPath], { timeoutMs: 40000 });
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout);
    expect(out.namespaces).toEqual(expect.arrayContaining(['default', 'svc-public', 'svc-system']));
    expect(out.created).toEqual({ name: 'from-python', data: { lang: 'python' } });
    expect(out.listed).toEqual(['from-python']);
    expect(out.duplicate.status).toBe(409);
    expect(out.duplicate.body).toMatchObject({ kind: 'Status', apiVersion: 'v1', status: 'Failure', reason: 'AlreadyExists', code: 409 });
  });
});
