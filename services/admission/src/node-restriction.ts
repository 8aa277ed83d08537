import { ApiError, MIRROR_POD_ANNOTATION, NODE_LEASE_NAMESPACE, nodeIdentity, podReferences, type ApiObject } from '@svc/apimachinery';
import type { AdmissionAttributes, AdmissionPlugin } from './plugins';

/**
 * NodeRestriction (SPEC section 5, "Node mode"): the writes the Node
 * authorization mode allows a node broadly are narrowed here to what
 * concerns the node itself, as the original plugin does. A node may create
 * only mirror pods bound to itself that name no secret, config map, claim or
 * service account; delete only pods bound to itself; update the status only
 * of pods bound to itself; create, update and delete only its own Node,
 * without changing its taints or labels outside those a node agent sets;
 * request service account tokens only bound to a pod on itself; write only
 * its own lease. Beyond the original plugin, an event a node writes may not
 * claim another node as its source. Requests of users that are not nodes
 * pass untouched.
 */

export const NODE_RESTRICTION = 'NodeRestriction';

const VENDOR_DOMAIN = 'svc.io';
/** Labels a node agent sets on its Node (the original's well-known node labels, with our domain). */
const NODE_AGENT_LABELS = new Set([
  'svc.io/hostname',
  'svc.io/os',
  'svc.io/arch',
  'beta.svc.io/os',
  'beta.svc.io/arch',
  'beta.svc.io/instance-type',
  'node.svc.io/instance-type',
  'topology.svc.io/zone',
  'topology.svc.io/region',
  'failure-domain.beta.svc.io/zone',
  'failure-domain.beta.svc.io/region',
]);
/** Label domains (and their subdomains) a node agent may set freely. */
const NODE_AGENT_LABEL_DOMAINS = ['kubelet.svc.io', 'node.svc.io'];
/** Labels under this domain are for the cluster's administrators to place workloads; nodes may never set them. */
const NODE_RESTRICTION_DOMAIN = 'node-restriction.svc.io';

/** A pod or lease reader (admission's storage edge). */
export interface PodReader {
  /** The pod, or undefined when it does not exist. */
  getPod(namespace: string, name: string): Promise<ApiObject | undefined>;
}

type Fields = Record<string, unknown>;

function fields(value: unknown): Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Fields) : {};
}

function nodeNameOf(pod: ApiObject | undefined): string {
  const name = fields(pod?.['spec'])['nodeName'];
  return typeof name === 'string' ? name : '';
}

function labelDomain(key: string): string {
  const slash = key.indexOf('/');
  return slash < 0 ? '' : key.slice(0, slash);
}

function inDomain(domain: string, of: string): boolean {
  return domain === of || domain.endsWith(`.${of}`);
}

/** Whether a node may set or change the label `key` on its Node. */
export function nodeMaySetLabel(key: string): boolean {
  const domain = labelDomain(key);
  if (inDomain(domain, NODE_RESTRICTION_DOMAIN)) return false;
  if (!inDomain(domain, VENDOR_DOMAIN)) return true;
  return NODE_AGENT_LABELS.has(key) || NODE_AGENT_LABEL_DOMAINS.some((d) => inDomain(domain, d));
}

/** The label keys added, removed or changed between `old` and `current`. */
function modifiedLabels(current: ApiObject | undefined, old: ApiObject | undefined): string[] {
  const a = current?.metadata?.labels ?? {};
  const b = old?.metadata?.labels ?? {};
  return [...new Set([...Object.keys(a), ...Object.keys(b)])].filter((k) => a[k] !== b[k]).sort();
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

export function nodeRestriction(pods: PodReader): AdmissionPlugin {
  const forbid = (attrs: AdmissionAttributes, message: string): ApiError =>
    ApiError.forbidden({ group: attrs.resource.group, resource: attrs.resource.resource }, attrs.name || attrs.object?.metadata?.name || '', `${NODE_RESTRICTION}: ${message}`);

  const mirrorPodCreate = (attrs: AdmissionAttributes, node: string): void => {
    const pod = attrs.object;
    if (pod?.metadata?.annotations?.[MIRROR_POD_ANNOTATION] === undefined) {
      throw forbid(attrs, `pod does not have "${MIRROR_POD_ANNOTATION}" annotation, node "${node}" can only create mirror pods`);
    }
    if (nodeNameOf(pod) !== node) throw forbid(attrs, `node "${node}" can only create pods with spec.nodeName set to itself`);
    const owners = pod.metadata?.ownerReferences ?? [];
    if (owners.length > 1) throw forbid(attrs, `node "${node}" can only create pods with a single owner reference set to itself`);
    const owner = owners[0];
    if (owner && (owner.kind !== 'Node' || owner.apiVersion !== 'v1' || owner.name !== node || owner.controller === true)) {
      throw forbid(attrs, `node "${node}" can only create pods with an owner reference set to itself`);
    }
    const what: Record<string, string> = {
      secret: 'reference secrets',
      configmap: 'reference configmaps',
      persistentvolumeclaim: 'reference persistentvolumeclaims',
      serviceaccount: 'use service accounts',
      resourceclaim: 'reference resourceclaims',
    };
    for (const ref of podReferences(pod)) throw forbid(attrs, `node "${node}" can not create pods that ${what[ref.kind]}`);
  };

  const admitPod = (attrs: AdmissionAttributes, node: string): void => {
    if (attrs.subresource === '') {
      if (attrs.operation === 'CREATE') return mirrorPodCreate(attrs, node);
      if (attrs.operation === 'DELETE') {
        if (nodeNameOf(attrs.oldObject) !== node) throw forbid(attrs, `node "${node}" can only delete pods with spec.nodeName set to itself`);
        return;
      }
      throw forbid(attrs, `unexpected operation ${attrs.operation}, node "${node}" can only create and delete mirror pods`);
    }
    if (attrs.subresource === 'status') {
      if (attrs.operation !== 'UPDATE') throw forbid(attrs, `unexpected operation ${attrs.operation}`);
      if (nodeNameOf(attrs.oldObject) !== node) throw forbid(attrs, `node "${node}" can only update pod status for pods with spec.nodeName set to itself`);
      if (!sameJson(attrs.oldObject?.metadata?.labels, attrs.object?.metadata?.labels)) throw forbid(attrs, `node "${node}" cannot update labels through pod status`);
    }
  };

  const admitNode = (attrs: AdmissionAttributes, node: string): void => {
    const requested = attrs.name || attrs.object?.metadata?.name || '';
    if (requested !== node) throw forbid(attrs, `node "${node}" is not allowed to modify node "${requested}"`);
    const spec = fields(attrs.object?.['spec']);
    const oldSpec = fields(attrs.oldObject?.['spec']);
    if (attrs.operation === 'CREATE') {
      if (spec['configSource'] !== undefined && spec['configSource'] !== null) throw forbid(attrs, `node "${node}" is not allowed to create pods with a non-nil configSource`);
      const forbidden = modifiedLabels(attrs.object, undefined).filter((k) => !nodeMaySetLabel(k));
      if (forbidden.length > 0) throw forbid(attrs, `node "${node}" is not allowed to set the following labels: ${forbidden.join(', ')}`);
    }
    if (attrs.operation === 'UPDATE') {
      if (spec['configSource'] !== undefined && spec['configSource'] !== null && !sameJson(spec['configSource'], oldSpec['configSource'])) {
        throw forbid(attrs, `node "${node}" is not allowed to update configSource to a new non-nil configSource`);
      }
      if (!sameJson(spec['taints'], oldSpec['taints'])) throw forbid(attrs, `node "${node}" is not allowed to modify taints`);
      const forbidden = modifiedLabels(attrs.object, attrs.oldObject).filter((k) => !nodeMaySetLabel(k));
      if (forbidden.length > 0) throw forbid(attrs, `node "${node}" is not allowed to modify labels: ${forbidden.join(', ')}`);
    }
  };

  const admitToken = async (attrs: AdmissionAttributes, node: string): Promise<void> => {
    if (attrs.operation !== 'CREATE' || attrs.subresource !== 'token') return;
    const ref = fields(fields(attrs.object?.['spec'])['boundObjectRef']);
    if (ref['apiVersion'] !== 'v1' || ref['kind'] !== 'Pod' || typeof ref['name'] !== 'string' || ref['name'] === '') throw forbid(attrs, 'node requested token not bound to a pod');
    if (typeof ref['uid'] !== 'string' || ref['uid'] === '') throw forbid(attrs, 'node requested token with a pod binding without a uid');
    const pod = await pods.getPod(attrs.namespace, ref['name']);
    if (!pod) throw ApiError.notFound({ group: '', resource: 'pods' }, ref['name']);
    if (pod.metadata?.uid !== ref['uid']) {
      throw forbid(attrs, `the UID in the bound object reference (${ref['uid']}) does not match the UID in record. The object might have been deleted and then recreated`);
    }
    if (nodeNameOf(pod) !== node) throw forbid(attrs, 'node requested token bound to a pod scheduled on a different node');
  };

  const admitLease = (attrs: AdmissionAttributes, node: string): void => {
    if (attrs.namespace !== NODE_LEASE_NAMESPACE) throw forbid(attrs, `can only access leases in the "${NODE_LEASE_NAMESPACE}" system namespace`);
    const name = attrs.operation === 'CREATE' ? (attrs.object?.metadata?.name ?? attrs.name) : attrs.name;
    if (name !== node) throw forbid(attrs, 'can only access node lease with the same name as the requesting node');
  };

  const admitEvent = (attrs: AdmissionAttributes, node: string): void => {
    if (attrs.operation === 'DELETE') return;
    const event = attrs.object;
    const host = attrs.resource.group === '' ? fields(event?.['source'])['host'] : event?.['reportingInstance'];
    if (typeof host === 'string' && host !== '' && host !== node) throw forbid(attrs, `node "${node}" can only write events it is the source of, not events from "${host}"`);
  };

  return {
    name: NODE_RESTRICTION,
    async validate(attrs) {
      const identity = nodeIdentity(attrs.userInfo);
      if (!identity) return;
      const node = identity.nodeName;
      if (node === '') throw forbid(attrs, `could not determine node from user "${attrs.userInfo.username}"`);
      const { group, resource } = attrs.resource;
      if (group === '' && resource === 'pods') return admitPod(attrs, node);
      if (group === '' && resource === 'nodes') return admitNode(attrs, node);
      if (group === '' && resource === 'serviceaccounts') return admitToken(attrs, node);
      if (group === 'coordination.svc.io' && resource === 'leases') return admitLease(attrs, node);
      if ((group === '' || group === 'events.svc.io') && resource === 'events') return admitEvent(attrs, node);
    },
  };
}
