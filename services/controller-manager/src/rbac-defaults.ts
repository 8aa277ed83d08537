import { NODE_RULES, PUBLIC_NAMESPACE, SYSTEM_NAMESPACE, type ApiObject } from '@svc/apimachinery';

/**
 * The default roles and bindings (SPEC section 5, "RBAC rules" 7): created
 * when missing and given back any missing rule or subject on every start of
 * the controller-manager, unless annotated
 * `rbac.authorization.svc.io/autoupdate: "false"`. All carry the label
 * `svc.io/bootstrapping=rbac-defaults`.
 */
export const BOOTSTRAP_LABEL = 'svc.io/bootstrapping';
export const BOOTSTRAP_LABEL_VALUE = 'rbac-defaults';
export const AUTOUPDATE_ANNOTATION = 'rbac.authorization.svc.io/autoupdate';
export const AGGREGATE_TO = (role: 'admin' | 'edit' | 'view'): string => `rbac.authorization.svc.io/aggregate-to-${role}`;
const RBAC = 'rbac.authorization.svc.io';
const API = `${RBAC}/v1`;

interface Rule {
  verbs: string[];
  apiGroups?: string[];
  resources?: string[];
  resourceNames?: string[];
  nonResourceURLs?: string[];
}

const READ = ['get', 'list', 'watch'];
const WRITE = ['create', 'update', 'patch', 'delete', 'deletecollection'];

function meta(name: string, labels: Record<string, string> = {}, namespace?: string): ApiObject['metadata'] {
  return {
    name,
    ...(namespace ? { namespace } : {}),
    labels: { [BOOTSTRAP_LABEL]: BOOTSTRAP_LABEL_VALUE, ...labels },
    annotations: { [AUTOUPDATE_ANNOTATION]: 'true' },
  };
}

function clusterRole(name: string, rules: Rule[], labels: Record<string, string> = {}, aggregateFrom?: string): ApiObject {
  return {
    apiVersion: API,
    kind: 'ClusterRole',
    metadata: meta(name, labels),
    rules,
    ...(aggregateFrom ? { aggregationRule: { clusterRoleSelectors: [{ matchLabels: { [aggregateFrom]: 'true' } }] } } : {}),
  };
}

function clusterRoleBinding(name: string, role: string, groups: string[], users: string[] = []): ApiObject {
  return {
    apiVersion: API,
    kind: 'ClusterRoleBinding',
    metadata: meta(name),
    roleRef: { apiGroup: RBAC, kind: 'ClusterRole', name: role },
    subjects: [...groups.map((g) => ({ kind: 'Group', apiGroup: RBAC, name: g })), ...users.map((u) => ({ kind: 'User', apiGroup: RBAC, name: u }))],
  };
}

const CORE_WORKLOADS = ['pods', 'services', 'configmaps', 'endpoints', 'serviceaccounts', 'events'];

function role(namespace: string, name: string, rules: Rule[]): ApiObject {
  return { apiVersion: API, kind: 'Role', metadata: meta(name, {}, namespace), rules };
}

function roleBinding(namespace: string, name: string, roleRef: { kind: 'Role' | 'ClusterRole'; name: string }, subjects: Array<Record<string, string>>): ApiObject {
  return { apiVersion: API, kind: 'RoleBinding', metadata: meta(name, {}, namespace), roleRef: { apiGroup: RBAC, ...roleRef }, subjects };
}

/** The controller-manager's own identity (its kubeconfig's client certificate). */
export const CONTROLLER_MANAGER_USER = 'system:svc-controller-manager';

/**
 * The service account each controller runs as with
 * `--use-service-account-credentials` (in the system namespace, named as
 * the original controller-manager names them), bound to
 * `system:controller:<account>`.
 */
export const CONTROLLER_ACCOUNTS: Record<string, string> = {
  namespace: 'namespace-controller',
  serviceaccount: 'service-account-controller',
  'clusterrole-aggregation': 'clusterrole-aggregation-controller',
  bootstrapsigner: 'bootstrap-signer',
  tokencleaner: 'token-cleaner',
  customresourcedefinition: 'customresourcedefinition-controller',
  'validatingadmissionpolicy-status': 'validatingadmissionpolicy-status-controller',
  disruption: 'disruption-controller',
  garbagecollector: 'generic-garbage-collector',
};

/**
 * The service account the shared informers list and watch as (with
 * `--use-service-account-credentials`): one watch per collection serves
 * every controller, so it runs under an identity of its own that may only
 * list and watch what the informers follow, rather than under one
 * controller's (whose binding would then hold up the others) or the
 * process's certificate (which stays limited to minting tokens and holding
 * the leader Lease).
 */
export const INFORMER_ACCOUNT = 'shared-informers';

/** The leader-election Lease of the controller-manager (`--leader-elect-resource-name`). */
export const CONTROLLER_MANAGER_LEASE = 'svc-controller-manager';

const controllerRole = (account: string): string => `system:controller:${account}`;
const accountSubject = (account: string): Record<string, string> => ({ kind: 'ServiceAccount', name: account, namespace: SYSTEM_NAMESPACE });

/**
 * What each controller may do, and no more: the namespace controller empties
 * namespaces of every kind, the service-account controller creates accounts,
 * aggregation rewrites aggregated ClusterRoles (escalate: they hold what
 * their sources hold), the definitions controller accepts custom resource
 * definitions and deletes the objects of deleted ones, the policy status controller writes the type
 * checking status of ValidatingAdmissionPolicies, the disruption controller writes the
 * status of PodDisruptionBudgets (reading the scale of the pods' controllers), the garbage collector reads,
 * updates (ownerReferences, its finalizers) and deletes objects of any kind, the bootstrap signer reads token Secrets and keeps
 * cluster-info, the token cleaner deletes expired token Secrets, the shared
 * informers list and watch what the controllers follow. The
 * controller-manager itself may only create those accounts and their tokens,
 * and hold its leader Lease in the system namespace.
 * RBAC bootstrap writes every role, so it runs with a `system:masters`
 * identity (`--rbac-bootstrap-kubeconfig`), as the original server writes
 * its defaults with its privileged loopback identity.
 */
function controllerObjects(): ApiObject[] {
  const clusterWide: Array<[string, Rule[]]> = [
    [
      CONTROLLER_ACCOUNTS['namespace'] as string,
      [
        { verbs: ['get', 'list', 'delete', 'deletecollection'], apiGroups: ['*'], resources: ['*'] },
        { verbs: ['watch'], apiGroups: [''], resources: ['namespaces'] },
        { verbs: ['update'], apiGroups: [''], resources: ['namespaces/finalize', 'namespaces/status'] },
      ],
    ],
    [
      CONTROLLER_ACCOUNTS['serviceaccount'] as string,
      [
        { verbs: READ, apiGroups: [''], resources: ['namespaces'] },
        { verbs: [...READ, 'create'], apiGroups: [''], resources: ['serviceaccounts'] },
      ],
    ],
    [CONTROLLER_ACCOUNTS['clusterrole-aggregation'] as string, [{ verbs: ['escalate', 'get', 'list', 'patch', 'update', 'watch'], apiGroups: [RBAC], resources: ['clusterroles'] }]],
    [
      CONTROLLER_ACCOUNTS['customresourcedefinition'] as string,
      [
        { verbs: [...READ, 'update'], apiGroups: ['apiextensions.svc.io'], resources: ['customresourcedefinitions'] },
        { verbs: ['update', 'patch'], apiGroups: ['apiextensions.svc.io'], resources: ['customresourcedefinitions/status'] },
        // The objects of a deleted definition, whatever its group.
        { verbs: ['list', 'delete', 'deletecollection'], apiGroups: ['*'], resources: ['*'] },
      ],
    ],
    [CONTROLLER_ACCOUNTS['validatingadmissionpolicy-status'] as string, [{ verbs: ['update', 'patch'], apiGroups: ['admissionregistration.svc.io'], resources: ['validatingadmissionpolicies/status'] }]],
    [
      CONTROLLER_ACCOUNTS['disruption'] as string,
      [
        { verbs: ['update'], apiGroups: ['policy'], resources: ['poddisruptionbudgets/status'] },
        // Its events on the budgets (the original's eventsRule).
        { verbs: ['create', 'update', 'patch'], apiGroups: ['', 'events.svc.io'], resources: ['events'] },
        // The scale of the pods' controllers, found through discovery.
        { verbs: ['get'], apiGroups: ['*'], resources: ['*/scale'] },
      ],
    ],
    [
      CONTROLLER_ACCOUNTS['garbagecollector'] as string,
      [
        // Owners and dependents of every kind: read them, drop references and finalizers, delete orphaned dependents.
        { verbs: ['get', 'update', 'delete'], apiGroups: ['*'], resources: ['*'] },
        // Its events (the original's eventsRule).
        { verbs: ['create', 'update', 'patch'], apiGroups: ['', 'events.svc.io'], resources: ['events'] },
      ],
    ],
  ];
  // What the shared informers follow: every collection a controller watches, to list and watch only.
  clusterWide.push([
    INFORMER_ACCOUNT,
    [
      { verbs: ['list', 'watch'], apiGroups: [''], resources: ['namespaces', 'serviceaccounts'] },
      { verbs: ['list', 'watch'], apiGroups: [RBAC], resources: ['clusterroles'] },
      { verbs: ['list', 'watch'], apiGroups: ['apiextensions.svc.io'], resources: ['customresourcedefinitions'] },
      { verbs: ['list', 'watch'], apiGroups: ['admissionregistration.svc.io'], resources: ['validatingadmissionpolicies'] },
      { verbs: ['list', 'watch'], apiGroups: [''], resources: ['pods'] },
      { verbs: ['list', 'watch'], apiGroups: ['policy'], resources: ['poddisruptionbudgets'] },
      // The garbage collector follows the ownerReferences of every kind.
      { verbs: ['list', 'watch'], apiGroups: ['*'], resources: ['*'] },
    ],
  ]);
  const signer = CONTROLLER_ACCOUNTS['bootstrapsigner'] as string;
  const cleaner = CONTROLLER_ACCOUNTS['tokencleaner'] as string;
  const namespaced: Array<[string, string, Rule[]]> = [
    [SYSTEM_NAMESPACE, signer, [{ verbs: READ, apiGroups: [''], resources: ['secrets'] }]],
    [
      PUBLIC_NAMESPACE,
      signer,
      [
        { verbs: [...READ, 'create'], apiGroups: [''], resources: ['configmaps'] },
        { verbs: ['update', 'patch'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['cluster-info'] },
      ],
    ],
    [SYSTEM_NAMESPACE, cleaner, [{ verbs: [...READ, 'delete'], apiGroups: [''], resources: ['secrets'] }]],
    [SYSTEM_NAMESPACE, INFORMER_ACCOUNT, [{ verbs: ['list', 'watch'], apiGroups: [''], resources: ['secrets'] }]],
    [PUBLIC_NAMESPACE, INFORMER_ACCOUNT, [{ verbs: ['list', 'watch'], apiGroups: [''], resources: ['configmaps'] }]],
  ];
  return [
    ...clusterWide.map(([account, rules]) => clusterRole(controllerRole(account), rules)),
    ...clusterWide.map(([account]) => ({ ...clusterRoleBinding(controllerRole(account), controllerRole(account), []), subjects: [accountSubject(account)] })),
    ...namespaced.map(([ns, account, rules]) => role(ns, controllerRole(account), rules)),
    ...namespaced.map(([ns, account]) => roleBinding(ns, controllerRole(account), { kind: 'Role', name: controllerRole(account) }, [accountSubject(account)])),
    role(SYSTEM_NAMESPACE, CONTROLLER_MANAGER_USER, [
      { verbs: ['get', 'create'], apiGroups: [''], resources: ['serviceaccounts'] },
      { verbs: ['create'], apiGroups: [''], resources: ['serviceaccounts/token'] },
      // Leader election, as the original's system:kube-controller-manager: create any Lease (a create names
      // nothing to check), read and renew only its own.
      { verbs: ['create'], apiGroups: ['coordination.svc.io'], resources: ['leases'] },
      { verbs: ['get', 'update'], apiGroups: ['coordination.svc.io'], resources: ['leases'], resourceNames: [CONTROLLER_MANAGER_LEASE] },
      // Its LeaderElection events on the Lease.
      { verbs: ['create', 'update', 'patch'], apiGroups: ['', 'events.svc.io'], resources: ['events'] },
    ]),
    roleBinding(SYSTEM_NAMESPACE, CONTROLLER_MANAGER_USER, { kind: 'Role', name: CONTROLLER_MANAGER_USER }, [{ kind: 'User', apiGroup: RBAC, name: CONTROLLER_MANAGER_USER }]),
  ];
}

/** Every default object, cluster roles first, then bindings, then the controllers' and the namespaced ones. */

/**
 * The node-related roles: `system:node` holds the Node mode's static rules
 * (bound to nobody, as in the original server: nodes are authorized by the
 * Node mode), `system:node-proxier` what a service proxy reads (bound to
 * `system:kube-proxy`), `system:node-bootstrapper` what a node needs to ask
 * for its client certificate.
 */
function nodeRoles(): ApiObject[] {
  return [
    clusterRole('system:node', NODE_RULES.map((r) => ({ verbs: [...r.verbs], apiGroups: [...r.apiGroups], resources: [...r.resources] }))),
    clusterRole('system:node-proxier', [
      { verbs: ['list', 'watch'], apiGroups: [''], resources: ['services', 'endpoints'] },
      { verbs: READ, apiGroups: [''], resources: ['nodes'] },
      { verbs: ['create', 'patch', 'update'], apiGroups: ['', 'events.svc.io'], resources: ['events'] },
      { verbs: ['list', 'watch'], apiGroups: ['discovery.svc.io'], resources: ['endpointslices'] },
    ]),
    clusterRole('system:node-bootstrapper', [{ verbs: ['create', 'get', 'list', 'watch'], apiGroups: ['certificates.svc.io'], resources: ['certificatesigningrequests'] }]),
    clusterRoleBinding('system:node', 'system:node', []),
    clusterRoleBinding('system:node-proxier', 'system:node-proxier', [], ['system:kube-proxy']),
  ];
}

export function defaultRbacObjects(): ApiObject[] {
  return [
    clusterRole('cluster-admin', [
      { verbs: ['*'], apiGroups: ['*'], resources: ['*'] },
      { verbs: ['*'], nonResourceURLs: ['*'] },
    ]),
    clusterRole('admin', [], {}, AGGREGATE_TO('admin')),
    clusterRole('edit', [], { [AGGREGATE_TO('admin')]: 'true' }, AGGREGATE_TO('edit')),
    clusterRole('view', [], { [AGGREGATE_TO('edit')]: 'true' }, AGGREGATE_TO('view')),
    clusterRole(
      'system:aggregate-to-admin',
      [
        { verbs: [...READ, ...WRITE], apiGroups: [RBAC], resources: ['roles', 'rolebindings'] },
        { verbs: ['create'], apiGroups: ['authorization.svc.io'], resources: ['localsubjectaccessreviews'] },
      ],
      { [AGGREGATE_TO('admin')]: 'true' },
    ),
    clusterRole(
      'system:aggregate-to-edit',
      [
        { verbs: WRITE, apiGroups: [''], resources: [...CORE_WORKLOADS, 'secrets', 'pods/status'] },
        { verbs: [...READ], apiGroups: [''], resources: ['secrets'] },
        { verbs: ['create'], apiGroups: [''], resources: ['serviceaccounts/token'] },
        { verbs: ['impersonate'], apiGroups: [''], resources: ['serviceaccounts'] },
        { verbs: [...READ, ...WRITE], apiGroups: ['coordination.svc.io'], resources: ['leases'] },
        { verbs: [...READ, ...WRITE], apiGroups: ['policy'], resources: ['poddisruptionbudgets'] },
        { verbs: ['create'], apiGroups: [''], resources: ['pods/eviction'] },
      ],
      { [AGGREGATE_TO('edit')]: 'true' },
    ),
    clusterRole(
      'system:aggregate-to-view',
      [
        { verbs: READ, apiGroups: [''], resources: [...CORE_WORKLOADS, 'pods/log', 'pods/status', 'services/status', 'namespaces/status'] },
        { verbs: ['get'], apiGroups: [''], resources: ['namespaces'] },
        { verbs: READ, apiGroups: ['coordination.svc.io'], resources: ['leases'] },
        { verbs: READ, apiGroups: ['policy'], resources: ['poddisruptionbudgets', 'poddisruptionbudgets/status'] },
        { verbs: READ, apiGroups: ['events.svc.io'], resources: ['events'] },
      ],
      { [AGGREGATE_TO('view')]: 'true' },
    ),
    clusterRole('system:basic-user', [
      { verbs: ['create'], apiGroups: ['authentication.svc.io'], resources: ['selfsubjectreviews'] },
      { verbs: ['create'], apiGroups: ['authorization.svc.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews'] },
    ]),
    clusterRole('system:discovery', [{ verbs: ['get'], nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/openapi', '/openapi/*', '/version', '/version/', '/healthz', '/livez', '/readyz'] }]),
    clusterRole('system:public-info-viewer', [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/livez', '/readyz', '/version', '/version/'] }]),
    clusterRole('system:monitoring', [{ verbs: ['get'], nonResourceURLs: ['/metrics', '/metrics/*', '/healthz', '/healthz/*', '/livez', '/livez/*', '/readyz', '/readyz/*'] }]),
    clusterRole('system:auth-delegator', [
      { verbs: ['create'], apiGroups: ['authentication.svc.io'], resources: ['tokenreviews'] },
      { verbs: ['create'], apiGroups: ['authorization.svc.io'], resources: ['subjectaccessreviews'] },
    ]),
    ...nodeRoles(),
    clusterRoleBinding('cluster-admin', 'cluster-admin', ['system:masters']),
    clusterRoleBinding('system:basic-user', 'system:basic-user', ['system:authenticated']),
    clusterRoleBinding('system:discovery', 'system:discovery', ['system:authenticated']),
    clusterRoleBinding('system:public-info-viewer', 'system:public-info-viewer', ['system:authenticated', 'system:unauthenticated']),
    clusterRoleBinding('system:monitoring', 'system:monitoring', ['system:monitoring']),
    ...controllerObjects(),
    // The public cluster-info ConfigMap is readable without credentials (SPEC section 2).
    role(PUBLIC_NAMESPACE, 'system:public-cluster-info-reader', [{ verbs: ['get'], apiGroups: [''], resources: ['configmaps'], resourceNames: ['cluster-info'] }]),
    roleBinding(PUBLIC_NAMESPACE, 'system:public-cluster-info-reader', { kind: 'Role', name: 'system:public-cluster-info-reader' }, [
      { kind: 'User', apiGroup: RBAC, name: 'system:anonymous' },
      { kind: 'Group', apiGroup: RBAC, name: 'system:authenticated' },
    ]),
  ];
}

function sameJson(a: unknown, b: unknown): boolean {
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * What a stored default needs to be whole again: its missing rules (or, for
 * a binding, subjects), labels and annotations added, nothing of the
 * owner's removed. Undefined when nothing is missing or the object opted
 * out of updates.
 */
export function reconcileDefault(stored: ApiObject, wanted: ApiObject): ApiObject | undefined {
  if (stored.metadata?.annotations?.[AUTOUPDATE_ANNOTATION] === 'false') return undefined;
  const out: ApiObject = { ...stored, metadata: { ...stored.metadata } };
  let changed = false;
  for (const field of ['rules', 'subjects'] as const) {
    const want = (wanted[field] ?? []) as unknown[];
    const have = Array.isArray(stored[field]) ? [...(stored[field] as unknown[])] : [];
    // Aggregated roles get their rules from the aggregation controller.
    if (field === 'rules' && wanted['aggregationRule']) continue;
    for (const item of want) {
      if (!have.some((h) => sameJson(h, item))) {
        have.push(item);
        changed = true;
      }
    }
    if (wanted[field] !== undefined) out[field] = have;
  }
  if (wanted['aggregationRule'] && !sameJson(stored['aggregationRule'], wanted['aggregationRule'])) {
    out['aggregationRule'] = wanted['aggregationRule'];
    changed = true;
  }
  for (const key of ['labels', 'annotations'] as const) {
    const want = (wanted.metadata?.[key] ?? {}) as Record<string, string>;
    const have = { ...((stored.metadata?.[key] ?? {}) as Record<string, string>) };
    for (const [k, v] of Object.entries(want)) {
      if (have[k] === undefined) {
        have[k] = v;
        changed = true;
      }
    }
    (out.metadata as Record<string, unknown>)[key] = have;
  }
  return changed ? out : undefined;
}
