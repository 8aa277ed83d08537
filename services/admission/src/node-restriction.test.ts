import { ApiError, type ApiObject, type UserInfo } from '@svc/apimachinery';
import { nodeMaySetLabel, nodeRestriction } from './node-restriction';
import type { AdmissionAttributes, AdmissionOperation } from './plugins';

const n1: UserInfo = { username: 'system:node:n1', uid: '', groups: ['system:nodes', 'system:authenticated'], extra: {} };
const admin: UserInfo = { username: 'admin', uid: '', groups: ['system:masters'], extra: {} };
const nameless: UserInfo = { username: 'system:node:', uid: '', groups: ['system:nodes'], extra: {} };

const STORED_PODS = new Map<string, ApiObject>([
  ['ns/web', { metadata: { name: 'web', namespace: 'ns', uid: 'uid-web' }, spec: { nodeName: 'n1' } }],
  ['ns/db', { metadata: { name: 'db', namespace: 'ns', uid: 'uid-db' }, spec: { nodeName: 'n2' } }],
]);
const plugin = nodeRestriction({ getPod: async (ns, name) => STORED_PODS.get(`${ns}/${name}`) });

interface Case {
  user?: UserInfo;
  operation: AdmissionOperation;
  group?: string;
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
  object?: ApiObject;
  oldObject?: ApiObject;
}

const attrs = (c: Case): AdmissionAttributes => ({
  operation: c.operation,
  kind: { group: c.group ?? '', version: 'v1', kind: 'X' },
  resource: { group: c.group ?? '', version: 'v1', resource: c.resource },
  subresource: c.subresource ?? '',
  namespace: c.namespace ?? '',
  name: c.name ?? '',
  userInfo: c.user ?? n1,
  object: c.object,
  oldObject: c.oldObject,
  dryRun: false,
});

const mirror = (over: { nodeName?: string; spec?: Record<string, unknown>; owners?: unknown[]; annotations?: Record<string, string> } = {}): ApiObject => ({
  metadata: { name: 'static-web-n1', namespace: 'ns', annotations: over.annotations ?? { 'svc.io/config.mirror': 'hash' }, ...(over.owners ? { ownerReferences: over.owners as never } : {}) },
  spec: { nodeName: over.nodeName ?? 'n1', containers: [{ name: 'c', image: 'i' }], ...over.spec },
});
const podOn = (node: string, labels: Record<string, string> = {}): ApiObject => ({ metadata: { name: 'web', namespace: 'ns', labels }, spec: { nodeName: node } });
const nodeObj = (name: string, labels: Record<string, string> = {}, spec: Record<string, unknown> = {}): ApiObject => ({ metadata: { name, labels }, spec });
const token = (ref: Record<string, unknown> | undefined): ApiObject => ({ kind: 'TokenRequest', spec: { audiences: [], ...(ref ? { boundObjectRef: ref } : {}) } });
const lease = (name: string): ApiObject => ({ metadata: { name, namespace: 'svc-node-lease' } });

/** [what, request, undefined when admitted or the message it is refused with]. */
const CASES: Array<[string, Case, RegExp | undefined]> = [
  ['a mirror pod bound to itself', { operation: 'CREATE', resource: 'pods', namespace: 'ns', object: mirror() }, undefined],
  ['a pod without the mirror annotation', { operation: 'CREATE', resource: 'pods', namespace: 'ns', object: mirror({ annotations: {} }) }, /pod does not have "svc.io\/config.mirror" annotation, node "n1" can only create mirror pods/],
  ['a mirror pod bound to another node', { operation: 'CREATE', resource: 'pods', namespace: 'ns', object: mirror({ nodeName: 'n2' }) }, /can only create pods with spec.nodeName set to itself/],
  ['a mirror pod owned by its node', { operation: 'CREATE', resource: 'pods', namespace: 'ns', object: mirror({ owners: [{ apiVersion: 'v1', kind: 'Node', name: 'n1', uid: 'u' }] }) }, undefined],
  ['a mirror pod owned by another node', { operation: 'CREATE', resource: 'pods', namespace: 'ns', object: mirror({ owners: [{ apiVersion: 'v1', kind: 'Node', name: 'n2', uid: 'u' }] }) }, /owner reference set to itself/],
  ['a mirror pod using a secret', { operation: 'CREATE', resource: 'pods', namespace: 'ns', object: mirror({ spec: { volumes: [{ name: 'v', secret: { secretName: 's' } }] } }) }, /can not create pods that reference secrets/],
  ['a mirror pod using a config map', { operation: 'CREATE', resource: 'pods', namespace: 'ns', object: mirror({ spec: { containers: [{ name: 'c', envFrom: [{ configMapRef: { name: 'c' } }] }] } }) }, /reference configmaps/],
  ['a mirror pod using a service account', { operation: 'CREATE', resource: 'pods', namespace: 'ns', object: mirror({ spec: { serviceAccountName: 'default' } }) }, /use service accounts/],
  ['delete a pod bound to itself', { operation: 'DELETE', resource: 'pods', namespace: 'ns', name: 'web', oldObject: podOn('n1') }, undefined],
  ['delete a pod bound to another node', { operation: 'DELETE', resource: 'pods', namespace: 'ns', name: 'web', oldObject: podOn('n2') }, /can only delete pods with spec.nodeName set to itself/],
  ['update a pod', { operation: 'UPDATE', resource: 'pods', namespace: 'ns', name: 'web', object: podOn('n1'), oldObject: podOn('n1') }, /can only create and delete mirror pods/],
  ['update the status of its pod', { operation: 'UPDATE', resource: 'pods', subresource: 'status', namespace: 'ns', name: 'web', object: podOn('n1'), oldObject: podOn('n1') }, undefined],
  ['update the status of another node\'s pod', { operation: 'UPDATE', resource: 'pods', subresource: 'status', namespace: 'ns', name: 'web', object: podOn('n2'), oldObject: podOn('n2') }, /can only update pod status for pods with spec.nodeName set to itself/],
  ['change labels through pod status', { operation: 'UPDATE', resource: 'pods', subresource: 'status', namespace: 'ns', name: 'web', object: podOn('n1', { a: 'b' }), oldObject: podOn('n1') }, /cannot update labels through pod status/],
  ['register itself', { operation: 'CREATE', resource: 'nodes', name: 'n1', object: nodeObj('n1', { 'svc.io/hostname': 'n1', 'node.svc.io/instance-type': 'big', 'team': 'a' }, { taints: [{ key: 'k', effect: 'NoSchedule' }] }) }, undefined],
  ['register another node', { operation: 'CREATE', resource: 'nodes', name: 'n2', object: nodeObj('n2') }, /node "n1" is not allowed to modify node "n2"/],
  ['register with a restricted label', { operation: 'CREATE', resource: 'nodes', name: 'n1', object: nodeObj('n1', { 'node-restriction.svc.io/pci': 'true' }) }, /not allowed to set the following labels: node-restriction.svc.io\/pci/],
  ['register with a configSource', { operation: 'CREATE', resource: 'nodes', name: 'n1', object: nodeObj('n1', {}, { configSource: { configMap: {} } }) }, /non-nil configSource/],
  ['update its node status', { operation: 'UPDATE', resource: 'nodes', subresource: 'status', name: 'n1', object: nodeObj('n1'), oldObject: nodeObj('n1') }, undefined],
  ['update another node\'s status', { operation: 'UPDATE', resource: 'nodes', subresource: 'status', name: 'n2', object: nodeObj('n2'), oldObject: nodeObj('n2') }, /NodeRestriction: node "n1" is not allowed to modify node "n2"/],
  ['change its taints', { operation: 'UPDATE', resource: 'nodes', name: 'n1', object: nodeObj('n1', {}, { taints: [] }), oldObject: nodeObj('n1', {}, { taints: [{ key: 'k', effect: 'NoSchedule' }] }) }, /not allowed to modify taints/],
  ['change a kubelet label', { operation: 'UPDATE', resource: 'nodes', name: 'n1', object: nodeObj('n1', { 'kubelet.svc.io/x': '2' }), oldObject: nodeObj('n1', { 'kubelet.svc.io/x': '1' }) }, undefined],
  ['remove a vendor label it may not set', { operation: 'UPDATE', resource: 'nodes', name: 'n1', object: nodeObj('n1'), oldObject: nodeObj('n1', { 'svc.io/role': 'x' }) }, /not allowed to modify labels: svc.io\/role/],
  ['delete itself', { operation: 'DELETE', resource: 'nodes', name: 'n1', oldObject: nodeObj('n1') }, undefined],
  ['delete another node', { operation: 'DELETE', resource: 'nodes', name: 'n2', oldObject: nodeObj('n2') }, /not allowed to modify node "n2"/],
  ['a token bound to its pod', { operation: 'CREATE', resource: 'serviceaccounts', subresource: 'token', namespace: 'ns', name: 'sa', object: token({ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'uid-web' }) }, undefined],
  ['a token bound to nothing', { operation: 'CREATE', resource: 'serviceaccounts', subresource: 'token', namespace: 'ns', name: 'sa', object: token(undefined) }, /node requested token not bound to a pod/],
  ['a token bound without a uid', { operation: 'CREATE', resource: 'serviceaccounts', subresource: 'token', namespace: 'ns', name: 'sa', object: token({ apiVersion: 'v1', kind: 'Pod', name: 'web' }) }, /without a uid/],
  ['a token bound to a stale uid', { operation: 'CREATE', resource: 'serviceaccounts', subresource: 'token', namespace: 'ns', name: 'sa', object: token({ apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'old' }) }, /does not match the UID in record/],
  ['a token bound to another node\'s pod', { operation: 'CREATE', resource: 'serviceaccounts', subresource: 'token', namespace: 'ns', name: 'sa', object: token({ apiVersion: 'v1', kind: 'Pod', name: 'db', uid: 'uid-db' }) }, /bound to a pod scheduled on a different node/],
  ['create its lease', { operation: 'CREATE', group: 'coordination.svc.io', resource: 'leases', namespace: 'svc-node-lease', object: lease('n1') }, undefined],
  ['create another node\'s lease', { operation: 'CREATE', group: 'coordination.svc.io', resource: 'leases', namespace: 'svc-node-lease', object: lease('n2') }, /same name as the requesting node/],
  ['update another node\'s lease', { operation: 'UPDATE', group: 'coordination.svc.io', resource: 'leases', namespace: 'svc-node-lease', name: 'n2', object: lease('n2') }, /same name as the requesting node/],
  ['a lease elsewhere', { operation: 'CREATE', group: 'coordination.svc.io', resource: 'leases', namespace: 'default', object: lease('n1') }, /svc-node-lease/],
  ['an event from itself', { operation: 'CREATE', resource: 'events', namespace: 'ns', object: { source: { component: 'kubelet', host: 'n1' } } }, undefined],
  ['an event claiming another node', { operation: 'CREATE', resource: 'events', namespace: 'ns', object: { source: { component: 'kubelet', host: 'n2' } } }, /not events from "n2"/],
  ['an events.svc.io event from another instance', { operation: 'CREATE', group: 'events.svc.io', resource: 'events', namespace: 'ns', object: { reportingInstance: 'n2' } }, /not events from "n2"/],
  ['anything from a user that is not a node', { user: admin, operation: 'UPDATE', resource: 'nodes', name: 'n2', object: nodeObj('n2'), oldObject: nodeObj('n2', {}, { taints: [] }) }, undefined],
  ['a node user without a name', { user: nameless, operation: 'CREATE', resource: 'configmaps', namespace: 'ns', object: {} }, /could not determine node from user "system:node:"/],
];

describe('NodeRestriction', () => {
  for (const [what, c, refusal] of CASES) {
    test(`${what}: ${refusal ? 'refused' : 'admitted'}`, async () => {
      const outcome = await plugin.validate?.(attrs(c)).then(
        () => undefined,
        (e: unknown) => e,
      );
      if (!refusal) {
        expect(outcome).toBeUndefined();
        return;
      }
      expect(outcome).toBeInstanceOf(ApiError);
      expect((outcome as ApiError).code).toBe(403);
      expect((outcome as ApiError).message).toMatch(/NodeRestriction: /);
      expect((outcome as ApiError).message).toMatch(refusal);
    });
  }

  test('a token bound to a pod that does not exist is NotFound', async () => {
    const err = await plugin.validate?.(attrs({ operation: 'CREATE', resource: 'serviceaccounts', subresource: 'token', namespace: 'ns', name: 'sa', object: token({ apiVersion: 'v1', kind: 'Pod', name: 'gone', uid: 'u' }) })).catch((e: unknown) => e);
    expect((err as ApiError).code).toBe(404);
  });

  test.each([
    ['svc.io/hostname', true],
    ['topology.svc.io/zone', true],
    ['kubelet.svc.io/anything', true],
    ['sub.node.svc.io/anything', true],
    ['example.com/team', true],
    ['plain', true],
    ['svc.io/role', false],
    ['node-role.svc.io/control-plane', false],
    ['node-restriction.svc.io/x', false],
    ['a.node-restriction.svc.io/x', false],
  ])('a node may set label %s: %s', (key, allowed) => {
    expect(nodeMaySetLabel(key)).toBe(allowed);
  });
});
