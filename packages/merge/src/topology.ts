/**
 * How a schema node merges (SPEC section 9, server-side apply rule 4),
 * resolved once per schema object:
 *
 * - lists: `x-svc-list-type` wins; without it, a patch strategy containing
 *   `merge` makes a `map` list keyed by `x-svc-patch-merge-key` (or a `set`
 *   of scalars when there is no merge key); otherwise the list is atomic;
 * - maps and structs: `granular` unless `x-svc-map-type: atomic`;
 * - no schema, or fields a schema does not declare: unstructured ("deduced"):
 *   objects are granular maps whose keys are fields, lists are atomic.
 */
import { compareStrings, isJsonObject, JsonValue } from './json';
import { OBJECT_META_SCHEMA } from './object-meta';
import type { Schema } from '@svc/apimachinery';

export const SCALAR_STRING = 1;
export const SCALAR_NUMBER = 2;
export const SCALAR_BOOLEAN = 4;
export const SCALAR_ANY = SCALAR_STRING | SCALAR_NUMBER | SCALAR_BOOLEAN;

export interface ScalarNode {
  readonly kind: 'scalar';
  /** Bit set of the JSON scalar types accepted. */
  readonly accepts: number;
}

export interface MapNode {
  readonly kind: 'map';
  readonly atomic: boolean;
  /** Declared struct fields, if any. */
  readonly fields: Readonly<Record<string, Schema>> | undefined;
  /** Schema of other keys (a map's values); `undefined` means unstructured. */
  readonly elements: Schema | undefined;
}

export interface ListNode {
  readonly kind: 'list';
  readonly mode: 'atomic' | 'set' | 'map';
  /** Key fields of a `map` list, sorted as FieldsV1 sorts them. */
  readonly keys: readonly string[];
  /** Defaults of key fields, from the item schema. */
  readonly keyDefaults: ReadonlyMap<string, JsonValue>;
  readonly items: Schema | undefined;
}

export interface DeducedNode {
  readonly kind: 'deduced';
}

export type TypeNode = ScalarNode | MapNode | ListNode | DeducedNode;

const DEDUCED: DeducedNode = { kind: 'deduced' };
const DEDUCED_MAP: MapNode = { kind: 'map', atomic: false, fields: undefined, elements: undefined };
const DEDUCED_LIST: ListNode = { kind: 'list', mode: 'atomic', keys: [], keyDefaults: new Map(), items: undefined };
const DEDUCED_SCALAR: ScalarNode = { kind: 'scalar', accepts: SCALAR_ANY };

const resolved = new WeakMap<Schema, TypeNode>();

export function resolve(schema: Schema | undefined): TypeNode {
  if (schema === undefined) return DEDUCED;
  let node = resolved.get(schema);
  if (node === undefined) {
    node = build(schema);
    resolved.set(schema, node);
  }
  return node;
}

/** The node for a value: unstructured nodes take their shape from the value itself. */
export function nodeFor(schema: Schema | undefined, value: JsonValue | undefined): TypeNode {
  const node = resolve(schema);
  if (node.kind !== 'deduced') return node;
  if (isJsonObject(value)) return DEDUCED_MAP;
  if (Array.isArray(value)) return DEDUCED_LIST;
  return DEDUCED_SCALAR;
}

function build(schema: Schema): TypeNode {
  if (schema['x-svc-int-or-string']) return { kind: 'scalar', accepts: SCALAR_STRING | SCALAR_NUMBER };
  const type = schema.type ?? inferType(schema);
  switch (type) {
    case 'object': {
      const fields = schema.properties && Object.keys(schema.properties).length > 0 ? schema.properties : undefined;
      const extra = schema.additionalProperties;
      const elements = typeof extra === 'object' ? extra : undefined;
      return { kind: 'map', atomic: schema['x-svc-map-type'] === 'atomic', fields, elements };
    }
    case 'array':
      return buildList(schema);
    case 'string':
      return { kind: 'scalar', accepts: SCALAR_STRING };
    case 'integer':
    case 'number':
      return { kind: 'scalar', accepts: SCALAR_NUMBER };
    case 'boolean':
      return { kind: 'scalar', accepts: SCALAR_BOOLEAN };
    default:
      return DEDUCED;
  }
}

function inferType(schema: Schema): Schema['type'] {
  if (schema.properties || typeof schema.additionalProperties === 'object') return 'object';
  if (schema.items) return 'array';
  return undefined;
}

function buildList(schema: Schema): ListNode {
  const items = schema.items;
  const explicit = schema['x-svc-list-type'];
  const strategies = (schema['x-svc-patch-strategy'] ?? '').split(',').map((s) => s.trim());
  const mergeKey = schema['x-svc-patch-merge-key'];
  let mode: ListNode['mode'] = 'atomic';
  let keys: string[] = [];
  if (explicit === 'set') mode = 'set';
  else if (explicit === 'map') {
    keys = [...(schema['x-svc-list-map-keys'] ?? (mergeKey ? [mergeKey] : []))];
    // A map list without keys cannot identify its items; it can only merge whole.
    mode = keys.length > 0 ? 'map' : 'atomic';
  } else if (explicit === undefined && strategies.includes('merge')) {
    if (mergeKey) {
      mode = 'map';
      keys = [mergeKey];
    } else if (!itemsAreStructured(items)) {
      mode = 'set';
    }
  }
  keys.sort(compareStrings);
  const keyDefaults = new Map<string, JsonValue>();
  for (const k of keys) {
    const d = items?.properties?.[k]?.default;
    if (d !== undefined) keyDefaults.set(k, d as JsonValue);
  }
  return { kind: 'list', mode, keys, keyDefaults, items };
}

function itemsAreStructured(items: Schema | undefined): boolean {
  if (!items) return false;
  const t = items.type ?? inferType(items);
  return t === 'object' || t === 'array';
}

/** Schema of a key of a map node, and whether that key is a declared struct field. */
export function childOfMap(node: MapNode, name: string): { schema: Schema | undefined; structField: boolean } {
  if (node.fields && Object.prototype.hasOwnProperty.call(node.fields, name)) {
    return { schema: node.fields[name], structField: true };
  }
  return { schema: node.elements, structField: false };
}

/** The default of a struct field, if its schema declares one. */
export function fieldDefault(node: MapNode, name: string): JsonValue | undefined {
  if (!node.fields || !Object.prototype.hasOwnProperty.call(node.fields, name)) return undefined;
  return node.fields[name]?.default as JsonValue | undefined;
}

const rootSchemas = new WeakMap<Schema, Schema>();

/**
 * The schema of a whole object, with the shared `metadata` topology filled in
 * when the kind's schema leaves `metadata` without declared fields.
 */
export function rootSchema(schema: Schema | undefined): Schema | undefined {
  if (schema === undefined) return undefined;
  let root = rootSchemas.get(schema);
  if (root === undefined) {
    const meta = schema.properties?.metadata;
    const node = resolve(schema);
    if (node.kind === 'map' && (meta === undefined || meta.properties === undefined)) {
      root = { ...schema, properties: { ...(schema.properties ?? {}), metadata: OBJECT_META_SCHEMA } };
    } else {
      root = schema;
    }
    rootSchemas.set(schema, root);
  }
  return root;
}
