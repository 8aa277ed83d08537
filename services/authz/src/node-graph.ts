import type { ApiObject } from '@svc/apimachinery';
import type { FeedSink, FeedSource } from './policy-feed';

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
export type VertexKind = 'pod' | 'secret' | 'configmap' | 'persistentvolumeclaim' | 'serviceaccount' | 'resourceclaim';

/** The stored kinds the graph is built from (persistent volume claims and volumes are not stored kinds here: a claim is related by name). */
export const NODE_GRAPH_SOURCES: FeedSource[] = [{ group: '', resource: 'pods', kind: 'Pod' }];

type Fields = Record<string, unknown>;

function record(value: unknown): Fields | undefined {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Fields) : undefined;
}

function records(value: unknown): Fields[] {
  return Array.isArray(value) ? value.map(record).filter((r): r is Fields => r !== undefined) : [];
}

function text(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

/** A reference a pod makes, by kind and name (in the pod's namespace). */
export interface PodReference {
  kind: Exclude<VertexKind, 'pod'>;
  name: string;
}

/** Volume sources that name a secret in `secretRef.name` (the storage plugins' credentials). */
const SECRET_REF_VOLUMES = ['cephfs', 'cinder', 'flexVolume', 'rbd', 'scaleIO', 'iscsi', 'storageos'];

/** Every secret, config map, claim, service account and resource claim a pod names, as the original server visits them. */
export function podReferences(pod: ApiObject): PodReference[] {
  const spec = record(pod['spec']) ?? {};
  const status = record(pod['status']) ?? {};
  const refs: PodReference[] = [];
  const add = (kind: PodReference['kind'], name: unknown): void => {
    if (text(name) !== '') refs.push({ kind, name: text(name) });
  };
  for (const s of records(spec['imagePullSecrets'])) add('secret', s['name']);
  const containers = [...records(spec['containers']), ...records(spec['initContainers']), ...records(spec['ephemeralContainers'])];
  for (const c of containers) {
    for (const from of records(c['envFrom'])) {
      add('secret', record(from['secretRef'])?.['name']);
      add('configmap', record(from['configMapRef'])?.['name']);
    }
    for (const env of records(c['env'])) {
      const valueFrom = record(env['valueFrom']);
      add('secret', record(valueFrom?.['secretKeyRef'])?.['name']);
      add('configmap', record(valueFrom?.['configMapKeyRef'])?.['name']);
    }
  }
  const podName = pod.metadata?.name ?? '';
  for (const v of records(spec['volumes'])) {
    add('secret', record(v['secret'])?.['secretName']);
    add('secret', record(v['azureFile'])?.['secretName']);
    for (const source of SECRET_REF_VOLUMES) add('secret', record(record(v[source])?.['secretRef'])?.['name']);
    add('secret', record(record(v['csi'])?.['nodePublishSecretRef'])?.['name']);
    add('configmap', record(v['configMap'])?.['name']);
    for (const p of records(record(v['projected'])?.['sources'])) {
      add('secret', record(p['secret'])?.['name']);
      add('configmap', record(p['configMap'])?.['name']);
    }
    add('persistentvolumeclaim', record(v['persistentVolumeClaim'])?.['claimName']);
    // A generic ephemeral volume's claim is named after the pod and the volume.
    if (record(v['ephemeral']) && podName !== '' && text(v['name']) !== '') add('persistentvolumeclaim', `${podName}-${text(v['name'])}`);
  }
  add('serviceaccount', spec['serviceAccountName'] || spec['serviceAccount']);
  for (const c of records(spec['resourceClaims'])) add('resourceclaim', c['resourceClaimName']);
  for (const c of records(status['resourceClaimStatuses'])) add('resourceclaim', c['resourceClaimName']);
  return refs;
}

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
    const node = text(record(pod['spec'])?.['nodeName']);
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
