import type { StatusCause } from '@svc/apimachinery';
import type { Schema, SchemaType } from '@svc/merge';
import { forbidden, invalid, notSupported, required } from './field-errors';
import { asList, asRecord, isRecord, type Fields } from './object-access';
import { OBJECT_META_SCHEMA, TYPE_META_PROPERTIES } from './object-meta';
import { compilePattern, validateValue } from './schema-values';

/**
 * The `openAPIV3Schema` of a custom resource definition's version: the
 * structural rules the original server enforces on it, and its conversion
 * into the registry's `Schema` (with the list and map merge markers), which
 * validation, defaulting, pruning, apply and OpenAPI then read. Definitions
 * written for the original server spell the extensions `x-kubernetes-*`;
 * they are read as the `x-svc-*` ones.
 */

const TYPES: readonly SchemaType[] = ['object', 'array', 'string', 'integer', 'number', 'boolean'];
const EXTENSIONS = ['list-type', 'list-map-keys', 'map-type', 'preserve-unknown-fields', 'int-or-string', 'embedded-resource', 'validations'];
/** Keywords the original server refuses in a structural schema. */
const UNSUPPORTED = ['$ref', '$schema', 'id', 'definitions', 'dependencies', 'additionalItems', 'patternProperties'];
/** Nesting a schema may have; deeper is refused (every walk below is recursive). */
export const MAX_SCHEMA_DEPTH = 64;

/** A copy of a raw schema with `x-kubernetes-*` extensions renamed to `x-svc-*`. */
export function normalizeExtensions(raw: unknown, depth = 0): unknown {
  if (depth > MAX_SCHEMA_DEPTH + 2) return raw;
  if (Array.isArray(raw)) return raw.map((v) => normalizeExtensions(v, depth + 1));
  if (!isRecord(raw)) return raw;
  const out: Fields = {};
  for (const [key, value] of Object.entries(raw)) {
    const renamed = key.startsWith('x-kubernetes-') && EXTENSIONS.includes(key.slice('x-kubernetes-'.length)) ? `x-svc-${key.slice('x-kubernetes-'.length)}` : key;
    // `default` and `enum` are values, not schemas: kept as written.
    out[renamed] = key === 'default' || key === 'enum' || key === 'example' ? value : normalizeExtensions(value, depth + 1);
  }
  return out;
}

function isScalarType(type: unknown): boolean {
  return type === 'string' || type === 'integer' || type === 'number' || type === 'boolean';
}

/**
 * Causes for every structural rule `raw` (already normalized) breaks, each
 * naming its field under `path`.
 */
export function structuralSchemaErrors(raw: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!isRecord(raw)) return [required(path, 'a structural schema is required')];
  if (raw['type'] !== 'object') causes.push(invalid(`${path}.type`, raw['type'] ?? '', 'must be object at the root'));
  checkNode(raw, path, 0, causes);
  const props = asRecord(raw['properties']);
  if (props) {
    for (const field of ['apiVersion', 'kind']) {
      const p = asRecord(props[field]);
      if (p && p['type'] !== 'string') causes.push(invalid(`${path}.properties[${field}].type`, p['type'] ?? '', 'must be string'));
    }
    const metadata = asRecord(props['metadata']);
    if (metadata) checkRootMetadata(metadata, `${path}.properties[metadata]`, causes);
  }
  return causes;
}

/** At the root, metadata is implicitly ObjectMeta: a schema may only restrict name and generateName. */
function checkRootMetadata(metadata: Fields, path: string, causes: StatusCause[]): void {
  if (metadata['type'] !== undefined && metadata['type'] !== 'object') causes.push(invalid(`${path}.type`, metadata['type'], 'must be object'));
  for (const key of Object.keys(metadata)) {
    if (key !== 'type' && key !== 'properties' && key !== 'description') causes.push(forbidden(`${path}.${key}`, 'must not be specified: metadata is implicitly specified'));
  }
  for (const [name, sub] of Object.entries(asRecord(metadata['properties']) ?? {})) {
    if (name !== 'name' && name !== 'generateName') {
      causes.push(forbidden(`${path}.properties[${name}]`, 'must not specify anything other than name and generateName, but metadata is implicitly specified'));
      continue;
    }
    const s = asRecord(sub);
    if (s && s['type'] !== 'string') causes.push(invalid(`${path}.properties[${name}].type`, s['type'] ?? '', 'must be string'));
    if (s && s['default'] !== undefined) causes.push(forbidden(`${path}.properties[${name}].default`, 'must not be set for metadata fields'));
  }
}

function checkNode(node: Fields, path: string, depth: number, causes: StatusCause[]): void {
  if (depth > MAX_SCHEMA_DEPTH) {
    causes.push(forbidden(path, `must not be nested deeper than ${MAX_SCHEMA_DEPTH} levels`));
    return;
  }
  for (const key of UNSUPPORTED) if (node[key] !== undefined) causes.push(forbidden(`${path}.${key}`, `${key} is not supported`));
  if (node['uniqueItems'] === true) causes.push(forbidden(`${path}.uniqueItems`, 'uniqueItems cannot be set to true since the runtime complexity becomes quadratic'));
  const type = node['type'];
  const intOrString = node['x-svc-int-or-string'];
  const preserve = node['x-svc-preserve-unknown-fields'];
  const embedded = node['x-svc-embedded-resource'];
  for (const [flag, value] of [['x-svc-int-or-string', intOrString], ['x-svc-preserve-unknown-fields', preserve], ['x-svc-embedded-resource', embedded]] as const) {
    if (value !== undefined && typeof value !== 'boolean') causes.push(invalid(`${path}.${flag}`, value, 'must be a boolean'));
  }
  if (preserve === false) causes.push(invalid(`${path}.x-svc-preserve-unknown-fields`, false, 'must be true or undefined'));
  if (type === undefined || type === '') {
    if (intOrString !== true && preserve !== true) causes.push(required(`${path}.type`, 'must not be empty for specified object fields'));
  } else if (typeof type !== 'string' || !(TYPES as readonly string[]).includes(type)) {
    causes.push(notSupported(`${path}.type`, type, TYPES));
  }
  if (intOrString === true && type !== undefined && type !== '') causes.push(invalid(`${path}.type`, type, 'must be empty if x-svc-int-or-string is true'));
  if (embedded === true) {
    if (type !== 'object') causes.push(invalid(`${path}.type`, type ?? '', 'must be object if x-svc-embedded-resource is true'));
    if (preserve !== true && !isRecord(node['properties'])) causes.push(required(`${path}.properties`, 'must not be empty if x-svc-embedded-resource is true without x-svc-preserve-unknown-fields'));
  }
  if (node['nullable'] !== undefined && typeof node['nullable'] !== 'boolean') causes.push(invalid(`${path}.nullable`, node['nullable'], 'must be a boolean'));
  const additional = node['additionalProperties'];
  if (additional !== undefined) {
    if (node['properties'] !== undefined) causes.push(forbidden(`${path}.additionalProperties`, 'additionalProperties and properties are mutual exclusive'));
    if (additional === false) causes.push(forbidden(`${path}.additionalProperties`, 'additionalProperties cannot be set to false'));
    if (type !== undefined && type !== 'object') causes.push(forbidden(`${path}.additionalProperties`, 'must only be used with type object'));
  }
  if (typeof node['pattern'] === 'string' && compilePattern(node['pattern']) === null) {
    causes.push(invalid(`${path}.pattern`, node['pattern'], 'must be a valid regular expression (RE2 syntax)'));
  }
  const properties = node['properties'];
  if (properties !== undefined) {
    if (!isRecord(properties)) causes.push(invalid(`${path}.properties`, properties, 'must be an object'));
    else {
      if (type !== undefined && type !== 'object') causes.push(forbidden(`${path}.properties`, 'must only be used with type object'));
      for (const [name, sub] of Object.entries(properties)) {
        if (!isRecord(sub)) causes.push(invalid(`${path}.properties[${name}]`, sub, 'must be a schema object'));
        else checkNode(sub, `${path}.properties[${name}]`, depth + 1, causes);
      }
    }
  }
  if (isRecord(additional)) checkNode(additional, `${path}.additionalProperties`, depth + 1, causes);
  if (type === 'array') {
    const items = node['items'];
    if (!isRecord(items)) causes.push(required(`${path}.items`, 'must be specified'));
    else checkNode(items, `${path}.items`, depth + 1, causes);
  } else if (node['items'] !== undefined) {
    causes.push(forbidden(`${path}.items`, 'must only be used with type array'));
  }
  for (const key of ['allOf', 'anyOf', 'oneOf']) {
    asList(node[key]).forEach((sub, i) => {
      // Value validations only: a junctor may not declare types or structure.
      if (isRecord(sub) && (sub['type'] !== undefined || sub['properties'] !== undefined || sub['items'] !== undefined || sub['additionalProperties'] !== undefined)) {
        causes.push(forbidden(`${path}.${key}[${i}]`, 'must not specify type, properties, items or additionalProperties inside a junctor'));
      }
    });
  }
  checkListAndMapType(node, path, causes);
}

function checkListAndMapType(node: Fields, path: string, causes: StatusCause[]): void {
  const listType = node['x-svc-list-type'];
  const keys = node['x-svc-list-map-keys'];
  const items = asRecord(node['items']);
  if (listType !== undefined) {
    if (node['type'] !== 'array') causes.push(invalid(`${path}.x-svc-list-type`, listType, 'must only be used if type is array'));
    if (listType !== 'atomic' && listType !== 'set' && listType !== 'map') causes.push(notSupported(`${path}.x-svc-list-type`, listType, ['atomic', 'set', 'map']));
    if (listType === 'set' && items && !isScalarType(items['type']) && items['x-svc-map-type'] !== 'atomic') {
      causes.push(invalid(`${path}.items.x-svc-map-type`, items['x-svc-map-type'] ?? '', 'must be atomic as item of a list with x-svc-list-type=set'));
    }
    if (listType === 'map') {
      if (items && items['type'] !== 'object') causes.push(invalid(`${path}.items.type`, items['type'] ?? '', 'must be object if parent array\'s x-svc-list-type is map'));
      const keyList = asList(keys);
      if (keyList.length === 0) causes.push(required(`${path}.x-svc-list-map-keys`, 'must not be empty if x-svc-list-type is map'));
      const itemProps = asRecord(items?.['properties']) ?? {};
      const itemRequired = asList(items?.['required']);
      keyList.forEach((key, i) => {
        const prop = typeof key === 'string' ? asRecord(itemProps[key]) : undefined;
        if (!prop) {
          causes.push(invalid(`${path}.x-svc-list-map-keys[${i}]`, key, 'entries must all be names of item properties'));
          return;
        }
        if (!isScalarType(prop['type']) && prop['x-svc-int-or-string'] !== true) causes.push(invalid(`${path}.items.properties[${String(key)}].type`, prop['type'] ?? '', 'must be a scalar type if parent array\'s x-svc-list-type is map'));
        if (!itemRequired.includes(key) && prop['default'] === undefined) causes.push(required(`${path}.items.properties[${String(key)}]`, 'this property is in x-svc-list-map-keys, so it must have a default or be a required property'));
      });
    }
  }
  if (keys !== undefined && listType !== 'map') causes.push(forbidden(`${path}.x-svc-list-map-keys`, 'requires x-svc-list-type=map'));
  const mapType = node['x-svc-map-type'];
  if (mapType !== undefined) {
    if (mapType !== 'granular' && mapType !== 'atomic') causes.push(notSupported(`${path}.x-svc-map-type`, mapType, ['granular', 'atomic']));
    if (node['type'] !== 'object') causes.push(invalid(`${path}.x-svc-map-type`, mapType, 'must only be used if type is object'));
  }
}

const NUMERIC_KEYS = ['minimum', 'maximum', 'multipleOf', 'minLength', 'maxLength', 'minItems', 'maxItems', 'minProperties', 'maxProperties'] as const;
const BOOLEAN_KEYS = ['exclusiveMinimum', 'exclusiveMaximum', 'uniqueItems', 'nullable', 'x-svc-preserve-unknown-fields', 'x-svc-int-or-string', 'x-svc-embedded-resource'] as const;

/**
 * The registry schema of a structural schema (already normalized and
 * checked). At the root, `apiVersion`, `kind` and `metadata` are implied;
 * so are they in embedded resources.
 */
export function schemaFromStructural(raw: Fields, root = true, depth = 0): Schema {
  const out: Schema = {};
  if (typeof raw['type'] === 'string' && (TYPES as readonly string[]).includes(raw['type'])) out.type = raw['type'] as SchemaType;
  if (typeof raw['format'] === 'string') out.format = raw['format'];
  if (typeof raw['description'] === 'string') out.description = raw['description'];
  if (typeof raw['pattern'] === 'string') out.pattern = raw['pattern'];
  for (const key of NUMERIC_KEYS) if (typeof raw[key] === 'number') out[key] = raw[key] as number;
  for (const key of BOOLEAN_KEYS) if (raw[key] === true) out[key] = true;
  if (Array.isArray(raw['enum'])) out.enum = raw['enum'].filter((v): v is string | number | boolean | null => v === null || ['string', 'number', 'boolean'].includes(typeof v));
  if (Array.isArray(raw['required'])) out.required = raw['required'].filter((v): v is string => typeof v === 'string');
  if (raw['default'] !== undefined) out.default = JSON.parse(JSON.stringify(raw['default'])) as unknown;
  const listType = raw['x-svc-list-type'];
  if (listType === 'atomic' || listType === 'set' || listType === 'map') out['x-svc-list-type'] = listType;
  if (Array.isArray(raw['x-svc-list-map-keys'])) out['x-svc-list-map-keys'] = raw['x-svc-list-map-keys'].filter((v): v is string => typeof v === 'string');
  const mapType = raw['x-svc-map-type'];
  if (mapType === 'granular' || mapType === 'atomic') out['x-svc-map-type'] = mapType;
  if (depth < MAX_SCHEMA_DEPTH) {
    const props = asRecord(raw['properties']);
    if (props) {
      out.properties = {};
      for (const [name, sub] of Object.entries(props)) if (isRecord(sub)) out.properties[name] = schemaFromStructural(sub, false, depth + 1);
    }
    if (isRecord(raw['additionalProperties'])) out.additionalProperties = schemaFromStructural(raw['additionalProperties'], false, depth + 1);
    else if (raw['additionalProperties'] === true) out.additionalProperties = true;
    if (isRecord(raw['items'])) out.items = schemaFromStructural(raw['items'], false, depth + 1);
  }
  if (root || (out['x-svc-embedded-resource'] && out.properties)) {
    const { metadata: declaredMeta, ...fields } = out.properties ?? {};
    // The name rules a root schema may add are kept beside ObjectMeta, for validation.
    const metadata = root && declaredMeta?.properties ? { ...OBJECT_META_SCHEMA, properties: { ...OBJECT_META_SCHEMA.properties, ...restrictedNames(declaredMeta) } } : OBJECT_META_SCHEMA;
    out.properties = { ...TYPE_META_PROPERTIES, metadata, ...fields };
    out.type = 'object';
  }
  return out;
}

function restrictedNames(declared: Schema): Record<string, Schema> {
  const out: Record<string, Schema> = {};
  for (const field of ['name', 'generateName']) {
    const s = declared.properties?.[field];
    if (s) out[field] = { ...s, type: 'string' };
  }
  return out;
}

/** Defaults that do not validate against their own schema, each naming its field. */
export function defaultErrors(schema: Schema, path: string, depth = 0): StatusCause[] {
  if (depth > MAX_SCHEMA_DEPTH) return [];
  const causes: StatusCause[] = [];
  if (schema.default !== undefined) {
    for (const c of validateValue(schema.default, { ...schema, default: undefined }, `${path}.default`)) causes.push(c);
  }
  for (const [name, sub] of Object.entries(schema.properties ?? {})) {
    if (depth === 0 && name === 'metadata') continue;
    causes.push(...defaultErrors(sub, `${path}.properties[${name}]`, depth + 1));
  }
  if (typeof schema.additionalProperties === 'object') causes.push(...defaultErrors(schema.additionalProperties, `${path}.additionalProperties`, depth + 1));
  if (schema.items) causes.push(...defaultErrors(schema.items, `${path}.items`, depth + 1));
  return causes;
}
