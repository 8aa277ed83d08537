import type { ApiObject } from './types';

/**
 * The objects a pod names in its namespace: the secrets, config maps,
 * persistent volume claims, service account and resource claims its node
 * agent reads to run it (the original server's pod visitors). The Node
 * authorization mode relates them to the pod's node; NodeRestriction refuses
 * mirror pods that name any.
 */

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
  kind: 'secret' | 'configmap' | 'persistentvolumeclaim' | 'serviceaccount' | 'resourceclaim';
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
