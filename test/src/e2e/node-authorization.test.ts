import * as fs from 'node:fs';
import * as path from 'node:path';
import { issueClientCertificate, kubeconfig, startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest, certRequest } from './http';

/**
 * The Node authorization mode and NodeRestriction end to end, as a node
 * agent would meet them: a client certificate with CN `system:node:n1` and
 * O `system:nodes`, kubectl and python3-kubernetes as that node, against the
 * default modes (Node, then RBAC).
 */

const PYTHON_AS_NODE = String.raw`
import json, sys
from kubernetes import client, config
from kubernetes.client.rest import ApiException
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
out = {"node": v1.read_node("n1").metadata.name}
out["secret"] = sorted(v1.read_namespaced_secret("used", "apps").data.keys())
try:
    v1.read_node("n2")
    out["other"] = 200
except ApiException as e:
    out["other"] = e.status
pods = v1.list_pod_for_all_namespaces(field_selector="spec.nodeName=n1")
out["pods"] = [p.metadata.name for p in pods.items]
# Node status as a node agent reports it: a PATCH of nodes/<name>/status.
status = {"status": {"conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready"}]}}
out["ownStatus"] = [c.type for c in v1.patch_node_status("n1", status).status.conditions]
try:
    v1.patch_node_status("n2", status)
    out["otherStatus"] = {"status": 200}
except ApiException as e:
    out["otherStatus"] = {"status": e.status, "message": json.loads(e.body)["message"]}
print(json.dumps(out))
`;

describe('Node authorization and NodeRestriction', () => {
  let env: Environment;
  let nodeConfig = '';
  let nodeCert = { cert: '', key: '' };
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input === undefined ? {} : { input });
  const asNode = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', nodeConfig, ...args], input === undefined ? {} : { input });
  const nodeManifest = (name: string) => JSON.stringify({ apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'svc.io/hostname': name } } });

  beforeAll(async () => {
    env = await startEnvironment();
    const cert = await issueClientCertificate(env.pki, 'node-n1', 'system:node:n1', ['system:nodes']);
    nodeCert = cert;
    nodeConfig = path.join(env.dir, 'node-n1.kubeconfig');
    fs.writeFileSync(nodeConfig, kubeconfig(env.url, env.pki.caCert, cert.cert, cert.key, 'system:node:n1'), { mode: 0o600 });
    for (const name of ['n1', 'n2']) expect((await kubectl(['create', '-f', '-'], nodeManifest(name))).code).toBe(0);
    expect((await kubectl(['create', 'namespace', 'apps'])).code).toBe(0);
    expect((await kubectl(['create', 'secret', 'generic', 'used', '-n', 'apps', '--from-literal=password=s3cret'])).code).toBe(0);
    expect((await kubectl(['create', 'secret', 'generic', 'unused', '-n', 'apps', '--from-literal=password=other'])).code).toBe(0);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('the node reads its own Node and not another', async () => {
    const own = await until(async () => {
      const res = await asNode(['get', 'node', 'n1', '-o', 'jsonpath={.metadata.name}']);
      return res.code === 0 ? res.stdout : undefined;
    }, 20000);
    expect(own).toBe('n1');
    const other = await asNode(['get', 'node', 'n2']);
    expect(other.code).not.toBe(0);
    expect(other.stderr).toMatch(/nodes "n2" is forbidden: User "system:node:n1" cannot get resource "nodes" in API group "": none of the authorization modes \(Node, RBAC\) allowed it; Node: node 'n1' cannot read 'n2', only its own Node object/);
    expect((await asNode(['get', 'nodes'])).stderr).toMatch(/cannot read all nodes, only its own Node object/);
  });

  test('a secret becomes readable within about a second of a pod on the node using it; others stay refused', async () => {
    const before = await asNode(['get', 'secret', 'used', '-n', 'apps']);
    expect(before.stderr).toMatch(/secrets "used" is forbidden: .*no relationship found between node 'n1' and this object/);
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'apps' }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox', env: [{ name: 'P', valueFrom: { secretKeyRef: { name: 'used', key: 'password' } } }] }] } };
    const created = await adminRequest(env, 'POST', '/api/v1/namespaces/apps/pods', JSON.stringify(pod));
    expect(created.status).toBe(201);
    const boundAt = Date.now();
    await until(async () => ((await certRequest(env, 'GET', '/api/v1/namespaces/apps/secrets/used', nodeCert)).status === 200 ? true : undefined), 10000);
    // The graph follows the change stream (polled every 200 ms); the refusal
    // just above may be reused by the gateway's decision cache for up to its
    // 1 s TTL: about a second in all.
    expect(Date.now() - boundAt).toBeLessThan(1400);
    const data = (await asNode(['get', 'secret', 'used', '-n', 'apps', '-o', 'jsonpath={.data.password}'])).stdout;
    expect(Buffer.from(data, 'base64').toString()).toBe('s3cret');
    const unused = await asNode(['get', 'secret', 'unused', '-n', 'apps']);
    expect(unused.stderr).toMatch(/secrets "unused" is forbidden/);
    // Pods: its own by name, and lists only of those bound to it.
    expect((await asNode(['get', 'pod', 'web', '-n', 'apps', '-o', 'name'])).stdout.trim()).toBe('pod/web');
    expect((await asNode(['get', 'pods', '-A', '--field-selector=spec.nodeName=n1', '-o', 'name'])).stdout.trim()).toBe('pod/web');
    expect((await asNode(['get', 'pods', '-A'])).stderr).toMatch(/can only list\/watch pods with spec.nodeName field selector/);
  });

  test('NodeRestriction: the node may not change its taints or create pods other than mirror pods bound to itself', async () => {
    // Its taints are not its own to change.
    const taint = await asNode(['taint', 'node', 'n1', 'dedicated=x:NoSchedule']);
    expect(taint.stderr).toMatch(/NodeRestriction: node "n1" is not allowed to modify taints/);
    // Only mirror pods, bound to itself.
    const plain = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'sneaky', namespace: 'apps' }, spec: { nodeName: 'n1', containers: [{ name: 'c', image: 'busybox' }] } };
    expect((await asNode(['create', '-f', '-'], JSON.stringify(plain))).stderr).toMatch(/NodeRestriction: pod does not have "svc.io\/config.mirror" annotation/);
    // A mirror pod of its own is created (the ServiceAccount plugin gives it no account), and deleted.
    const mirror = { ...plain, metadata: { name: 'static-web-n1', namespace: 'apps', annotations: { 'svc.io/config.mirror': 'hash' } } };
    const created = await asNode(['create', '-f', '-', '-o', 'jsonpath={.spec.serviceAccountName}'], JSON.stringify(mirror));
    expect(created.stderr).toBe('');
    expect(created.stdout).toBe('');
    expect((await asNode(['create', '-f', '-'], JSON.stringify({ ...mirror, metadata: { ...mirror.metadata, name: 'static-elsewhere' }, spec: { ...mirror.spec, nodeName: 'n2' } }))).stderr).toMatch(
      /NodeRestriction: node "n1" can only create pods with spec.nodeName set to itself/,
    );
    // As a kubelet removes a mirror pod: at once (grace 0), since a bound pod is otherwise deleted gracefully.
    expect((await asNode(['delete', 'pod', 'static-web-n1', '-n', 'apps', '--grace-period=0', '--force'])).code).toBe(0);
  });

  test('a SubjectAccessReview carries the field selector of the question to the Node mode', async () => {
    const review = async (rawSelector?: string) => {
      const body = {
        apiVersion: 'authorization.svc.io/v1',
        kind: 'SubjectAccessReview',
        spec: { user: 'system:node:n1', groups: ['system:nodes', 'system:authenticated'], resourceAttributes: { verb: 'list', resource: 'pods', version: 'v1', ...(rawSelector ? { fieldSelector: { rawSelector } } : {}) } },
      };
      const res = await adminRequest(env, 'POST', '/apis/authorization.svc.io/v1/subjectaccessreviews', JSON.stringify(body));
      expect(res.status).toBe(201);
      return res.json()['status'] as { allowed: boolean; reason?: string };
    };
    expect((await review('spec.nodeName=n1')).allowed).toBe(true);
    expect((await review('spec.nodeName=n2')).allowed).toBe(false);
    expect(await review()).toMatchObject({ allowed: false, reason: expect.stringContaining('can only list/watch pods with spec.nodeName field selector') });
  });

  test('python3-kubernetes as the node: its Node, its secret, its pods, and NodeRestriction refusing another node\'s status', async () => {
    const script = path.join(env.dir, 'as-node.py');
    fs.writeFileSync(script, PYTHON_AS_NODE);
    const res = await run('/usr/bin/python3', [script, nodeConfig], { timeoutMs: 40000 });
    expect(res.stderr).toBe('');
    expect(JSON.parse(res.stdout)).toEqual({
      node: 'n1',
      secret: ['password'],
      other: 403,
      pods: ['web'],
      ownStatus: ['Ready'],
      otherStatus: { status: 403, message: 'nodes "n2" is forbidden: NodeRestriction: node "n1" is not allowed to modify node "n2"' },
    });
  });
});
