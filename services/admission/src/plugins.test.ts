import { ApiError, type ApiObject } from '@svc/apimachinery';
import { namespaceLifecycle, serviceAccountDefaults, type AdmissionAttributes } from './plugins';

const namespaces = new Map<string, ApiObject>([
  ['live', { metadata: { name: 'live' }, status: { phase: 'Active' } }],
  ['dying', { metadata: { name: 'dying', deletionTimestamp: '2026-01-01T00:00:00Z' }, status: { phase: 'Terminating' } }],
]);
const plugin = namespaceLifecycle({ getNamespace: async (n) => namespaces.get(n) });

const attrs = (over: Partial<AdmissionAttributes>): AdmissionAttributes => ({
  operation: 'CREATE',
  kind: { group: '', version: 'v1', kind: 'ConfigMap' },
  resource: { group: '', version: 'v1', resource: 'configmaps' },
  subresource: '',
  namespace: 'live',
  name: 'x',
  userInfo: { username: 'u', uid: '', groups: [], extra: {} },
  object: {},
  oldObject: undefined,
  dryRun: false,
  ...over,
});

describe('NamespaceLifecycle', () => {
  test('creating in an existing active namespace is admitted', async () => {
    await expect(plugin.validate?.(attrs({}))).resolves.toBeUndefined();
  });

  test('creating in a missing namespace is NotFound naming the namespace', async () => {
    const err = (await plugin.validate?.(attrs({ namespace: 'nope' })).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(404);
    expect(err.message).toBe('namespaces "nope" not found');
  });

  test('creating in a terminating namespace is Forbidden', async () => {
    const err = (await plugin.validate?.(attrs({ namespace: 'dying' })).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(403);
    expect(err.message).toContain('because it is being terminated');
  });

  test('updates in a terminating namespace are allowed', async () => {
    await expect(plugin.validate?.(attrs({ namespace: 'dying', operation: 'UPDATE' }))).resolves.toBeUndefined();
  });

  test('the default namespace may not be deleted', async () => {
    const err = (await plugin
      .validate?.(attrs({ operation: 'DELETE', resource: { group: '', version: 'v1', resource: 'namespaces' }, namespace: '', name: 'default' }))
      .catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(403);
  });
});

describe('ServiceAccount', () => {
  const sa = serviceAccountDefaults();
  const pod = (spec: Record<string, unknown>): Partial<AdmissionAttributes> => ({
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec },
  });

  it('gives a pod without an account the default one', async () => {
    const out = await sa.admit?.(attrs(pod({ containers: [] })));
    expect(out?.['spec']).toEqual({ containers: [], serviceAccountName: 'default', serviceAccount: 'default' });
  });

  it('keeps a named account, and fills the deprecated alias from it (or it from the alias)', async () => {
    expect((await sa.admit?.(attrs(pod({ serviceAccountName: 'robot' }))))?.['spec']).toEqual({ serviceAccountName: 'robot', serviceAccount: 'robot' });
    expect((await sa.admit?.(attrs(pod({ serviceAccount: 'old' }))))?.['spec']).toEqual({ serviceAccountName: 'old', serviceAccount: 'old' });
    expect(await sa.admit?.(attrs(pod({ serviceAccountName: 'robot', serviceAccount: 'robot' })))).toBeUndefined();
  });

  it('leaves mirror pods without an account', async () => {
    const mirror = pod({ containers: [] });
    mirror.object = { ...mirror.object, metadata: { name: 'p', annotations: { 'svc.io/config.mirror': 'hash' } } };
    expect(await sa.admit?.(attrs(mirror))).toBeUndefined();
  });

  it('leaves other kinds, updates and subresources alone', async () => {
    expect(await sa.admit?.(attrs({}))).toBeUndefined();
    expect(await sa.admit?.(attrs({ ...pod({}), operation: 'UPDATE' }))).toBeUndefined();
    expect(await sa.admit?.(attrs({ ...pod({}), subresource: 'status' }))).toBeUndefined();
  });
});
