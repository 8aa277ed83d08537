import type { UserInfo } from '@svc/apimachinery';
import { RbacPolicy, type Attributes } from '@svc/authz';

/**
 * An RBAC decision with a large policy loaded, timed inside the evaluator
 * (what authz does per uncached request, without the gRPC hop): `objects`
 * roles and bindings spread over 100 namespaces, one binding per user, and
 * cluster-wide bindings to groups every user is in.
 */
export function benchRbac(objects: number, decisions = 20000): { objects: number; p50Us: number; p99Us: number; allowed: number } {
  const policy = new RbacPolicy();
  const pairs = Math.floor(objects / 2);
  for (let i = 0; i < pairs; i++) {
    const namespace = `ns${i % 100}`;
    policy.setRole(namespace, `role${i}`, [
      { verbs: ['get', 'list'], apiGroups: [''], resources: ['configmaps', 'pods'], resourceNames: [], nonResourceURLs: [] },
      { verbs: ['create'], apiGroups: ['apps'], resources: ['deployments'], resourceNames: [], nonResourceURLs: [] },
    ]);
    policy.setBinding({ namespace, name: `binding${i}`, roleRef: { kind: 'Role', name: `role${i}` }, subjects: [{ kind: 'User', name: `user${i}`, namespace: '' }] });
  }
  policy.setClusterRole('view', [{ verbs: ['get', 'list', 'watch'], apiGroups: [''], resources: ['services'], resourceNames: [], nonResourceURLs: [] }]);
  policy.setBinding({ namespace: '', name: 'everyone-view', roleRef: { kind: 'ClusterRole', name: 'view' }, subjects: [{ kind: 'Group', name: 'system:authenticated', namespace: '' }] });
  const samples: number[] = [];
  let allowed = 0;
  for (let d = 0; d < decisions; d++) {
    const i = (d * 7919) % pairs;
    const user: UserInfo = { username: `user${i}`, uid: '', groups: ['system:authenticated'], extra: {} };
    // Half in the user's namespace (allowed), half elsewhere (no opinion after looking at every grant).
    const namespace = d % 2 === 0 ? `ns${i % 100}` : `ns${(i + 1) % 100}`;
    const attrs: Attributes = { user, resourceRequest: true, verb: 'get', path: '', apiGroup: '', apiVersion: 'v1', resource: 'configmaps', subresource: '', namespace, name: 'c' };
    const started = process.hrtime.bigint();
    if (policy.authorize(attrs).decision === 'allow') allowed++;
    samples.push(Number(process.hrtime.bigint() - started) / 1000);
  }
  samples.sort((a, b) => a - b);
  const at = (p: number): number => Math.round((samples[Math.min(samples.length - 1, Math.floor((p / 100) * samples.length))] ?? 0) * 100) / 100;
  return { objects: pairs * 2, p50Us: at(50), p99Us: at(99), allowed };
}
