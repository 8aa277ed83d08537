import { canonicalGroup, type ApiObject } from '@svc/apimachinery';

/**
 * The garbage collector's picture of the cluster: one small node per object
 * of every kind it follows (its kind, namespace, name, owners and deletion
 * state; never the object itself), and for every owner uid the uids of the
 * objects that name it, whether or not the owner was ever seen (an owner
 * known only by the references to it is the original's virtual node).
 */

export const FOREGROUND_FINALIZER = 'foregroundDeletion';
export const ORPHAN_FINALIZER = 'orphan';

/** A kind the collector follows, at the version it reads and writes it. */
export interface GcKind {
  group: string;
  version: string;
  kind: string;
  plural: string;
  namespaced: boolean;
}

/** One owner reference of a node. */
export interface OwnerLink {
  uid: string;
  apiVersion: string;
  kind: string;
  name: string;
  block: boolean;
}

export interface GraphNode {
  /** Shared between all nodes of the kind. */
  kind: GcKind;
  namespace: string;
  name: string;
  /** The resourceVersion seen: a delete by the collector is conditional on it. */
  resourceVersion: string;
  owners: OwnerLink[];
  /** Has a deletionTimestamp. */
  deleting: boolean;
  /** Carries the foregroundDeletion finalizer: waits for its blocking dependents. */
  foreground: boolean;
  /** Carries the orphan finalizer: its dependents are to be released. */
  orphan: boolean;
}

/** The group of an apiVersion (`v1` is the core group), with upstream names read as ours. */
export function groupOf(apiVersion: string): string {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? '' : canonicalGroup(apiVersion.slice(0, slash));
}

/** The apiVersion of a kind. */
export function apiVersionOf(kind: GcKind): string {
  return kind.group ? `${kind.group}/${kind.version}` : kind.version;
}

/** The path of a collection (across namespaces when `namespace` is empty) or, with `name`, of one object. */
export function kindPath(kind: GcKind, namespace: string, name?: string): string {
  const base = kind.group ? `/apis/${kind.group}/${kind.version}` : `/api/${kind.version}`;
  const ns = kind.namespaced && namespace ? `/namespaces/${encodeURIComponent(namespace)}` : '';
  return `${base}${ns}/${kind.plural}${name !== undefined ? `/${encodeURIComponent(name)}` : ''}`;
}

export function nodeOf(kind: GcKind, obj: ApiObject): GraphNode {
  const meta = obj.metadata ?? {};
  const finalizers = meta.finalizers ?? [];
  return {
    kind,
    namespace: kind.namespaced ? (meta.namespace ?? '') : '',
    name: meta.name ?? '',
    resourceVersion: meta.resourceVersion ?? '',
    owners: (meta.ownerReferences ?? []).map((r) => ({ uid: r.uid, apiVersion: r.apiVersion, kind: r.kind, name: r.name, block: r.blockOwnerDeletion === true })),
    deleting: Boolean(meta.deletionTimestamp),
    foreground: finalizers.includes(FOREGROUND_FINALIZER),
    orphan: finalizers.includes(ORPHAN_FINALIZER),
  };
}

/** The same owners, in any order, with the same blocking. */
export function sameOwners(a: OwnerLink[], b: OwnerLink[]): boolean {
  if (a.length !== b.length) return false;
  const key = (l: OwnerLink): string => `${l.uid}|${l.apiVersion}|${l.kind}|${l.name}|${l.block}`;
  const left = new Set(a.map(key));
  return b.every((l) => left.has(key(l)));
}

export class OwnerGraph {
  private readonly nodes = new Map<string, GraphNode>();
  /** Owner uid to the uids of the objects that reference it. */
  private readonly dependents = new Map<string, Set<string>>();

  get size(): number {
    return this.nodes.size;
  }

  get(uid: string): GraphNode | undefined {
    return this.nodes.get(uid);
  }

  /** Puts a node in place of what was there; answers the node it replaced. */
  upsert(uid: string, node: GraphNode): GraphNode | undefined {
    const old = this.nodes.get(uid);
    if (old) this.unlink(uid, old);
    this.nodes.set(uid, node);
    for (const owner of node.owners) {
      let set = this.dependents.get(owner.uid);
      if (!set) this.dependents.set(owner.uid, (set = new Set()));
      set.add(uid);
    }
    return old;
  }

  remove(uid: string): GraphNode | undefined {
    const old = this.nodes.get(uid);
    if (!old) return undefined;
    this.unlink(uid, old);
    this.nodes.delete(uid);
    return old;
  }

  /** The uids of the objects naming `uid` as an owner. */
  dependentsOf(uid: string): string[] {
    return [...(this.dependents.get(uid) ?? [])];
  }

  /** Dependents of `uid` whose reference to it has blockOwnerDeletion. */
  blockingDependentsOf(uid: string): string[] {
    return this.dependentsOf(uid).filter((d) => this.nodes.get(d)?.owners.some((o) => o.uid === uid && o.block));
  }

  private unlink(uid: string, node: GraphNode): void {
    for (const owner of node.owners) {
      const set = this.dependents.get(owner.uid);
      if (!set) continue;
      set.delete(uid);
      if (set.size === 0) this.dependents.delete(owner.uid);
    }
  }
}
