import { ApiError, type ApiObject } from '@svc/apimachinery';
import { namespaceLifecycle, type AdmissionAttributes } from './plugins';

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
