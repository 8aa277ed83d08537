import { podReferences, type ApiObject } from '@svc/apimachinery';
import { NodeGraph } from './node-graph';

const pod = (name: string, node: string, spec: Record<string, unknown> = {}, namespace = 'ns', status: Record<string, unknown> = {}): ApiObject => ({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name, namespace },
  spec: { ...(node ? { nodeName: node } : {}), containers: [{ name: 'c', image: 'i' }], ...spec },
  status,
});

describe('the secrets, config maps and claims a pod names', () => {
  test.each<[string, Record<string, unknown>, string]>([
    ['a secret volume', { volumes: [{ name: 'v', secret: { secretName: 's1' } }] }, 'secret/s1'],
    ['env valueFrom secretKeyRef', { containers: [{ name: 'c', env: [{ name: 'E', valueFrom: { secretKeyRef: { name: 's2', key: 'k' } } }] }] }, 'secret/s2'],
    ['envFrom secretRef', { containers: [{ name: 'c', envFrom: [{ secretRef: { name: 's3' } }] }] }, 'secret/s3'],
    ['imagePullSecrets', { imagePullSecrets: [{ name: 's4' }] }, 'secret/s4'],
    ['a projected secret', { volumes: [{ name: 'v', projected: { sources: [{ secret: { name: 's5' } }, { configMap: { name: 'c5' } }] } }] }, 'secret/s5,configmap/c5'],
    ['an init container envFrom configMapRef', { initContainers: [{ name: 'i', envFrom: [{ configMapRef: { name: 'c1' } }] }] }, 'configmap/c1'],
    ['an ephemeral container configMapKeyRef', { ephemeralContainers: [{ name: 'e', env: [{ name: 'E', valueFrom: { configMapKeyRef: { name: 'c2', key: 'k' } } }] }] }, 'configmap/c2'],
    ['a config map volume', { volumes: [{ name: 'v', configMap: { name: 'c3' } }] }, 'configmap/c3'],
    ['a storage plugin secretRef', { volumes: [{ name: 'v', rbd: { secretRef: { name: 's6' } } }, { name: 'w', csi: { driver: 'd', nodePublishSecretRef: { name: 's7' } } }] }, 'secret/s6,secret/s7'],
    ['a claim and an ephemeral volume', { volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'pvc1' } }, { name: 'scratch', ephemeral: { volumeClaimTemplate: {} } }] }, 'persistentvolumeclaim/pvc1,persistentvolumeclaim/p-scratch'],
    ['a service account', { serviceAccountName: 'runner' }, 'serviceaccount/runner'],
    ['a resource claim', { resourceClaims: [{ name: 'gpu', resourceClaimName: 'rc1' }] }, 'resourceclaim/rc1'],
  ])('%s', (_what, spec, expected) => {
    const refs = podReferences(pod('p', 'n1', spec)).map((r) => `${r.kind}/${r.name}`);
    expect(refs).toEqual(expected.split(','));
  });

  test('a claim generated from a template is named in the status', () => {
    expect(podReferences(pod('p', 'n1', {}, 'ns', { resourceClaimStatuses: [{ name: 'gpu', resourceClaimName: 'p-gpu-x1' }] }))).toEqual([{ kind: 'resourceclaim', name: 'p-gpu-x1' }]);
  });
});

describe('the node graph', () => {
  const volumes = (secret: string) => ({ volumes: [{ name: 'v', secret: { secretName: secret } }] });

  test('a pod bound to a node relates it to the pod and what the pod uses, in the pod namespace only', () => {
    const g = new NodeGraph();
    g.apply('Pod', pod('p1', 'n1', volumes('s1')));
    expect(g.hasPath('n1', 'secret', 'ns', 's1')).toBe(true);
    expect(g.hasPath('n1', 'pod', 'ns', 'p1')).toBe(true);
    expect(g.hasPath('n1', 'secret', 'other', 's1')).toBe(false);
    expect(g.hasPath('n2', 'secret', 'ns', 's1')).toBe(false);
    expect(g.hasPath('n1', 'configmap', 'ns', 's1')).toBe(false);
  });

  test('a pod not yet bound relates nothing; binding it adds its edges', () => {
    const g = new NodeGraph();
    g.apply('Pod', pod('p1', '', volumes('s1')));
    expect(g.hasPath('n1', 'secret', 'ns', 's1')).toBe(false);
    expect(g.size).toEqual({ pods: 0, nodes: 0, edges: 0 });
    g.apply('Pod', pod('p1', 'n1', volumes('s1')));
    expect(g.hasPath('n1', 'secret', 'ns', 's1')).toBe(true);
  });

  test('a pod moved to another node moves its edges', () => {
    const g = new NodeGraph();
    g.apply('Pod', pod('p1', 'n1', volumes('s1')));
    g.apply('Pod', pod('p1', 'n2', volumes('s1')));
    expect(g.hasPath('n1', 'secret', 'ns', 's1')).toBe(false);
    expect(g.hasPath('n1', 'pod', 'ns', 'p1')).toBe(false);
    expect(g.hasPath('n2', 'secret', 'ns', 's1')).toBe(true);
  });

  test('a pod changed to use another secret drops the old edge', () => {
    const g = new NodeGraph();
    g.apply('Pod', pod('p1', 'n1', volumes('s1')));
    g.apply('Pod', pod('p1', 'n1', volumes('s2')));
    expect(g.hasPath('n1', 'secret', 'ns', 's1')).toBe(false);
    expect(g.hasPath('n1', 'secret', 'ns', 's2')).toBe(true);
  });

  test('a secret two pods use stays related until the last of them is deleted', () => {
    const g = new NodeGraph();
    g.apply('Pod', pod('p1', 'n1', volumes('shared')));
    g.apply('Pod', pod('p2', 'n1', { ...volumes('shared'), imagePullSecrets: [{ name: 'shared' }] }));
    g.apply('Pod', { metadata: { name: 'p1', namespace: 'ns' } }, true);
    expect(g.hasPath('n1', 'secret', 'ns', 'shared')).toBe(true);
    expect(g.hasPath('n1', 'pod', 'ns', 'p1')).toBe(false);
    g.apply('Pod', { metadata: { name: 'p2', namespace: 'ns' } }, true);
    expect(g.hasPath('n1', 'secret', 'ns', 'shared')).toBe(false);
    expect(g.size).toEqual({ pods: 0, nodes: 0, edges: 0 });
  });

  test('clear forgets everything; other kinds are ignored', () => {
    const g = new NodeGraph();
    g.apply('Pod', pod('p1', 'n1', volumes('s1')));
    g.apply('Secret', { metadata: { name: 's9', namespace: 'ns' } });
    expect(g.size).toEqual({ pods: 1, nodes: 1, edges: 2 });
    g.clear();
    expect(g.hasPath('n1', 'secret', 'ns', 's1')).toBe(false);
  });
});
