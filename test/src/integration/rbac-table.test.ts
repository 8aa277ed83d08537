import type { UserInfo } from '@svc/apimachinery';
import { AuthzClient, type Attributes } from '@svc/authz/client';
import { loadInternalTls } from '@svc/service-kit';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest } from '../e2e/http';

/**
 * RBAC decisions asked of the real authz service over gRPC (with the
 * gateway's certificate), after the policy was written through the API and
 * reached authz through the change stream. The expected answers come from
 * the plain statements of SPEC's rules for each family of cases, not from
 * the evaluator.
 */

const VERBS = ['get', 'list', 'watch', 'create', 'update', 'patch', 'delete', 'deletecollection'];
const RBAC = 'rbac.authorization.svc.io';

interface Case {
  name: string;
  attrs: Attributes;
  allowed: boolean;
}

const user = (username: string, groups: string[] = []): UserInfo => ({ username, uid: '', groups: [...groups, 'system:authenticated'], extra: {} });

function resourceAttrs(u: UserInfo, verb: string, resource: string, namespace: string, name: string, apiGroup = ''): Attributes {
  return { user: u, resourceRequest: true, verb, path: '', apiGroup, apiVersion: 'v1', resource, subresource: '', namespace, name };
}

/** A Role in team-a granting get/update/delete on configmaps named app-config, bound to a user. */
function namedConfigMapCases(): Case[] {
  const bob = user('bob');
  const granted = ['get', 'update', 'delete'];
  const out: Case[] = [];
  for (const verb of VERBS) {
    for (const name of ['app-config', 'other', '']) {
      for (const namespace of ['team-a', 'team-b']) {
        for (const resource of ['configmaps', 'secrets']) {
          // resourceNames restrict to those names, so an unnamed request (create, deletecollection, list) is never allowed.
          const allowed = granted.includes(verb) && name === 'app-config' && namespace === 'team-a' && resource === 'configmaps';
          out.push({ name: `bob ${verb} ${resource} ${namespace}/${name || '<none>'}`, attrs: resourceAttrs(bob, verb, resource, namespace, name), allowed });
        }
      }
    }
  }
  return out;
}

/** A ClusterRole granting read of pods and services, bound cluster-wide to a group and in one namespace to a service account. */
function readerCases(): Case[] {
  const reader = ['get', 'list', 'watch'];
  const member = user('olga', ['readers']);
  const robot = user('system:serviceaccount:ci:robot', ['system:serviceaccounts', 'system:serviceaccounts:ci']);
  const stranger = user('system:serviceaccount:other:robot', ['system:serviceaccounts']);
  const out: Case[] = [];
  for (const verb of VERBS) {
    for (const resource of ['pods', 'services', 'nodes']) {
      for (const namespace of ['ci', 'prod', '']) {
        const readable = reader.includes(verb) && resource !== 'nodes';
        // The group's grant is cluster-wide (nodes are not in the role); the robot's only in ci.
        out.push({ name: `readers ${verb} ${resource} in ${namespace || '<cluster>'}`, attrs: resourceAttrs(member, verb, resource, namespace, 'x'), allowed: readable });
        out.push({ name: `ci robot ${verb} ${resource} in ${namespace || '<cluster>'}`, attrs: resourceAttrs(robot, verb, resource, namespace, 'x'), allowed: readable && namespace === 'ci' });
        out.push({ name: `other robot ${verb} ${resource} in ${namespace || '<cluster>'}`, attrs: resourceAttrs(stranger, verb, resource, namespace, 'x'), allowed: false });
      }
    }
  }
  return out;
}

/** Non-resource paths: /healthz exactly and /metrics/* for a monitoring group. */
function pathCases(): Case[] {
  const mon = user('prometheus', ['monitors']);
  const out: Case[] = [];
  for (const path of ['/healthz', '/healthz/etcd', '/metrics', '/metrics/a', '/metrics/a/b', '/api']) {
    for (const verb of ['get', 'post']) {
      // /api is discovery, which the default system:discovery grants every authenticated user.
      const allowed = verb === 'get' && (path === '/healthz' || path.startsWith('/metrics/') || path === '/api');
      out.push({ name: `monitors ${verb} ${path}`, attrs: { user: mon, resourceRequest: false, verb, path, apiGroup: '', apiVersion: '', resource: '', subresource: '', namespace: '', name: '' }, allowed });
    }
  }
  return out;
}

describe('RBAC decisions of the authz service', () => {
  let env: Environment;
  let authz: AuthzClient;

  const post = async (path: string, body: unknown) => {
    const res = await adminRequest(env, 'POST', path, JSON.stringify(body));
    if (res.status !== 201) throw new Error(`POST ${path}: ${res.status} ${res.body}`);
  };
  const ref = (kind: string, name: string) => ({ apiGroup: RBAC, kind, name });

  beforeAll(async () => {
    env = await startEnvironment({ authorizationMode: 'RBAC' });
    const identity = env.internalPki.identities.gateway;
    authz = new AuthzClient(env.addresses['authz'] as string, loadInternalTls({ caFile: env.internalPki.caCert, certFile: identity.cert, keyFile: identity.key }));
    for (const ns of ['team-a', 'team-b', 'ci', 'prod']) await post('/api/v1/namespaces', { metadata: { name: ns } });
    await post(`/apis/${RBAC}/v1/namespaces/team-a/roles`, { metadata: { name: 'app-config' }, rules: [{ verbs: ['get', 'update', 'delete'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['app-config'] }] });
    await post(`/apis/${RBAC}/v1/namespaces/team-a/rolebindings`, { metadata: { name: 'bob' }, roleRef: ref('Role', 'app-config'), subjects: [{ kind: 'User', apiGroup: RBAC, name: 'bob' }] });
    await post(`/apis/${RBAC}/v1/clusterroles`, { metadata: { name: 'reader' }, rules: [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['pods', 'services'] }] });
    await post(`/apis/${RBAC}/v1/clusterrolebindings`, { metadata: { name: 'readers' }, roleRef: ref('ClusterRole', 'reader'), subjects: [{ kind: 'Group', apiGroup: RBAC, name: 'readers' }] });
    await post(`/apis/${RBAC}/v1/namespaces/ci/rolebindings`, { metadata: { name: 'robot' }, roleRef: ref('ClusterRole', 'reader'), subjects: [{ kind: 'ServiceAccount', name: 'robot' }] });
    await post(`/apis/${RBAC}/v1/clusterroles`, { metadata: { name: 'monitor' }, rules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/metrics/*'] }] });
    await post(`/apis/${RBAC}/v1/clusterrolebindings`, { metadata: { name: 'monitors' }, roleRef: ref('ClusterRole', 'monitor'), subjects: [{ kind: 'Group', apiGroup: RBAC, name: 'monitors' }] });
    // The last object written has reached authz once its grant shows.
    const probe = pathCases().find((c) => c.allowed) as Case;
    const deadline = Date.now() + 20000;
    while ((await authz.authorize(probe.attrs)).decision !== 'allow') {
      if (Date.now() > deadline) throw new Error('the policy did not reach authz');
      await new Promise((r) => setTimeout(r, 100));
    }
  });

  afterAll(async () => {
    authz?.close();
    await env?.stop(true);
  });

  const cases = [...namedConfigMapCases(), ...readerCases(), ...pathCases()];

  test('at least 200 cases', () => {
    expect(cases.length).toBeGreaterThanOrEqual(200);
    expect(cases.filter((c) => c.allowed).length).toBeGreaterThan(20);
  });

  test.each(cases.map((c) => [c.name, c] as const))('%s', async (_name, c) => {
    const d = await authz.authorize(c.attrs);
    expect(d.decision).toBe(c.allowed ? 'allow' : 'no-opinion');
  });

  test('system:masters is allowed everything, before RBAC is asked', async () => {
    expect((await authz.authorize(resourceAttrs(user('root', ['system:masters']), 'escalate', 'clusterroles', '', 'cluster-admin', RBAC))).decision).toBe('allow');
  });
});
