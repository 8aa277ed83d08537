import type { ApiObject, ConversionStrategy, PrinterColumn, ResourceDefinition, ResourceStrategy, ScaleSubresourcePaths, StatusCause, StorageVersioning, SubresourceDefinition } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { crdConditionTrue } from './custom-resource-definition';
import { nextGeneration } from './generation';
import { asList, asRecord, asString, isRecord, type Fields } from './object-access';
import { applySchemaDefaults, validateValue } from './schema-values';
import { SCALE_SUBRESOURCE } from './scale';
import { keepStatus } from './status';
import { normalizeExtensions, schemaFromStructural } from './structural-schema';
import { compileValidationRules, hasValidationRules, type RuleValidator } from './validation-rules';

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

/** A version's `selectableFields` as field labels (`.spec.color` selects as `spec.color`). */
function selectableFields(raw: unknown): string[] {
  return asList(raw)
    .filter(isRecord)
    .map((f) => asString(f['jsonPath']) ?? '')
    .filter((path) => path !== '')
    .map((path) => path.replace(/^\./, ''));
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

export function customResourceStrategy(schema: Schema, statusSubresource: boolean, rules?: RuleValidator): ResourceStrategy {
  // Rules run once the schema's own checks pass, as upstream (CEL is not given a value of the wrong type).
  // An update is checked by validate (every rule but the transition ones) and validateUpdate (those).
  const schemaValid = new WeakSet<ApiObject>();
  const validate = (obj: ApiObject): StatusCause[] => {
    const causes = validateCustomObject(obj, schema);
    if (causes.length > 0 || !rules) return causes;
    schemaValid.add(obj);
    return rules.validate(obj, undefined, 'stateless');
  };
  return {
    prepareForCreate(obj) {
      if (statusSubresource) delete obj['status'];
      obj.metadata = { ...(obj.metadata ?? {}), generation: 1 };
    },
    prepareForUpdate(obj, old) {
      if (statusSubresource) keepStatus(obj, old);
      obj.metadata = { ...(obj.metadata ?? {}), generation: nextGeneration(obj, old, statusSubresource) };
    },
    applyDefaults: (obj) => fillDefaults(obj, schema),
    validate: (obj) => validate(obj),
    validateUpdate: (obj, old) => (rules && schemaValid.has(obj) ? rules.validate(obj, old, 'transition') : []),
  };
}

function versionSchema(version: Fields): Schema {
  const raw = normalizeExtensions(asRecord(version['schema'])?.['openAPIV3Schema']);
  return isRecord(raw) ? schemaFromStructural(raw) : schemaFromStructural({ type: 'object', 'x-svc-preserve-unknown-fields': true });
}

/** Defaults of a schema, filled into an object's fields (metadata has its own rules and no schema defaults). */
function fillDefaults(obj: ApiObject, schema: Schema): void {
  const { metadata: _m, ...rest } = schema.properties ?? {};
  applySchemaDefaults(obj, { ...schema, properties: rest });
}

/**
 * The URL a conversion webhook is called at: `url`, or for a service
 * reference `https://<name>.<namespace>.svc:<port><path>` as upstream
 * resolves it (which needs cluster DNS to reach the service).
 */
export function conversionWebhookUrl(clientConfig: Fields | undefined): string | undefined {
  const url = asString(clientConfig?.['url']);
  if (url) return url;
  const service = asRecord(clientConfig?.['service']);
  const name = asString(service?.['name']);
  const namespace = asString(service?.['namespace']);
  if (!service || !name || !namespace) return undefined;
  const port = typeof service['port'] === 'number' ? service['port'] : 443;
  return `https://${name}.${namespace}.svc:${port}${asString(service['path']) ?? ''}`;
}

/** The definition's conversion strategy; a webhook without a usable address converts nothing (every conversion fails). */
export function conversionStrategy(spec: Fields): ConversionStrategy {
  const conversion = asRecord(spec['conversion']);
  if (conversion?.['strategy'] !== 'Webhook') return { strategy: 'None' };
  const webhook = asRecord(conversion['webhook']);
  const clientConfig = asRecord(webhook?.['clientConfig']);
  const caBundle = asString(clientConfig?.['caBundle']);
  return {
    strategy: 'Webhook',
    webhook: {
      url: conversionWebhookUrl(clientConfig) ?? '',
      ...(caBundle ? { caBundle: Buffer.from(caBundle, 'base64') } : {}),
      conversionReviewVersions: asList(webhook?.['conversionReviewVersions']).filter((v): v is string => typeof v === 'string'),
    },
  };
}

/** Storage version, conversion and per-version defaulting of a definition: shared by all its served versions. */
function storageVersioning(group: string, spec: Fields): StorageVersioning | undefined {
  const versions = asList(spec['versions']).filter(isRecord);
  const storageVersion = asString(versions.find((v) => v['storage'] === true)?.['name']);
  if (!storageVersion) return undefined;
  const schemas = new Map<string, Schema>();
  for (const v of versions) {
    const name = asString(v['name']);
    if (name) schemas.set(`${group}/${name}`, versionSchema(v));
  }
  return {
    storageVersion,
    conversion: conversionStrategy(spec),
    applyVersionDefaults(obj) {
      const schema = typeof obj.apiVersion === 'string' ? schemas.get(obj.apiVersion) : undefined;
      if (schema) fillDefaults(obj, schema);
    },
    schemaOf: (apiVersion) => schemas.get(apiVersion),
  };
}

/** The warning a deprecated version's requests get: its own text or upstream's default. */
function deprecationWarning(group: string, version: Fields, name: string, kind: string): string | undefined {
  if (version['deprecated'] !== true) return undefined;
  return asString(version['deprecationWarning']) ?? `${group}/${name} ${kind} is deprecated`;
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
  const versioning = storageVersioning(group, spec);
  const out: ResourceDefinition[] = [];
  for (const version of asList(spec['versions']).filter(isRecord)) {
    const name = asString(version['name']);
    if (!name || version['served'] !== true) continue;
    const schema = versionSchema(version);
    const raw = normalizeExtensions(asRecord(version['schema'])?.['openAPIV3Schema']);
    const warning = deprecationWarning(group, version, name, names.kind);
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
      selectableFields: selectableFields(version['selectableFields']),
      strategy: customResourceStrategy(schema, hasStatus, isRecord(raw) && hasValidationRules(raw) ? compileValidationRules(raw, 'openAPIV3Schema').validator : undefined),
      openApiName: `${reverseDomain(group)}.${name}.${names.kind}`,
      decoding: 'unstructured',
      strategicMergePatch: false,
      ...(warning !== undefined ? { deprecationWarning: warning } : {}),
      ...(versioning ? { storageVersioning: versioning } : {}),
      ...(scale ? { scale } : {}),
    });
  }
  return out;
}
