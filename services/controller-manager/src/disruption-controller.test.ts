import type { ApiObject } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import type { WatchEvent } from './client';
import { budgetStatus, countBudget, DisruptionController, type ScaleReader } from './disruption-controller';
import type { RecordedEvent } from './event-recorder';
import { SharedInformerFactory } from './informer';
import { FakeClock, settle } from './testing/fake-clock';

const NOW = new Date('2024-05-01T10:00:00Z');

function pod(name: string, opts: { ready?: boolean; labels?: Record<string, string>; namespace?: string; deleting?: boolean; owner?: string } = {}): ApiObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: opts.namespace ?? 'apps',
      labels: opts.labels ?? { app: 'web' },
      ...(opts.deleting ? { deletionTimestamp: '2024-05-01T09:59:00Z' } : {}),
      ...(opts.owner ? { ownerReferences: [{ apiVersion: 'example.com/v1', kind: 'Widget', name: opts.owner, uid: `uid-${opts.owner}`, controller: true }] } : {}),
    },
    status: { conditions: [{ type: 'Ready', status: opts.ready === false ? 'False' : 'True' }] },
  };
}

function budget(spec: Record<string, unknown>, status?: Record<string, unknown>): ApiObject {
  return { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', metadata: { name: 'web', namespace: 'apps', generation: 2, resourceVersion: '7' }, spec: { selector: { matchLabels: { app: 'web' } }, ...spec }, ...(status ? { status } : {}) };
}

const noScale: ScaleReader = async () => {
  throw new Error('no scale expected');
};

describe('countBudget', () => {
  test('integer minAvailable: expected is the pods selected in the namespace, healthy the Ready ones not terminating', async () => {
    const pods = [pod('a'), pod('b'), pod('c', { ready: false }), pod('d', { deleting: true }), pod('e', { labels: { app: 'db' } }), pod('f', { namespace: 'other' })];
    expect(await countBudget(budget({ minAvailable: 2 }), pods, NOW, noScale)).toEqual({ currentHealthy: 2, desiredHealthy: 2, expectedPods: 4, disruptedPods: {} });
  });

  test('an empty selector selects every pod of the namespace', async () => {
    const b = budget({ minAvailable: 1 });
    (b['spec'] as Record<string, unknown>)['selector'] = {};
    const counts = await countBudget(b, [pod('a'), pod('e', { labels: { app: 'db' } }), pod('f', { namespace: 'other' })], NOW, noScale);
    expect([counts.expectedPods, counts.currentHealthy]).toEqual([2, 2]);
  });

  test('maxUnavailable and percentages use the scale of the pods’ controllers, once each; unmanaged pods are not expected', async () => {
    const asked: string[] = [];
    const readScale: ScaleReader = async (namespace, c) => {
      asked.push(`${namespace}/${c.kind}/${c.name}`);
      return 4;
    };
    const pods = [pod('a', { owner: 'w' }), pod('b', { owner: 'w' }), pod('c', { owner: 'w' }), pod('loose')];
    expect(await countBudget(budget({ maxUnavailable: '25%' }), pods, NOW, readScale)).toMatchObject({ expectedPods: 4, desiredHealthy: 3, currentHealthy: 4 });
    expect(asked).toEqual(['apps/Widget/w']);
    expect(await countBudget(budget({ minAvailable: '30%' }), pods, NOW, readScale)).toMatchObject({ expectedPods: 4, desiredHealthy: 2 });
    expect(await countBudget(budget({ maxUnavailable: 1 }), [pod('loose')], NOW, readScale)).toMatchObject({ expectedPods: 0, desiredHealthy: 0 });
  });

  test('disrupted pods are not healthy until they go; entries of gone, terminating or expired pods are dropped', async () => {
    const granted = { a: '2024-05-01T09:59:30Z', gone: '2024-05-01T09:59:30Z', d: '2024-05-01T09:59:30Z', old: '2024-05-01T09:50:00Z' };
    const counts = await countBudget(budget({ minAvailable: 1 }, { disruptedPods: granted }), [pod('a'), pod('b'), pod('d', { deleting: true }), pod('old')], NOW, noScale);
    expect(counts.disruptedPods).toEqual({ a: '2024-05-01T09:59:30Z' });
    expect(counts.currentHealthy).toBe(2);
    expect(counts.recheckAt).toBe(Date.parse('2024-05-01T10:01:30Z'));
  });
});

describe('budgetStatus', () => {
  test('allows currentHealthy - desiredHealthy, with the DisruptionAllowed condition and the generation observed', () => {
    const status = budgetStatus(budget({ minAvailable: 2 }), { currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptedPods: {} }, NOW);
    expect(status).toEqual({
      currentHealthy: 3,
      desiredHealthy: 2,
      expectedPods: 3,
      disruptionsAllowed: 1,
      observedGeneration: 2,
      conditions: [{ type: 'DisruptionAllowed', status: 'True', reason: 'SufficientPods', message: '', observedGeneration: 2, lastTransitionTime: '2024-05-01T10:00:00Z' }],
    });
  });

  test('never negative, 0 when no pod is expected; a failure allows nothing and says why', () => {
    expect(budgetStatus(budget({}), { currentHealthy: 1, desiredHealthy: 3, expectedPods: 3, disruptedPods: {} }, NOW)).toMatchObject({ disruptionsAllowed: 0, conditions: [{ status: 'False', reason: 'InsufficientPods' }] });
    expect(budgetStatus(budget({}), { currentHealthy: 2, desiredHealthy: 0, expectedPods: 0, disruptedPods: {} }, NOW)['disruptionsAllowed']).toBe(0);
    expect(budgetStatus(budget({}, { disruptionsAllowed: 3 }), { failure: 'Widget of example.com/v1 has no scale subresource' }, NOW)).toMatchObject({
      disruptionsAllowed: 0,
      conditions: [{ status: 'False', reason: 'SyncFailed', message: 'Widget of example.com/v1 has no scale subresource' }],
    });
  });

  test('an unchanged condition keeps its transition time', () => {
    const first = budgetStatus(budget({}), { currentHealthy: 3, desiredHealthy: 2, expectedPods: 3, disruptedPods: {} }, NOW);
    const later = budgetStatus(budget({}, first), { currentHealthy: 4, desiredHealthy: 2, expectedPods: 4, disruptedPods: {} }, new Date('2024-05-01T11:00:00Z'));
    expect((later['conditions'] as Array<Record<string, unknown>>)[0]?.['lastTransitionTime']).toBe('2024-05-01T10:00:00Z');
  });
});

describe('the disruption controller', () => {
  const quiet = createLogger('test', { write: () => undefined });

  test('writes the status of a budget from the pods it selects, with the budget’s resourceVersion; a current status is not written again', async () => {
    const writes: Array<{ path: string; body: ApiObject }> = [];
    const current = budget({ minAvailable: 1 }, budgetStatus(budget({ minAvailable: 1 }), { currentHealthy: 2, desiredHealthy: 1, expectedPods: 3, disruptedPods: {} }, NOW));
    const budgets = [budget({ minAvailable: 1 }), { ...current, metadata: { ...current.metadata, name: 'done' } }];
    const client = {
      request: async <T>(method: string, path: string, body?: unknown): Promise<T> => {
        if (method === 'PUT') {
          writes.push({ path, body: body as ApiObject });
          return body as T;
        }
        const items = path.includes('poddisruptionbudgets') ? budgets : [pod('a'), pod('b'), pod('c', { ready: false })];
        return { metadata: { resourceVersion: '10' }, items } as T;
      },
      watch: (_path: string, _onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> => new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
    };
    const factory = new SharedInformerFactory(client, quiet, { resyncMs: 30_000, clock: new FakeClock() });
    const controller = new DisruptionController(client, factory, quiet, { now: () => NOW });
    controller.start();
    factory.start();
    await settle();
    await settle();
    expect(controller.synced).toBe(true);
    // Each pod's arrival may queue the budget again before the watch brings the written status back.
    expect([...new Set(writes.map((w) => w.path))]).toEqual(['/apis/policy/v1/namespaces/apps/poddisruptionbudgets/web/status']);
    expect(writes[0]?.body.metadata?.resourceVersion).toBe('7');
    expect(writes[0]?.body['status']).toMatchObject({ currentHealthy: 2, desiredHealthy: 1, expectedPods: 3, disruptionsAllowed: 1, observedGeneration: 2 });
    await controller.stop();
    await factory.stop();
  });
});

describe('the disruption controller’s events', () => {
  const quiet = createLogger('test', { write: () => undefined });

  test('reports NoPods for a budget that selects nothing and CalculateExpectedPodCountFailed when the scale cannot be read, on the budget', async () => {
    const recorded: RecordedEvent[] = [];
    const empty = { ...budget({ minAvailable: 1, selector: { matchLabels: { app: 'db' } } }), metadata: { name: 'empty', namespace: 'apps', generation: 1, resourceVersion: '7', uid: 'uid-empty' } };
    const scaled = { ...budget({ maxUnavailable: 1 }), metadata: { name: 'scaled', namespace: 'apps', generation: 1, resourceVersion: '8', uid: 'uid-scaled' } };
    const client = {
      request: async <T>(method: string, path: string, body?: unknown): Promise<T> => {
        if (method === 'PUT') return body as T;
        const items = path.includes('poddisruptionbudgets') ? [empty, scaled] : [pod('a', { owner: 'w' })];
        return { metadata: { resourceVersion: '10' }, items } as T;
      },
      watch: (_path: string, _onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> => new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
    };
    const factory = new SharedInformerFactory(client, quiet, { resyncMs: 30_000, clock: new FakeClock() });
    const events = { record: async (e: RecordedEvent) => void recorded.push(e) };
    const controller = new DisruptionController(client, factory, quiet, { now: () => NOW, events });
    controller.start();
    factory.start();
    await settle();
    await settle();
    const byBudget = new Map(recorded.map((e) => [e.regarding.name, e]));
    expect(byBudget.get('empty')).toEqual({
      regarding: { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', namespace: 'apps', name: 'empty', uid: 'uid-empty' },
      type: 'Normal',
      reason: 'NoPods',
      action: 'CountPods',
      note: 'No matching pods found',
    });
    expect(byBudget.get('scaled')).toMatchObject({ type: 'Warning', reason: 'CalculateExpectedPodCountFailed', note: expect.stringContaining('Failed to calculate the number of expected pods: Widget of example.com/v1 has no scale subresource') });
    await controller.stop();
    await factory.stop();
  });
});
