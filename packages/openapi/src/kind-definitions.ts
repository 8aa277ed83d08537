import type { JsonObject, ResourceDefinition } from '@svc/apimachinery';
import { listDefinitionName, metaName } from './names';
import { convertSchema, describedRef, refTo, setExtension, type Dialect } from './schema-convert';
import { customResourceSchemaV2, openAtRootV2 } from './custom-resource-v2';

/**
 * The definitions of one kind: the object (its registry schema, with
 * `metadata` pointing at the shared ObjectMeta) and its list. Both carry
 * their group-version-kind, which is how clients find a kind's schema.
 */

const API_VERSION = 'Versioned schema of this representation of an object; servers convert recognized schemas to the latest internal value.';
const KIND = 'REST kind of the object, in CamelCase; servers may infer it from the endpoint the request was sent to.';

function gvk(group: string, version: string, kind: string): JsonObject {
  return { group, kind, version };
}

export function kindDefinition(def: Pick<ResourceDefinition, 'schema' | 'kind' | 'group' | 'version' | 'decoding'>, dialect: Dialect): JsonObject {
  // Custom resources (the kinds decoded unstructured) are published in v2 as the original publishes them.
  const customV2 = dialect.openApiVersion === 2 && def.decoding === 'unstructured';
  if (customV2 && openAtRootV2(def.schema)) {
    const open: JsonObject = { type: 'object' };
    if (def.schema.description !== undefined) open['description'] = def.schema.description;
    setExtension(open, 'x-svc-group-version-kind', [gvk(def.group, def.version, def.kind)]);
    return open;
  }
  const out = convertSchema(customV2 ? customResourceSchemaV2(def.schema) : def.schema, dialect);
  if (out['type'] === undefined) out['type'] = 'object';
  if (out['description'] === undefined) out['description'] = `${def.kind} (${def.group ? `${def.group}/` : ''}${def.version}).`;
  const declared = out['properties'];
  const properties: JsonObject = {
    apiVersion: { type: 'string', description: API_VERSION },
    kind: { type: 'string', description: KIND },
    ...(declared && typeof declared === 'object' && !Array.isArray(declared) ? declared : {}),
  };
  // Metadata is always the shared ObjectMeta, whatever the kind's schema says of it.
  properties['metadata'] = describedRef(dialect, metaName('ObjectMeta'), "Standard object's metadata.", {});
  out['properties'] = properties;
  setExtension(out, 'x-svc-group-version-kind', [gvk(def.group, def.version, def.kind)]);
  return out;
}

export function listDefinition(def: ResourceDefinition, dialect: Dialect): JsonObject {
  const out: JsonObject = {
    description: `${def.listKind} is a list of ${def.kind} objects.`,
    type: 'object',
    properties: {
      apiVersion: { type: 'string', description: API_VERSION },
      items: { type: 'array', items: refTo(dialect, def.openApiName), description: `List of ${def.plural}.` },
      kind: { type: 'string', description: KIND },
      metadata: describedRef(dialect, metaName('ListMeta'), 'Standard list metadata.', {}),
    },
    required: ['items'],
  };
  setExtension(out, 'x-svc-group-version-kind', [gvk(def.group, def.version, def.listKind)]);
  return out;
}

/**
 * The definitions of a kind, keyed by definition name: the kind, its list
 * (not for reviews, which are never listed), and the kinds its subresources
 * serve that are not resources of their own (TokenRequest).
 */
export function definitionsOf(def: ResourceDefinition, dialect: Dialect): Record<string, JsonObject> {
  const out: Record<string, JsonObject> = { [def.openApiName]: kindDefinition(def, dialect) };
  if (!def.virtual) out[listDefinitionName(def)] = listDefinition(def, dialect);
  for (const sub of def.subresources) {
    if (!sub.schema || !sub.openApiName || !sub.kind) continue;
    out[sub.openApiName] = kindDefinition({ schema: sub.schema, kind: sub.kind, group: sub.group ?? def.group, version: sub.version ?? def.version }, dialect);
  }
  return out;
}
