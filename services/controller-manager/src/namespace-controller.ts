import { ApiError, canonicalGroup, rfc3339, type ApiObject } from '@svc/apimachinery';
import { NAMESPACE_FINALIZER } from '@svc/kinds';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import type { SharedInformer, SharedInformerFactory } from './informer';
import { defaultControllerRateLimiter, runWorkers, WorkQueue, type SyncResult, type WorkQueueOptions } from './work-queue';
import { deletionConditions, mergeConditions, type DeletionProgress } from './namespace-conditions';

interface ApiResourceList {
  groupVersion?: string;
  resources?: Array<{ name: string; namespaced: boolean; verbs: string[] }>;
}

interface ApiGroupList {
  groups?: Array<{ name: string; preferredVersion?: { groupVersion: string } }>;
}

interface NamespacedResource {
  /** `/api/v1` or `/apis/<group>/<version>`. */
  base: string;
  /** Empty for the core group. */
  group: string;
  plural: string;
}

export interface NamespaceControllerOptions {
  /** How soon a namespace whose content is still going away is looked at again. */
  retryMs?: number;
  /** Namespaces emptied at the same time (default 10, as upstream's --concurrent-namespace-syncs). */
  workers?: number;
  /** The queue's clock and retry policy (tests). */
  queue?: WorkQueueOptions;
}

/** Upstream's namespace controller retries a failing namespace after 5 ms doubling up to a minute. */
const MAX_RETRY_MS = 60_000;

/**
 * Namespace deletion, as the original controller does it: a DELETE marks a
 * namespace Terminating (its `svc` finalizer holds it); this controller
 * deletes every namespaced object in it, kind by kind as discovery lists
 * them, and once nothing is left removes the finalizer through the
 * `finalize` subresource, which lets the server remove the namespace.
 * Objects held by their own finalizers keep the namespace until they go.
 * Terminating namespaces seen by the shared namespace informer are queued;
 * workers empty them, a failure comes back rate-limited.
 */
export class NamespaceController {
  private readonly namespaces: SharedInformer;
  private readonly queue: WorkQueue;
  private workers: Promise<void> | undefined;

  constructor(
    private readonly client: ApiClient,
    informers: SharedInformerFactory,
    private readonly log: Logger,
    private readonly opts: NamespaceControllerOptions = {},
  ) {
    this.namespaces = informers.informerFor('/api/v1/namespaces');
    const clock = opts.queue?.clock;
    this.queue = new WorkQueue({ ...opts.queue, rateLimiter: opts.queue?.rateLimiter ?? defaultControllerRateLimiter(clock, MAX_RETRY_MS) });
  }

  /** The first list of namespaces has been seen. */
  get synced(): boolean {
    return this.namespaces.hasSynced();
  }

  start(): void {
    if (this.workers) return;
    this.namespaces.addEventHandler({ onAdd: (ns) => this.observe(ns), onUpdate: (_old, ns) => this.observe(ns) });
    this.workers = runWorkers(this.opts.workers ?? 10, this.queue, (name) => this.sync(name), (name, err) =>
      this.log.warn('namespace cleanup failed; retrying', { namespace: name, err: err.message, retries: this.queue.numRequeues(name) + 1 }),
    );
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await this.workers;
  }

  private observe(ns: ApiObject): void {
    const name = ns.metadata?.name;
    if (name && ns.metadata?.deletionTimestamp && finalizersOf(ns).includes(NAMESPACE_FINALIZER)) this.queue.add(name);
  }

  private async sync(name: string): Promise<SyncResult> {
    const outcome = await this.finalize(name);
    return outcome === 'pending' ? { requeueAfterMs: this.opts.retryMs ?? 1000 } : undefined;
  }

  /** One pass over a terminating namespace; 'pending' while content remains. */
  private async finalize(name: string): Promise<'done' | 'pending'> {
    let ns: ApiObject;
    try {
      ns = await this.client.request('GET', `/api/v1/namespaces/${name}`);
    } catch (err) {
      if (err instanceof ApiError && err.code === 404) return 'done';
      throw err;
    }
    if (!ns.metadata?.deletionTimestamp || !finalizersOf(ns).includes(NAMESPACE_FINALIZER)) return 'done';
    const progress: DeletionProgress = { deleteErrors: [], remaining: new Map(), finalizers: new Map() };
    let resources: NamespacedResource[] = [];
    try {
      resources = await this.namespacedResources();
    } catch (err) {
      progress.discoveryError = (err as Error).message;
    }
    for (const r of resources) {
      const collection = `${r.base}/namespaces/${name}/${r.plural}`;
      const label = `${r.plural}.${r.group}`;
      try {
        await this.client.request('DELETE', collection);
      } catch (err) {
        if (!(err instanceof ApiError && (err.code === 404 || err.code === 405))) progress.deleteErrors.push(`${label}: ${(err as Error).message}`);
      }
      const left = (await this.client.request<{ items?: ApiObject[] }>('GET', collection)).items ?? [];
      if (left.length > 0) progress.remaining.set(label, left.length);
      for (const item of left) for (const f of item.metadata?.finalizers ?? []) progress.finalizers.set(f, (progress.finalizers.get(f) ?? 0) + 1);
    }
    ns = await this.reportProgress(ns, progress);
    if (progress.discoveryError !== undefined || progress.remaining.size > 0) {
      this.log.debug('namespace content still going away', { namespace: name });
      return 'pending';
    }
    const spec = (ns['spec'] as Record<string, unknown> | undefined) ?? {};
    const body = { ...ns, spec: { ...spec, finalizers: finalizersOf(ns).filter((f) => f !== NAMESPACE_FINALIZER) } };
    try {
      await this.client.request('PUT', `/api/v1/namespaces/${name}/finalize`, body);
    } catch (err) {
      // Changed since we read it: look again.
      if (err instanceof ApiError && err.code === 409) return 'pending';
      if (err instanceof ApiError && err.code === 404) return 'done';
      throw err;
    }
    this.log.info('namespace finalized', { namespace: name });
    return 'done';
  }

  /**
   * Shows the pass's outcome in the namespace's conditions and returns the
   * namespace as it now is; a lost race is left to the next pass.
   */
  private async reportProgress(ns: ApiObject, progress: DeletionProgress): Promise<ApiObject> {
    const conditions = mergeConditions(ns, deletionConditions(progress), rfc3339(new Date()));
    if (!conditions) return ns;
    const status = { ...((ns['status'] as Record<string, unknown> | undefined) ?? {}), conditions };
    try {
      return await this.client.request('PUT', `/api/v1/namespaces/${ns.metadata?.name ?? ''}/status`, { ...ns, status });
    } catch (err) {
      if (err instanceof ApiError && (err.code === 409 || err.code === 404)) return ns;
      throw err;
    }
  }

  /** Every namespaced kind discovery lists that can be listed and deleted as a collection. */
  private async namespacedResources(): Promise<NamespacedResource[]> {
    const lists: Array<{ base: string; group: string; list: ApiResourceList }> = [{ base: '/api/v1', group: '', list: await this.client.request<ApiResourceList>('GET', '/api/v1') }];
    const groups = await this.client.request<ApiGroupList>('GET', '/apis');
    // Discovery lists our groups a second time under their upstream names; those are the same objects.
    const names = new Set((groups.groups ?? []).map((g) => g.name));
    const isAlias = (name: string): boolean => canonicalGroup(name) !== name && names.has(canonicalGroup(name));
    for (const g of (groups.groups ?? []).filter((x) => !isAlias(x.name))) {
      const gv = g.preferredVersion?.groupVersion;
      if (gv) lists.push({ base: `/apis/${gv}`, group: gv.slice(0, gv.indexOf('/')), list: await this.client.request<ApiResourceList>('GET', `/apis/${gv}`) });
    }
    const out: NamespacedResource[] = [];
    for (const { base, group, list } of lists) {
      for (const r of list.resources ?? []) {
        if (r.namespaced && !r.name.includes('/') && r.verbs.includes('deletecollection') && r.verbs.includes('list')) out.push({ base, group, plural: r.name });
      }
    }
    return out;
  }
}

function finalizersOf(ns: ApiObject): string[] {
  const list = (ns['spec'] as { finalizers?: unknown } | undefined)?.finalizers;
  return Array.isArray(list) ? list.filter((f): f is string => typeof f === 'string') : [];
}
