import { podReferences, type ApiObject, type PodReference } from '@svc/apimachinery';
import type { FeedSink, FeedSource } from '@svc/watch-fanout/feed';

/**
 * The Node mode's graph (the original server's node authorizer graph): which
 * objects each node may read because a pod bound to it (`spec.nodeName`)
 * uses them. A pod's edges are its own vertex and the secrets, config maps,
 * persistent volume claims, service account and resource claims it names;
 * they are indexed by node with a count per object, so a decision is one map
 * lookup and a pod's removal or move undoes exactly what it added. Memory is
 * bounded by the stored pods and what they name.
 */

/** The kinds of objects the graph relates to nodes. */
export type VertexKind = 'pod' | PodReference['kind'];

/** The stored kinds the graph is built from (persistent volume claims and volumes are not stored kinds here: a claim is related by name). */
export const NODE_GRAPH_SOURCES: FeedSource[] = [{ group: '', resource: 'pods', kind: 'Pod' }];

function vertexKey(kind: VertexKind, namespace: string, name: string): string {
  return `${kind}/${namespace}/${name}`;
}

interface PodEdges {
  node: string;
  vertices: string[];
}

export class NodeGraph implements FeedSink {
  /** Edges of each pod bound to a node, by `namespace/name`. */
  private readonly pods = new Map<string, PodEdges>();
  /** For each node, the vertices reachable from it and how many of its pods reach each. */
  private readonly byNode = new Map<string, Map<string, number>>();

  clear(): void {
    this.pods.clear();
    this.byNode.clear();
  }

  apply(kind: string, obj: ApiObject, deleted = false): void {
    if (kind !== 'Pod') return;
    const namespace = obj.metadata?.namespace ?? '';
    const name = obj.metadata?.name ?? '';
    this.removePod(namespace, name);
    if (!deleted) this.addPod(obj);
  }

  private addPod(pod: ApiObject): void {
    const spec = pod['spec'];
    const node = typeof spec === 'object' && spec !== null && typeof (spec as Record<string, unknown>)['nodeName'] === 'string' ? ((spec as Record<string, unknown>)['nodeName'] as string) : '';
    const namespace = pod.metadata?.namespace ?? '';
    const name = pod.metadata?.name ?? '';
    if (node === '' || name === '') return;
    const vertices = [...new Set([vertexKey('pod', namespace, name), ...podReferences(pod).map((r) => vertexKey(r.kind, namespace, r.name))])];
    this.pods.set(`${namespace}/${name}`, { node, vertices });
    let reachable = this.byNode.get(node);
    if (!reachable) this.byNode.set(node, (reachable = new Map()));
    for (const v of vertices) reachable.set(v, (reachable.get(v) ?? 0) + 1);
  }

  private removePod(namespace: string, name: string): void {
    const key = `${namespace}/${name}`;
    const edges = this.pods.get(key);
    if (!edges) return;
    this.pods.delete(key);
    const reachable = this.byNode.get(edges.node);
    if (!reachable) return;
    for (const v of edges.vertices) {
      const n = (reachable.get(v) ?? 0) - 1;
      if (n > 0) reachable.set(v, n);
      else reachable.delete(v);
    }
    if (reachable.size === 0) this.byNode.delete(edges.node);
  }

  /** Whether a pod bound to `node` relates it to the object (`kind` `namespace`/`name`). */
  hasPath(node: string, kind: VertexKind, namespace: string, name: string): boolean {
    return this.byNode.get(node)?.has(vertexKey(kind, namespace, name)) ?? false;
  }

  get size(): Record<string, number> {
    let edges = 0;
    for (const p of this.pods.values()) edges += p.vertices.length;
    return { pods: this.pods.size, nodes: this.byNode.size, edges };
  }
}
