import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest, tokenRequest } from './http';

/**
 * The garbage collector against the whole server: dependents named by
 * ownerReferences go with their owner (Background), before it
 * (Foreground, held by blockOwnerDeletion) or stay without the reference
 * (Orphan), through kubectl's --cascade and @kubernetes/client-node;
 * ConfigMaps, Secrets and custom resources as owners and dependents;
 * dangling references; a scope violation reported as an event that deletes
 * nothing; a namespace's deletion and a deletecollection honouring the
 * policy; 1,000 dependents of one owner.
 */

const fixtures = path.join(__dirname, '..', '..', 'fixtures');
const NS = '/api/v1/namespaces/default';

interface Meta {
  name: string;
  uid: string;
  deletionTimestamp?: string;
  finalizers?: string[];
  ownerReferences?: Array<{ uid: string }>;
}

describe('garbage collection', () => {
  let env: Environment;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});
  const post = async (collection: string, body: Record<string, unknown>): Promise<Meta> => {
    const res = await adminRequest(env, 'POST', collection, JSON.stringify(body));
    expect(`${res.status} ${res.body}`).toMatch(/^201 /);
    return (res.json() as { metadata: Meta }).metadata;
  };
  const configMap = (name: string, owners: unknown[] = [], extra: Record<string, unknown> = {}) => post(`${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ownerReferences: owners, ...extra }, data: { k: 'v' } });
  const ref = (kind: string, m: Meta, extra: Record<string, unknown> = {}, apiVersion = 'v1') => ({ apiVersion, kind, name: m.name, uid: m.uid, ...extra });
  const read = async (p: string): Promise<Meta | undefined> => {
    const res = await adminRequest(env, 'GET', p);
    expect([200, 404]).toContain(res.status);
    return res.status === 200 ? (res.json() as { metadata: Meta }).metadata : undefined;
  };
  const gone = (p: string, ms = 15_000) => until(async () => ((await read(p)) === undefined ? true : undefined), ms);

  beforeAll(async () => {
    env = await startEnvironment({ crds: [path.join(fixtures, 'crds')] });
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('kubectl delete --cascade=background: the owner goes at once, its ConfigMap and Secret dependents soon after', async () => {
    const owner = await configMap('bg-owner');
    await configMap('bg-dep', [ref('ConfigMap', owner)]);
    await post(`${NS}/secrets`, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'bg-secret', ownerReferences: [ref('ConfigMap', owner)] }, stringData: { k: 'v' } });
    const res = await kubectl(['delete', 'configmap', 'bg-owner', '--cascade=background']);
    expect(`${res.code} ${res.stdout}${res.stderr}`).toMatch(/^0 configmap "bg-owner" deleted/);
    expect(await read(`${NS}/configmaps/bg-owner`)).toBeUndefined();
    await gone(`${NS}/configmaps/bg-dep`);
    await gone(`${NS}/secrets/bg-secret`);
  });

  test('kubectl delete --cascade=foreground: dependents go first, one with blockOwnerDeletion holds the owner', async () => {
    const owner = await configMap('fg-owner');
    await configMap('fg-held', [ref('ConfigMap', owner, { blockOwnerDeletion: true })], { finalizers: ['example.com/hold'] });
    await configMap('fg-free', [ref('ConfigMap', owner)]);
    const res = await kubectl(['delete', 'configmap', 'fg-owner', '--cascade=foreground', '--wait=false']);
    expect(res.code).toBe(0);
    await gone(`${NS}/configmaps/fg-free`);
    const held = await until(async () => {
      const m = await read(`${NS}/configmaps/fg-held`);
      return m?.deletionTimestamp ? m : undefined;
    });
    expect(held.finalizers).toEqual(['example.com/hold']);
    const waiting = await read(`${NS}/configmaps/fg-owner`);
    expect(waiting?.deletionTimestamp).toBeDefined();
    expect(waiting?.finalizers).toEqual(['foregroundDeletion']);
    const patched = await kubectl(['patch', 'configmap', 'fg-held', '--type=json', '-p', '[{"op":"remove","path":"/metadata/finalizers"}]']);
    expect(patched.code).toBe(0);
    await gone(`${NS}/configmaps/fg-held`);
    await gone(`${NS}/configmaps/fg-owner`);
  });

  test('kubectl delete --cascade=orphan and orphanDependents: the owner goes, dependents stay without the reference', async () => {
    const owner = await configMap('or-owner');
    const other = await configMap('or-other');
    await configMap('or-dep', [ref('ConfigMap', owner), ref('ConfigMap', other)]);
    const res = await kubectl(['delete', 'configmap', 'or-owner', '--cascade=orphan']);
    expect(res.code).toBe(0);
    await gone(`${NS}/configmaps/or-owner`);
    expect((await read(`${NS}/configmaps/or-dep`))?.ownerReferences?.map((r) => r.uid)).toEqual([other.uid]);
    const legacy = await adminRequest(env, 'DELETE', `${NS}/configmaps/or-other`, JSON.stringify({ orphanDependents: true }));
    expect(legacy.status).toBe(200);
    await gone(`${NS}/configmaps/or-other`);
    const dep = await read(`${NS}/configmaps/or-dep`);
    expect(dep?.ownerReferences ?? []).toEqual([]);
    expect(dep?.deletionTimestamp).toBeUndefined();
  });

  test('a dangling owner (no object with that uid) is collected; a dependent with one live owner stays, the dangling reference removed', async () => {
    const live = await configMap('dg-live');
    const missing = { apiVersion: 'v1', kind: 'ConfigMap', name: 'dg-missing', uid: '6d1f6f32-0000-4000-8000-000000000001' };
    const impostor = await configMap('dg-impostor');
    await configMap('dg-alone', [missing]);
    await configMap('dg-wrong-uid', [{ ...ref('ConfigMap', impostor), uid: '6d1f6f32-0000-4000-8000-000000000002' }]);
    await configMap('dg-both', [missing, ref('ConfigMap', live)]);
    await gone(`${NS}/configmaps/dg-alone`);
    await gone(`${NS}/configmaps/dg-wrong-uid`);
    const kept = await until(async () => {
      const m = await read(`${NS}/configmaps/dg-both`);
      return m?.ownerReferences?.length === 1 ? m : undefined;
    });
    expect(kept.ownerReferences?.map((r) => r.uid)).toEqual([live.uid]);
    expect(await read(`${NS}/configmaps/dg-impostor`)).toBeDefined();
  });

  test('custom resources as owners and dependents', async () => {
    const widget = (name: string, owners: unknown[] = []) => post('/apis/example.com/v1/namespaces/default/widgets', { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name, ownerReferences: owners }, spec: { size: 1 } });
    const owner = await widget('cr-owner');
    await widget('cr-child', [ref('Widget', owner, {}, 'example.com/v1')]);
    await configMap('cr-config', [ref('Widget', owner, {}, 'example.com/v1')]);
    const cmOwner = await configMap('cr-cm-owner');
    await widget('cr-of-cm', [ref('ConfigMap', cmOwner)]);
    expect((await kubectl(['delete', 'widget', 'cr-owner'])).code).toBe(0);
    await gone('/apis/example.com/v1/namespaces/default/widgets/cr-child');
    await gone(`${NS}/configmaps/cr-config`);
    expect((await kubectl(['delete', 'configmap', 'cr-cm-owner'])).code).toBe(0);
    await gone('/apis/example.com/v1/namespaces/default/widgets/cr-of-cm');
  });

  test('a cluster-scoped dependent of a namespaced owner is reported (OwnerRefInvalidNamespace) and never deleted; an unknown owner kind deletes nothing', async () => {
    const owner = await configMap('scope-owner');
    const role = await post('/apis/rbac.authorization.svc.io/v1/clusterroles', { apiVersion: 'rbac.authorization.svc.io/v1', kind: 'ClusterRole', metadata: { name: 'gc-scope-violation', ownerReferences: [ref('ConfigMap', owner)] }, rules: [] });
    await configMap('unknown-kind', [{ apiVersion: 'nowhere.example.com/v1', kind: 'Nothing', name: 'n', uid: '6d1f6f32-0000-4000-8000-000000000003' }]);
    const event = await until(async () => {
      const list = (await adminRequest(env, 'GET', `${NS}/events?fieldSelector=reason%3DOwnerRefInvalidNamespace`)).json() as {
        items: Array<{ message: string; type: string; involvedObject: { name: string; uid: string }; reportingComponent?: string; eventTime?: string }>;
      };
      return list.items.find((e) => e.involvedObject.name === 'gc-scope-violation');
    });
    expect(event.type).toBe('Warning');
    expect(event.involvedObject.uid).toBe(role.uid);
    // Written through events.svc.io/v1: a new-style event naming its reporter.
    expect(event.reportingComponent).toBe('garbage-collector-controller');
    expect(event.eventTime).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/);
    expect(event.message).toBe(`ownerRef [v1/ConfigMap, namespace: , name: scope-owner, uid: ${owner.uid}] does not exist in namespace ""`);
    // Deleting the owner deletes neither.
    expect((await kubectl(['delete', 'configmap', 'scope-owner'])).code).toBe(0);
    await new Promise((r) => setTimeout(r, 1500));
    expect(await read('/apis/rbac.authorization.svc.io/v1/clusterroles/gc-scope-violation')).toBeDefined();
    expect(await read(`${NS}/configmaps/unknown-kind`)).toBeDefined();
  });

  test('an owner named across namespaces counts as absent in the dependent\'s: reported (OwnerRefInvalidNamespace) and the dependent collected; the owner stays', async () => {
    expect((await kubectl(['create', 'namespace', 'gc-elsewhere'])).code).toBe(0);
    const elsewhere = await post('/api/v1/namespaces/gc-elsewhere/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'far-owner' } });
    // The collector knows the owner before the dependent names it.
    await new Promise((r) => setTimeout(r, 1000));
    const dep = await configMap('cross-ns-dep', [ref('ConfigMap', elsewhere)]);
    await gone(`${NS}/configmaps/cross-ns-dep`);
    const event = await until(async () => {
      const list = (await adminRequest(env, 'GET', `${NS}/events?fieldSelector=reason%3DOwnerRefInvalidNamespace`)).json() as { items: Array<{ message: string; involvedObject: { uid: string } }> };
      return list.items.find((e) => e.involvedObject.uid === dep.uid);
    });
    expect(event.message).toBe(`ownerRef [v1/ConfigMap, namespace: default, name: far-owner, uid: ${elsewhere.uid}] does not exist in namespace "default"`);
    expect(await read('/api/v1/namespaces/gc-elsewhere/configmaps/far-owner')).toBeDefined();
  });

  test('a namespace deleted with Orphan leaves its cluster-scoped dependents; with Background they go', async () => {
    const makeNs = (name: string) => post('/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    const dependent = (name: string, owner: Meta) => post('/apis/rbac.authorization.svc.io/v1/clusterroles', { apiVersion: 'rbac.authorization.svc.io/v1', kind: 'ClusterRole', metadata: { name, ownerReferences: [ref('Namespace', owner)] }, rules: [] });
    const orphaning = await makeNs('gc-orphaning');
    await dependent('gc-ns-orphan', orphaning);
    expect((await kubectl(['delete', 'namespace', 'gc-orphaning', '--cascade=orphan'])).code).toBe(0);
    await gone('/api/v1/namespaces/gc-orphaning', 30_000);
    expect((await read('/apis/rbac.authorization.svc.io/v1/clusterroles/gc-ns-orphan'))?.ownerReferences ?? []).toEqual([]);
    const collecting = await makeNs('gc-collecting');
    await dependent('gc-ns-collected', collecting);
    expect((await kubectl(['delete', 'namespace', 'gc-collecting'])).code).toBe(0);
    await gone('/apis/rbac.authorization.svc.io/v1/clusterroles/gc-ns-collected', 30_000);
  });

  test('deletecollection honours the policy: Orphan keeps the dependents, Foreground deletes them first', async () => {
    const a = await configMap('dc-owner-a', [], { labels: { dc: 'orphan' } });
    await configMap('dc-dep-a', [ref('ConfigMap', a)]);
    const res = await adminRequest(env, 'DELETE', `${NS}/configmaps?labelSelector=dc%3Dorphan`, JSON.stringify({ propagationPolicy: 'Orphan' }));
    expect(res.status).toBe(200);
    await gone(`${NS}/configmaps/dc-owner-a`);
    expect((await read(`${NS}/configmaps/dc-dep-a`))?.ownerReferences ?? []).toEqual([]);
    const b = await configMap('dc-owner-b', [], { labels: { dc: 'fg' } });
    await configMap('dc-dep-b', [ref('ConfigMap', b, { blockOwnerDeletion: true })]);
    expect((await adminRequest(env, 'DELETE', `${NS}/configmaps?labelSelector=dc%3Dfg&propagationPolicy=Foreground`)).status).toBe(200);
    await gone(`${NS}/configmaps/dc-dep-b`);
    await gone(`${NS}/configmaps/dc-owner-b`);
  });

  test('@kubernetes/client-node: a controller deletes its owner in the foreground and watches the dependents go', async () => {
    const res = await run(process.execPath, [path.join(fixtures, 'client-node-owners.mjs'), env.kubeconfigPath], { timeoutMs: 40_000 });
    expect(`${res.code} ${res.stderr}`).toBe('0 ');
    const out = JSON.parse(res.stdout) as { ownerAfterDelete: { deletionTimestamp: boolean; finalizers: string[] }; heldMarked: boolean; ownerWaits: string[]; ownerGone: boolean; secretGone: boolean; watched: string[] };
    expect(out.ownerAfterDelete).toEqual({ deletionTimestamp: true, finalizers: ['foregroundDeletion'] });
    expect(out.heldMarked).toBe(true);
    expect(out.ownerWaits).toEqual(['foregroundDeletion']);
    expect([out.ownerGone, out.secretGone]).toEqual([true, true]);
    expect(out.watched.filter((w) => w.startsWith('DELETED:')).sort()).toEqual(['DELETED:node-dep-1', 'DELETED:node-dep-2']);
  });

  test('an owner reference without uid, kind or name, or with an apiVersion that does not parse, is 422 naming the field', async () => {
    const res = await adminRequest(env, 'POST', `${NS}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'bad-ref', ownerReferences: [{ apiVersion: 'a/b/c', kind: 'ConfigMap', name: 'x', uid: 'u' }] } }));
    expect(res.status).toBe(422);
    expect(res.json()).toMatchObject({ reason: 'Invalid', details: { causes: [{ field: 'metadata.ownerReferences.apiVersion', message: 'Invalid value: "a/b/c": version must not be empty' }] } });
  });

  test('blockOwnerDeletion needs update on the owner\'s finalizers (OwnerReferencesPermissionEnforcement)', async () => {
    const owner = await configMap('perm-owner');
    expect((await kubectl(['create', 'serviceaccount', 'gc-writer'])).code).toBe(0);
    expect((await kubectl(['create', 'role', 'gc-writer', '--verb=create,get', '--resource=configmaps'])).code).toBe(0);
    expect((await kubectl(['create', 'rolebinding', 'gc-writer', '--role=gc-writer', '--serviceaccount=default:gc-writer'])).code).toBe(0);
    const token = (await kubectl(['create', 'token', 'gc-writer'])).stdout.trim();
    const create = (name: string, block: boolean) =>
      tokenRequest(env, 'POST', `${NS}/configmaps`, token, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ownerReferences: [ref('ConfigMap', owner, { blockOwnerDeletion: block })] } }));
    await until(async () => ((await create('perm-plain', false)).status === 201 ? true : undefined), 20_000);
    const refused = await create('perm-blocking', true);
    expect(refused.status).toBe(403);
    expect(refused.json()['message']).toMatch(/^configmaps "perm-blocking" is forbidden: cannot set blockOwnerDeletion if an ownerReference refers to a resource you can't set finalizers on: /);
    const grant = 'apiVersion: rbac.authorization.svc.io/v1\nkind: Role\nmetadata:\n  name: gc-writer\n  namespace: default\nrules:\n- apiGroups: [""]\n  resources: [configmaps]\n  verbs: [create, get]\n- apiGroups: [""]\n  resources: [configmaps/finalizers]\n  verbs: [update]\n';
    expect((await kubectl(['apply', '-f', '-'], grant)).code).toBe(0);
    await until(async () => ((await create('perm-blocking', true)).status === 201 ? true : undefined), 20_000);
  });

  test('1,000 dependents of one owner are collected', async () => {
    const owner = await configMap('many-owner');
    const names = Array.from({ length: 1000 }, (_, i) => `many-${i}`);
    for (let i = 0; i < names.length; i += 50) {
      await Promise.all(names.slice(i, i + 50).map((name) => configMap(name, [ref('ConfigMap', owner)], { labels: { many: 'yes' } })));
    }
    expect((await kubectl(['delete', 'configmap', 'many-owner'])).code).toBe(0);
    const count = async () => ((await adminRequest(env, 'GET', `${NS}/configmaps?labelSelector=many%3Dyes`)).json() as { items: unknown[] }).items.length;
    await until(async () => ((await count()) === 0 ? true : undefined), 90_000);
  }, 180_000);
});
