import type { Schema } from '@svc/merge';
import {
  atomicList,
  bool,
  freeForm,
  int64,
  mapList,
  oneOf,
  setList,
  str,
  stringMap,
  struct,
  time,
} from './schema-builders';

/**
 * The schemas every kind shares: object metadata, type information, and the
 * small structs (references, label selectors, conditions) several kinds embed.
 * Only the shape lives here; generic validation of names, namespaces, labels
 * and annotations belongs to the API machinery and runs for every kind.
 */

export const OWNER_REFERENCE_SCHEMA: Schema = struct(
  {
    apiVersion: str('API version of the owner.'),
    kind: str('Kind of the owner.'),
    name: str('Name of the owner.'),
    uid: str('UID of the owner.'),
    controller: bool('True when the owner is the managing controller of this object.'),
    blockOwnerDeletion: bool('When true, foreground deletion of the owner waits until this object is removed.'),
  },
  {
    description: 'A reference to an object that owns this one, in the same namespace or cluster-scoped.',
    required: ['apiVersion', 'kind', 'name', 'uid'],
    atomic: true,
  },
);

export const MANAGED_FIELDS_ENTRY_SCHEMA: Schema = struct(
  {
    manager: str('Identity of the actor that set these fields.'),
    operation: str('Apply for server-side apply, Update for every other write.'),
    apiVersion: str('API version the fields were written in.'),
    time: time('When the fields were last changed.'),
    fieldsType: str('Format of the field set; always FieldsV1.'),
    fieldsV1: freeForm('The owned fields as a tree; `f:` keys name fields, leaves are empty objects.'),
    subresource: str('Subresource the write went through, if any.'),
  },
  { description: 'Which fields one manager owns, and how it last wrote them.' },
);

export const OBJECT_META_SCHEMA: Schema = struct(
  {
    name: str('Unique name within the namespace (or the cluster, for cluster-scoped kinds). Cannot be changed.'),
    generateName: str('Prefix from which the server builds a unique name when `name` is empty.'),
    namespace: str('Namespace of the object; empty for cluster-scoped kinds.'),
    selfLink: str('Deprecated and never set.'),
    uid: str('Unique identifier set by the server at creation. Read-only.'),
    resourceVersion: str('Opaque version of the object, for optimistic concurrency and watches. Read-only.'),
    generation: int64('Sequence number of changes to the desired state. Read-only.'),
    creationTimestamp: { ...time('When the object was created. Read-only.'), nullable: true },
    deletionTimestamp: time('When deletion was requested. Set by the server; the object stays while finalizers remain.'),
    deletionGracePeriodSeconds: int64('Seconds the object has to terminate gracefully. Read-only.'),
    labels: stringMap('Key-value pairs for organizing and selecting objects.'),
    annotations: stringMap('Key-value pairs of non-identifying metadata, for tools and extensions.'),
    ownerReferences: mapList(OWNER_REFERENCE_SCHEMA, ['uid'], {
      mergeKey: 'uid',
      description: 'Objects this one depends on; when all owners are gone the object is garbage collected.',
    }),
    finalizers: setList(str(), 'Names of cleanups that must finish before the object is removed.', true),
    managedFields: atomicList(MANAGED_FIELDS_ENTRY_SCHEMA, 'Field ownership records kept by the server.'),
  },
  { description: 'Metadata every persisted object carries.' },
);

export const OBJECT_REFERENCE_SCHEMA: Schema = struct(
  {
    kind: str('Kind of the referent.'),
    namespace: str('Namespace of the referent.'),
    name: str('Name of the referent.'),
    uid: str('UID of the referent.'),
    apiVersion: str('API version of the referent.'),
    resourceVersion: str('Specific resourceVersion the reference is about, if any.'),
    fieldPath: str('A field within the referent, such as `spec.containers{name}`.'),
  },
  { description: 'A reference to another object.', atomic: true },
);

export function localObjectReference(description?: string): Schema {
  return struct({ name: str('Name of the referent in the same namespace.') }, { atomic: true, ...(description ? { description } : {}) });
}

export const LABEL_SELECTOR_SCHEMA: Schema = struct(
  {
    matchLabels: stringMap('Labels that must all be present with these values.'),
    matchExpressions: atomicList(
      struct(
        {
          key: str('Label key the requirement applies to.'),
          operator: str('In, NotIn, Exists or DoesNotExist.'),
          values: atomicList(str(), 'Values for In and NotIn; empty for Exists and DoesNotExist.'),
        },
        { required: ['key', 'operator'] },
      ),
      'Requirements that must all hold.',
    ),
  },
  { description: 'A label query; an empty selector matches everything.', atomic: true },
);

export const CONDITION_SCHEMA: Schema = struct(
  {
    type: str('Type of the condition, in CamelCase.'),
    status: oneOf(['True', 'False', 'Unknown'], 'Status of the condition.'),
    observedGeneration: int64('The metadata.generation the condition was computed from.'),
    lastTransitionTime: time('When the status last changed.'),
    reason: str('Programmatic reason for the last transition, in CamelCase.'),
    message: str('Human-readable details of the last transition.'),
  },
  { required: ['type', 'status', 'lastTransitionTime', 'reason', 'message'] },
);

/** A list of metav1 conditions, merged by type. */
export function conditionList(description: string): Schema {
  return mapList(CONDITION_SCHEMA, ['type'], { mergeKey: 'type', description });
}

export const TYPE_META_PROPERTIES: Record<string, Schema> = {
  apiVersion: str('Versioned schema of this representation of the object.'),
  kind: str('REST kind of the object, in CamelCase.'),
};

/**
 * The schema of a whole object: type information, metadata, and the kind's
 * own fields.
 */
export function objectSchema(description: string, fields: Record<string, Schema>, required: string[] = []): Schema {
  const schema = struct({ ...TYPE_META_PROPERTIES, metadata: OBJECT_META_SCHEMA, ...fields }, { description });
  if (required.length > 0) schema.required = [...required];
  return schema;
}
