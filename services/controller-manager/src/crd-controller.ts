import { ApiError, rfc3339, type ApiObject } from '@svc/apimachinery';
import { APIEXTENSIONS_GROUP, builtinResources, CRD_CLEANUP_FINALIZER, crdStorageVersion, servedNames, specNames, type CustomResourceNames } from '@svc/kinds';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import type { SharedInformer, SharedInformerFactory } from './informer';
import { runWorkers, WorkQueue, type SyncResult, type WorkQueueOptions } from './work-queue';

/**
 * CustomResourceDefinitions, as the original server's apiextensions
 * controllers keep them, through the API: the names of a definition are
 * accepted unless another definition of its group (or a built-in kind)
 * already uses them (`NamesAccepted`), an accepted definition is
 * `Established` (the gateways then serve it) and its storage version is
 * recorded in `status.storedVersions`. A deleted definition is held by
 * the cleanup finalizer until every object of it is deleted; then the
 * finalizer goes and the server removes the definition.
 */
const CRDS = `/apis/${APIEXTENSIONS_GROUP}/v1/customresourcedefinitions`;

interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason: string;
  message: string;
  lastTransitionTime?: string;
}

export interface CrdControllerOptions {
  /** How soon a definition whose objects are still going is looked at again. */
  retryMs?: number;
  queue?: WorkQueueOptions;
}

/** The built-in kinds' names by group, built once: building the built-in definitions costs milliseconds, and every reconcile asks. */
let builtinNames: Map<string, CustomResourceNames[]> | undefined;

function builtinNamesIn(group: string): CustomResourceNames[] {
  if (!builtinNames) {
    builtinNames = new Map();
    for (const d of builtinResources()) {
      const names = builtinNames.get(d.group) ?? [];
      names.push({ plural: d.plural, singular: d.singular, kind: d.kind, listKind: d.listKind, shortNames: d.shortNames, categories: d.categories });
      builtinNames.set(d.group, names);
    }
  }
  return builtinNames.get(group) ?? [];
}

/** Names of one group in use: by built-in kinds and by the accepted names of other definitions. */
function namesInUse(group: string, others: ApiObject[]): CustomResourceNames[] {
  const used: CustomResourceNames[] = [...builtinNamesIn(group)];
  for (const other of others.filter((o) => sameGroup(o) === group)) {
    const accepted = (other['status'] as { acceptedNames?: { plural?: string } } | undefined)?.acceptedNames?.plural ? servedNames(other) : undefined;
    if (accepted) used.push(accepted);
  }
  return used;
}

/** The first conflict of `wanted` with names in use: a reason and a message, as upstream words them. */
export function namesConflict(wanted: CustomResourceNames, used: CustomResourceNames[]): { reason: string; message: string } | undefined {
  for (const u of used) {
    if (u.plural === wanted.plural || u.singular === wanted.plural) return { reason: 'PluralConflict', message: `"${wanted.plural}" is already in use` };
    if (u.plural === wanted.singular || u.singular === wanted.singular) return { reason: 'SingularConflict', message: `"${wanted.singular}" is already in use` };
    const taken = [u.plural, u.singular, ...u.shortNames];
    const short = wanted.shortNames.find((s) => taken.includes(s));
    if (short) return { reason: 'ShortNamesConflict', message: `"${short}" is already in use` };
    if (u.kind === wanted.kind || u.listKind === wanted.kind) return { reason: 'KindConflict', message: `"${wanted.kind}" is already in use` };
    if (u.kind === wanted.listKind || u.listKind === wanted.listKind) return { reason: 'ListKindConflict', message: `"${wanted.listKind}" is already in use` };
  }
  return undefined;
}

function sameGroup(crd: ApiObject): string {
  return ((crd['spec'] as { group?: string } | undefined)?.group ?? '').toString();
}

function setCondition(conditions: Condition[], next: Condition, now: string): Condition[] {
  const existing = conditions.find((c) => c.type === next.type);
  const lastTransitionTime = existing && existing.status === next.status ? (existing.lastTransitionTime ?? now) : now;
  const updated = { ...next, lastTransitionTime };
  return existing ? conditions.map((c) => (c.type === next.type ? updated : c)) : [...conditions, updated];
}

/** The status a definition should have, given the other definitions (pure, for tests). */
export function desiredCrdStatus(crd: ApiObject, others: ApiObject[], now: Date): Record<string, unknown> {
  const status = { ...((crd['status'] as Record<string, unknown> | undefined) ?? {}) };
  let conditions = ((status['conditions'] as Condition[] | undefined) ?? []).map((c) => ({ ...c }));
  const stamp = rfc3339(now);
  const wanted = specNames(crd);
  const established = conditions.some((c) => c.type === 'Established' && c.status === 'True');
  const conflict = wanted ? namesConflict(wanted, namesInUse(sameGroup(crd), others.filter((o) => o.metadata?.name !== crd.metadata?.name))) : { reason: 'NoNames', message: 'spec.names is missing' };
  if (conflict || !wanted) {
    conditions = setCondition(conditions, { type: 'NamesAccepted', status: 'False', ...(conflict ?? { reason: 'NoNames', message: '' }) }, stamp);
    if (!established) conditions = setCondition(conditions, { type: 'Established', status: 'False', reason: 'NotAccepted', message: 'not all names are accepted' }, stamp);
  } else {
    status['acceptedNames'] = { ...wanted };
    conditions = setCondition(conditions, { type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found' }, stamp);
    if (!established) conditions = setCondition(conditions, { type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted' }, stamp);
  }
  status['conditions'] = conditions;
  const stored = ((status['storedVersions'] as string[] | undefined) ?? []).slice();
  const version = crdStorageVersion(crd);
  if (version && !stored.includes(version)) stored.push(version);
  status['storedVersions'] = stored;
  return status;
}

export class CustomResourceDefinitionController {
  private readonly crds: SharedInformer;
  private readonly queue: WorkQueue;
  /**
   * Definitions as this controller last wrote them, until the informer
   * catches up (as upstream's mutation cache): the names accepted for one
   * are seen when the next is reconciled.
   */
  private readonly written = new Map<string, ApiObject>();
  private workers: Promise<void> | undefined;

  constructor(
    private readonly client: ApiClient,
    informers: SharedInformerFactory,
    private readonly log: Logger,
    private readonly opts: CrdControllerOptions = {},
  ) {
    this.crds = informers.informerFor(CRDS);
    this.queue = new WorkQueue(opts.queue);
  }

  get synced(): boolean {
    return this.crds.hasSynced();
  }

  start(): void {
    if (this.workers) return;
    const changed = (crd: ApiObject): void => {
      if (crd.metadata?.name) this.queue.add(crd.metadata.name);
    };
    this.crds.addEventHandler({ onAdd: changed, onUpdate: (_old, crd) => changed(crd), onDelete: (crd) => this.written.delete(crd.metadata?.name ?? '') });
    // One definition at a time, so names accepted for one are seen by the next.
    this.workers = runWorkers(1, this.queue, (name) => this.reconcile(name), (name, err) =>
      this.log.warn('custom resource definition not reconciled; retrying', { name, err: err.message, retries: this.queue.numRequeues(name) + 1 }),
    );
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await this.workers;
  }

  /** The newest of what the informer holds and what this controller wrote. */
  private current(name: string): ApiObject | undefined {
    const seen = this.crds.get(name);
    const mine = this.written.get(name);
    if (!seen || !mine) return seen;
    if (revision(seen) >= revision(mine)) {
      this.written.delete(name);
      return seen;
    }
    return mine;
  }

  private async reconcile(name: string): Promise<SyncResult> {
    const crd = this.current(name);
    if (!crd) return;
    if (crd.metadata?.deletionTimestamp) return this.cleanUp(name, crd);
    const others = this.crds.list().map((o) => this.current(o.metadata?.name ?? '') ?? o);
    const status = desiredCrdStatus(crd, others, new Date());
    const current = (crd['status'] as Record<string, unknown> | undefined) ?? {};
    const comparable = (s: Record<string, unknown>): string =>
      JSON.stringify({ ...s, conditions: ((s['conditions'] as Condition[] | undefined) ?? []).map(({ lastTransitionTime: _t, ...c }) => c).sort((a, b) => a.type.localeCompare(b.type)) });
    if (comparable(status) === comparable(current)) return;
    try {
      const written = await this.client.request('PUT', `${CRDS}/${encodeURIComponent(name)}/status`, { ...crd, status });
      this.written.set(name, written);
      const accepted = (status['conditions'] as Condition[]).find((c) => c.type === 'NamesAccepted');
      this.log.info('custom resource definition status written', { name, namesAccepted: accepted?.status, reason: accepted?.reason });
    } catch (err) {
      // A newer version is on its way through the watch; a gone one needs nothing.
      if (err instanceof ApiError && (err.code === 409 || err.code === 404)) return;
      throw err;
    }
  }

  /** Deletes every object of a terminating definition; removes the finalizer once none is left. */
  private async cleanUp(name: string, crd: ApiObject): Promise<SyncResult> {
    if (!(crd.metadata?.finalizers ?? []).includes(CRD_CLEANUP_FINALIZER)) return;
    const group = sameGroup(crd);
    const names = servedNames(crd);
    const version = crdStorageVersion(crd);
    let remaining = 0;
    if (names && version) {
      const base = `/apis/${group}/${version}`;
      let items: ApiObject[] = [];
      try {
        items = (await this.client.request<{ items?: ApiObject[] }>('GET', `${base}/${names.plural}`)).items ?? [];
      } catch (err) {
        // Never served (not established): there are no objects.
        if (!(err instanceof ApiError && err.code === 404)) throw err;
      }
      for (const item of items) {
        const ns = item.metadata?.namespace;
        const path = `${base}/${ns ? `namespaces/${encodeURIComponent(ns)}/` : ''}${names.plural}/${encodeURIComponent(item.metadata?.name ?? '')}`;
        try {
          await this.client.request('DELETE', path);
        } catch (err) {
          if (!(err instanceof ApiError && err.code === 404)) throw err;
        }
      }
      remaining = items.length;
    }
    if (remaining > 0) {
      this.log.info('deleting the objects of a custom resource definition', { name, objects: remaining });
      // Objects held by their own finalizers keep the definition until they go.
      return { requeueAfterMs: this.opts.retryMs ?? 1000 };
    }
    const finalizers = (crd.metadata?.finalizers ?? []).filter((f) => f !== CRD_CLEANUP_FINALIZER);
    try {
      await this.client.request('PUT', `${CRDS}/${encodeURIComponent(name)}`, { ...crd, metadata: { ...crd.metadata, finalizers } });
      this.log.info('custom resource definition cleaned up', { name });
    } catch (err) {
      if (err instanceof ApiError && (err.code === 409 || err.code === 404)) return;
      throw err;
    }
  }
}

/** An object's resourceVersion as a number (etcd revisions grow); 0 when there is none. */
function revision(obj: ApiObject): number {
  const rv = Number(obj.metadata?.resourceVersion ?? '');
  return Number.isFinite(rv) ? rv : 0;
}
