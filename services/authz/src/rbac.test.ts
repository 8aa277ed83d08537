import type { ApiObject, UserInfo } from '@svc/apimachinery';
import type { Attributes } from './authorizer';
import { RbacPolicy, uncoveredRules } from './rbac';

const rule = (verbs: string[], apiGroups: string[], resources: string[], resourceNames: string[] = []) => ({ verbs, apiGroups, resources, resourceNames });
const obj = (kind: string, name: string, namespace: string, body: Record<string, unknown>): [string, ApiObject] => [kind, { apiVersion: 'rbac.authorization.svc.io/v1', kind, metadata: { name, ...(namespace ? { namespace } : {}) }, ...body }];
const ref = (kind: string, name: string) => ({ roleRef: { apiGroup: 'rbac.authorization.svc.io', kind, name } });
const user = (name: string) => ({ kind: 'User', apiGroup: 'rbac.authorization.svc.io', name });
const group = (name: string) => ({ kind: 'Group', apiGroup: 'rbac.authorization.svc.io', name });
const sa = (namespace: string, name: string) => ({ kind: 'ServiceAccount', name, namespace });

/** The policy every case runs against. */
const POLICY: Array<[string, ApiObject]> = [
  obj('ClusterRole', 'view', '', { rules: [rule(['get', 'list', 'watch'], [''], ['pods', 'configmaps', 'services'])] }),
  obj('ClusterRole', 'node-reader', '', { rules: [rule(['get', 'list'], [''], ['nodes'])] }),
  obj('ClusterRole', 'everything', '', { rules: [rule(['*'], ['*'], ['*']), { verbs: ['*'], nonResourceURLs: ['*'] }] }),
  obj('ClusterRole', 'health', '', { rules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/metrics/*'] }] }),
  obj('ClusterRole', 'logs', '', { rules: [rule(['get'], [''], ['pods/log']), rule(['get'], [''], ['*/status'])] }),
  obj('ClusterRole', 'upstream-named', '', { rules: [rule(['list'], ['rbac.authorization.k8s.io'], ['roles'])] }),
  obj('Role', 'cm-editor', 'team-a', { rules: [rule(['get', 'update', 'patch', 'delete', 'create', 'deletecollection', 'list'], [''], ['configmaps'], ['app-config'])] }),
  obj('Role', 'deploys', 'team-a', { rules: [rule(['create'], ['apps'], ['deployments']), rule(['get'], ['coordination.svc.io'], ['leases'])] }),
  obj('Role', 'orphan-role', 'team-b', { rules: [rule(['*'], ['*'], ['*'])] }),
  obj('ClusterRoleBinding', 'alice-view', '', { ...ref('ClusterRole', 'view'), subjects: [user('alice')] }),
  obj('ClusterRoleBinding', 'ops-nodes', '', { ...ref('ClusterRole', 'node-reader'), subjects: [group('ops')] }),
  obj('ClusterRoleBinding', 'root', '', { ...ref('ClusterRole', 'everything'), subjects: [user('root')] }),
  obj('ClusterRoleBinding', 'monitoring', '', { ...ref('ClusterRole', 'health'), subjects: [group('system:authenticated')] }),
  obj('ClusterRoleBinding', 'ci-logs', '', { ...ref('ClusterRole', 'logs'), subjects: [sa('ci', 'runner')] }),
  obj('ClusterRoleBinding', 'upstream', '', { ...ref('ClusterRole', 'upstream-named'), subjects: [user('uma')] }),
  obj('ClusterRoleBinding', 'dangling', '', { ...ref('ClusterRole', 'does-not-exist'), subjects: [user('dan')] }),
  obj('RoleBinding', 'bob-cm', 'team-a', { ...ref('Role', 'cm-editor'), subjects: [user('bob')] }),
  obj('RoleBinding', 'bob-view', 'team-b', { ...ref('ClusterRole', 'view'), subjects: [user('bob')] }),
  obj('RoleBinding', 'robot-deploys', 'team-a', { ...ref('Role', 'deploys'), subjects: [sa('', 'robot')] }),
  obj('RoleBinding', 'cross-role', 'team-b', { ...ref('Role', 'cm-editor'), subjects: [user('carol')] }),
  obj('RoleBinding', 'devs-everything', 'sandbox', { ...ref('ClusterRole', 'everything'), subjects: [group('dev')] }),
];

function policy(): RbacPolicy {
  const p = new RbacPolicy();
  for (const [kind, o] of POLICY) p.apply(kind, o);
  return p;
}

const u = (username: string, groups: string[] = []): UserInfo => ({ username, uid: '', groups: [...groups, 'system:authenticated'], extra: {} });
const res = (user: UserInfo, verb: string, resource: string, namespace = '', name = '', apiGroup = '', subresource = ''): Attributes => ({ user, resourceRequest: true, verb, path: '', apiGroup, apiVersion: 'v1', resource, subresource, namespace, name });
const url = (user: UserInfo, verb: string, path: string): Attributes => ({ user, resourceRequest: false, verb, path, apiGroup: '', apiVersion: '', resource: '', subresource: '', namespace: '', name: '' });

const alice = u('alice');
const bob = u('bob');
const carol = u('carol');
const opsMember = u('olga', ['ops']);
const dev = u('dave', ['dev']);
const runner = u('system:serviceaccount:ci:runner', ['system:serviceaccounts', 'system:serviceaccounts:ci']);
const robot = u('system:serviceaccount:team-a:robot', ['system:serviceaccounts', 'system:serviceaccounts:team-a']);
const otherRobot = u('system:serviceaccount:team-b:robot', ['system:serviceaccounts']);
const root = u('root');
const nobody = u('nobody');

const CASES: Array<[string, Attributes, boolean]> = [
  // A ClusterRoleBinding to a user: in every namespace and cluster-wide, only the verbs and resources named.
  ['alice gets pods in any namespace', res(alice, 'get', 'pods', 'team-a', 'p'), true],
  ['alice lists pods cluster-wide', res(alice, 'list', 'pods'), true],
  ['alice watches configmaps', res(alice, 'watch', 'configmaps', 'x'), true],
  ['alice may not delete pods', res(alice, 'delete', 'pods', 'team-a', 'p'), false],
  ['alice may not read secrets', res(alice, 'get', 'secrets', 'team-a', 's'), false],
  ['alice may not read pods of another group', res(alice, 'get', 'pods', 'team-a', 'p', 'metrics.svc.io'), false],
  ['alice may not read a subresource the role does not name', res(alice, 'get', 'pods', 'team-a', 'p', '', 'log'), false],
  ['alice may not create pods', res(alice, 'create', 'pods', 'team-a'), false],
  // Groups.
  ['a member of ops reads nodes', res(opsMember, 'get', 'nodes', '', 'n1'), true],
  ['a member of ops may not update nodes', res(opsMember, 'update', 'nodes', '', 'n1'), false],
  ['alice is not in ops', res(alice, 'get', 'nodes', '', 'n1'), false],
  // Wildcards.
  ['root may do anything to anything', res(root, 'deletecollection', 'widgets', 'x', '', 'example.com'), true],
  ['root may use special verbs', res(root, 'impersonate', 'users', '', 'someone'), true],
  ['root may reach any non-resource path', url(root, 'post', '/anything/at/all'), true],
  // Non-resource URLs, exact and with a trailing star, through a group everyone has.
  ['anyone authenticated gets /healthz', url(nobody, 'get', '/healthz'), true],
  ['anyone authenticated gets /metrics/x', url(nobody, 'get', '/metrics/cadvisor'), true],
  ['/metrics itself is not under /metrics/*', url(nobody, 'get', '/metrics'), false],
  ['/healthz/etcd is not /healthz', url(nobody, 'get', '/healthz/etcd'), false],
  ['only get on /healthz', url(nobody, 'post', '/healthz'), false],
  ['non-resource rules do not grant resources', res(nobody, 'get', 'pods', 'x', 'p'), false],
  // Subresources: exact and */status.
  ['the runner reads pod logs', res(runner, 'get', 'pods', 'prod', 'p', '', 'log'), true],
  ['the runner reads any status', res(runner, 'get', 'deployments', 'prod', 'd', '', 'status'), true],
  ['pods/log does not grant pods', res(runner, 'get', 'pods', 'prod', 'p'), false],
  ['*/status does not grant the object', res(runner, 'get', 'deployments', 'prod', 'd'), false],
  ['get on logs does not grant create', res(runner, 'create', 'pods', 'prod', 'p', '', 'log'), false],
  // Role bindings: only in their namespace.
  ['bob gets the named configmap in team-a', res(bob, 'get', 'configmaps', 'team-a', 'app-config'), true],
  ['bob updates the named configmap', res(bob, 'update', 'configmaps', 'team-a', 'app-config'), true],
  ['bob may not get another configmap', res(bob, 'get', 'configmaps', 'team-a', 'other'), false],
  ['resourceNames cannot allow create (no name yet)', res(bob, 'create', 'configmaps', 'team-a'), false],
  ['resourceNames cannot allow deletecollection', res(bob, 'deletecollection', 'configmaps', 'team-a'), false],
  ['resourceNames allow list only with a name (field selector)', res(bob, 'list', 'configmaps', 'team-a', 'app-config'), true],
  ['resourceNames do not allow an unnamed list', res(bob, 'list', 'configmaps', 'team-a'), false],
  ['bob has nothing of cm-editor in team-c', res(bob, 'get', 'configmaps', 'team-c', 'app-config'), false],
  ['bob has nothing cluster-wide', res(bob, 'list', 'configmaps'), false],
  ['a RoleBinding to a ClusterRole grants it in the binding namespace', res(bob, 'list', 'pods', 'team-b'), true],
  ['... and only there', res(bob, 'list', 'pods', 'team-c'), false],
  ['... not cluster-wide', res(bob, 'list', 'pods'), false],
  ['a RoleBinding never grants non-resource URLs', url(dev, 'get', '/apis'), false],
  ['a RoleBinding to a ClusterRole with wildcards, for a group, in its namespace', res(dev, 'delete', 'secrets', 'sandbox', 's'), true],
  ['the same group outside the namespace', res(dev, 'delete', 'secrets', 'prod', 's'), false],
  ['a RoleBinding does not grant cluster-scoped resources', res(dev, 'get', 'nodes', '', 'n1'), false],
  // A RoleBinding to a Role of another namespace grants nothing (roles are looked up in the binding's namespace).
  ['carol is bound to cm-editor in team-b, where no such role exists', res(carol, 'get', 'configmaps', 'team-b', 'app-config'), false],
  ['carol gets nothing in team-a either', res(carol, 'get', 'configmaps', 'team-a', 'app-config'), false],
  // Service accounts: the subject namespace defaults to the binding's.
  ['robot in team-a creates deployments', res(robot, 'create', 'deployments', 'team-a', '', 'apps'), true],
  ['robot in team-a reads leases', res(robot, 'get', 'leases', 'team-a', 'l', 'coordination.svc.io'), true],
  ['a robot of the same name in team-b does not', res(otherRobot, 'create', 'deployments', 'team-a', '', 'apps'), false],
  ['robot may not create deployments in another group', res(robot, 'create', 'deployments', 'team-a', '', 'extensions'), false],
  ['robot may not create deployments elsewhere', res(robot, 'create', 'deployments', 'team-b', '', 'apps'), false],
  // Rules written with the upstream group name match ours.
  ['uma lists roles (rule written as rbac.authorization.k8s.io)', res(u('uma'), 'list', 'roles', 'x', '', 'rbac.authorization.svc.io'), true],
  // A binding to a role that does not exist is accepted and grants nothing.
  ['dan is bound to a missing role', res(u('dan'), 'get', 'pods', 'x', 'p'), false],
  // Nobody else.
  ['nobody gets pods', res(nobody, 'get', 'pods', 'x', 'p'), false],
  ['nobody lists namespaces', res(nobody, 'list', 'namespaces'), false],
  ['a user named like a group is not that group', res(u('ops'), 'get', 'nodes', '', 'n1'), false],
  ['a group named like a user is not that user', res(u('zed', ['alice']), 'get', 'pods', 'x', 'p'), false],
];

describe('RBAC decisions', () => {
  const p = policy();
  test.each(CASES)('%s', (_name, attrs, allowed) => {
    expect(p.authorize(attrs).decision).toBe(allowed ? 'allow' : 'no-opinion');
  });

  test('an allow names the binding, the role and the subject', () => {
    expect(p.authorize(res(robot, 'create', 'deployments', 'team-a', '', 'apps')).reason).toBe('RBAC: allowed by RoleBinding "robot-deploys/team-a" of Role "deploys" to ServiceAccount "team-a/robot"');
    expect(p.authorize(res(opsMember, 'get', 'nodes', '', 'n1')).reason).toBe('RBAC: allowed by ClusterRoleBinding "ops-nodes" of ClusterRole "node-reader" to Group "ops"');
  });

  test('changes take effect at once: a deleted binding, a changed role, a deleted role', () => {
    const q = policy();
    expect(q.authorize(res(bob, 'get', 'configmaps', 'team-a', 'app-config')).decision).toBe('allow');
    q.deleteBinding('team-a', 'bob-cm');
    expect(q.authorize(res(bob, 'get', 'configmaps', 'team-a', 'app-config')).decision).toBe('no-opinion');
    q.apply(...obj('ClusterRole', 'view', '', { rules: [rule(['get'], [''], ['secrets'])] }));
    expect(q.authorize(res(alice, 'get', 'pods', 'x', 'p')).decision).toBe('no-opinion');
    expect(q.authorize(res(alice, 'get', 'secrets', 'x', 's')).decision).toBe('allow');
    q.apply(...obj('ClusterRole', 'view', '', {}), true);
    expect(q.authorize(res(alice, 'get', 'secrets', 'x', 's')).decision).toBe('no-opinion');
    // A binding whose subjects change moves in the index.
    q.apply(...obj('ClusterRoleBinding', 'ops-nodes', '', { ...ref('ClusterRole', 'node-reader'), subjects: [user('alice')] }));
    expect(q.authorize(res(opsMember, 'get', 'nodes', '', 'n1')).decision).toBe('no-opinion');
    expect(q.authorize(res(alice, 'get', 'nodes', '', 'n1')).decision).toBe('allow');
  });

  test('rulesFor lists what a user holds in a namespace', () => {
    expect(p.rulesFor(bob, 'team-a')).toEqual([{ verbs: ['get', 'update', 'patch', 'delete', 'create', 'deletecollection', 'list'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['app-config'], nonResourceURLs: [] }, expect.objectContaining({ nonResourceURLs: ['/healthz', '/metrics/*'] })]);
  });

  test('10,000 bindings: a decision looks only at the requester’s', () => {
    const big = policy();
    for (let i = 0; i < 5000; i++) {
      big.apply(...obj('Role', `r${i}`, `ns${i % 100}`, { rules: [rule(['get'], [''], ['configmaps'])] }));
      big.apply(...obj('RoleBinding', `b${i}`, `ns${i % 100}`, { ...ref('Role', `r${i}`), subjects: [user(`user${i}`)] }));
    }
    expect(big.size.bindings).toBe(5000 + POLICY.filter(([k]) => k.endsWith('Binding')).length);
    expect(big.authorize(res(u('user4242'), 'get', 'configmaps', 'ns42', 'c')).decision).toBe('allow');
    expect(big.authorize(res(u('user4242'), 'get', 'configmaps', 'ns43', 'c')).decision).toBe('no-opinion');
  });
});

describe('coverage (the escalation check)', () => {
  const r = (verbs: string[], apiGroups: string[], resources: string[], resourceNames: string[] = [], nonResourceURLs: string[] = []) => ({ verbs, apiGroups, resources, resourceNames, nonResourceURLs });
  test.each([
    ['the same rule', [r(['get', 'list'], [''], ['pods'])], [r(['get'], [''], ['pods'])], 0],
    ['a wildcard owner covers anything', [r(['*'], ['*'], ['*'])], [r(['delete'], ['apps'], ['deployments'], ['d'])], 0],
    ['a wildcard is covered only by a wildcard', [r(['get', 'list'], [''], ['pods'])], [r(['*'], [''], ['pods'])], 1],
    ['each verb counts', [r(['get'], [''], ['pods'])], [r(['get', 'delete'], [''], ['pods', 'secrets'])], 3],
    ['names: an unnamed owner covers a named piece', [r(['get'], [''], ['configmaps'])], [r(['get'], [''], ['configmaps'], ['a', 'b'])], 0],
    ['names: a named owner does not cover an unnamed piece', [r(['get'], [''], ['configmaps'], ['a'])], [r(['get'], [''], ['configmaps'])], 1],
    ['names: only the named ones', [r(['get'], [''], ['configmaps'], ['a'])], [r(['get'], [''], ['configmaps'], ['a', 'b'])], 1],
    ['*/status covers pods/status', [r(['get'], [''], ['*/status'])], [r(['get'], [''], ['pods/status'])], 0],
    ['URLs with a trailing star', [r(['get'], [], [], [], ['/metrics/*'])], [r(['get'], [], [], [], ['/metrics/a', '/metrics/b/*', '/healthz'])], 1],
    ['upstream group names are ours', [r(['list'], ['rbac.authorization.svc.io'], ['roles'])], [r(['list'], ['rbac.authorization.k8s.io'], ['roles'])], 0],
  ])('%s', (_name, held, wanted, uncovered) => {
    expect(uncoveredRules(held, wanted)).toHaveLength(uncovered);
  });
});
