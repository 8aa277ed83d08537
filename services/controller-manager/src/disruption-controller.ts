import { ApiError, labelSelectorFromObject, rfc3339, type ApiObject, type LabelSelectorObject } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import { EventRecorder, referenceTo, type RecordedEvent } from './event-recorder';
import { objectKey, type SharedInformer, type SharedInformerFactory } from './informer';
import { runWorkers, WorkQueue, type SyncResult, type WorkQueueOptions } from './work-queue';

/**
 * The disruption controller: keeps the status of every PodDisruptionBudget
 * (policy/v1) from the pods its selector picks in its namespace (an empty
 * selector picks them all), as the original's controller computes it:
 *
 * - `currentHealthy`: pods that are Ready, not terminating and not among
 *   `disruptedPods` (evictions granted that the controller has not seen
 *   happen yet; an entry is dropped when its pod is gone or terminating, or
 *   after two minutes);
 * - `expectedPods` and `desiredHealthy`: with an integer `minAvailable`, the
 *   pods selected and that number; with a percentage `minAvailable` or a
 *   `maxUnavailable`, the sum of the scales of the pods' controllers (read
 *   from their `scale` subresource; pods without a controller are not
 *   counted, as the original leaves unmanaged pods out) and what the budget
 *   requires of it (percentages rounded up);
 * - `disruptionsAllowed`: currentHealthy - desiredHealthy, 0 when negative
 *   or when no pod is expected;
 * - `observedGeneration`, and the `DisruptionAllowed` condition
 *   (`SufficientPods`, `InsufficientPods`, or `SyncFailed` with the error
 *   when the scales cannot be read, which allows no disruption).
 *
 * Status is written with the budget's resourceVersion, so a concurrent
 * eviction (which decrements disruptionsAllowed the same way) wins and the
 * budget is computed again.
 */

const BUDGETS = '/apis/policy/v1/poddisruptionbudgets';
const PODS = '/api/v1/pods';
/** How long an eviction granted stays in disruptedPods waiting for its pod to go (the original's DeletionTimeout). */
export const DELETION_TIMEOUT_MS = 2 * 60 * 1000;

type Fields = Record<string, unknown>;

const record = (v: unknown): Fields => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Fields) : {});

/** The pod has the Ready condition True (the original's IsPodReady). */
export function podReady(pod: ApiObject): boolean {
  const conditions = record(pod['status'])['conditions'];
  return Array.isArray(conditions) && conditions.some((c) => record(c)['type'] === 'Ready' && record(c)['status'] === 'True');
}

/** The pods of the budget's namespace its selector picks (an empty or missing selector picks every pod, as in v1). */
export function selectedPods(budget: ApiObject, pods: ApiObject[]): ApiObject[] {
  const selector = labelSelectorFromObject(record(budget['spec'])['selector'] as LabelSelectorObject | undefined);
  const namespace = budget.metadata?.namespace;
  return pods.filter((p) => p.metadata?.namespace === namespace && selector.matches(p.metadata?.labels));
}

/** A number, or a percentage of `total` rounded up (the original's GetScaledValueFromIntOrPercent with roundUp). */
function scaled(value: unknown, total: number): number {
  if (typeof value === 'number') return value;
  const percent = Number(String(value).replace(/%$/, ''));
  return Math.ceil((percent * total) / 100);
}

/** The controller of a pod (its ownerReference with controller: true), if any. */
export function controllerOf(pod: ApiObject): { apiVersion: string; kind: string; name: string; uid: string } | undefined {
  const refs = pod.metadata?.ownerReferences ?? [];
  const ref = refs.find((r) => r.controller === true);
  return ref ? { apiVersion: ref.apiVersion, kind: ref.kind, name: ref.name, uid: ref.uid } : undefined;
}

/** Reads the scale of a pod's controller (spec.replicas of its scale subresource). */
export type ScaleReader = (namespace: string, controller: NonNullable<ReturnType<typeof controllerOf>>) => Promise<number>;

export interface BudgetCounts {
  currentHealthy: number;
  desiredHealthy: number;
  expectedPods: number;
  disruptedPods: Record<string, string>;
  /** When the earliest disruptedPods entry expires, so the budget is computed again then. */
  recheckAt?: number;
}

/** What the budget's status says given its pods, at `now`. */
export async function countBudget(budget: ApiObject, pods: ApiObject[], now: Date, readScale: ScaleReader): Promise<BudgetCounts> {
  const spec = record(budget['spec']);
  const selected = selectedPods(budget, pods);
  let expectedPods = 0;
  let desiredHealthy = 0;
  const min = spec['minAvailable'];
  const max = spec['maxUnavailable'];
  if (typeof min === 'number' && (max === undefined || max === null)) {
    expectedPods = selected.length;
    desiredHealthy = min;
  } else if ((min !== undefined && min !== null) || (max !== undefined && max !== null)) {
    const scales = new Map<string, Promise<number>>();
    for (const pod of selected) {
      const controller = controllerOf(pod);
      if (!controller || scales.has(controller.uid)) continue;
      scales.set(controller.uid, readScale(budget.metadata?.namespace ?? '', controller));
    }
    for (const scale of await Promise.all(scales.values())) expectedPods += scale;
    desiredHealthy = max !== undefined && max !== null ? Math.max(0, expectedPods - scaled(max, expectedPods)) : scaled(min, expectedPods);
  }
  // Evictions granted whose pods are still there and not terminating, for at most the deletion timeout.
  const granted = record(record(budget['status'])['disruptedPods']);
  const disruptedPods: Record<string, string> = {};
  let recheckAt: number | undefined;
  const byName = new Map(selected.map((p) => [p.metadata?.name ?? '', p]));
  for (const [name, at] of Object.entries(granted)) {
    const pod = byName.get(name);
    if (!pod || pod.metadata?.deletionTimestamp || typeof at !== 'string') continue;
    const expires = Date.parse(at) + DELETION_TIMEOUT_MS;
    if (!(expires > now.getTime())) continue;
    disruptedPods[name] = at;
    recheckAt = recheckAt === undefined ? expires : Math.min(recheckAt, expires);
  }
  const currentHealthy = selected.filter((p) => !p.metadata?.deletionTimestamp && !((p.metadata?.name ?? '') in disruptedPods) && podReady(p)).length;
  return { currentHealthy, desiredHealthy, expectedPods, disruptedPods, ...(recheckAt !== undefined ? { recheckAt } : {}) };
}

/** The status the counts give (or a failure gives), conditions carried when unchanged. */
export function budgetStatus(budget: ApiObject, counts: Omit<BudgetCounts, 'recheckAt'> | { failure: string }, now: Date): Fields {
  const generation = budget.metadata?.generation ?? 0;
  const old = record(budget['status']);
  let base: Fields;
  let condition: { status: string; reason: string; message: string };
  if ('failure' in counts) {
    base = { ...old, disruptionsAllowed: 0 };
    condition = { status: 'False', reason: 'SyncFailed', message: counts.failure };
  } else {
    let allowed = counts.currentHealthy - counts.desiredHealthy;
    if (counts.expectedPods <= 0 || allowed <= 0) allowed = 0;
    base = { ...old, currentHealthy: counts.currentHealthy, desiredHealthy: counts.desiredHealthy, expectedPods: counts.expectedPods, disruptionsAllowed: allowed };
    if (Object.keys(counts.disruptedPods).length > 0) base['disruptedPods'] = counts.disruptedPods;
    else delete base['disruptedPods'];
    condition = allowed > 0 ? { status: 'True', reason: 'SufficientPods', message: '' } : { status: 'False', reason: 'InsufficientPods', message: '' };
  }
  const conditions = Array.isArray(old['conditions']) ? (old['conditions'] as unknown[]).map(record) : [];
  const current = conditions.find((c) => c['type'] === 'DisruptionAllowed');
  const same = current && current['status'] === condition.status && current['reason'] === condition.reason && current['message'] === condition.message && current['observedGeneration'] === generation;
  const next = same
    ? current
    : {
        type: 'DisruptionAllowed',
        ...condition,
        observedGeneration: generation,
        lastTransitionTime: current && current['status'] === condition.status && typeof current['lastTransitionTime'] === 'string' ? current['lastTransitionTime'] : rfc3339(now),
      };
  return { ...base, observedGeneration: generation, conditions: [...conditions.filter((c) => c['type'] !== 'DisruptionAllowed'), next] };
}

/** JSON with sorted keys, to compare statuses. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) => (typeof v === 'object' && v !== null && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Fields).sort(([a], [b]) => (a < b ? -1 : 1))) : v));
}

export interface DisruptionControllerOptions {
  queue?: WorkQueueOptions;
  now?: () => Date;
  /** Where its events go (default: events.svc.io through its own client). */
  events?: Pick<EventRecorder, 'record'>;
}

/** The reporter of the controller's events. */
export const DISRUPTION_CONTROLLER_NAME = 'svc.io/disruption-controller';

export class DisruptionController {
  private readonly budgets: SharedInformer;
  private readonly pods: SharedInformer;
  private readonly queue: WorkQueue;
  private readonly now: () => Date;
  private readonly events: Pick<EventRecorder, 'record'>;
  private workers: Promise<void> | undefined;

  constructor(
    private readonly client: Pick<ApiClient, 'request'>,
    informers: SharedInformerFactory,
    private readonly log: Logger,
    opts: DisruptionControllerOptions = {},
  ) {
    this.budgets = informers.informerFor(BUDGETS);
    this.pods = informers.informerFor(PODS);
    this.queue = new WorkQueue(opts.queue);
    this.now = opts.now ?? (() => new Date());
    this.events = opts.events ?? new EventRecorder(client, { controller: DISRUPTION_CONTROLLER_NAME, log });
  }

  get synced(): boolean {
    return this.budgets.hasSynced() && this.pods.hasSynced();
  }

  start(): void {
    if (this.workers) return;
    const budgetChanged = (budget: ApiObject): void => this.queue.add(objectKey(budget));
    this.budgets.addEventHandler({ onAdd: budgetChanged, onUpdate: (_old, budget) => budgetChanged(budget) });
    // A pod's change touches the budgets that select it (before and after a change of its labels).
    const podChanged = (...pods: ApiObject[]): void => {
      for (const budget of this.budgets.list()) if (selectedPods(budget, pods).length > 0) this.queue.add(objectKey(budget));
    };
    this.pods.addEventHandler({ onAdd: (pod) => podChanged(pod), onUpdate: (old, pod) => podChanged(old, pod), onDelete: (pod) => podChanged(pod) });
    this.workers = runWorkers(1, this.queue, (key) => this.reconcile(key), (key, err) =>
      this.log.warn('pod disruption budget status not written; retrying', { budget: key, err: err.message, retries: this.queue.numRequeues(key) + 1 }),
    );
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await this.workers;
  }

  private readonly readScale: ScaleReader = async (namespace, controller) => {
    const plural = await this.pluralOf(controller.apiVersion, controller.kind);
    const base = controller.apiVersion.includes('/') ? `/apis/${controller.apiVersion}` : `/api/${controller.apiVersion}`;
    const scale = await this.client.request('GET', `${base}/namespaces/${encodeURIComponent(namespace)}/${plural}/${encodeURIComponent(controller.name)}/scale`);
    const replicas = record(scale['spec'])['replicas'];
    return typeof replicas === 'number' ? replicas : 0;
  };

  /** The resource of a kind with a scale subresource, from discovery. */
  private async pluralOf(apiVersion: string, kind: string): Promise<string> {
    const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    const list = await this.client.request<{ resources?: Array<{ name: string; kind: string }> }>('GET', base);
    const resources = list.resources ?? [];
    const main = resources.find((r) => r.kind === kind && !r.name.includes('/'));
    if (!main || !resources.some((r) => r.name === `${main.name}/scale`)) throw new Error(`${kind} of ${apiVersion} has no scale subresource`);
    return main.name;
  }

  private async reconcile(key: string): Promise<SyncResult> {
    const budget = this.budgets.get(key);
    if (!budget || budget.metadata?.deletionTimestamp) return;
    if (!this.pods.hasSynced()) return { requeueAfterMs: 500 };
    const now = this.now();
    let status: Fields;
    let recheckAt: number | undefined;
    // The original's events on the budget, reported when they change its status.
    let event: Omit<RecordedEvent, 'regarding'> | undefined;
    try {
      const pods = this.pods.list();
      const counts = await countBudget(budget, pods, now, this.readScale);
      recheckAt = counts.recheckAt;
      status = budgetStatus(budget, counts, now);
      if (selectedPods(budget, pods).length === 0) event = { type: 'Normal', reason: 'NoPods', action: 'CountPods', note: 'No matching pods found' };
    } catch (err) {
      status = budgetStatus(budget, { failure: (err as Error).message }, now);
      event = { type: 'Warning', reason: 'CalculateExpectedPodCountFailed', action: 'CountPods', note: `Failed to calculate the number of expected pods: ${(err as Error).message}` };
    }
    const recheck = recheckAt !== undefined ? { requeueAfterMs: Math.max(0, recheckAt - now.getTime()) } : undefined;
    if (canonical(status) === canonical(budget['status'] ?? {})) return recheck;
    if (event) void this.events.record({ regarding: referenceTo({ apiVersion: 'policy/v1', kind: 'PodDisruptionBudget', ...budget }), ...event });
    const path = `${BUDGETS.replace('/poddisruptionbudgets', '')}/namespaces/${encodeURIComponent(budget.metadata?.namespace ?? '')}/poddisruptionbudgets/${encodeURIComponent(budget.metadata?.name ?? '')}/status`;
    try {
      await this.client.request('PUT', path, { ...budget, status });
      this.log.info('pod disruption budget status written', { budget: key, disruptionsAllowed: status['disruptionsAllowed'], currentHealthy: status['currentHealthy'], desiredHealthy: status['desiredHealthy'] });
    } catch (err) {
      // A newer version (an eviction's decrement) comes through the watch and is computed again; a gone one needs nothing.
      if (err instanceof ApiError && (err.code === 409 || err.code === 404)) return;
      throw err;
    }
    return recheck;
  }
}
