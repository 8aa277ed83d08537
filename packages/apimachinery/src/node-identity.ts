import type { UserInfo } from './types';

/**
 * Who a node agent is (SPEC section 5, "Node mode"): user
 * `system:node:<node-name>` in group `system:nodes`. The Node authorization
 * mode, the NodeRestriction admission plugin and the `system:node` default
 * role all read it here, as the original server's node identifier is shared
 * by its authorizer and its admission plugin.
 */
export const NODES_GROUP = 'system:nodes';
export const NODE_USER_PREFIX = 'system:node:';
/** The namespace of the nodes' heartbeat leases (group `coordination.svc.io`). */
export const NODE_LEASE_NAMESPACE = 'svc-node-lease';

/** The annotation that marks a mirror pod (a node's static pod as seen through the API). */
export const MIRROR_POD_ANNOTATION = 'svc.io/config.mirror';

export interface NodeIdentity {
  /** The node's name; empty when the user is in `system:nodes` with a name that names no node. */
  nodeName: string;
}

/** The node a user is, or undefined for users that are not nodes (not in the group, or not named `system:node:...`). */
export function nodeIdentity(user: Pick<UserInfo, 'username' | 'groups'>): NodeIdentity | undefined {
  if (!user.username.startsWith(NODE_USER_PREFIX) || !user.groups.includes(NODES_GROUP)) return undefined;
  return { nodeName: user.username.slice(NODE_USER_PREFIX.length) };
}

/** A rule in the shape of RBAC's (group names are ours). */
export interface NodeRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
}

const READ = ['get', 'list', 'watch'];

/**
 * What a node may do outside the objects the Node mode relates to it by its
 * graph (the original server's static node rules); also the rules of the
 * `system:node` default ClusterRole. Writes are narrowed by NodeRestriction.
 */
export const NODE_RULES: readonly NodeRule[] = [
  // Delegated authentication and authorization checks (non-mutating creates).
  { verbs: ['create'], apiGroups: ['authentication.svc.io'], resources: ['tokenreviews'] },
  { verbs: ['create'], apiGroups: ['authorization.svc.io'], resources: ['subjectaccessreviews', 'localsubjectaccessreviews'] },
  // Service environment variables of pods.
  { verbs: READ, apiGroups: [''], resources: ['services'] },
  // Registering and reporting its Node.
  { verbs: ['create', 'get', 'list', 'watch'], apiGroups: [''], resources: ['nodes'] },
  { verbs: ['update', 'patch'], apiGroups: [''], resources: ['nodes/status'] },
  { verbs: ['update', 'patch'], apiGroups: [''], resources: ['nodes'] },
  // Its events, in either version (the original's eventsRule).
  { verbs: ['create', 'update', 'patch'], apiGroups: ['', 'events.svc.io'], resources: ['events'] },
  { verbs: READ, apiGroups: [''], resources: ['pods'] },
  // Mirror pods, pod status and evictions of the pods it runs.
  { verbs: ['create', 'delete'], apiGroups: [''], resources: ['pods'] },
  { verbs: ['update', 'patch'], apiGroups: [''], resources: ['pods/status'] },
  { verbs: ['create'], apiGroups: [''], resources: ['pods/eviction'] },
  // Volumes and environment of its pods (narrowed to related objects by the Node mode).
  { verbs: READ, apiGroups: [''], resources: ['secrets', 'configmaps'] },
  { verbs: ['get'], apiGroups: [''], resources: ['persistentvolumeclaims', 'persistentvolumes'] },
  { verbs: ['get'], apiGroups: [''], resources: ['endpoints'] },
  // Its client certificate's rotation.
  { verbs: ['create', 'get', 'list', 'watch'], apiGroups: ['certificates.svc.io'], resources: ['certificatesigningrequests'] },
  { verbs: ['get', 'create', 'update', 'patch', 'delete'], apiGroups: ['coordination.svc.io'], resources: ['leases'] },
  { verbs: ['get'], apiGroups: ['storage.svc.io'], resources: ['volumeattachments'] },
  { verbs: ['create'], apiGroups: [''], resources: ['serviceaccounts/token'] },
  { verbs: ['get', 'update', 'patch'], apiGroups: [''], resources: ['persistentvolumeclaims/status'] },
  { verbs: READ, apiGroups: ['storage.svc.io'], resources: ['csidrivers'] },
  { verbs: ['get', 'create', 'update', 'patch', 'delete'], apiGroups: ['storage.svc.io'], resources: ['csinodes'] },
  { verbs: READ, apiGroups: ['node.svc.io'], resources: ['runtimeclasses'] },
];
