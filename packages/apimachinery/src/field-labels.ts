import { ApiError } from './errors';
import type { ResourceDefinition } from './registry';
import { parseFieldSelector } from './selectors';

/** Field labels every kind without a list of its own supports. */
const STANDARD_FIELD_LABELS: readonly string[] = ['metadata.name', 'metadata.namespace'];

/**
 * The field labels of built-in kinds that the original server lists for
 * itself (its field label conversions), keyed by `group/Kind`. Exactly these
 * are accepted: a Namespace or a Node cannot be selected by
 * `metadata.namespace`, for instance.
 */
const BUILT_IN_FIELD_LABELS: Readonly<Record<string, readonly string[]>> = {
  '/Pod': [
    'metadata.name',
    'metadata.namespace',
    'spec.nodeName',
    'spec.restartPolicy',
    'spec.schedulerName',
    'spec.serviceAccountName',
    'spec.hostNetwork',
    'status.phase',
    'status.podIP',
    'status.podIPs',
    'status.nominatedNodeName',
  ],
  '/Node': ['metadata.name', 'spec.unschedulable'],
  '/ReplicationController': ['metadata.name', 'metadata.namespace', 'status.replicas'],
  '/Event': [
    ...['kind', 'namespace', 'name', 'uid', 'apiVersion', 'resourceVersion', 'fieldPath'].map((f) => `involvedObject.${f}`),
    ...['reason', 'reportingComponent', 'source', 'type', 'metadata.namespace', 'metadata.name'],
  ],
  '/Namespace': ['status.phase', 'metadata.name'],
  '/Secret': ['type', 'metadata.namespace', 'metadata.name'],
  '/Service': ['metadata.namespace', 'metadata.name', 'spec.clusterIP', 'spec.type'],
};

/**
 * Refuses (400) a field selector that names a field the kind cannot be
 * selected by, as the original converts field labels: a built-in kind with
 * its own list answers `field label not supported: <label>`; any other kind
 * (custom resources with their `selectableFields`, kinds listing
 * `selectableFields`, the rest) accepts `metadata.name`,
 * `metadata.namespace` and its listed fields, and answers
 * `"<label>" is not a known field selector: only "metadata.name", "metadata.namespace"`.
 * Lists, watches and deletecollection all pass here, so they accept the
 * same selectors.
 */
export function checkFieldLabels(def: Pick<ResourceDefinition, 'group' | 'kind' | 'selectableFields'>, fieldSelector: string | undefined): void {
  const builtIn = BUILT_IN_FIELD_LABELS[`${def.group}/${def.kind}`];
  for (const r of parseFieldSelector(fieldSelector).requirements) {
    if (builtIn) {
      if (!builtIn.includes(r.field)) throw ApiError.badRequest(`field label not supported: ${r.field}`);
      continue;
    }
    if (STANDARD_FIELD_LABELS.includes(r.field) || def.selectableFields?.includes(r.field)) continue;
    const only = STANDARD_FIELD_LABELS.map((l) => JSON.stringify(l)).join(', ');
    throw ApiError.badRequest(`${JSON.stringify(r.field)} is not a known field selector: only ${only}`);
  }
}
