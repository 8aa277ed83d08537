import type { Schema } from '@svc/apimachinery';

/**
 * A custom resource's schema as OpenAPI v2 publishes it. kubectl's
 * client-side validation reads v2 and treats every object schema with
 * properties as closed, and cannot read untyped values with items or
 * properties; so, as the original server's v2 conversion of custom resource
 * schemas does:
 *   - a nullable value loses its type, items and properties (and is no
 *     longer required of its parent);
 *   - a value that preserves unknown fields loses its items and properties,
 *     and an object among them its type;
 *   - a list left without an item schema loses its type.
 * Validation itself is the server's, on the full schema; this only keeps
 * kubectl from refusing what the server accepts.
 */
export function customResourceSchemaV2(schema: Schema): Schema {
  const out: Schema = { ...schema };
  if (out.nullable) {
    delete out.type;
    delete out.nullable;
    delete out.items;
    delete out.properties;
  }
  if (out['x-svc-preserve-unknown-fields']) {
    delete out.items;
    delete out.properties;
    if (out.type === 'object') delete out.type;
  }
  if (out.type === 'array' && out.items === undefined) delete out.type;
  if (out.properties) {
    const properties: Record<string, Schema> = {};
    const nullable = new Set<string>();
    for (const [name, child] of Object.entries(out.properties)) {
      if (child.nullable) nullable.add(name);
      properties[name] = customResourceSchemaV2(child);
    }
    out.properties = properties;
    if (out.required && nullable.size > 0) {
      const required = out.required.filter((name) => !nullable.has(name));
      if (required.length > 0) out.required = required;
      else delete out.required;
    }
  }
  if (out.items) out.items = customResourceSchemaV2(out.items);
  if (typeof out.additionalProperties === 'object') {
    if (out.additionalProperties.nullable) delete out.required;
    out.additionalProperties = customResourceSchemaV2(out.additionalProperties);
  }
  return out;
}

/**
 * Whether a custom resource's v2 definition is left open: with unknown
 * fields preserved at its root, the original publishes a bare object (not
 * even apiVersion, kind and metadata), since kubectl would refuse any other
 * field of an object with properties.
 */
export function openAtRootV2(schema: Schema): boolean {
  return schema['x-svc-preserve-unknown-fields'] === true;
}
