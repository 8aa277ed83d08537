import type { ApiObject, UserInfo } from '@svc/apimachinery';
import type { Attributes, Decision } from './authorizer';
import { chain } from './authorizer';
import { nodeAuthorizer } from './node-authorizer';
import { NodeGraph } from './node-graph';

const node = (name: string): UserInfo => ({ username: `system:node:${name}`, uid: '', groups: ['system:nodes', 'system:authenticated'], extra: {} });
const n1 = node('n1');
const notInGroup: UserInfo = { username: 'system:node:n1', uid: '', groups: ['system:authenticated'], extra: {} };
const alice: UserInfo = { username: 'alice', uid: '', groups: ['system:nodes', 'system:authenticated'], extra: {} };
const nameless = node('');

interface Request {
  verb: string;
  resource: string;
  namespace?: string;
  name?: string;
  subresource?: string;
  apiGroup?: string;
  fieldSelector?: string;
}

const req = (user: UserInfo, r: Request): Attributes => ({
  user,
  resourceRequest: true,
  verb: r.verb,
  path: '',
  apiGroup: r.apiGroup ?? '',
  apiVersion: 'v1',
  resource: r.resource,
  subresource: r.subresource ?? '',
  namespace: r.namespace ?? '',
  name: r.name ?? '',
  ...(r.fieldSelector ? { fieldSelector: r.fieldSelector } : {}),
});

const pod = (name: string, nodeName: string, spec: Record<string, unknown>): ApiObject => ({ metadata: { name, namespace: 'ns' }, spec: { nodeName, containers: [], ...spec } });

function graph(): NodeGraph {
  const g = new NodeGraph();
  g.apply(
    'Pod',
    pod('web', 'n1', {
      serviceAccountName: 'web-sa',
      volumes: [{ name: 'v', secret: { secretName: 'web-tls' } }, { name: 'c', configMap: { name: 'web-config' } }, { name: 'd', persistentVolumeClaim: { claimName: 'web-data' } }],
      resourceClaims: [{ name: 'gpu', resourceClaimName: 'web-gpu' }],
    }),
  );
  g.apply('Pod', pod('db', 'n2', { serviceAccountName: 'db-sa', volumes: [{ name: 'v', secret: { secretName: 'db-password' } }, { name: 'c', configMap: { name: 'db-config' } }] }));
  return g;
}

const authorize = nodeAuthorizer({ graph: graph(), ready: () => true });

const CASES: Array<[string, Attributes, Decision, RegExp?]> = [
  // Secrets and config maps: only those of its pods, one at a time.
  ['get a secret its pod mounts', req(n1, { verb: 'get', resource: 'secrets', namespace: 'ns', name: 'web-tls' }), 'allow'],
  ['get a secret of another node\'s pod', req(n1, { verb: 'get', resource: 'secrets', namespace: 'ns', name: 'db-password' }), 'no-opinion', /no relationship found between node 'n1' and this object/],
  ['get a secret no pod uses', req(n1, { verb: 'get', resource: 'secrets', namespace: 'ns', name: 'unused' }), 'no-opinion', /no relationship/],
  ['get its secret in another namespace', req(n1, { verb: 'get', resource: 'secrets', namespace: 'other', name: 'web-tls' }), 'no-opinion', /no relationship/],
  ['watch its secret by metadata.name', req(n1, { verb: 'watch', resource: 'secrets', namespace: 'ns', name: 'web-tls', fieldSelector: 'metadata.name=web-tls' }), 'allow'],
  ['list all secrets of a namespace', req(n1, { verb: 'list', resource: 'secrets', namespace: 'ns' }), 'no-opinion', /No Object name found/],
  ['list secrets of all namespaces', req(n1, { verb: 'list', resource: 'secrets' }), 'no-opinion', /namespaced object/],
  ['update its secret', req(n1, { verb: 'update', resource: 'secrets', namespace: 'ns', name: 'web-tls' }), 'no-opinion', /can only read resources of this type/],
  ['create a secret', req(n1, { verb: 'create', resource: 'secrets', namespace: 'ns' }), 'no-opinion', /can only read/],
  ['get its config map', req(n1, { verb: 'get', resource: 'configmaps', namespace: 'ns', name: 'web-config' }), 'allow'],
  ['get another node\'s config map', req(n1, { verb: 'get', resource: 'configmaps', namespace: 'ns', name: 'db-config' }), 'no-opinion', /no relationship/],
  ['delete its config map', req(n1, { verb: 'delete', resource: 'configmaps', namespace: 'ns', name: 'web-config' }), 'no-opinion', /can only read/],
  // Claims: get only.
  ['get its claim', req(n1, { verb: 'get', resource: 'persistentvolumeclaims', namespace: 'ns', name: 'web-data' }), 'allow'],
  ['list claims', req(n1, { verb: 'list', resource: 'persistentvolumeclaims', namespace: 'ns' }), 'no-opinion', /can only get individual resources/],
  ['get another claim', req(n1, { verb: 'get', resource: 'persistentvolumeclaims', namespace: 'ns', name: 'db-data' }), 'no-opinion', /no relationship/],
  ['update its claim status', req(n1, { verb: 'update', resource: 'persistentvolumeclaims', subresource: 'status', namespace: 'ns', name: 'web-data' }), 'allow'],
  ['get a volume', req(n1, { verb: 'get', resource: 'persistentvolumes', name: 'pv1' }), 'no-opinion', /no relationship/],
  ['get its resource claim', req(n1, { verb: 'get', resource: 'resourceclaims', apiGroup: 'resource.svc.io', namespace: 'ns', name: 'web-gpu' }), 'allow'],
  // Its own Node only.
  ['get its node', req(n1, { verb: 'get', resource: 'nodes', name: 'n1' }), 'allow'],
  ['get another node', req(n1, { verb: 'get', resource: 'nodes', name: 'n2' }), 'no-opinion', /node 'n1' cannot read 'n2', only its own Node object/],
  ['list all nodes', req(n1, { verb: 'list', resource: 'nodes' }), 'no-opinion', /cannot read all nodes/],
  ['watch its node by metadata.name', req(n1, { verb: 'watch', resource: 'nodes', name: 'n1', fieldSelector: 'metadata.name=n1' }), 'allow'],
  ['create a node (NodeRestriction checks which)', req(n1, { verb: 'create', resource: 'nodes' }), 'allow'],
  ['patch its node status', req(n1, { verb: 'patch', resource: 'nodes', subresource: 'status', name: 'n1' }), 'allow'],
  ['delete its node', req(n1, { verb: 'delete', resource: 'nodes', name: 'n1' }), 'no-opinion', /cannot delete nodes/],
  // Pods: reads of its pods, writes left to NodeRestriction.
  ['get its pod', req(n1, { verb: 'get', resource: 'pods', namespace: 'ns', name: 'web' }), 'allow'],
  ['get another node\'s pod', req(n1, { verb: 'get', resource: 'pods', namespace: 'ns', name: 'db' }), 'no-opinion', /no relationship/],
  ['list pods on it', req(n1, { verb: 'list', resource: 'pods', fieldSelector: 'spec.nodeName=n1' }), 'allow'],
  ['watch pods on it with another term', req(n1, { verb: 'watch', resource: 'pods', fieldSelector: 'metadata.namespace=ns,spec.nodeName==n1' }), 'allow'],
  ['list pods on another node', req(n1, { verb: 'list', resource: 'pods', fieldSelector: 'spec.nodeName=n2' }), 'no-opinion', /spec.nodeName field selector/],
  ['list pods not on it', req(n1, { verb: 'list', resource: 'pods', fieldSelector: 'spec.nodeName!=n1' }), 'no-opinion', /spec.nodeName field selector/],
  ['list all pods', req(n1, { verb: 'list', resource: 'pods' }), 'no-opinion', /spec.nodeName field selector/],
  ['list with a selector that does not parse', req(n1, { verb: 'list', resource: 'pods', fieldSelector: '(((' }), 'no-opinion', /spec.nodeName field selector/],
  ['watch its pod by name', req(n1, { verb: 'watch', resource: 'pods', namespace: 'ns', name: 'web', fieldSelector: 'metadata.name=web' }), 'allow'],
  ['create a mirror pod', req(n1, { verb: 'create', resource: 'pods', namespace: 'ns' }), 'allow'],
  ['delete a pod', req(n1, { verb: 'delete', resource: 'pods', namespace: 'ns', name: 'web' }), 'allow'],
  ['update a pod', req(n1, { verb: 'update', resource: 'pods', namespace: 'ns', name: 'web' }), 'no-opinion', /cannot update pods/],
  ['update pod status', req(n1, { verb: 'update', resource: 'pods', subresource: 'status', namespace: 'ns', name: 'web' }), 'allow'],
  ['evict a pod', req(n1, { verb: 'create', resource: 'pods', subresource: 'eviction', namespace: 'ns', name: 'web' }), 'allow'],
  ['read pod logs', req(n1, { verb: 'get', resource: 'pods', subresource: 'log', namespace: 'ns', name: 'web' }), 'no-opinion', /cannot get pods\/log/],
  // Service account tokens of its pods.
  ['create a token for its pod\'s account', req(n1, { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: 'ns', name: 'web-sa' }), 'allow'],
  ['create a token for another account', req(n1, { verb: 'create', resource: 'serviceaccounts', subresource: 'token', namespace: 'ns', name: 'db-sa' }), 'no-opinion', /no relationship/],
  ['get a service account', req(n1, { verb: 'get', resource: 'serviceaccounts', namespace: 'ns', name: 'web-sa' }), 'no-opinion', /individual service accounts/],
  // Its lease.
  ['update its lease', req(n1, { verb: 'update', resource: 'leases', apiGroup: 'coordination.svc.io', namespace: 'svc-node-lease', name: 'n1' }), 'allow'],
  ['create a lease', req(n1, { verb: 'create', resource: 'leases', apiGroup: 'coordination.svc.io', namespace: 'svc-node-lease' }), 'allow'],
  ['update another node\'s lease', req(n1, { verb: 'update', resource: 'leases', apiGroup: 'coordination.svc.io', namespace: 'svc-node-lease', name: 'n2' }), 'no-opinion', /same name as the requesting node/],
  ['get a lease elsewhere', req(n1, { verb: 'get', resource: 'leases', apiGroup: 'coordination.svc.io', namespace: 'default', name: 'n1' }), 'no-opinion', /svc-node-lease/],
  ['list leases', req(n1, { verb: 'list', resource: 'leases', apiGroup: 'coordination.svc.io', namespace: 'svc-node-lease' }), 'no-opinion', /can only get, create, update, patch, or delete a node lease/],
  // The static rules.
  ['create an event', req(n1, { verb: 'create', resource: 'events', namespace: 'ns' }), 'allow'],
  ['patch an event', req(n1, { verb: 'patch', resource: 'events', namespace: 'ns', name: 'e' }), 'allow'],
  ['delete an event', req(n1, { verb: 'delete', resource: 'events', namespace: 'ns', name: 'e' }), 'no-opinion'],
  ['create an events.svc.io event', req(n1, { verb: 'create', resource: 'events', apiGroup: 'events.svc.io', namespace: 'ns' }), 'allow'],
  ['update an events.svc.io event', req(n1, { verb: 'update', resource: 'events', apiGroup: 'events.svc.io', namespace: 'ns', name: 'e' }), 'allow'],
  ['list events.svc.io events', req(n1, { verb: 'list', resource: 'events', apiGroup: 'events.svc.io', namespace: 'ns' }), 'no-opinion'],
  ['create a token review', req(n1, { verb: 'create', resource: 'tokenreviews', apiGroup: 'authentication.svc.io' }), 'allow'],
  ['create a subject access review', req(n1, { verb: 'create', resource: 'subjectaccessreviews', apiGroup: 'authorization.svc.io' }), 'allow'],
  ['watch services', req(n1, { verb: 'watch', resource: 'services' }), 'allow'],
  ['get endpoints', req(n1, { verb: 'get', resource: 'endpoints', namespace: 'ns', name: 'web' }), 'allow'],
  ['list endpoints', req(n1, { verb: 'list', resource: 'endpoints', namespace: 'ns' }), 'no-opinion'],
  ['create a service', req(n1, { verb: 'create', resource: 'services', namespace: 'ns' }), 'no-opinion'],
  ['list namespaces', req(n1, { verb: 'list', resource: 'namespaces' }), 'no-opinion'],
  ['read roles', req(n1, { verb: 'list', resource: 'roles', apiGroup: 'rbac.authorization.svc.io' }), 'no-opinion'],
  // Not nodes.
  ['a node name without the group', req(notInGroup, { verb: 'get', resource: 'nodes', name: 'n1' }), 'no-opinion'],
  ['a group member not named as a node', req(alice, { verb: 'get', resource: 'secrets', namespace: 'ns', name: 'web-tls' }), 'no-opinion'],
  ['a node with an empty name', req(nameless, { verb: 'get', resource: 'nodes', name: '' }), 'no-opinion', /unknown node for user "system:node:"/],
];

describe('the Node mode', () => {
  for (const [what, attrs, decision, reason] of CASES) {
    test(`${what}: ${decision}`, async () => {
      const d = await authorize(attrs);
      expect(d.decision).toBe(decision);
      if (reason) expect(d.reason).toMatch(reason);
    });
  }

  test('users that are not nodes get no opinion and no reason', async () => {
    expect(await authorize(req(alice, { verb: 'get', resource: 'nodes', name: 'n1' }))).toEqual({ decision: 'no-opinion', reason: '' });
  });

  test('non-resource requests follow the static rules only', async () => {
    const d = await authorize({ ...req(n1, { verb: 'get', resource: '' }), resourceRequest: false, path: '/healthz' });
    expect(d.decision).toBe('no-opinion');
  });

  test('until the graph is loaded, related objects are refused with that reason', async () => {
    const cold = nodeAuthorizer({ graph: graph(), ready: () => false });
    expect(await cold(req(n1, { verb: 'get', resource: 'secrets', namespace: 'ns', name: 'web-tls' }))).toEqual({ decision: 'no-opinion', reason: 'Node: the graph of the nodes is not loaded yet' });
  });

  test('in the chain, a refusal names the Node mode and says why', async () => {
    const authorizeChain = chain(['Node', 'RBAC'], { Node: authorize, RBAC: () => ({ decision: 'no-opinion', reason: '' }) });
    const d = await authorizeChain(req(n1, { verb: 'get', resource: 'secrets', namespace: 'ns', name: 'db-password' }));
    expect(d).toEqual({ decision: 'no-opinion', reason: "none of the authorization modes (Node, RBAC) allowed it; Node: no relationship found between node 'n1' and this object" });
  });
});
