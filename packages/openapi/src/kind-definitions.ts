import type { JsonObject, ResourceDefinition } from '@svc/apimachinery';
import { listDefinitionName, metaName } from './names';
import { convertSchema, describedRef, refTo, setExtension, type Dialect } from './schema-convert';

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

export function kindDefinition(def: ResourceDefinition, dialect: Dialect): JsonObject {
  const out = convertSchema(def.schema, dialect);
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

/** Both definitions of a kind, keyed by definition name. */
export function definitionsOf(def: ResourceDefinition, dialect: Dialect): Record<string, JsonObject> {
  return { [def.openApiName]: kindDefinition(def, dialect), [listDefinitionName(def)]: listDefinition(def, dialect) };
}
