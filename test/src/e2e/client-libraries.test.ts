import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run } from './helpers';

const fixtures = path.join(__dirname, '..', '..', 'fixtures');
/** A MicroTime as the original server writes one (Go's MicroTime parser needs all six digits). */
const MICRO_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z$/;
/** A Time as the original server writes one: UTC, whole seconds. */
const TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$/;

/** The object a fixture printed as JSON; its stderr when it failed, so the failure names the call. */
function report(res: { code: number; stdout: string; stderr: string }): Record<string, unknown> {
  expect(`exit ${res.code} ${res.stderr}`).toBe('exit 0 ');
  return JSON.parse(res.stdout) as Record<string, unknown>;
}

/**
 * The official client libraries, unchanged, used as controllers use them:
 * what clients.test.ts (plain CRUD, a watch) and the service-account and
 * watch-resilience suites do not already cover. Both run at once, each in
 * its own namespace.
 */
describe('client libraries as controllers use them', () => {
  let env: Environment;
  let python: Record<string, unknown>;
  let node: Record<string, unknown>;

  beforeAll(async () => {
    env = await startEnvironment({ crds: [path.join(fixtures, 'crds')] });
    const [py, js] = await Promise.all([
      run('/usr/bin/python3', [path.join(fixtures, 'python-controller.py'), env.kubeconfigPath, 'from-python'], { timeoutMs: 60000 }),
      run(process.execPath, [path.join(fixtures, 'client-node-controller.mjs'), env.kubeconfigPath, 'from-node'], { timeoutMs: 60000 }),
    ]);
    python = report(py);
    node = report(js);
  }, 90000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test("python3-kubernetes: every patch type, delete options, selectors and paging with remainingItemCount", () => {
    expect(python['patched']).toEqual({ data: { c: '3', d: '4' }, finalizers: null });
    expect(python['deleteWrongUid']).toMatchObject({ status: 409, reason: 'Conflict', message: expect.stringContaining('Precondition failed: UID in precondition: not-its-uid') });
    expect(python['deleted']).toEqual({ kind: 'V1Status', status: 'Success' });
    expect(python['labelSelected']).toEqual(['item-1', 'item-3']);
    expect(python['fieldSelected']).toEqual(['item-2', 'item-4']);
    expect(python['pages']).toEqual([
      { names: ['item-0', 'item-1'], remaining: 3 },
      { names: ['item-2', 'item-3'], remaining: 1 },
      { names: ['item-4'], remaining: null },
    ]);
  });

  test('python3-kubernetes: a watch from a resourceVersion; from a compacted one 410, then list and resume', () => {
    expect(python['watched']).toEqual(['MODIFIED:item-0', 'DELETED:item-1']);
    expect(python['staleWatch']).toBe(410);
    expect(python['resumed']).toBe("MODIFIED:item-2:{'v': '2'}");
  });

  test('python3-kubernetes: a CRD installed through ApiextensionsV1Api, its status subresource, a cluster-wide list', () => {
    expect(python['crdConditions']).toMatchObject({ NamesAccepted: 'True', Established: 'True' });
    // The status subresource ignores the spec it is sent.
    expect(python['statusPatched']).toEqual({ spec: { size: 1 }, status: { ready: true } });
    expect(python['gadgets']).toEqual({ kind: 'GadgetList', items: ['from-python/g1'] });
  });

  test('python3-kubernetes: RBAC under rbac.authorization.k8s.io grants what it says, a binding replaced with its roleRef in another order; discovery, version, events', () => {
    expect(python['rbac']).toEqual({ role: 'rbac.authorization.k8s.io/v1', binding: 'rbac.authorization.k8s.io' });
    expect(python['bindingReplaced']).toEqual({ replaced: 'yes' });
    // A failure names the group as the client did.
    expect(python['missingBinding']).toEqual({ status: 404, reason: 'NotFound', message: 'rolebindings.rbac.authorization.k8s.io "missing" not found', group: 'rbac.authorization.k8s.io' });
    expect(python['allowed']).toBe(true);
    expect(python['groups']).toEqual(expect.arrayContaining(['rbac.authorization.k8s.io', 'coordination.k8s.io', 'events.k8s.io', 'apiextensions.k8s.io', 'from-python.example.org']));
    expect(python['version']).toEqual({ major: '1', minor: expect.stringMatching(/^\d+$/) });
    expect(python['eventsAbout']).toEqual(['core-ev', 'ev']);
  });

  test('python3-kubernetes: datetimes sent with "+00:00" come back as the original writes them; a stale Lease update is 409', () => {
    const sent = String(python['sentRenewTime']);
    const lease = python['lease'] as Record<string, unknown>;
    expect(lease['acquireTime']).toMatch(MICRO_TIME);
    expect(lease['acquireTime']).toBe(sent.replace('+00:00', 'Z'));
    // Renewed at a whole second: isoformat() then sends no fraction at all.
    expect(lease['renewTime']).toBe(`${sent.slice(0, 19)}.000000Z`);
    expect(lease['holderIdentity']).toBe('b');
    expect(python['staleLease']).toBe(409);
    expect(python['event']).toBe(sent.replace('+00:00', 'Z'));
    expect(python['coreEvent']).toMatch(TIME);
    expect(python['coreEvent']).toBe(`${sent.slice(0, 19)}Z`);
  });

  test('python3-kubernetes: server-side apply through the dynamic client, a conflict, then force', () => {
    expect(python['applyConflict']).toEqual({ status: 409, reason: 'Conflict', message: 'Apply failed with 1 conflict: conflict with "first": .data.owner' });
    expect(python['forced']).toEqual({ data: { owner: 'second' }, managers: [['second', 'Apply']] });
  });

  test('client-node: patch types by setHeaderOptions, and KubernetesObjectApi create, read, patch, apply, list pages, delete', () => {
    expect(node['typed']).toEqual({ data: { b: '2', c: '3', d: '4', e: '5' }, managers: [['node-apply', 'Apply'], ['node-fetch', 'Update']] });
    expect(node['genericRead']).toEqual({ x: '1' });
    expect(node['genericMerge']).toEqual({ x: '1', y: '2' });
    expect(node['genericApplyCreate']).toEqual({ owner: 'one' });
    expect(node['genericApplyConflict']).toEqual({ code: 409, reason: 'Conflict', message: 'Apply failed with 1 conflict: conflict with "one": .data.owner' });
    expect(node['genericApplyForced']).toEqual({ owner: 'two' });
    expect(node['genericPages']).toEqual([['g1'], ['g2'], null]);
    expect(node['genericDelete']).toBe('Success');
    expect(node['genericRole']).toEqual(['rbac.authorization.k8s.io/v1', 'Role', [{ apiGroups: [''], resources: ['pods'], verbs: ['get'] }]]);
  });

  test("client-node: a Date's milliseconds are written back as a six-digit MicroTime", () => {
    const sent = String(node['sentRenewTime']);
    const written = sent.replace(/\.(\d{3})Z$/, '.$1000Z');
    expect(node['lease']).toMatchObject({ acquireTime: written, renewTime: written });
    expect(node['eventTime']).toBe(written);
    expect(written).toMatch(MICRO_TIME);
  });

  test('client-node: status subresource, cluster-wide custom list, 410 on a stale watch, an informer with a label selector', () => {
    expect(node['statusPatched']).toEqual({ spec: { size: 1, color: 'red' }, status: { ready: true } });
    expect(node['widgets']).toEqual(['WidgetList', ['from-node/w']]);
    expect(node['staleWatch']).toEqual({ events: [['ERROR', 410, 'Expired']], ended: 'done' });
    // `before` had its label changed away: the informer sees it deleted, as from the original server.
    expect(node['informer']).toEqual({ seen: ['add:before', 'add:after', 'update:after', 'delete:before', 'delete:after'], cached: [] });
  });
});
