import type { ApiObject, PrinterColumn, ResourceDefinition, ResourceStrategy, ScaleSubresourcePaths, StatusCause, SubresourceDefinition } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { crdConditionTrue } from './custom-resource-definition';
import { nextGeneration } from './generation';
import { asList, asRecord, asString, isRecord, type Fields } from './object-access';
import { applySchemaDefaults, validateValue } from './schema-values';
import { SCALE_SUBRESOURCE } from './scale';
import { keepStatus } from './status';
import { normalizeExtensions, schemaFromStructural } from './structural-schema';

/**
 * The registry entries a CustomResourceDefinition stands for: one per served
 * version, in the same form as a built-in kind, so discovery, OpenAPI,
 * tables, validation and apply read them the same way. Only an Established
 * definition is served, under its accepted names.
 */

export interface CustomResourceNames {
  plural: string;
  singular: string;
  kind: string;
  listKind: string;
  shortNames: string[];
  categories: string[];
}

function readNames(raw: unknown): CustomResourceNames | undefined {
  const n = asRecord(raw);
  const plural = asString(n?.['plural']);
  const kind = asString(n?.['kind']);
  if (!n || !plural || !kind) return undefined;
  const strings = (v: unknown): string[] => asList(v).filter((x): x is string => typeof x === 'string');
  return {
    plural,
    kind,
    singular: asString(n['singular']) || kind.toLowerCase(),
    listKind: asString(n['listKind']) || `${kind}List`,
    shortNames: strings(n['shortNames']),
    categories: strings(n['categories']),
  };
}

/** The names a definition is served under: the accepted ones once the controller accepted them. */
export function servedNames(crd: ApiObject): CustomResourceNames | undefined {
  return readNames(asRecord(crd['status'])?.['acceptedNames']) ?? readNames(asRecord(crd['spec'])?.['names']);
}

export function specNames(crd: ApiObject): CustomResourceNames | undefined {
  return readNames(asRecord(crd['spec'])?.['names']);
}

/** The reverse-domain prefix of OpenAPI names (`example.com` → `com.example`). */
function reverseDomain(group: string): string {
  return group.split('.').reverse().join('.');
}

function printerColumns(raw: unknown): PrinterColumn[] {
  const out: PrinterColumn[] = [];
  for (const c of asList(raw).filter(isRecord)) {
    const jsonPath = asString(c['jsonPath']);
    const name = asString(c['name']);
    // The table adds the object's age itself.
    if (!jsonPath || !name || jsonPath === '.metadata.creationTimestamp') continue;
    const type = (['integer', 'number', 'boolean', 'date'].includes(c['type'] as string) ? c['type'] : 'string') as PrinterColumn['type'];
    const column: PrinterColumn = { name, type, jsonPath };
    if (asString(c['format'])) column.format = c['format'] as string;
    if (asString(c['description'])) column.description = c['description'] as string;
    if (typeof c['priority'] === 'number') column.priority = c['priority'];
    out.push(column);
  }
  return out;
}

/** The scale subresource's paths, when the version declares one (the definition's validation checked them). */
function scalePaths(raw: unknown): ScaleSubresourcePaths | undefined {
  const scale = asRecord(raw);
  const specReplicasPath = asString(scale?.['specReplicasPath']);
  const statusReplicasPath = asString(scale?.['statusReplicasPath']);
  if (!scale || !specReplicasPath || !statusReplicasPath) return undefined;
  const labelSelectorPath = asString(scale['labelSelectorPath']);
  return { specReplicasPath, statusReplicasPath, ...(labelSelectorPath ? { labelSelectorPath } : {}) };
}

/** Everything but type meta and metadata is checked against the schema; metadata has its own generic rules. */
function validateCustomObject(obj: ApiObject, schema: Schema): StatusCause[] {
  const { metadata: metaSchema, apiVersion: _a, kind: _k, ...fields } = schema.properties ?? {};
  const body: Fields = {};
  for (const [key, value] of Object.entries(obj)) if (key !== 'metadata' && key !== 'apiVersion' && key !== 'kind') body[key] = value;
  const causes = validateValue(body, { ...schema, properties: fields, required: (schema.required ?? []).filter((r) => r !== 'metadata' && r !== 'apiVersion' && r !== 'kind') }, '');
  for (const field of ['name', 'generateName'] as const) {
    const restriction = metaSchema?.properties?.[field];
    const value = obj.metadata?.[field];
    if (restriction && value !== undefined) causes.push(...validateValue(value, restriction, `metadata.${field}`));
  }
  return causes;
}

export function customResourceStrategy(schema: Schema, statusSubresource: boolean): ResourceStrategy {
  return {
    prepareForCreate(obj) {
      if (statusSubresource) delete obj['status'];
      obj.metadata = { ...(obj.metadata ?? {}), generation: 1 };
    },
    prepareForUpdate(obj, old) {
      if (statusSubresource) keepStatus(obj, old);
      obj.metadata = { ...(obj.metadata ?? {}), generation: nextGeneration(obj, old, statusSubresource) };
    },
    applyDefaults(obj) {
      const { metadata: _m, ...rest } = schema.properties ?? {};
      applySchemaDefaults(obj, { ...schema, properties: rest });
    },
    validate: (obj) => validateCustomObject(obj, schema),
  };
}

/** The registry entries of a definition: one per served version; none unless Established. */
export function customResourceDefinitions(crd: ApiObject): ResourceDefinition[] {
  if (!crdConditionTrue(crd, 'Established')) return [];
  const spec = asRecord(crd['spec']);
  const group = asString(spec?.['group']);
  const names = servedNames(crd);
  if (!spec || !group || !names) return [];
  const namespaced = spec['scope'] === 'Namespaced';
  // A terminating definition serves what its cleanup needs, but no new objects (405, as upstream refuses them).
  const verbs = crd.metadata?.deletionTimestamp ? STANDARD_VERBS.filter((v) => v !== 'create') : [...STANDARD_VERBS];
  const out: ResourceDefinition[] = [];
  for (const version of asList(spec['versions']).filter(isRecord)) {
    const name = asString(version['name']);
    if (!name || version['served'] !== true) continue;
    const raw = normalizeExtensions(asRecord(version['schema'])?.['openAPIV3Schema']);
    const schema = isRecord(raw) ? schemaFromStructural(raw) : schemaFromStructural({ type: 'object', 'x-svc-preserve-unknown-fields': true });
    const subresources = asRecord(version['subresources']) ?? {};
    const hasStatus = isRecord(subresources['status']);
    const scale = scalePaths(subresources['scale']);
    out.push({
      group,
      version: name,
      kind: names.kind,
      listKind: names.listKind,
      plural: names.plural,
      singular: names.singular,
      shortNames: names.shortNames,
      categories: names.categories,
      namespaced,
      verbs,
      subresources: [...(hasStatus ? [{ name: 'status', verbs: ['get', 'patch', 'update'] } satisfies SubresourceDefinition] : []), ...(scale ? [SCALE_SUBRESOURCE] : [])],
      schema,
      printerColumns: printerColumns(version['additionalPrinterColumns']),
      strategy: customResourceStrategy(schema, hasStatus),
      openApiName: `${reverseDomain(group)}.${name}.${names.kind}`,
      decoding: 'unstructured',
      strategicMergePatch: false,
      ...(scale ? { scale } : {}),
    });
  }
  return out;
}
