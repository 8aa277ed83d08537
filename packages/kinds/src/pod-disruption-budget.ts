import type { ApiObject, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { labelSelectorErrors } from './admissionregistration-validation';
import { invalid, notSupported } from './field-errors';
import { statusAndGenerationHooks } from './generation';
import { groupKindDefinition } from './group-definition';
import { LABEL_SELECTOR_SCHEMA, conditionList, objectSchema } from './object-meta';
import { asNumber, asRecord } from './object-access';
import { atomicList, bool, described, int32, int64, intOrString, mapOf, str, struct, time } from './schema-builders';

/**
 * PodDisruptionBudget (policy/v1): how many of the pods a selector picks
 * must stay available (minAvailable) or may be unavailable
 * (maxUnavailable) while pods are evicted; its status is kept by the
 * disruption controller and consumed by the `pods/eviction` subresource.
 * As in v1 of the original, an empty selector selects every pod of the
 * namespace and the spec may change. Eviction is the body of a POST to
 * `pods/<name>/eviction`.
 */

export const POLICY_GROUP = 'policy';

/** The unhealthy pod eviction policies of the original (unset behaves as IfHealthyBudget). */
export const UNHEALTHY_POD_EVICTION_POLICIES = ['IfHealthyBudget', 'AlwaysAllow'] as const;

export const POD_DISRUPTION_BUDGET_SCHEMA = objectSchema('PodDisruptionBudget limits how many pods of a set may be down at once through voluntary disruptions.', {
  spec: struct(
    {
      minAvailable: intOrString('Pods of the selection that must stay available after an eviction: a number or a percentage.'),
      selector: described(LABEL_SELECTOR_SCHEMA, 'Pods the budget covers; an empty selector selects every pod of the namespace.'),
      maxUnavailable: intOrString('Pods of the selection that may be unavailable after an eviction: a number or a percentage.'),
      unhealthyPodEvictionPolicy: str('When pods that are not Ready may be evicted: IfHealthyBudget (default) or AlwaysAllow.'),
    },
    { description: 'What the budget allows.' },
  ),
  status: struct(
    {
      observedGeneration: int64('The generation of the budget this status was computed from.'),
      disruptedPods: mapOf(time(), 'Pods an eviction was granted for and the controller has not yet seen go, with the time of the eviction.'),
      disruptionsAllowed: int32('Evictions currently allowed.'),
      currentHealthy: int32('Healthy pods of the selection.'),
      desiredHealthy: int32('Healthy pods the budget requires.'),
      expectedPods: int32('Pods the selection is expected to have.'),
      conditions: conditionList('Conditions of the budget (DisruptionAllowed).'),
    },
    { description: 'The budget as last computed by the disruption controller.' },
  ),
});

const DELETE_OPTIONS_SCHEMA = struct(
  {
    gracePeriodSeconds: int64('Seconds the pod is given to terminate.'),
    preconditions: struct({ uid: str('The pod must have this uid.'), resourceVersion: str('The pod must be at this resourceVersion.') }),
    orphanDependents: bool('Deprecated: orphan the dependents of the pod.'),
    propagationPolicy: str('Whether and how dependents are garbage collected.'),
    dryRun: atomicList(str(), 'All: the eviction is checked and nothing is changed.'),
    ignoreStoreReadErrorWithClusterBreakingPotential: bool('Delete an object that cannot be read (not supported by an eviction).'),
  },
  { description: 'DeleteOptions of the deletion of the pod.' },
);

export const EVICTION_SCHEMA = objectSchema('Eviction asks for a pod to be deleted as its disruption budgets allow.', { deleteOptions: DELETE_OPTIONS_SCHEMA });

const PERCENT = /^[0-9]+%$/;

/** An IntOrString that must be a non-negative number or a percentage of at most 100%. */
function intOrPercentErrors(value: unknown, field: string): StatusCause[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'number') return value < 0 ? [invalid(field, value, 'must be greater than or equal to 0')] : [];
  if (typeof value !== 'string' || !PERCENT.test(value)) {
    return [invalid(field, value, "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')")];
  }
  return Number(value.slice(0, -1)) > 100 ? [invalid(field, value, 'must not be greater than 100%')] : [];
}

function validateSpec(obj: ApiObject): StatusCause[] {
  const spec = asRecord(obj['spec']) ?? {};
  const causes: StatusCause[] = [];
  const min = spec['minAvailable'];
  const max = spec['maxUnavailable'];
  if (min !== undefined && min !== null && max !== undefined && max !== null) causes.push(invalid('spec', spec, 'minAvailable and maxUnavailable cannot be both set'));
  causes.push(...intOrPercentErrors(min, 'spec.minAvailable'), ...intOrPercentErrors(max, 'spec.maxUnavailable'));
  causes.push(...labelSelectorErrors(spec['selector'], 'spec.selector'));
  const policy = spec['unhealthyPodEvictionPolicy'];
  if (policy !== undefined && policy !== null && !(UNHEALTHY_POD_EVICTION_POLICIES as readonly unknown[]).includes(policy)) {
    causes.push(notSupported('spec.unhealthyPodEvictionPolicy', policy, UNHEALTHY_POD_EVICTION_POLICIES));
  }
  return causes;
}

/** Counts in the status are never negative (the original's status validation). */
function validateStatus(obj: ApiObject): StatusCause[] {
  const status = asRecord(obj['status']) ?? {};
  const causes: StatusCause[] = [];
  for (const field of ['disruptionsAllowed', 'currentHealthy', 'desiredHealthy', 'expectedPods']) {
    const v = asNumber(status[field]);
    if (v !== undefined && v < 0) causes.push(invalid(`status.${field}`, v, 'must be greater than or equal to 0'));
  }
  return causes;
}

const orNone = (field: 'minAvailable' | 'maxUnavailable') => (obj: ApiObject) => {
  const v = asRecord(obj['spec'])?.[field];
  return typeof v === 'number' || typeof v === 'string' ? String(v) : 'N/A';
};

export function podDisruptionBudgetDefinition(): ResourceDefinition {
  return groupKindDefinition(POLICY_GROUP, 'v1', 'PodDisruptionBudget', 'poddisruptionbudgets', true, POD_DISRUPTION_BUDGET_SCHEMA, {
    shortNames: ['pdb'],
    subresources: [{ name: 'status', verbs: ['get', 'patch', 'update'] }],
    printerColumns: [
      { name: 'Min Available', type: 'string', jsonPath: '.spec.minAvailable', description: 'Pods that must stay available.', compute: orNone('minAvailable') },
      { name: 'Max Unavailable', type: 'string', jsonPath: '.spec.maxUnavailable', description: 'Pods that may be unavailable.', compute: orNone('maxUnavailable') },
      { name: 'Allowed Disruptions', type: 'integer', jsonPath: '.status.disruptionsAllowed', description: 'Evictions currently allowed.', compute: (obj) => asNumber(asRecord(obj['status'])?.['disruptionsAllowed']) ?? 0 },
    ],
    strategy: {
      ...statusAndGenerationHooks(),
      validate: (obj) => [...validateSpec(obj), ...validateStatus(obj)],
    },
    allowUnconditionalUpdate: true,
  });
}
