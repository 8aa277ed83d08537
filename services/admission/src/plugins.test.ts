import { ApiError, type ApiObject } from '@svc/apimachinery';
import { requestAttributes } from './testing/attributes';
import { namespaceLifecycle, runMutating, runValidating, serviceAccountDefaults, type AdmissionAttributes, type AdmissionPlugin } from './plugins';

const namespaces = new Map<string, ApiObject>([
  ['live', { metadata: { name: 'live' }, status: { phase: 'Active' } }],
  ['dying', { metadata: { name: 'dying', deletionTimestamp: '2026-01-01T00:00:00Z' }, status: { phase: 'Terminating' } }],
]);
const plugin = namespaceLifecycle({ getNamespace: async (n) => namespaces.get(n) });

const attrs = (over: Partial<AdmissionAttributes>): AdmissionAttributes => requestAttributes({ namespace: 'live', name: 'x', userInfo: { username: 'u', uid: '', groups: [], extra: {} }, object: {}, ...over });

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

describe('runMutating', () => {
  const counting = (object: ApiObject): { attrs: AdmissionAttributes; reads: () => number } => {
    let reads = 0;
    const base = attrs({});
    const lazy: AdmissionAttributes = {
      ...base,
      get object() {
        reads++;
        return object;
      },
    };
    return { attrs: lazy, reads: () => reads };
  };

  it('reads no object when no plugin looks at it', async () => {
    const { attrs: configMap, reads } = counting({ metadata: { name: 'x' } });
    const result = await runMutating([serviceAccountDefaults(), plugin], configMap);
    await runValidating([serviceAccountDefaults(), plugin], configMap);
    expect(result.changed).toBe(false);
    expect(reads()).toBe(0);
    expect(result.object).toEqual({ metadata: { name: 'x' } });
  });

  it('hands each plugin the object the ones before it left', async () => {
    const seen: unknown[] = [];
    const first: AdmissionPlugin = { name: 'first', admit: async (a) => ({ ...a.object, spec: { n: 1 } }) };
    const second: AdmissionPlugin = { name: 'second', admit: async (a) => (seen.push(a.object?.['spec']), undefined) };
    const result = await runMutating([first, second], attrs({ object: { metadata: { name: 'x' } } }));
    expect(seen).toEqual([{ n: 1 }]);
    expect(result).toEqual({ object: { metadata: { name: 'x' }, spec: { n: 1 } }, changed: true });
  });
});
