import type { ApiObject, ResourceDefinition } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { validateCustomResourceDefinition, validateCustomResourceDefinitionUpdate } from './crd-validation';
import { nextGeneration } from './generation';
import { asList, asRecord, asString, isRecord, type Fields } from './object-access';
import { conditionList, objectSchema } from './object-meta';
import { atomicList, bool, bytes, freeForm, int32, mapList, oneOf, setList, str, struct } from './schema-builders';
import { keepStatus, resetStatus } from './status';

/**
 * CustomResourceDefinition (apiextensions.svc.io/v1): a kind defined at run
 * time. Every gateway serves the versions of an Established definition as
 * registry entries of the same form as the built-in kinds; the
 * controller-manager's `customresourcedefinitions` controller accepts its
 * names, establishes it and, when it is deleted, removes its objects.
 */

export const APIEXTENSIONS_GROUP = 'apiextensions.svc.io';
/** Held by a deleted definition until every object of it is gone. */
export const CRD_CLEANUP_FINALIZER = 'customresourcecleanup.apiextensions.svc.io';
/** Required (a URL, or a value starting with `unapproved`) for a definition in a protected group. */
export const API_APPROVED_ANNOTATION = 'api-approved.svc.io';

const NAMES_SCHEMA = struct(
  {
    plural: str('Plural name of the resource, used in URLs: /apis/<group>/<version>/.../<plural>. Lowercase.'),
    singular: str('Singular name of the resource. Lowercase; defaults to the lowercased kind.'),
    shortNames: atomicList(str(), 'Short names for the resource, shown in discovery and usable on the command line.'),
    kind: str('Serialized kind of the resource. CamelCase and singular.'),
    listKind: str('Serialized kind of the list of the resource; defaults to `<kind>List`.'),
    categories: atomicList(str(), 'Grouped resources this resource belongs to (`all`, say).'),
  },
  { description: 'Names served for a custom resource.', required: ['plural', 'kind'] },
);

const PRINTER_COLUMN_SCHEMA = struct(
  {
    name: str('Human-readable name of the column.'),
    type: str('OpenAPI type of the column: integer, number, string, boolean or date.'),
    format: str('Optional OpenAPI format of the column.'),
    description: str('Human-readable description of the column.'),
    priority: int32('Importance of the column; columns with a priority above 0 are shown in wide output only.'),
    jsonPath: str('Simple JSON path evaluated against each custom resource to produce the value of the column.'),
  },
  { required: ['name', 'type', 'jsonPath'] },
);

const SUBRESOURCES_SCHEMA = struct(
  {
    status: freeForm('Enables the /status subresource; the main resource then ignores status changes.'),
    scale: struct(
      {
        specReplicasPath: str('JSON path under `.spec` of the desired replicas.'),
        statusReplicasPath: str('JSON path under `.status` of the observed replicas.'),
        labelSelectorPath: str('JSON path under `.spec` or `.status` of the label selector in string form.'),
      },
      { description: 'Enables the /scale subresource.', required: ['specReplicasPath', 'statusReplicasPath'] },
    ),
  },
  { description: 'Subresources served for the version.' },
);

const VERSION_SCHEMA = struct(
  {
    name: str('Version name, used in URLs: /apis/<group>/<version>/...'),
    served: bool('Whether the version is served by the REST API.'),
    storage: bool('Whether objects are persisted in this version; exactly one version is the storage version.'),
    deprecated: bool('Whether the version is deprecated (requests to it get a warning).'),
    deprecationWarning: str('Overrides the warning returned to clients of a deprecated version.'),
    schema: struct(
      { openAPIV3Schema: freeForm('The OpenAPI v3 (structural) schema of the version, used for validation, defaulting and pruning.') },
      { description: 'Schema of the version.' },
    ),
    subresources: SUBRESOURCES_SCHEMA,
    additionalPrinterColumns: atomicList(PRINTER_COLUMN_SCHEMA, 'Columns of the server-side table of the version.'),
    selectableFields: atomicList(
      struct({ jsonPath: str('Simple JSON path (`.spec.color`) of a field custom resources of the version can be selected by.') }, { required: ['jsonPath'] }),
      'Fields a field selector may name besides metadata.name and metadata.namespace.',
    ),
  },
  { required: ['name', 'served', 'storage'] },
);

const CONVERSION_WEBHOOK_SCHEMA = struct(
  {
    clientConfig: struct(
      {
        url: str('The https URL of the webhook (no user info, query or fragment); exactly one of url and service.'),
        service: struct(
          {
            namespace: str('Namespace of the service.'),
            name: str('Name of the service.'),
            path: str('URL path the webhook is called at.'),
            port: int32('Port of the service (default 443).'),
          },
          { description: 'A service reference: called at https://<name>.<namespace>.svc:<port><path> (needs cluster DNS).', required: ['namespace', 'name'] },
        ),
        caBundle: bytes("PEM certificates that verify the webhook's serving certificate; the system's roots when unset."),
      },
      { description: 'How the webhook is reached.' },
    ),
    conversionReviewVersions: atomicList(str(), 'ConversionReview versions the webhook accepts, preferred first; must include v1 or v1beta1.'),
  },
  { description: 'The conversion webhook, when strategy is Webhook.', required: ['conversionReviewVersions'] },
);

export const CUSTOM_RESOURCE_DEFINITION_SCHEMA: Schema = objectSchema('CustomResourceDefinition defines a kind served at /apis/<group>/<version>/.../<plural>.', {
  spec: struct(
    {
      group: str('API group of the resources; the definition is named <plural>.<group>.'),
      names: NAMES_SCHEMA,
      scope: oneOf(['Cluster', 'Namespaced'], 'Whether the resources are cluster-scoped or namespaced.'),
      versions: mapList(VERSION_SCHEMA, ['name'], { mergeKey: 'name', description: 'The served and stored versions.' }),
      conversion: struct(
        {
          strategy: oneOf(['None', 'Webhook'], 'How objects convert between versions; None only changes apiVersion.'),
          webhook: CONVERSION_WEBHOOK_SCHEMA,
        },
        { description: 'Conversion between versions.' },
      ),
      preserveUnknownFields: bool('Deprecated in v1: must be false.'),
    },
    { description: 'Specification of the definition.', required: ['group', 'names', 'scope', 'versions'] },
  ),
  status: struct(
    {
      conditions: conditionList('Observations of the definition: NamesAccepted, Established, Terminating.'),
      acceptedNames: NAMES_SCHEMA,
      storedVersions: setList(str(), 'Versions objects of the definition have ever been stored in.'),
    },
    { description: 'Status of the definition.' },
  ),
});

/** A condition of the definition's status, with its `status` string. */
export function crdCondition(crd: ApiObject, type: string): Fields | undefined {
  return asList(asRecord(crd['status'])?.['conditions']).filter(isRecord).find((c) => c['type'] === type);
}

export function crdConditionTrue(crd: ApiObject, type: string): boolean {
  return crdCondition(crd, type)?.['status'] === 'True';
}

/** Upstream's defaults: singular from the kind, listKind `<kind>List`, conversion None. */
export function applyCustomResourceDefinitionDefaults(obj: ApiObject): void {
  const spec = asRecord(obj['spec']);
  if (!spec) return;
  const names = asRecord(spec['names']);
  const kind = asString(names?.['kind']);
  if (names && kind) {
    if (!asString(names['singular'])) names['singular'] = kind.toLowerCase();
    if (!asString(names['listKind'])) names['listKind'] = `${kind}List`;
  }
  const conversion = asRecord(spec['conversion']);
  if (!conversion) spec['conversion'] = { strategy: 'None' };
  else if (conversion['strategy'] === undefined) conversion['strategy'] = 'None';
}

/** The version a definition stores its objects in (the one marked `storage: true`). */
export function crdStorageVersion(obj: ApiObject): string | undefined {
  return asString(asList(asRecord(obj['spec'])?.['versions']).filter(isRecord).find((v) => v['storage'] === true)?.['name']);
}

/**
 * The storage version is recorded in `status.storedVersions` by the write
 * that makes it the storage version (as upstream's strategy does), so no
 * object can be stored in a version the list does not name yet.
 */
function recordStorageVersion(obj: ApiObject): void {
  const version = crdStorageVersion(obj);
  const status = asRecord(obj['status']);
  if (!version || !status) return;
  const stored = asList(status['storedVersions']).filter((v): v is string => typeof v === 'string');
  if (!stored.includes(version)) status['storedVersions'] = [...stored, version];
}

function prepareForCreate(obj: ApiObject): void {
  resetStatus(obj, { conditions: [], acceptedNames: { plural: '', kind: '' }, storedVersions: [] });
  recordStorageVersion(obj);
  obj.metadata = { ...(obj.metadata ?? {}), generation: 1 };
}

function prepareForUpdate(obj: ApiObject, old: ApiObject): void {
  keepStatus(obj, old);
  recordStorageVersion(obj);
  obj.metadata = { ...(obj.metadata ?? {}), generation: nextGeneration(obj, old, true) };
}

/**
 * A delete only marks the definition: the cleanup finalizer keeps it while
 * the controller removes its objects (upstream adds the finalizer at delete).
 */
function finalizing(obj: ApiObject): boolean {
  return !obj.metadata?.deletionTimestamp;
}

function prepareForDeletion(obj: ApiObject): void {
  const finalizers = obj.metadata?.finalizers ?? [];
  if (!finalizers.includes(CRD_CLEANUP_FINALIZER)) obj.metadata = { ...(obj.metadata ?? {}), finalizers: [...finalizers, CRD_CLEANUP_FINALIZER] };
  const status = asRecord(obj['status']) ?? {};
  const conditions = asList(status['conditions']).filter((c) => isRecord(c) && c['type'] !== 'Terminating');
  conditions.push({
    type: 'Terminating',
    status: 'True',
    lastTransitionTime: obj.metadata?.deletionTimestamp ?? new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    reason: 'InstanceDeletionPending',
    message: 'CustomResourceDefinition marked for deletion; its objects are being removed',
  });
  obj['status'] = { ...status, conditions };
}

export function customResourceDefinitionDefinition(): ResourceDefinition {
  return {
    group: APIEXTENSIONS_GROUP,
    version: 'v1',
    kind: 'CustomResourceDefinition',
    listKind: 'CustomResourceDefinitionList',
    plural: 'customresourcedefinitions',
    singular: 'customresourcedefinition',
    shortNames: ['crd', 'crds'],
    categories: ['api-extensions'],
    namespaced: false,
    verbs: [...STANDARD_VERBS],
    subresources: [{ name: 'status', verbs: ['get', 'patch', 'update'] }],
    schema: CUSTOM_RESOURCE_DEFINITION_SCHEMA,
    // The default table: NAME and CREATED AT, as upstream shows definitions.
    printerColumns: [],
    strategy: {
      prepareForCreate,
      prepareForUpdate,
      applyDefaults: applyCustomResourceDefinitionDefaults,
      validate: validateCustomResourceDefinition,
      validateUpdate: validateCustomResourceDefinitionUpdate,
      finalizing,
      prepareForDeletion,
    },
    openApiName: 'io.svc.api.apiextensions.v1.CustomResourceDefinition',
    allowUnconditionalUpdate: true,
  };
}
