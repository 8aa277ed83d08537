import { ApiError, type ApiObject } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import type { SharedInformer, SharedInformerFactory } from './informer';
import { runWorkers, WorkQueue, type WorkQueueOptions } from './work-queue';
import { defaultRbacObjects, reconcileDefault } from './rbac-defaults';

/**
 * The RBAC controllers: `rbac-bootstrap` puts the default roles and
 * bindings in place when the controller-manager starts, and
 * `clusterrole-aggregation` fills the rules of every ClusterRole with an
 * aggregationRule from the ClusterRoles its selectors match.
 */

const RBAC_PATH = '/apis/rbac.authorization.svc.io/v1';

function pathOf(obj: ApiObject, withName: boolean): string {
  const plural = `${String(obj.kind).toLowerCase()}s`;
  const ns = obj.metadata?.namespace ? `/namespaces/${encodeURIComponent(obj.metadata.namespace)}` : '';
  return `${RBAC_PATH}${ns}/${plural}${withName ? `/${encodeURIComponent(obj.metadata?.name ?? '')}` : ''}`;
}

export class RbacBootstrap {
  private done = false;
  private stopped = false;
  private running: Promise<void> | undefined;

  constructor(
    private readonly client: ApiClient,
    private readonly log: Logger,
  ) {}

  get synced(): boolean {
    return this.done;
  }

  start(): void {
    this.running = this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.running;
  }

  private async loop(): Promise<void> {
    while (!this.stopped && !this.done) {
      try {
        await this.reconcileAll();
        this.done = true;
      } catch (err) {
        this.log.warn('default RBAC policy not in place yet; retrying', { err: (err as Error).message });
        await new Promise((r) => setTimeout(r, 2000));
      }
    }
  }

  /** Creates missing defaults and gives back what is missing from the others. */
  async reconcileAll(): Promise<void> {
    let created = 0;
    let updated = 0;
    for (const wanted of defaultRbacObjects()) {
      let stored: ApiObject | undefined;
      try {
        stored = await this.client.request('GET', pathOf(wanted, true));
      } catch (err) {
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
      if (!stored) {
        try {
          await this.client.request('POST', pathOf(wanted, false), wanted);
          created++;
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 409)) throw err;
        }
        continue;
      }
      const next = reconcileDefault(stored, wanted);
      if (next) {
        await this.client.request('PUT', pathOf(wanted, true), next);
        updated++;
      }
    }
    this.log.info('default RBAC policy in place', { created, updated });
  }
}

type Selector = { matchLabels?: Record<string, string>; matchExpressions?: Array<{ key: string; operator: string; values?: string[] }> };

/** Whether `labels` satisfy a label selector object (every term must hold; an empty selector matches all). */
export function selectorMatches(selector: Selector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const value = labels[e.key];
    const values = e.values ?? [];
    if (e.operator === 'In' && !(has && values.includes(value as string))) return false;
    if (e.operator === 'NotIn' && has && values.includes(value as string)) return false;
    if (e.operator === 'Exists' && !has) return false;
    if (e.operator === 'DoesNotExist' && has) return false;
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(e.operator)) return false;
  }
  return true;
}

/** The rules an aggregated role should have: those of every other role its selectors match, deduplicated, by role name. */
export function aggregatedRules(role: ApiObject, all: ApiObject[]): unknown[] {
  const selectors = ((role['aggregationRule'] as { clusterRoleSelectors?: Selector[] } | undefined)?.clusterRoleSelectors ?? []) as Selector[];
  const rules: unknown[] = [];
  const seen = new Set<string>();
  const sources = all
    .filter((r) => r.metadata?.name !== role.metadata?.name && selectors.some((s) => selectorMatches(s, (r.metadata?.labels ?? {}) as Record<string, string>)))
    .sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  for (const source of sources) {
    for (const rule of (Array.isArray(source['rules']) ? source['rules'] : []) as unknown[]) {
      const key = JSON.stringify(rule);
      if (seen.has(key)) continue;
      seen.add(key);
      rules.push(rule);
    }
  }
  return rules;
}

/**
 * Keeps aggregated ClusterRoles whole: any change to a ClusterRole queues
 * every role with an aggregationRule, and a worker rewrites those whose
 * rules differ from what their selectors gather (from the shared informer's
 * store).
 */
export class ClusterRoleAggregation {
  private readonly roles: SharedInformer;
  private readonly queue: WorkQueue;
  private workers: Promise<void> | undefined;

  constructor(
    private readonly client: ApiClient,
    informers: SharedInformerFactory,
    private readonly log: Logger,
    opts: { queue?: WorkQueueOptions } = {},
  ) {
    this.roles = informers.informerFor(`${RBAC_PATH}/clusterroles`);
    this.queue = new WorkQueue(opts.queue);
  }

  get synced(): boolean {
    return this.roles.hasSynced();
  }

  start(): void {
    if (this.workers) return;
    const changed = (): void => {
      for (const role of this.roles.list()) if (role['aggregationRule']) this.queue.add(role.metadata?.name ?? '');
    };
    this.roles.addEventHandler({ onAdd: changed, onUpdate: changed, onDelete: changed });
    this.workers = runWorkers(1, this.queue, (name) => this.sync(name), (name, err) =>
      this.log.warn('could not update an aggregated cluster role; retrying', { role: name, err: err.message, retries: this.queue.numRequeues(name) + 1 }),
    );
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await this.workers;
  }

  private async sync(name: string): Promise<void> {
    const role = this.roles.get(name);
    if (!role?.['aggregationRule']) return;
    const rules = aggregatedRules(role, this.roles.list());
    if (JSON.stringify(rules) === JSON.stringify(role['rules'] ?? [])) return;
    try {
      await this.client.request('PUT', `${RBAC_PATH}/clusterroles/${encodeURIComponent(name)}`, { ...role, rules });
      this.log.info('aggregated cluster role updated', { role: name, rules: rules.length });
    } catch (err) {
      // Changed meanwhile: the informer brings the new version and another sync.
      if (!(err instanceof ApiError && (err.code === 409 || err.code === 404))) throw err;
    }
  }
}
