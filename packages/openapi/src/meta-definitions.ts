import type { GroupVersionKey, JsonObject, JsonValue } from '@svc/apimachinery';
import { describedRef, refTo, setExtension, type Dialect } from './schema-convert';
import { metaName } from './names';

/**
 * Definitions of the shared API machinery types (object and list metadata,
 * Status, DeleteOptions, discovery documents, ...), published under
 * `io.svc.apimachinery.pkg.apis.meta.v1.*` in every document.
 */

function str(description: string, defaultValue?: string): JsonObject {
  const out: JsonObject = { type: 'string', description };
  if (defaultValue !== undefined) out['default'] = defaultValue;
  return out;
}

function int(format: 'int32' | 'int64', description: string): JsonObject {
  return { type: 'integer', format, description };
}

function bool(description: string): JsonObject {
  return { type: 'boolean', description };
}

function strings(description: string): JsonObject {
  return { type: 'array', items: { type: 'string', default: '' }, description };
}

function stringMap(description: string): JsonObject {
  return { type: 'object', additionalProperties: { type: 'string', default: '' }, description };
}

function object(description: string, properties: JsonObject, required: string[] = []): JsonObject {
  const out: JsonObject = { description, type: 'object', properties };
  if (required.length > 0) out['required'] = required;
  return out;
}

function withMarkers(schema: JsonObject, markers: Record<string, JsonValue>): JsonObject {
  for (const [key, value] of Object.entries(markers)) setExtension(schema, key, value);
  return schema;
}

function gvkList(entries: Array<{ group: string; version: string; kind: string }>): JsonValue {
  return entries.map((e) => ({ group: e.group, kind: e.kind, version: e.version }));
}

const API_VERSION = 'Versioned schema of this representation of an object; servers convert recognized schemas to the latest internal value.';
const KIND = 'REST kind of the object, in CamelCase; servers may infer it from the endpoint the request was sent to.';

function typeMeta(): JsonObject {
  return { apiVersion: str(API_VERSION), kind: str(KIND) };
}

/**
 * The meta definitions. Kinds whose objects appear in every group version
 * (Status, DeleteOptions, WatchEvent) carry one group-version-kind entry per
 * served group version, as upstream does.
 */
export function metaDefinitions(dialect: Dialect, groupVersions: GroupVersionKey[]): Record<string, JsonObject> {
  const everyGroupVersion = (kind: string) =>
    gvkList([{ group: '', version: 'v1', kind }, ...groupVersions.filter((gv) => gv.group !== '').map((gv) => ({ ...gv, kind }))]);

  const time = (description: string): JsonObject => describedRef(dialect, metaName('Time'), description);

  return {
    [metaName('Time')]: { type: 'string', format: 'date-time', description: 'An RFC 3339 timestamp, serialized with second precision.' },
    [metaName('MicroTime')]: { type: 'string', format: 'date-time', description: 'An RFC 3339 timestamp with microsecond precision.' },
    [metaName('FieldsV1')]: { type: 'object', description: 'A set of fields as a trie: `f:<name>` keys for fields, `k:<json>` for list items by key, `v:<json>` for set values; leaves are empty objects.' },
    [metaName('Patch')]: { type: 'object', description: 'A patch document; its format is given by the Content-Type of the request.' },
    [metaName('RawExtension')]: { type: 'object', description: 'An embedded object of any kind.' },
    [metaName('OwnerReference')]: withMarkers(
      object(
        'Identifies an owner of an object: the object is garbage collected once all owners are gone.',
        {
          apiVersion: str('API version of the owner.', ''),
          kind: str('Kind of the owner.', ''),
          name: str('Name of the owner.', ''),
          uid: str('UID of the owner.', ''),
          controller: bool('True when the owner is the managing controller.'),
          blockOwnerDeletion: bool('When true, foreground deletion of the owner waits for this object to be removed.'),
        },
        ['apiVersion', 'kind', 'name', 'uid'],
      ),
      { 'x-svc-map-type': 'atomic' },
    ),
    [metaName('ManagedFieldsEntry')]: object('The fields one manager owns, and how it last wrote them.', {
      apiVersion: str('API version the fields were written in.'),
      fieldsType: str('Format of the field set; always FieldsV1.'),
      fieldsV1: describedRef(dialect, metaName('FieldsV1'), 'The owned fields.'),
      manager: str('Identity of the writer.'),
      operation: str('Apply or Update.'),
      subresource: str('Subresource the write went through, if any.'),
      time: time('When the fields were last changed.'),
    }),
    [metaName('ObjectMeta')]: object('Metadata every persisted object carries.', {
      annotations: stringMap('Non-identifying key-value metadata for tools and extensions.'),
      creationTimestamp: time('When the object was created. Read-only.'),
      deletionGracePeriodSeconds: int('int64', 'Seconds the object has to terminate gracefully. Read-only.'),
      deletionTimestamp: time('When deletion was requested; the object stays while finalizers remain. Read-only.'),
      finalizers: withMarkers(strings('Cleanups that must finish before the object is removed.'), { 'x-svc-list-type': 'set', 'x-svc-patch-strategy': 'merge' }),
      generateName: str('Prefix from which the server builds a unique name when `name` is empty.'),
      generation: int('int64', 'Sequence number of changes to the desired state. Read-only.'),
      labels: stringMap('Key-value pairs for organizing and selecting objects.'),
      managedFields: withMarkers({ type: 'array', items: refTo(dialect, metaName('ManagedFieldsEntry')), description: 'Field ownership records kept by the server.' }, { 'x-svc-list-type': 'atomic' }),
      name: str('Unique name within the namespace, or the cluster for cluster-scoped kinds. Cannot be changed.'),
      namespace: str('Namespace of the object; empty for cluster-scoped kinds.'),
      ownerReferences: withMarkers(
        { type: 'array', items: refTo(dialect, metaName('OwnerReference')), description: 'Objects this one depends on.' },
        { 'x-svc-list-type': 'map', 'x-svc-list-map-keys': ['uid'], 'x-svc-patch-strategy': 'merge', 'x-svc-patch-merge-key': 'uid' },
      ),
      resourceVersion: str('Opaque version of the object for optimistic concurrency and watches. Read-only.'),
      selfLink: str('Deprecated; never set.'),
      uid: str('Unique identifier set by the server at creation. Read-only.'),
    }),
    [metaName('ListMeta')]: object('Metadata of a list.', {
      continue: str('Token for the next chunk of a paged list; empty on the last chunk.'),
      remainingItemCount: int('int64', 'Items left after this chunk; omitted for unpaged lists and with selectors.'),
      resourceVersion: str('Version of the store the list was read at.'),
      selfLink: str('Deprecated; never set.'),
    }),
    [metaName('StatusCause')]: object('One cause of an error.', {
      field: str('Field path of the cause, such as `spec.containers[0].name`.'),
      message: str('Human-readable description of the cause.'),
      reason: str('Machine-readable cause, such as FieldValueInvalid.'),
    }),
    [metaName('StatusDetails')]: object('Details of an error.', {
      causes: withMarkers({ type: 'array', items: refTo(dialect, metaName('StatusCause')), description: 'Causes of the error.' }, { 'x-svc-list-type': 'atomic' }),
      group: str('Group of the resource the error is about.'),
      kind: str('Kind (or resource) the error is about.'),
      name: str('Name of the object the error is about.'),
      retryAfterSeconds: int('int32', 'Seconds to wait before retrying.'),
      uid: str('UID of the object the error is about.'),
    }),
    [metaName('Status')]: withMarkers(
      object('Result of an operation that does not return an object; every error body is a Status.', {
        ...typeMeta(),
        code: int('int32', 'HTTP status code.'),
        details: describedRef(dialect, metaName('StatusDetails'), 'Extended data about the reason.'),
        message: str('Human-readable description of the status.'),
        metadata: describedRef(dialect, metaName('ListMeta'), 'Standard list metadata.', {}),
        reason: str('Machine-readable reason, such as NotFound or Conflict.'),
        status: str('Success or Failure.'),
      }),
      { 'x-svc-group-version-kind': gvkList([{ group: '', version: 'v1', kind: 'Status' }]) },
    ),
    [metaName('Preconditions')]: object('Conditions that must hold for a delete to proceed.', {
      resourceVersion: str('Required resourceVersion of the object.'),
      uid: str('Required UID of the object.'),
    }),
    [metaName('DeleteOptions')]: withMarkers(
      object('Options of a delete request.', {
        ...typeMeta(),
        dryRun: strings('`All` runs every stage of the request without persisting the result.'),
        gracePeriodSeconds: int('int64', 'Seconds before the object is deleted; zero deletes at once.'),
        ignoreStoreReadErrorWithClusterBreakingPotential: bool('Delete an object that cannot be read from the store (decoding or decryption failure). Dangerous.'),
        orphanDependents: bool('Deprecated: use propagationPolicy.'),
        preconditions: describedRef(dialect, metaName('Preconditions'), 'Must hold for the deletion to proceed; a 409 Conflict otherwise.'),
        propagationPolicy: str('Garbage collection of dependents: Orphan, Background or Foreground.'),
      }),
      { 'x-svc-group-version-kind': everyGroupVersion('DeleteOptions') },
    ),
    [metaName('WatchEvent')]: withMarkers(
      object(
        'One change in a watch stream.',
        {
          object: describedRef(dialect, metaName('RawExtension'), 'The object as of the change; for BOOKMARK events only its resourceVersion.'),
          type: str('ADDED, MODIFIED, DELETED, BOOKMARK or ERROR.', ''),
        },
        ['type', 'object'],
      ),
      { 'x-svc-group-version-kind': everyGroupVersion('WatchEvent') },
    ),
    [metaName('LabelSelectorRequirement')]: object(
      'A requirement on one label.',
      {
        key: str('Label key.', ''),
        operator: str('In, NotIn, Exists or DoesNotExist.', ''),
        values: withMarkers(strings('Values for In and NotIn.'), { 'x-svc-list-type': 'atomic' }),
      },
      ['key', 'operator'],
    ),
    [metaName('LabelSelector')]: withMarkers(
      object('A label query; an empty selector matches everything.', {
        matchExpressions: withMarkers(
          { type: 'array', items: refTo(dialect, metaName('LabelSelectorRequirement')), description: 'Requirements that must all hold.' },
          { 'x-svc-list-type': 'atomic' },
        ),
        matchLabels: stringMap('Labels that must all be present with these values.'),
      }),
      { 'x-svc-map-type': 'atomic' },
    ),
    [metaName('Condition')]: object(
      'One aspect of the current state of an object.',
      {
        lastTransitionTime: time('When the status last changed.'),
        message: str('Human-readable details.', ''),
        observedGeneration: int('int64', 'The metadata.generation the condition was computed from.'),
        reason: str('Programmatic reason, in CamelCase.', ''),
        status: str('True, False or Unknown.', ''),
        type: str('Type of the condition, in CamelCase.', ''),
      },
      ['type', 'status', 'lastTransitionTime', 'reason', 'message'],
    ),
    [metaName('GroupVersionForDiscovery')]: object(
      'A served version of a group.',
      { groupVersion: str('`group/version`.', ''), version: str('The version.', '') },
      ['groupVersion', 'version'],
    ),
    [metaName('ServerAddressByClientCIDR')]: object(
      'The address clients in a network should use.',
      { clientCIDR: str('Network the address applies to.', ''), serverAddress: str('Address of the server.', '') },
      ['clientCIDR', 'serverAddress'],
    ),
    [metaName('APIResource')]: object(
      'A resource of a group version.',
      {
        categories: strings('Groups of resources this one belongs to, such as `all`.'),
        group: str('Group of the resource when it differs from the list (subresources).'),
        kind: str('Kind of the resource.', ''),
        name: str('Plural name of the resource.', ''),
        namespaced: { type: 'boolean', default: false, description: 'Whether the resource is namespaced.' },
        shortNames: strings('Short names clients accept.'),
        singularName: str('Singular name of the resource.', ''),
        storageVersionHash: str('Opaque hash of the storage version; compare for equality only.'),
        verbs: strings('Verbs the resource supports.'),
        version: str('Version of the resource when it differs from the list (subresources).'),
      },
      ['name', 'singularName', 'namespaced', 'kind', 'verbs'],
    ),
    [metaName('APIResourceList')]: withMarkers(
      object(
        'The resources of one group version.',
        {
          ...typeMeta(),
          groupVersion: str('`group/version` the list is for.', ''),
          resources: { type: 'array', items: refTo(dialect, metaName('APIResource')), description: 'The resources.' },
        },
        ['groupVersion', 'resources'],
      ),
      { 'x-svc-group-version-kind': gvkList([{ group: '', version: 'v1', kind: 'APIResourceList' }]) },
    ),
    [metaName('APIGroup')]: withMarkers(
      object(
        'A group and its served versions.',
        {
          ...typeMeta(),
          name: str('Name of the group.', ''),
          preferredVersion: describedRef(dialect, metaName('GroupVersionForDiscovery'), 'Version clients should use.', {}),
          serverAddressByClientCIDRs: { type: 'array', items: refTo(dialect, metaName('ServerAddressByClientCIDR')), description: 'Addresses by client network.' },
          versions: { type: 'array', items: refTo(dialect, metaName('GroupVersionForDiscovery')), description: 'Served versions.' },
        },
        ['name', 'versions'],
      ),
      { 'x-svc-group-version-kind': gvkList([{ group: '', version: 'v1', kind: 'APIGroup' }]) },
    ),
    [metaName('APIGroupList')]: withMarkers(
      object('The served named groups.', { ...typeMeta(), groups: { type: 'array', items: refTo(dialect, metaName('APIGroup')), description: 'The groups.' } }, ['groups']),
      { 'x-svc-group-version-kind': gvkList([{ group: '', version: 'v1', kind: 'APIGroupList' }]) },
    ),
    [metaName('APIVersions')]: withMarkers(
      object(
        'The served versions of the core group.',
        {
          ...typeMeta(),
          serverAddressByClientCIDRs: { type: 'array', items: refTo(dialect, metaName('ServerAddressByClientCIDR')), description: 'Addresses by client network.' },
          versions: strings('Served versions.'),
        },
        ['versions', 'serverAddressByClientCIDRs'],
      ),
      { 'x-svc-group-version-kind': gvkList([{ group: '', version: 'v1', kind: 'APIVersions' }]) },
    ),
  };
}
