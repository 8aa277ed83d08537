import type { ApiObject } from '@svc/apimachinery';
import { SYSTEM_NAMESPACE } from '@svc/apimachinery';

/**
 * The configuration API Priority and Fairness starts from: the mandatory
 * priority levels and flow schemas (always present, their specs restored when
 * changed) and the suggested ones (created when missing, kept up to date
 * while their auto-update annotation is "true"). The objects are written in
 * their defaulted form, so defaulting changes nothing in them and a
 * controller may compare a stored spec with these specs field by field.
 */

export const FLOWCONTROL_GROUP = 'flowcontrol.svc.io';
export const FLOWCONTROL_API_VERSION = `${FLOWCONTROL_GROUP}/v1`;
/** "true": the bootstrap controller keeps the object's spec equal to the default; "false": the user owns the spec. */
export const AUTOUPDATE_SPEC_ANNOTATION = 'apf.svc.io/autoupdate-spec';

export const PRIORITY_LEVEL_EXEMPT = 'exempt';
export const PRIORITY_LEVEL_CATCH_ALL = 'catch-all';
export const FLOW_SCHEMA_EXEMPT = 'exempt';
export const FLOW_SCHEMA_CATCH_ALL = 'catch-all';

export const GROUP_MASTERS = 'system:masters';
export const GROUP_NODES = 'system:nodes';
export const GROUP_SERVICE_ACCOUNTS = 'system:serviceaccounts';
export const GROUP_AUTHENTICATED = 'system:authenticated';
export const GROUP_UNAUTHENTICATED = 'system:unauthenticated';
/** The controller-manager's identity (its client certificate's common name). */
export const USER_CONTROLLER_MANAGER = 'system:svc-controller-manager';
/** The scheduler's identity, as a scheduler for this server authenticates. */
export const USER_SCHEDULER = 'system:svc-scheduler';

const COORDINATION_GROUP = 'coordination.svc.io';

type Subject = Record<string, unknown>;
type ResourceRule = Record<string, unknown>;
type NonResourceRule = { verbs: string[]; nonResourceURLs: string[] };

interface Queuing {
  queues: number;
  handSize: number;
  queueLengthLimit: number;
}

function annotated(name: string): ApiObject['metadata'] {
  return { name, annotations: { [AUTOUPDATE_SPEC_ANNOTATION]: 'true' } };
}

function priorityLevel(name: string, spec: Record<string, unknown>): ApiObject {
  return { apiVersion: FLOWCONTROL_API_VERSION, kind: 'PriorityLevelConfiguration', metadata: annotated(name), spec };
}

/** A Limited level; `queuing` undefined means requests over the limit are rejected rather than queued. */
function limited(shares: number, lendablePercent: number, queuing?: Queuing): Record<string, unknown> {
  const limitResponse = queuing ? { type: 'Queue', queuing: { ...queuing } } : { type: 'Reject' };
  return { type: 'Limited', limited: { nominalConcurrencyShares: shares, lendablePercent, limitResponse } };
}

function flowSchema(name: string, level: string, matchingPrecedence: number, distinguisher: 'ByUser' | 'ByNamespace' | undefined, rules: Record<string, unknown>): ApiObject {
  const spec: Record<string, unknown> = { priorityLevelConfiguration: { name: level }, matchingPrecedence };
  if (distinguisher) spec['distinguisherMethod'] = { type: distinguisher };
  spec['rules'] = [rules];
  return { apiVersion: FLOWCONTROL_API_VERSION, kind: 'FlowSchema', metadata: annotated(name), spec };
}

function groups(...names: string[]): Subject[] {
  return names.map((name) => ({ kind: 'Group', group: { name } }));
}

function users(...names: string[]): Subject[] {
  return names.map((name) => ({ kind: 'User', user: { name } }));
}

/** Every service account of the system namespace. */
function systemServiceAccounts(): Subject[] {
  return [{ kind: 'ServiceAccount', serviceAccount: { namespace: SYSTEM_NAMESPACE, name: '*' } }];
}

function resourceRule(verbs: string[], apiGroups: string[], resources: string[], clusterScope: boolean): ResourceRule {
  const rule: ResourceRule = { verbs, apiGroups, resources };
  // clusterScope false is the zero value the original omits on output.
  if (clusterScope) rule['clusterScope'] = true;
  rule['namespaces'] = ['*'];
  return rule;
}

function everyResource(): ResourceRule {
  return resourceRule(['*'], ['*'], ['*'], true);
}

function everyNonResourceURL(): NonResourceRule {
  return { verbs: ['*'], nonResourceURLs: ['*'] };
}

/** Rules covering every request of the given subjects. */
function everything(subjects: Subject[]): Record<string, unknown> {
  return { subjects, resourceRules: [everyResource()], nonResourceRules: [everyNonResourceURL()] };
}

const QUEUING_64 = { queues: 64, handSize: 6, queueLengthLimit: 50 };
const QUEUING_128 = { queues: 128, handSize: 6, queueLengthLimit: 50 };

/** The levels that must always exist: `exempt` (never limited) and `catch-all` (small, rejects its overflow). */
export function mandatoryPriorityLevelConfigurations(): ApiObject[] {
  return [
    priorityLevel(PRIORITY_LEVEL_CATCH_ALL, limited(5, 0)),
    priorityLevel(PRIORITY_LEVEL_EXEMPT, { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } }),
  ];
}

/** The schemas that must always exist: `exempt` for system:masters and `catch-all` for every other request. */
export function mandatoryFlowSchemas(): ApiObject[] {
  return [
    flowSchema(FLOW_SCHEMA_EXEMPT, PRIORITY_LEVEL_EXEMPT, 1, undefined, everything(groups(GROUP_MASTERS))),
    flowSchema(FLOW_SCHEMA_CATCH_ALL, PRIORITY_LEVEL_CATCH_ALL, 10000, 'ByUser', everything(groups(GROUP_UNAUTHENTICATED, GROUP_AUTHENTICATED))),
  ];
}

/**
 * The suggested levels: `system` (node agents and proxies), `node-high` (node
 * health: nodes and their leases), `leader-election`, `workload-high` (the
 * controller manager, the scheduler, system service accounts),
 * `workload-low` (other service accounts) and `global-default` (the rest).
 */
export function suggestedPriorityLevelConfigurations(): ApiObject[] {
  return [
    priorityLevel('system', limited(30, 33, QUEUING_64)),
    priorityLevel('node-high', limited(40, 25, QUEUING_64)),
    priorityLevel('leader-election', limited(10, 0, { queues: 16, handSize: 4, queueLengthLimit: 50 })),
    priorityLevel('workload-high', limited(40, 50, QUEUING_128)),
    priorityLevel('workload-low', limited(100, 90, QUEUING_128)),
    priorityLevel('global-default', limited(20, 50, QUEUING_128)),
  ];
}

/** The suggested schemas, each naming a suggested level or `exempt`. */
export function suggestedFlowSchemas(): ApiObject[] {
  const leases = (verbs: string[]): ResourceRule => resourceRule(verbs, [COORDINATION_GROUP], ['leases'], false);
  return [
    flowSchema('system-nodes', 'system', 500, 'ByUser', everything(groups(GROUP_NODES))),
    flowSchema('system-node-high', 'node-high', 400, 'ByUser', {
      subjects: groups(GROUP_NODES),
      resourceRules: [resourceRule(['*'], [''], ['nodes', 'nodes/status'], true), leases(['*'])],
    }),
    flowSchema('probes', PRIORITY_LEVEL_EXEMPT, 2, undefined, {
      subjects: groups(GROUP_UNAUTHENTICATED, GROUP_AUTHENTICATED),
      nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['/healthz', '/readyz', '/livez'] }],
    }),
    flowSchema('system-leader-election', 'leader-election', 100, 'ByUser', {
      subjects: [...users(USER_CONTROLLER_MANAGER, USER_SCHEDULER), ...systemServiceAccounts()],
      resourceRules: [leases(['get', 'create', 'update'])],
    }),
    flowSchema('svc-controller-manager', 'workload-high', 800, 'ByNamespace', everything(users(USER_CONTROLLER_MANAGER))),
    flowSchema('svc-scheduler', 'workload-high', 800, 'ByNamespace', everything(users(USER_SCHEDULER))),
    flowSchema('svc-system-service-accounts', 'workload-high', 900, 'ByNamespace', everything(systemServiceAccounts())),
    flowSchema('service-accounts', 'workload-low', 9000, 'ByUser', everything(groups(GROUP_SERVICE_ACCOUNTS))),
    flowSchema('global-default', 'global-default', 9900, 'ByUser', everything(groups(GROUP_UNAUTHENTICATED, GROUP_AUTHENTICATED))),
  ];
}
