import { ApiError, type ApiObject } from '@svc/apimachinery';
import { APIEXTENSIONS_GROUP, builtinResources, crdConditionTrue, servedNames } from '@svc/kinds';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import { EventRecorder } from './event-recorder';
import {
  apiVersionOf,
  FOREGROUND_FINALIZER,
  groupOf,
  kindPath,
  nodeOf,
  ORPHAN_FINALIZER,
  OwnerGraph,
  sameOwners,
  type GcKind,
  type GraphNode,
  type OwnerLink,
} from './garbage-collector-graph';
import type { SharedInformer, SharedInformerFactory } from './informer';
import { runWorkers, WorkQueue, type WorkQueueOptions } from './work-queue';

/**
 * The garbage collector, as the original controller-manager's: a graph of
 * ownerReferences across every kind the server serves (built-in kinds and
 * the kinds of established custom resource definitions, events excepted),
 * kept current from the shared informers, and two queues of work on it.
 *
 * attemptToDelete looks at an object with owners: each owner is solid
 * (exists with that uid), waiting (exists, being deleted in the foreground)
 * or dangling (absent, or another object with that name). An object with a
 * solid owner stays, its references to dangling and waiting owners removed;
 * one without is deleted, in the foreground when a waiting owner holds it
 * and it has dependents of its own, else as its own finalizers say
 * (Background by default). An owner being deleted in the foreground has its
 * dependents deleted and loses its `foregroundDeletion` finalizer once no
 * dependent with `blockOwnerDeletion` remains. attemptToOrphan removes the
 * references to an owner with the `orphan` finalizer from its dependents,
 * then the finalizer.
 *
 * Owners of a namespaced object are looked up in its namespace (or among
 * cluster-scoped objects for a cluster-scoped owner kind). An owner that is
 * known elsewhere (another namespace) counts as absent and is reported as
 * an `OwnerRefInvalidNamespace` event; a cluster-scoped object naming a
 * namespaced owner kind is reported the same way and never collected, nor
 * is an object naming an owner of a kind the server does not serve (that
 * one is logged and looked at again when the served kinds change).
 */

export const GARBAGE_COLLECTOR_COMPONENT = 'garbage-collector-controller';
const CRDS = `/apis/${APIEXTENSIONS_GROUP}/v1/customresourcedefinitions`;
/** Kinds never followed, as the original ignores them: events are many and own nothing. */
const IGNORED = new Set(['/events', 'events.svc.io/events']);
/** How many absent owner uids are remembered, so that 1,000 dependents of one owner ask for it once. */
const ABSENT_CACHE_SIZE = 10_000;

export interface GarbageCollectorOptions {
  /** Parallel workers of the delete queue (the original's --concurrent-gc-syncs, 20). */
  workers?: number;
  queue?: WorkQueueOptions;
}

type OwnerState = 'solid' | 'waiting' | 'dangling' | 'unresolved';

let builtinKinds: GcKind[] | undefined;

/** The kind of an established definition, at its storage version when served, else its first served one (read from the definition alone: cheap for many definitions). */
function definedKind(crd: ApiObject): GcKind | undefined {
  const spec = (crd['spec'] ?? {}) as { group?: string; scope?: string; versions?: Array<{ name?: string; served?: boolean; storage?: boolean }> };
  const names = servedNames(crd);
  if (!spec.group || !names || !crdConditionTrue(crd, 'Established')) return undefined;
  const served = (spec.versions ?? []).filter((v) => v.served === true && v.name);
  const version = (served.find((v) => v.storage === true) ?? served[0])?.name;
  return version ? { group: spec.group, version, kind: names.kind, plural: names.plural, namespaced: spec.scope === 'Namespaced' } : undefined;
}

function followedKinds(crds: ApiObject[]): GcKind[] {
  builtinKinds ??= builtinResources()
    .filter((d) => !d.virtual && !d.storedAs && d.verbs.includes('watch') && !IGNORED.has(`${d.group}/${d.plural}`))
    .map((d) => ({ group: d.group, version: d.version, kind: d.kind, plural: d.plural, namespaced: d.namespaced }));
  const out = [...builtinKinds];
  for (const crd of crds) {
    const kind = definedKind(crd);
    if (kind) out.push(kind);
  }
  return out;
}

export class GarbageCollector {
  readonly graph = new OwnerGraph();
  private readonly crds: SharedInformer;
  private readonly informers = new Map<string, SharedInformer>();
  /** group/Kind to the kind followed. */
  private kindsByName = new Map<string, GcKind>();
  /** The collection path an informer follows to its kind. */
  private kindsByPath = new Map<string, GcKind>();
  private readonly attemptToDelete: WorkQueue;
  private readonly attemptToOrphan: WorkQueue;
  private readonly absent = new Set<string>();
  private readonly reported = new Set<string>();
  /** Objects naming an owner of a kind not served when they were looked at. */
  private readonly waitingForKinds = new Set<string>();
  private workers: Promise<void> | undefined;
  private started = false;
  /** Its events, through events.svc.io/v1. */
  private readonly events: EventRecorder;

  constructor(
    private readonly client: ApiClient,
    private readonly factory: SharedInformerFactory,
    private readonly log: Logger,
    private readonly opts: GarbageCollectorOptions = {},
  ) {
    this.crds = factory.informerFor(CRDS);
    this.events = new EventRecorder(client, { controller: GARBAGE_COLLECTOR_COMPONENT, log });
    this.attemptToDelete = new WorkQueue(opts.queue);
    this.attemptToOrphan = new WorkQueue(opts.queue);
    this.syncKinds();
  }

  get synced(): boolean {
    return this.crds.hasSynced() && [...this.informers.values()].every((i) => i.hasSynced());
  }

  /** The kinds followed, for logs and tests. */
  get kinds(): GcKind[] {
    return [...this.kindsByName.values()];
  }

  start(): void {
    if (this.started) return;
    this.started = true;
    const kindsChanged = (): void => {
      if (!this.syncKinds()) return;
      // Objects naming an owner of a kind that was not served are looked at again.
      for (const uid of this.waitingForKinds) this.attemptToDelete.add(uid);
      this.waitingForKinds.clear();
    };
    this.crds.addEventHandler({ onAdd: kindsChanged, onUpdate: kindsChanged, onDelete: kindsChanged });
    for (const [, informer] of this.informers) this.follow(informer);
    const onError = (queue: WorkQueue) => (uid: string, err: Error) => this.log.warn('garbage collection failed; retrying', { uid, err: err.message, retries: queue.numRequeues(uid) + 1 });
    this.workers = Promise.all([
      runWorkers(this.opts.workers ?? 20, this.attemptToDelete, (uid) => this.processDelete(uid), onError(this.attemptToDelete)),
      runWorkers(1, this.attemptToOrphan, (uid) => this.processOrphan(uid), onError(this.attemptToOrphan)),
    ]).then(() => undefined);
  }

  async stop(): Promise<void> {
    this.attemptToDelete.shutDown();
    this.attemptToOrphan.shutDown();
    await this.workers;
  }

  /** Follows the kinds served now; answers whether they changed. */
  private syncKinds(): boolean {
    const kinds = followedKinds(this.crds.list());
    const next = new Map(kinds.map((k) => [`${k.group}/${k.kind}`, k]));
    const changed = next.size !== this.kindsByName.size || [...next].some(([key, k]) => this.kindsByName.get(key)?.version !== k.version);
    this.kindsByName = next;
    this.kindsByPath = new Map(kinds.map((k) => [kindPath(k, ''), k]));
    for (const kind of kinds) {
      const path = kindPath(kind, '');
      if (this.informers.has(path)) continue;
      const informer = this.factory.informerFor(path);
      this.informers.set(path, informer);
      if (this.started) this.follow(informer);
    }
    return changed;
  }

  private follow(informer: SharedInformer): void {
    const kindOf = (): GcKind | undefined => this.kindsByPath.get(informer.description);
    informer.addEventHandler({
      onAdd: (obj) => this.observe(kindOf(), obj),
      onUpdate: (_old, obj) => this.observe(kindOf(), obj),
      onDelete: (obj) => this.forget(obj),
    });
  }

  /** An object was added or changed: the graph follows, and what it changed is queued. */
  private observe(kind: GcKind | undefined, obj: ApiObject): void {
    const uid = obj.metadata?.uid;
    if (!uid || !kind) return;
    const node = nodeOf(kind, obj);
    const old = this.graph.upsert(uid, node);
    this.absent.delete(uid);
    if (node.owners.length > 0 && (!old || !sameOwners(old.owners, node.owners))) this.attemptToDelete.add(uid);
    // An owner waiting in the foreground that lost this dependent may now go.
    for (const gone of old?.owners ?? []) {
      if (!node.owners.some((o) => o.uid === gone.uid)) this.ownerMayGo(gone.uid);
    }
    if (node.deleting && node.foreground) {
      this.attemptToDelete.add(uid);
      if (!(old?.deleting && old.foreground)) for (const dep of this.graph.dependentsOf(uid)) this.attemptToDelete.add(dep);
    }
    if (node.deleting && node.orphan) this.attemptToOrphan.add(uid);
  }

  private forget(obj: ApiObject): void {
    const uid = obj.metadata?.uid;
    if (!uid) return;
    const node = this.graph.remove(uid);
    this.waitingForKinds.delete(uid);
    this.remember(uid);
    for (const dep of this.graph.dependentsOf(uid)) this.attemptToDelete.add(dep);
    for (const owner of node?.owners ?? []) this.ownerMayGo(owner.uid);
  }

  private ownerMayGo(uid: string): void {
    const owner = this.graph.get(uid);
    if (owner?.deleting && owner.foreground) this.attemptToDelete.add(uid);
  }

  private remember(uid: string): void {
    this.absent.add(uid);
    if (this.absent.size > ABSENT_CACHE_SIZE) this.absent.delete(this.absent.values().next().value as string);
  }

  private async processDelete(uid: string): Promise<void> {
    const node = this.graph.get(uid);
    if (!node) return;
    if (node.deleting) {
      if (node.foreground) await this.processDeletingDependents(uid, node);
      return;
    }
    if (node.owners.length === 0) return;
    // First as the informer last saw the object; when it changed since (the delete's precondition fails), as it is now.
    if (await this.collect(uid, node, node)) return;
    const latest = await this.read(node.kind, node.namespace, node.name);
    if (!latest || latest.metadata?.uid !== uid || latest.metadata.deletionTimestamp) return;
    if (!(await this.collect(uid, node, nodeOf(node.kind, latest)))) throw new Error('the object keeps changing');
  }

  /**
   * Classifies the owners of `seen` (a view of the object `node`) and acts:
   * drops references to owners that are gone or waiting when a solid owner
   * remains, deletes the object when none does. False when the delete lost
   * a race with a write (it was conditional on the resourceVersion seen).
   */
  private async collect(uid: string, node: GraphNode, seen: GraphNode): Promise<boolean> {
    if (seen.owners.length === 0) return true;
    const states = await Promise.all(seen.owners.map(async (ref) => [ref, await this.ownerState(node, uid, ref)] as const));
    const of = (s: OwnerState): OwnerLink[] => states.filter(([, st]) => st === s).map(([ref]) => ref);
    const [solid, waiting, dangling, unresolved] = [of('solid'), of('waiting'), of('dangling'), of('unresolved')];
    if (solid.length > 0) {
      const drop = new Set([...dangling, ...waiting].map((r) => r.uid));
      if (drop.size > 0) await this.removeOwnerRefs(node, uid, drop);
      return true;
    }
    // An owner that cannot be looked up is never taken for absent.
    if (unresolved.length > 0) return true;
    let policy = 'Background';
    if (waiting.length > 0 && this.graph.dependentsOf(uid).length > 0) policy = 'Foreground';
    else if (seen.orphan) policy = 'Orphan';
    else if (seen.foreground) policy = 'Foreground';
    this.log.info('deleting object whose owners are gone', { object: `${apiVersionOf(node.kind)}/${node.kind.kind} ${node.namespace}/${node.name}`, uid, policy });
    try {
      const preconditions = { uid, resourceVersion: seen.resourceVersion };
      await this.client.request('DELETE', kindPath(node.kind, node.namespace, node.name), { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: policy, preconditions });
    } catch (err) {
      if (err instanceof ApiError && err.code === 409) return false;
      if (!(err instanceof ApiError && err.code === 404)) throw err;
    }
    return true;
  }

  /** Removes the foregroundDeletion finalizer once no blocking dependent remains; until then, its dependents are deleted. */
  private async processDeletingDependents(uid: string, node: GraphNode): Promise<void> {
    const blocking = this.graph.blockingDependentsOf(uid);
    if (blocking.length === 0) {
      await this.removeFinalizer(node, uid, FOREGROUND_FINALIZER);
      return;
    }
    for (const dep of blocking) {
      const d = this.graph.get(dep);
      if (d && !(d.deleting && d.foreground)) this.attemptToDelete.add(dep);
    }
  }

  private async processOrphan(uid: string): Promise<void> {
    const node = this.graph.get(uid);
    if (!node?.deleting || !node.orphan) return;
    for (const dep of this.graph.dependentsOf(uid)) {
      const d = this.graph.get(dep);
      if (d) await this.removeOwnerRefs(d, dep, new Set([uid]));
    }
    await this.removeFinalizer(node, uid, ORPHAN_FINALIZER);
  }

  /** Where the owner `ref` of `dependent` stands. */
  private async ownerState(dependent: GraphNode, uid: string, ref: OwnerLink): Promise<OwnerState> {
    const kind = this.kindsByName.get(`${groupOf(ref.apiVersion)}/${ref.kind}`);
    if (!kind) {
      this.waitingForKinds.add(uid);
      this.reportOnce(uid, ref, 'unknown', () => this.log.warn('owner reference to a kind the server does not serve; the object is kept', { object: `${dependent.namespace}/${dependent.name}`, owner: `${ref.apiVersion}/${ref.kind} ${ref.name}`, uid: ref.uid }));
      return 'unresolved';
    }
    if (kind.namespaced && !dependent.kind.namespaced) {
      // A cluster-scoped object cannot be owned by a namespaced one: reported, never collected.
      this.reportInvalidNamespace(dependent, uid, ref);
      return 'unresolved';
    }
    const namespace = kind.namespaced ? dependent.namespace : '';
    const known = this.graph.get(ref.uid);
    if (known && known.kind.group === kind.group && known.kind.kind === kind.kind && known.namespace === namespace && known.name === ref.name) {
      return known.deleting && known.foreground ? 'waiting' : 'solid';
    }
    if (!this.absent.has(ref.uid)) {
      const owner = await this.read(kind, namespace, ref.name);
      if (owner && owner.metadata?.uid === ref.uid) {
        const waiting = Boolean(owner.metadata.deletionTimestamp) && (owner.metadata.finalizers ?? []).includes(FOREGROUND_FINALIZER);
        return waiting ? 'waiting' : 'solid';
      }
      this.remember(ref.uid);
    }
    // Known under that uid elsewhere: a reference across namespaces, reported.
    if (known && known.namespace !== namespace && kind.namespaced) this.reportInvalidNamespace(dependent, uid, ref);
    return 'dangling';
  }

  private async read(kind: GcKind, namespace: string, name: string): Promise<ApiObject | undefined> {
    try {
      return await this.client.request('GET', kindPath(kind, namespace, name));
    } catch (err) {
      if (err instanceof ApiError && err.code === 404) return undefined;
      throw err;
    }
  }

  /** Reads, changes and writes back an object until the write is not a conflict; nothing when it is gone. */
  private async rewrite(node: GraphNode, uid: string, change: (obj: ApiObject) => boolean): Promise<void> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const obj = await this.read(node.kind, node.namespace, node.name);
      if (!obj || obj.metadata?.uid !== uid) return;
      if (!change(obj)) return;
      try {
        await this.client.request('PUT', kindPath(node.kind, node.namespace, node.name), obj);
        return;
      } catch (err) {
        if (err instanceof ApiError && err.code === 404) return;
        if (!(err instanceof ApiError && err.code === 409)) throw err;
      }
    }
    throw new Error('kept losing races with other writers');
  }

  private removeOwnerRefs(node: GraphNode, uid: string, owners: Set<string>): Promise<void> {
    return this.rewrite(node, uid, (obj) => {
      const meta = obj.metadata ?? {};
      const before = meta.ownerReferences ?? [];
      const after = before.filter((r) => !owners.has(r.uid));
      if (after.length === before.length) return false;
      obj.metadata = { ...meta, ownerReferences: after };
      return true;
    });
  }

  private removeFinalizer(node: GraphNode, uid: string, finalizer: string): Promise<void> {
    return this.rewrite(node, uid, (obj) => {
      const meta = obj.metadata ?? {};
      const before = meta.finalizers ?? [];
      if (!before.includes(finalizer)) return false;
      obj.metadata = { ...meta, finalizers: before.filter((f) => f !== finalizer) };
      return true;
    });
  }

  private reportOnce(uid: string, ref: OwnerLink, what: string, report: () => void): void {
    const key = `${uid}/${ref.uid}/${what}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    if (this.reported.size > ABSENT_CACHE_SIZE) this.reported.delete(this.reported.values().next().value as string);
    report();
  }

  /** The original's `OwnerRefInvalidNamespace` Warning event on the dependent. */
  private reportInvalidNamespace(dependent: GraphNode, uid: string, ref: OwnerLink): void {
    this.reportOnce(uid, ref, 'namespace', () => {
      const message = `ownerRef [${ref.apiVersion}/${ref.kind}, namespace: ${dependent.namespace}, name: ${ref.name}, uid: ${ref.uid}] does not exist in namespace ${JSON.stringify(dependent.namespace)}`;
      this.log.warn('invalid owner reference', { object: `${dependent.namespace}/${dependent.name}`, message });
      void this.recordEvent(dependent, uid, 'OwnerRefInvalidNamespace', message);
    });
  }

  private recordEvent(node: GraphNode, uid: string, reason: string, message: string): Promise<void> {
    const regarding = { apiVersion: apiVersionOf(node.kind), kind: node.kind.kind, name: node.name, ...(node.namespace ? { namespace: node.namespace } : {}), uid };
    return this.events.record({ regarding, type: 'Warning', reason, action: 'CollectGarbage', note: message });
  }
}
