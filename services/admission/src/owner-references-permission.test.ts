import { ApiError, type ApiObject } from '@svc/apimachinery';
import type { AuthorizationCheck, AuthorizationDecision } from '@svc/cel';
import { ownerReferencesPermissionEnforcement, servedOwnerKinds } from './owner-references-permission';
import type { AdmissionAttributes } from './plugins';
import { requestAttributes } from './testing/attributes';

const owner = { apiVersion: 'v1', kind: 'ConfigMap', name: 'boss', uid: 'u-boss' };
const cm = (refs: unknown[]): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'team', ownerReferences: refs as never } });

/** A plugin whose authorizer allows what `allowed` names (`verb resource/subresource namespace/name`), recording every check. */
function setup(allowed: string[], crds: ApiObject[] = []) {
  const checks: string[] = [];
  const authorize = async (c: AuthorizationCheck): Promise<AuthorizationDecision> => {
    const line = `${c.verb} ${c.apiGroup}/${c.resource}${c.subresource ? `/${c.subresource}` : ''} ${c.namespace}/${c.name}`;
    checks.push(line);
    return allowed.includes(line) ? { decision: 'allow', reason: 'granted' } : { decision: 'no-opinion', reason: '' };
  };
  return { checks, plugin: ownerReferencesPermissionEnforcement(authorize, servedOwnerKinds(() => crds)) };
}

const attrs = (over: Partial<AdmissionAttributes>): AdmissionAttributes =>
  requestAttributes({ operation: 'CREATE', resource: { group: '', version: 'v1', resource: 'configmaps' }, namespace: 'team', name: 'x', userInfo: { username: 'u', uid: '', groups: [], extra: {} }, ...over });

async function refusal(p: Promise<void> | undefined): Promise<ApiError> {
  const err = await p?.then(() => undefined, (e: unknown) => e);
  if (!(err instanceof ApiError)) throw new Error('expected a refusal');
  return err;
}

describe('OwnerReferencesPermissionEnforcement', () => {
  test('a create with references that do not block asks nothing', async () => {
    const s = setup([]);
    await s.plugin.validate?.(attrs({ object: cm([owner]) }));
    expect(s.checks).toEqual([]);
  });

  test('blockOwnerDeletion needs update on the owner\'s finalizers subresource, in the object\'s namespace', async () => {
    const refused = setup([]);
    const err = await refusal(refused.plugin.validate?.(attrs({ object: cm([{ ...owner, blockOwnerDeletion: true }]) })));
    expect([err.code, err.message]).toEqual([403, 'configmaps "x" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can\'t set finalizers on: , <nil>']);
    expect(refused.checks).toEqual(['update /configmaps/finalizers team/boss']);
    const allowed = setup(['update /configmaps/finalizers team/boss']);
    await allowed.plugin.validate?.(attrs({ object: cm([{ ...owner, blockOwnerDeletion: true }]) }));
  });

  test('a cluster-scoped owner is checked without a namespace; an unknown owner kind cannot be blocked', async () => {
    const s = setup(['update /namespaces/finalizers /ns1']);
    await s.plugin.validate?.(attrs({ object: cm([{ apiVersion: 'v1', kind: 'Namespace', name: 'ns1', uid: 'n', blockOwnerDeletion: true }]) }));
    const err = await refusal(s.plugin.validate?.(attrs({ object: cm([{ apiVersion: 'nowhere.io/v1', kind: 'Ghost', name: 'g', uid: 'g', blockOwnerDeletion: true }]) })));
    expect(err.message).toContain('cannot set blockOwnerDeletion in this case because cannot find RESTMapping for APIVersion nowhere.io/v1 Kind Ghost');
  });

  test('a custom resource owner is resolved from the established definitions', async () => {
    const crd: ApiObject = {
      metadata: { name: 'widgets.example.com' },
      spec: { group: 'example.com', scope: 'Namespaced', names: { plural: 'widgets', singular: 'widget', kind: 'Widget' }, versions: [{ name: 'v1', served: true, storage: true }] },
      status: { acceptedNames: { plural: 'widgets', singular: 'widget', kind: 'Widget' }, conditions: [{ type: 'Established', status: 'True' }] },
    };
    const s = setup([], [crd]);
    await refusal(s.plugin.validate?.(attrs({ object: cm([{ apiVersion: 'example.com/v1', kind: 'Widget', name: 'w', uid: 'w', blockOwnerDeletion: true }]) })));
    expect(s.checks).toEqual(['update example.com/widgets/finalizers team/w']);
  });

  test('an update that changes the references needs delete on the object; one that keeps them asks nothing', async () => {
    const old = cm([owner]);
    const same = setup([]);
    await same.plugin.validate?.(attrs({ operation: 'UPDATE', object: cm([owner]), oldObject: old }));
    expect(same.checks).toEqual([]);
    const refused = setup([]);
    const err = await refusal(refused.plugin.validate?.(attrs({ operation: 'UPDATE', object: cm([]), oldObject: old })));
    expect(err.message).toBe('configmaps "x" is forbidden: cannot set an ownerRef on a resource you can\'t delete: , <nil>');
    // Turning blocking on for a kept owner needs the finalizers permission too; a reference that already blocked does not.
    const s = setup(['delete /configmaps team/x']);
    await refusal(s.plugin.validate?.(attrs({ operation: 'UPDATE', object: cm([{ ...owner, blockOwnerDeletion: true }]), oldObject: old })));
    expect(s.checks).toEqual(['delete /configmaps team/x', 'update /configmaps/finalizers team/boss']);
    const kept = setup(['delete /configmaps team/x']);
    await kept.plugin.validate?.(attrs({ operation: 'UPDATE', object: cm([{ ...owner, blockOwnerDeletion: true }, { ...owner, uid: 'other' }]), oldObject: cm([{ ...owner, blockOwnerDeletion: true }]) }));
    expect(kept.checks).toEqual(['delete /configmaps team/x']);
  });

  test('deletes are not its business', async () => {
    const s = setup([]);
    await s.plugin.validate?.(attrs({ operation: 'DELETE', object: undefined, oldObject: cm([{ ...owner, blockOwnerDeletion: true }]) }));
    expect(s.checks).toEqual([]);
  });
});
