import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest, type HttpResponse } from './http';

/**
 * Pods going away, end to end: graceful deletion (a bound pod is only
 * marked; `kubectl delete --grace-period=0 --force` removes it), the
 * PodDisruptionBudget kept by the disruption controller, and the eviction
 * subresource as `kubectl drain` uses it. There is no kubelet: pods are
 * bound by spec.nodeName and made Running and Ready through their status.
 */
describe('graceful deletion, disruption budgets and eviction', () => {
  let env: Environment;
  const NS = 'shop';
  const pods = `/api/v1/namespaces/${NS}/pods`;
  const budgets = `/apis/policy/v1/namespaces/${NS}/poddisruptionbudgets`;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input, timeoutMs: 40_000 } : { timeoutMs: 40_000 });
  const http = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResponse> =>
    adminRequest(env, method, p, body === undefined ? undefined : JSON.stringify(body), headers);
  const merge = { 'content-type': 'application/merge-patch+json' };

  /** A pod's readiness as a kubelet would report it: Running, Ready or not. */
  async function setReady(name: string, ready: boolean): Promise<void> {
    const status = { status: { phase: 'Running', conditions: [{ type: 'Ready', status: ready ? 'True' : 'False' }] } };
    expect((await http('PATCH', `${pods}/${name}/status`, status, merge)).status).toBe(200);
  }

  /** A pod bound to `node` (or to none), made Running and Ready (or not). */
  async function runningPod(name: string, node: string | undefined, labels: Record<string, string> = { app: 'web' }, ready = true): Promise<void> {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name, labels }, spec: { ...(node ? { nodeName: node } : {}), containers: [{ name: 'c', image: 'nginx:1.25' }] } };
    expect((await http('POST', pods, pod)).status).toBe(201);
    await setReady(name, ready);
  }

  const budgetStatus = async (): Promise<Record<string, unknown>> => ((await http('GET', `${budgets}/web`)).json()['status'] as Record<string, unknown> | undefined) ?? {};
  const waitForAllowed = (allowed: number, healthy: number) =>
    until(async () => {
      const status = await budgetStatus();
      return status['disruptionsAllowed'] === allowed && status['currentHealthy'] === healthy ? status : undefined;
    });
  const podNames = async (node: string): Promise<string[]> =>
    ((await http('GET', `${pods}?fieldSelector=spec.nodeName=${node}`)).json()['items'] as Array<{ metadata: { name: string } }>).map((p) => p.metadata.name).sort();

  beforeAll(async () => {
    env = await startEnvironment();
    expect((await http('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } })).status).toBe(201);
    for (const node of ['n1', 'n2']) expect((await http('POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: node } })).status).toBe(201);
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('an unbound pod is deleted at once; a bound one is marked with its grace period until deleted with --grace-period=0 --force', async () => {
    await runningPod('loose', undefined, { app: 'batch' });
    expect((await kubectl(['delete', 'pod', 'loose', '-n', NS])).code).toBe(0);
    expect((await http('GET', `${pods}/loose`)).status).toBe(404);

    await runningPod('bound', 'n2', { app: 'batch' });
    const marked = await kubectl(['delete', 'pod', 'bound', '-n', NS, '--wait=false']);
    expect(marked.code).toBe(0);
    const meta = (await http('GET', `${pods}/bound`)).json()['metadata'] as Record<string, unknown>;
    expect(meta['deletionGracePeriodSeconds']).toBe(30);
    expect(Date.parse(String(meta['deletionTimestamp'])) - Date.now()).toBeGreaterThan(20_000);
    expect((await kubectl(['get', 'pod', 'bound', '-n', NS, '--no-headers'])).stdout).toMatch(/Terminating/);
    // Its status may still be written while it terminates.
    expect((await http('PATCH', `${pods}/bound/status`, { status: { message: 'stopping' } }, merge)).status).toBe(200);

    const forced = await kubectl(['delete', 'pod', 'bound', '-n', NS, '--grace-period=0', '--force']);
    expect(forced.code).toBe(0);
    expect(forced.stderr).toMatch(/Immediate deletion does not wait for confirmation/);
    expect((await http('GET', `${pods}/bound`)).status).toBe(404);
  });

  test('a budget with both minAvailable and maxUnavailable, or an invalid selector, is 422 naming the field', async () => {
    const both = await http('POST', budgets, { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'bad' }, spec: { minAvailable: 1, maxUnavailable: 1 } });
    expect(both.status).toBe(422);
    expect(String(both.json()['message'])).toMatch(/spec: Invalid value: .*minAvailable and maxUnavailable cannot be both set/);
    const selector = await http('POST', budgets, { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'bad' }, spec: { minAvailable: 1, selector: { matchExpressions: [{ key: 'app', operator: 'In' }] } } });
    expect(selector.status).toBe(422);
    expect(selector.json()).toMatchObject({ reason: 'Invalid', details: { causes: [expect.objectContaining({ field: 'spec.selector.matchExpressions[0].values' })] } });
  });

  test('kubectl drain evicts as far as the budget allows, then completes once more pods are healthy; an eviction the budget refuses is 429', async () => {
    await runningPod('w1', 'n1');
    await runningPod('w2', 'n1');
    await runningPod('w3', 'n2');
    const pdb = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web' }, spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } } };
    expect((await kubectl(['apply', '-n', NS, '-f', '-'], JSON.stringify(pdb))).code).toBe(0);
    const first = await waitForAllowed(1, 3);
    expect(first).toMatchObject({ desiredHealthy: 2, expectedPods: 3, observedGeneration: 1, conditions: [expect.objectContaining({ type: 'DisruptionAllowed', status: 'True', reason: 'SufficientPods' })] });
    expect((await kubectl(['get', 'pdb', 'web', '-n', NS, '--no-headers'])).stdout).toMatch(/^web\s+2\s+N\/A\s+1\s/);

    // One pod of n1 may go; the second is refused until the drain gives up.
    const blocked = await kubectl(['drain', 'n1', '--grace-period=0', '--force', '--timeout=3s']);
    expect(blocked.code).not.toBe(0);
    expect(blocked.stderr).toMatch(/Cannot evict pod as it would violate the pod's disruption budget/);
    expect(await podNames('n1')).toHaveLength(1);
    expect((await http('GET', '/api/v1/nodes/n1')).json()['spec']).toMatchObject({ unschedulable: true });
    await waitForAllowed(0, 2);

    // The refusal as the API gives it.
    const refused = await http('POST', `${pods}/w3/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'w3' } });
    expect(refused.status).toBe(429);
    expect(refused.json()).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'TooManyRequests',
      code: 429,
      message: "Cannot evict pod as it would violate the pod's disruption budget.",
      details: { causes: [{ reason: 'DisruptionBudget', message: 'The disruption budget web needs 2 healthy pods and has 2 currently' }] },
    });

    // Another healthy pod elsewhere: the drain completes.
    await runningPod('w4', 'n2');
    await waitForAllowed(1, 3);
    const drained = await kubectl(['drain', 'n1', '--grace-period=0', '--force', '--timeout=15s']);
    expect(`${drained.code} ${drained.stderr}`).toMatch(/^0 /);
    expect(drained.stdout).toMatch(/evicted/);
    expect(await podNames('n1')).toEqual([]);
    await waitForAllowed(0, 2);
  }, 60_000);

  test('an eviction the budget allows deletes the pod gracefully (a dry run and policy/v1beta1 too); a missing pod is 404', async () => {
    await runningPod('w5', 'n2');
    await waitForAllowed(1, 3);
    const dry = await http('POST', `${pods}/w5/eviction?dryRun=All`, { apiVersion: 'policy/v1beta1', kind: 'Eviction', metadata: { name: 'w5' } });
    expect([dry.status, dry.json()['status']]).toEqual([201, 'Success']);
    expect((await http('GET', `${pods}/w5`)).json()['metadata']).not.toHaveProperty('deletionTimestamp');
    expect((await budgetStatus())['disruptionsAllowed']).toBe(1);

    const evicted = await http('POST', `${pods}/w5/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'w5' } });
    expect([evicted.status, evicted.json()]).toEqual([201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' }]);
    // A bound pod is given its grace period: it terminates, and the budget counts it out.
    expect((await http('GET', `${pods}/w5`)).json()['metadata']).toMatchObject({ deletionGracePeriodSeconds: 30 });
    await waitForAllowed(0, 2);
    expect((await kubectl(['delete', 'pod', 'w5', '-n', NS, '--grace-period=0', '--force'])).code).toBe(0);

    // The Eviction passes admission as a CREATE of pods/eviction: a policy on it refuses, and nothing is deleted.
    const policy = {
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'pinned-pods' },
      spec: {
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods/eviction'] }] },
        validations: [{ expression: "object.metadata.name != 'pinned'", message: 'pinned pods stay' }],
      },
    };
    expect((await http('POST', '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies', policy)).status).toBe(201);
    const binding = { apiVersion: 'admissionregistration.svc.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'pinned-pods' }, spec: { policyName: 'pinned-pods', validationActions: ['Deny'] } };
    expect((await http('POST', '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicybindings', binding)).status).toBe(201);
    await runningPod('pinned', undefined, { app: 'pinned' });
    const evictPinned = (query = '') => http('POST', `${pods}/pinned/eviction${query}`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'pinned' } });
    // Dry runs until the policy is in force, then the eviction itself.
    await until(async () => ((await evictPinned('?dryRun=All')).status === 201 ? undefined : true));
    const refusal = await evictPinned();
    expect(String(refusal.json()['message'])).toContain("ValidatingAdmissionPolicy 'pinned-pods' with binding 'pinned-pods' denied request: pinned pods stay");
    expect((await http('GET', `${pods}/pinned`)).status).toBe(200);

    const mismatch = await http('POST', `${pods}/w3/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'w4' } });
    expect([mismatch.status, mismatch.json()['message']]).toEqual([400, 'name in URL does not match name in Eviction object']);
    const missing = await http('POST', `${pods}/ghost/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'ghost' } });
    expect(missing.status).toBe(404);
    expect(missing.json()).toMatchObject({ reason: 'NotFound', message: 'pods "ghost" not found' });
  }, 40_000);

  test('a pod that is not Ready goes without the budget when the budget is met, or under AlwaysAllow; a pod of two budgets is a 500', async () => {
    const evict = (name: string) => http('POST', `${pods}/${name}/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name } });
    const force = async (name: string) => expect((await http('DELETE', `${pods}/${name}?gracePeriodSeconds=0`)).status).toBe(200);
    // w3 and w4 are healthy, the budget needs 2 and allows nothing; a sick pod may still go.
    await runningPod('sick', 'n2', { app: 'web' }, false);
    await waitForAllowed(0, 2);
    expect((await evict('sick')).status).toBe(201);
    expect((await http('GET', `${pods}/sick`)).json()['metadata']).toHaveProperty('deletionTimestamp');
    await force('sick');

    // With the budget not met, a sick pod is refused, unless the budget says AlwaysAllow.
    await setReady('w4', false);
    await runningPod('sick2', 'n2', { app: 'web' }, false);
    await waitForAllowed(0, 1);
    expect((await evict('sick2')).status).toBe(429);
    expect((await http('PATCH', `${budgets}/web`, { spec: { unhealthyPodEvictionPolicy: 'AlwaysAllow' } }, merge)).status).toBe(200);
    await until(async () => ((await budgetStatus())['observedGeneration'] === 2 ? true : undefined));
    expect((await evict('sick2')).status).toBe(201);
    await force('sick2');

    // An empty selector selects every pod of the namespace; a pod two budgets select cannot be evicted.
    const all = { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'all' }, spec: { maxUnavailable: 0, selector: {} } };
    expect((await http('POST', budgets, all)).status).toBe(201);
    const both = await evict('w3');
    expect([both.status, both.json()['message']]).toEqual([500, 'Internal error occurred: This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.']);
    expect((await http('GET', `${pods}/w3`)).json()['metadata']).not.toHaveProperty('deletionTimestamp');
    // maxUnavailable counts by the scale of the pods' controllers: bare pods have none, so none is expected and nothing allowed.
    const pinned = await until(async () => {
      const res = await http('GET', `${budgets}/all`);
      return (res.json()['status'] as Record<string, unknown> | undefined)?.['observedGeneration'] === 1 ? res : undefined;
    });
    expect(pinned.json()['status']).toMatchObject({ expectedPods: 0, disruptionsAllowed: 0 });
  }, 30_000);
});
