import type { JsonObject, JsonValue } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';

/**
 * Turns registry schemas into OpenAPI schema objects. Every `x-svc-*`
 * extension is published under its own name and under the upstream
 * `x-kubernetes-*` name, so unchanged clients (kubectl's strategic merge,
 * explain, server-side apply tooling) read the merge markers.
 */

/** Our extension names and the upstream names published beside them. */
export const EXTENSION_ALIASES: Readonly<Record<string, string>> = {
  'x-svc-list-type': 'x-kubernetes-list-type',
  'x-svc-list-map-keys': 'x-kubernetes-list-map-keys',
  'x-svc-map-type': 'x-kubernetes-map-type',
  'x-svc-patch-strategy': 'x-kubernetes-patch-strategy',
  'x-svc-patch-merge-key': 'x-kubernetes-patch-merge-key',
  'x-svc-preserve-unknown-fields': 'x-kubernetes-preserve-unknown-fields',
  'x-svc-int-or-string': 'x-kubernetes-int-or-string',
  'x-svc-embedded-resource': 'x-kubernetes-embedded-resource',
  'x-svc-group-version-kind': 'x-kubernetes-group-version-kind',
  'x-svc-action': 'x-kubernetes-action',
};

/** Sets an extension under both names. */
export function setExtension(target: JsonObject, svcName: string, value: JsonValue): void {
  target[svcName] = value;
  const upstream = EXTENSION_ALIASES[svcName];
  if (upstream) target[upstream] = value;
}

/** OpenAPI 2 (`definitions`) or OpenAPI 3 (`components.schemas`). */
export interface Dialect {
  readonly openApiVersion: 2 | 3;
}

export const SWAGGER_2: Dialect = { openApiVersion: 2 };
export const OPENAPI_3: Dialect = { openApiVersion: 3 };

export function refTo(dialect: Dialect, name: string): JsonObject {
  return { $ref: dialect.openApiVersion === 2 ? `#/definitions/${name}` : `#/components/schemas/${name}` };
}

/**
 * A reference with its own description (and default): OpenAPI 3 ignores
 * siblings of `$ref`, so there the reference is wrapped in `allOf`, as the
 * original server publishes it.
 */
export function describedRef(dialect: Dialect, name: string, description: string, defaultValue?: JsonValue): JsonObject {
  if (dialect.openApiVersion === 2) return { ...refTo(dialect, name), description };
  const out: JsonObject = { allOf: [refTo(dialect, name)], description };
  if (defaultValue !== undefined) out['default'] = defaultValue;
  return out;
}

/** Formats of untyped schemas that are strings on the wire. */
const STRING_FORMATS = new Set(['quantity', 'date-time', 'byte', 'int-or-string']);

function toJson(value: unknown): JsonValue | undefined {
  if (value === undefined) return undefined;
  return JSON.parse(JSON.stringify(value)) as JsonValue;
}

/** Value constraints published as they are. */
const VALUE_CONSTRAINTS = [
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
] as const;

export function convertSchema(schema: Schema, dialect: Dialect): JsonObject {
  const out: JsonObject = {};
  if (schema.description !== undefined) out['description'] = schema.description;
  if (schema['x-svc-int-or-string']) {
    out['type'] = 'string';
    out['format'] = 'int-or-string';
  } else {
    if (schema.type !== undefined) out['type'] = schema.type;
    else if (schema.format !== undefined && STRING_FORMATS.has(schema.format)) out['type'] = 'string';
    if (schema.format !== undefined) out['format'] = schema.format;
  }
  if (schema.enum !== undefined) out['enum'] = [...schema.enum];
  const defaultValue = toJson(schema.default);
  if (defaultValue !== undefined) out['default'] = defaultValue;
  for (const key of VALUE_CONSTRAINTS) {
    const value = schema[key];
    if (value !== undefined) out[key] = value;
  }
  if (schema.nullable && dialect.openApiVersion === 3) out['nullable'] = true;
  if (schema.required !== undefined && schema.required.length > 0) out['required'] = [...schema.required];
  if (schema.properties !== undefined) {
    const properties: JsonObject = {};
    for (const [name, child] of Object.entries(schema.properties)) properties[name] = convertSchema(child, dialect);
    out['properties'] = properties;
  }
  if (schema.items !== undefined) out['items'] = convertSchema(schema.items, dialect);
  if (typeof schema.additionalProperties === 'boolean') out['additionalProperties'] = schema.additionalProperties;
  else if (schema.additionalProperties !== undefined) out['additionalProperties'] = convertSchema(schema.additionalProperties, dialect);
  for (const key of Object.keys(EXTENSION_ALIASES)) {
    const value = toJson((schema as Record<string, unknown>)[key]);
    if (value !== undefined) setExtension(out, key, value);
  }
  return out;
}
