import type { ApiObject, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { indexPath, invalid, qualifiedNameErrors } from './field-errors';
import { asList, asRecord, cloneJson, ensureRecord, isRecord } from './object-access';
import { objectSchema } from './object-meta';
import { atomicList, mapList, oneOf, str, struct, time } from './schema-builders';
import { keepStatus, resetStatus } from './status';

/**
 * Namespace: a scope for names. Starts `Active` with the system finalizer in
 * `spec.finalizers`; the namespace controller empties the content and then
 * removes the finalizer through the `finalize` subresource.
 */

/** The finalizer the namespace controller owns (upstream's `kubernetes`). */
export const NAMESPACE_FINALIZER = 'svc';

/** Label carrying the namespace's own name, so selectors can match namespaces by name. */
export const NAMESPACE_NAME_LABEL = 'svc.io/metadata.name';

export const NAMESPACE_SCHEMA = objectSchema('Namespace provides a scope for names of namespaced objects.', {
  spec: struct(
    {
      finalizers: atomicList(str(), 'Cleanups that must finish before the namespace is removed; changed only through the finalize subresource.'),
    },
    { description: 'Desired behaviour of the namespace.' },
  ),
  status: struct(
    {
      phase: oneOf(['Active', 'Terminating'], 'Active, or Terminating once deletion was requested.'),
      conditions: mapList(
        struct(
          {
            type: str('Type of the condition.'),
            status: str('True, False or Unknown.'),
            lastTransitionTime: time('When the status last changed.'),
            reason: str('Programmatic reason for the last transition.'),
            message: str('Human-readable details.'),
          },
          { required: ['type', 'status'] },
        ),
        ['type'],
        { mergeKey: 'type', description: 'Latest observations of the namespace state.' },
      ),
    },
    { description: 'Observed state of the namespace. Read-only through the main resource.' },
  ),
});

function prepareNamespaceForCreate(obj: ApiObject): void {
  resetStatus(obj, { phase: 'Active' });
  const spec = ensureRecord(obj, 'spec');
  const finalizers = asList(spec['finalizers']).filter((f): f is string => typeof f === 'string');
  if (!finalizers.includes(NAMESPACE_FINALIZER)) finalizers.push(NAMESPACE_FINALIZER);
  spec['finalizers'] = finalizers;
}

function prepareNamespaceForUpdate(obj: ApiObject, old: ApiObject): void {
  keepStatus(obj, old);
  const spec = ensureRecord(obj, 'spec');
  const oldFinalizers = asRecord(old['spec'])?.['finalizers'];
  if (oldFinalizers === undefined) delete spec['finalizers'];
  else spec['finalizers'] = cloneJson(oldFinalizers);
}

/** The namespace controller has not finished: content may remain. */
function namespaceFinalizing(obj: ApiObject): boolean {
  return asList(asRecord(obj['spec'])?.['finalizers']).length > 0;
}

function prepareNamespaceForDeletion(obj: ApiObject): void {
  // A new status object: the caller's copy may share the stored one.
  obj['status'] = { ...(asRecord(obj['status']) ?? {}), phase: 'Terminating' };
}

function applyNamespaceDefaults(obj: ApiObject): void {
  const name = obj.metadata?.name;
  if (!name) return;
  const metadata = obj.metadata ?? {};
  metadata.labels = { ...(metadata.labels ?? {}), [NAMESPACE_NAME_LABEL]: name };
  obj.metadata = metadata;
}

function validateNamespace(obj: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = obj['spec'];
  if (isRecord(spec)) {
    asList(spec['finalizers']).forEach((f, i) => {
      if (typeof f === 'string') causes.push(...qualifiedNameErrors(indexPath('spec.finalizers', i), f));
    });
  }
  return causes;
}

/**
 * The phase follows deletion: Active until deletion is requested, then
 * Terminating; a status write may not set anything else (a phase left as
 * it was is not judged again).
 */
function validateNamespaceUpdate(obj: ApiObject, old: ApiObject): StatusCause[] {
  const phase = asRecord(obj['status'])?.['phase'];
  if (phase === asRecord(old['status'])?.['phase']) return [];
  const terminating = Boolean(obj.metadata?.deletionTimestamp);
  const expected = terminating ? 'Terminating' : 'Active';
  if (phase === expected) return [];
  const detail = terminating ? "may only be 'Terminating' if `deletionTimestamp` is not empty" : "may only be 'Active' if `deletionTimestamp` is empty";
  return [invalid('status.Phase', phase ?? '', detail)];
}

export function namespaceDefinition(): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind: 'Namespace',
    listKind: 'NamespaceList',
    plural: 'namespaces',
    singular: 'namespace',
    shortNames: ['ns'],
    categories: [],
    namespaced: false,
    verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
    subresources: [
      { name: 'status', verbs: ['get', 'patch', 'update'] },
      { name: 'finalize', verbs: ['update'] },
    ],
    schema: NAMESPACE_SCHEMA,
    printerColumns: [{ name: 'Status', type: 'string', jsonPath: '.status.phase', description: 'Phase of the namespace.' }],
    strategy: {
      prepareForCreate: prepareNamespaceForCreate,
      prepareForUpdate: prepareNamespaceForUpdate,
      applyDefaults: applyNamespaceDefaults,
      validate: validateNamespace,
      validateUpdate: validateNamespaceUpdate,
      finalizing: namespaceFinalizing,
      prepareForDeletion: prepareNamespaceForDeletion,
    },
    openApiName: 'io.svc.api.core.v1.Namespace',
    allowUnconditionalUpdate: true,
    nameValidation: 'dns-label',
  };
}
