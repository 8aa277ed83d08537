/**
 * The structural schema of a kind: the subset of OpenAPI v3 that the
 * registry, validation, OpenAPI publishing and the merge engines all read.
 * Merge markers use the `x-svc-` extension names; OpenAPI documents publish
 * them under their upstream names too, so unchanged clients understand them.
 */
export type SchemaType = 'object' | 'array' | 'string' | 'integer' | 'number' | 'boolean';

export interface Schema {
  type?: SchemaType;
  format?: string;
  description?: string;
  /** Fields of a struct. */
  properties?: Record<string, Schema>;
  /** Value schema of a map (a struct has `properties` instead). */
  additionalProperties?: Schema | boolean;
  /** Element schema of a list. */
  items?: Schema;
  required?: string[];
  enum?: Array<string | number | boolean | null>;
  nullable?: boolean;
  default?: unknown;
  minimum?: number;
  maximum?: number;
  /** The bound itself is excluded (`minimum < value`). */
  exclusiveMinimum?: boolean;
  exclusiveMaximum?: boolean;
  multipleOf?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minItems?: number;
  maxItems?: number;
  uniqueItems?: boolean;
  minProperties?: number;
  maxProperties?: number;
  /** How a list merges: `atomic` (whole), `set` (scalars by value), `map` (items by keys). */
  'x-svc-list-type'?: 'atomic' | 'set' | 'map';
  /** Key fields that identify an item of a `map` list. */
  'x-svc-list-map-keys'?: string[];
  /** How a map or struct merges: `granular` (per key, default) or `atomic` (whole). */
  'x-svc-map-type'?: 'granular' | 'atomic';
  /** Strategic-merge-patch strategy: `merge`, `replace`, `retainKeys`, or `merge,retainKeys`. */
  'x-svc-patch-strategy'?: string;
  /** Strategic-merge-patch key of a list merged by key. */
  'x-svc-patch-merge-key'?: string;
  /** Fields not in the schema are kept rather than pruned. */
  'x-svc-preserve-unknown-fields'?: boolean;
  /** The value is an integer or a string. */
  'x-svc-int-or-string'?: boolean;
  /** The value is a complete object with apiVersion, kind and metadata. */
  'x-svc-embedded-resource'?: boolean;
  /**
   * A `date-time` that is a MicroTime: written with six fraction digits
   * rather than whole seconds. Internal: not published in OpenAPI documents.
   */
  'x-svc-micro-time'?: boolean;
}
