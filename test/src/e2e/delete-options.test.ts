import { startEnvironment, type Environment } from '@svc/testenv';
import { run } from './helpers';
import { adminRequest, type HttpResponse } from './http';

/**
 * DeleteOptions as the original checks them: `orphanDependents` and
 * `propagationPolicy` together are 422 Invalid for DeleteOptions naming the field, in the query or
 * the body, for a delete and a deletecollection, and the object is still
 * there afterwards; `Background` (kubectl's default), no policy and any
 * grace period delete at once. What Foreground and Orphan do to dependents
 * is garbage-collection.test.ts's.
 */
describe('DeleteOptions', () => {
  let env: Environment;
  const ns = '/api/v1/namespaces/default';
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);
  const configMap = (name: string, labels: Record<string, string> = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels }, data: { k: 'v' } });
  const create = async (name: string, labels: Record<string, string> = {}): Promise<void> => {
    expect((await adminRequest(env, 'POST', `${ns}/configmaps`, configMap(name, labels))).status).toBe(201);
  };
  const exists = async (path: string): Promise<boolean> => {
    const status = (await adminRequest(env, 'GET', path)).status;
    expect([200, 404]).toContain(status);
    return status === 200;
  };
  const expectRefused = (res: HttpResponse, field: string, message: RegExp): void => {
    expect(`${res.status} ${res.body}`).toMatch(/^422 /);
    expect(res.json()).toMatchObject({ kind: 'Status', status: 'Failure', code: 422, reason: 'Invalid', details: { kind: 'DeleteOptions', group: 'meta.svc.io', causes: [expect.objectContaining({ field })] } });
    expect(String(res.json()['message'])).toMatch(message);
  };
  const BOTH = /^DeleteOptions\.meta\.svc\.io "" is invalid: propagationPolicy: Invalid value: "\w+": orphanDependents and deletionPropagation cannot be both set$/;

  beforeAll(async () => {
    env = await startEnvironment();
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('orphanDependents and propagationPolicy together are refused, whatever their values', async () => {
    await create('both');
    const path = `${ns}/configmaps/both`;
    expectRefused(await adminRequest(env, 'DELETE', path, JSON.stringify({ orphanDependents: false, propagationPolicy: 'Background' })), 'propagationPolicy', BOTH);
    expectRefused(await adminRequest(env, 'DELETE', `${path}?orphanDependents=false&propagationPolicy=Background`), 'propagationPolicy', BOTH);
    expectRefused(await adminRequest(env, 'DELETE', `${path}?orphanDependents=false`, JSON.stringify({ propagationPolicy: 'Background' })), 'propagationPolicy', BOTH);
    expect(await exists(path)).toBe(true);
  });

  test('Background, no policy, orphanDependents false and any grace period delete at once', async () => {
    const cases: Array<[string, string, string | undefined]> = [
      ['bg-query', '?propagationPolicy=Background', undefined],
      ['bg-body', '', JSON.stringify({ kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' })],
      ['no-policy', '', undefined],
      ['no-orphans', '?orphanDependents=false', undefined],
      ['no-orphans-body', '', JSON.stringify({ orphanDependents: false })],
      ['grace-0', '?gracePeriodSeconds=0', undefined],
      ['grace-30', '', JSON.stringify({ gracePeriodSeconds: 30, propagationPolicy: 'Background' })],
      ['grace-negative', '?gracePeriodSeconds=-1', undefined],
      ['grace-negative-body', '', JSON.stringify({ gracePeriodSeconds: -10 })],
    ];
    for (const [name, query, body] of cases) {
      await create(name);
      const res = await adminRequest(env, 'DELETE', `${ns}/configmaps/${name}${query}`, body);
      expect(`${name} ${res.status} ${res.body}`).toMatch(new RegExp(`^${name} 200 `));
      expect(await exists(`${ns}/configmaps/${name}`)).toBe(false);
    }
  });

  test('deletecollection refuses orphanDependents with propagationPolicy and deletes nothing; with Background it deletes', async () => {
    await create('batch-1', { batch: 'x' });
    await create('batch-2', { batch: 'x' });
    const collection = `${ns}/configmaps?labelSelector=batch%3Dx`;
    expectRefused(await adminRequest(env, 'DELETE', `${collection}&orphanDependents=false&propagationPolicy=Background`), 'propagationPolicy', BOTH);
    expect(await exists(`${ns}/configmaps/batch-1`)).toBe(true);
    expect(await exists(`${ns}/configmaps/batch-2`)).toBe(true);
    const res = await adminRequest(env, 'DELETE', collection, JSON.stringify({ propagationPolicy: 'Background', gracePeriodSeconds: 0 }));
    expect(`${res.status} ${res.body}`).toMatch(/^200 /);
    expect(((res.json()['items'] as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name)).sort()).toEqual(['batch-1', 'batch-2']);
    expect(await exists(`${ns}/configmaps/batch-1`)).toBe(false);
  });

  test('plain kubectl delete, --cascade=background, --now and --force work', async () => {
    await create('via-kubectl');
    const plain = await kubectl(['delete', 'configmap', 'via-kubectl']);
    expect(`${plain.code} ${plain.stdout}${plain.stderr}`).toMatch(/^0 configmap "via-kubectl" deleted/);
    expect(await exists(`${ns}/configmaps/via-kubectl`)).toBe(false);

    for (const [name, flags] of [['kc-background', ['--cascade=background']], ['kc-now', ['--now']], ['kc-force', ['--force', '--grace-period=0']], ['kc-grace', ['--grace-period=5']]] as const) {
      await create(name);
      const res = await kubectl(['delete', 'configmap', name, ...flags]);
      expect(`${name} ${res.code} ${res.stdout}`).toMatch(new RegExp(`^${name} 0 configmap "${name}" (force )?deleted`));
      expect(await exists(`${ns}/configmaps/${name}`)).toBe(false);
    }
  });
});
