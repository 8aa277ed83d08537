import type { Schema } from '@svc/merge';

/**
 * Small constructors for structural schemas, so each kind reads as a list of
 * its fields rather than as nested object literals. Every constructor returns
 * a fresh object: schemas are shared by reference between kinds (a Container
 * is the same in `containers` and `initContainers`), never mutated after
 * construction.
 */

function withDescription(schema: Schema, description: string | undefined): Schema {
  if (description !== undefined) schema.description = description;
  return schema;
}

export function str(description?: string): Schema {
  return withDescription({ type: 'string' }, description);
}

/** A string limited to the given values. */
export function oneOf(values: string[], description?: string): Schema {
  return withDescription({ type: 'string', enum: [...values] }, description);
}

export function int32(description?: string): Schema {
  return withDescription({ type: 'integer', format: 'int32' }, description);
}

export function int64(description?: string): Schema {
  return withDescription({ type: 'integer', format: 'int64' }, description);
}

export function num(description?: string): Schema {
  return withDescription({ type: 'number', format: 'double' }, description);
}

export function bool(description?: string): Schema {
  return withDescription({ type: 'boolean' }, description);
}

/** An RFC 3339 timestamp, written in whole seconds (metav1.Time). */
export function time(description?: string): Schema {
  return withDescription({ type: 'string', format: 'date-time' }, description);
}

/** An RFC 3339 timestamp written with six fraction digits (metav1.MicroTime). */
export function microTime(description?: string): Schema {
  return withDescription({ type: 'string', format: 'date-time', 'x-svc-micro-time': true }, description);
}

/** Base64-encoded bytes. */
export function bytes(description?: string): Schema {
  return withDescription({ type: 'string', format: 'byte' }, description);
}

/**
 * A resource quantity (`500m`, `1Gi`, `2`). Left untyped because manifests
 * write it as a string or as a number, fractional ones included.
 */
export function quantity(description?: string): Schema {
  return withDescription({ format: 'quantity' }, description);
}

/** A port number or name, a percentage: an integer or a string. */
export function intOrString(description?: string): Schema {
  return withDescription({ 'x-svc-int-or-string': true }, description);
}

export interface StructOptions {
  description?: string;
  required?: string[];
  /** The struct is replaced as a whole on merge (`x-svc-map-type: atomic`). */
  atomic?: boolean;
}

export function struct(properties: Record<string, Schema>, options: StructOptions = {}): Schema {
  const schema: Schema = { type: 'object', properties };
  if (options.required && options.required.length > 0) schema.required = [...options.required];
  if (options.atomic) schema['x-svc-map-type'] = 'atomic';
  return withDescription(schema, options.description);
}

/** A map from string keys to values of one schema. */
export function mapOf(value: Schema, description?: string, atomic = false): Schema {
  const schema: Schema = { type: 'object', additionalProperties: value };
  if (atomic) schema['x-svc-map-type'] = 'atomic';
  return withDescription(schema, description);
}

export function stringMap(description?: string, atomic = false): Schema {
  return mapOf({ type: 'string' }, description, atomic);
}

/** A map of resource names to quantities (`cpu: 500m`). */
export function resourceList(description?: string): Schema {
  return mapOf(quantity(), description);
}

/** A free-form object whose fields are kept as sent. */
export function freeForm(description?: string): Schema {
  return withDescription({ type: 'object', 'x-svc-preserve-unknown-fields': true }, description);
}

/** A list replaced as a whole on merge. */
export function atomicList(items: Schema, description?: string): Schema {
  return withDescription({ type: 'array', items, 'x-svc-list-type': 'atomic' }, description);
}

/** A list of scalars merged by value. */
export function setList(items: Schema, description?: string, patchMerge = false): Schema {
  const schema: Schema = { type: 'array', items, 'x-svc-list-type': 'set' };
  if (patchMerge) schema['x-svc-patch-strategy'] = 'merge';
  return withDescription(schema, description);
}

export interface MapListOptions {
  description?: string;
  /** Strategic-merge key, when the upstream type declares one (usually the first list-map key). */
  mergeKey?: string;
  /** Strategic-merge strategy; `merge` when a merge key is given and this is unset. */
  patchStrategy?: string;
}

/** A list of structs merged item by item, identified by the key fields. */
export function mapList(items: Schema, keys: string[], options: MapListOptions = {}): Schema {
  const schema: Schema = { type: 'array', items, 'x-svc-list-type': 'map', 'x-svc-list-map-keys': [...keys] };
  if (options.mergeKey !== undefined) {
    schema['x-svc-patch-merge-key'] = options.mergeKey;
    schema['x-svc-patch-strategy'] = options.patchStrategy ?? 'merge';
  }
  return withDescription(schema, options.description);
}

/**
 * A list that strategic merge patch merges by key but whose upstream list
 * type is atomic for server-side apply (a few status lists are declared so).
 */
export function atomicMergeList(items: Schema, mergeKey: string, description?: string): Schema {
  const schema: Schema = {
    type: 'array',
    items,
    'x-svc-list-type': 'atomic',
    'x-svc-patch-merge-key': mergeKey,
    'x-svc-patch-strategy': 'merge',
  };
  return withDescription(schema, description);
}

/** A copy of a schema with another description (the shared schema is left alone). */
export function described(schema: Schema, description: string): Schema {
  return { ...schema, description };
}

/** A copy of a schema with a default value, as published for server-side apply. */
export function defaulted(schema: Schema, value: unknown): Schema {
  return { ...schema, default: value };
}
