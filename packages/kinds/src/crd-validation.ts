import type { ApiObject, StatusCause } from '@svc/apimachinery';
import { dns1035LabelErrors, dnsSubdomainErrors, duplicate, forbidden, invalid, notSupported, required } from './field-errors';
import { asList, asRecord, asString, isRecord, type Fields } from './object-access';
import { defaultErrors, normalizeExtensions, schemaFromStructural, structuralSchemaErrors } from './structural-schema';
import { compileValidationRules, hasValidationRules } from './validation-rules';
import { webhookClientConfigErrors } from './webhook-client-config';

/**
 * The original server's validation of a CustomResourceDefinition (v1):
 * names, group, scope, versions, a structural schema per version, printer
 * columns and subresources. Every cause names its field.
 */

/** Groups of the built-in kinds: a definition may not add kinds to them (a test keeps this in step with the registry). */
export const BUILTIN_GROUPS: readonly string[] = [
  'apiextensions.svc.io',
  'authentication.svc.io',
  'authorization.svc.io',
  'coordination.svc.io',
  'events.svc.io',
  'flowcontrol.svc.io',
  'policy',
  'meta.svc.io',
  'rbac.authorization.svc.io',
  'admissionregistration.svc.io',
  'apiserver.config.svc.io',
  'client.authentication.svc.io',
];

const PROTECTED_SUFFIX = '.svc.io';
const APPROVAL = 'api-approved.svc.io';
const COLUMN_TYPES = ['integer', 'number', 'string', 'boolean', 'date'];
const COLUMN_FORMATS = ['int32', 'int64', 'float', 'double', 'byte', 'date', 'date-time', 'password'];

function isProtectedGroup(group: string): boolean {
  return group === 'svc.io' || group.endsWith(PROTECTED_SUFFIX);
}

function validateGroup(crd: ApiObject, group: unknown): StatusCause[] {
  const field = 'spec.group';
  if (typeof group !== 'string' || group === '') return [required(field)];
  const causes = dnsSubdomainErrors(field, group);
  if (!group.includes('.')) causes.push(invalid(field, group, 'should be a domain with at least one dot'));
  if (BUILTIN_GROUPS.includes(group)) causes.push(invalid(field, group, 'is reserved for built-in kinds'));
  else if (isProtectedGroup(group)) {
    const approval = crd.metadata?.annotations?.[APPROVAL];
    const annotation = `metadata.annotations[${APPROVAL}]`;
    if (approval === undefined) causes.push(required(annotation, `protected groups must have approval annotation "${APPROVAL}"`));
    else if (!/^https?:\/\/\S+$/.test(approval) && !approval.startsWith('unapproved')) causes.push(invalid(annotation, approval, 'protected groups must have a URL or a reason starting with "unapproved" in the approval annotation'));
  }
  return causes;
}

/** `spec.names` or `status.acceptedNames`. */
export function validateNames(names: unknown, path: string): StatusCause[] {
  const n = asRecord(names);
  if (!n) return [required(path)];
  const causes: StatusCause[] = [];
  const label = (field: string, value: unknown, lower = false): void => {
    if (typeof value !== 'string' || value === '') return;
    causes.push(...dns1035LabelErrors(field, lower ? value.toLowerCase() : value));
  };
  const plural = n['plural'];
  if (typeof plural !== 'string' || plural === '') causes.push(required(`${path}.plural`));
  else label(`${path}.plural`, plural);
  label(`${path}.singular`, n['singular']);
  const kind = n['kind'];
  if (typeof kind !== 'string' || kind === '') causes.push(required(`${path}.kind`));
  else label(`${path}.kind`, kind, true);
  const listKind = n['listKind'];
  if (typeof listKind !== 'string' || listKind === '') causes.push(required(`${path}.listKind`));
  else {
    label(`${path}.listKind`, listKind, true);
    if (listKind === kind) causes.push(invalid(`${path}.listKind`, listKind, 'kind and listKind may not be the same'));
  }
  for (const list of ['shortNames', 'categories'] as const) {
    const seen = new Set<string>();
    asList(n[list]).forEach((value, i) => {
      const field = `${path}.${list}[${i}]`;
      if (typeof value !== 'string' || value === '') causes.push(required(field));
      else {
        label(field, value);
        if (seen.has(value)) causes.push(duplicate(field, value));
        seen.add(value);
      }
    });
  }
  return causes;
}

function validatePrinterColumns(columns: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  asList(columns).forEach((raw, i) => {
    const field = `${path}[${i}]`;
    const c = asRecord(raw) ?? {};
    if (!asString(c['name'])) causes.push(required(`${field}.name`));
    if (!asString(c['type'])) causes.push(required(`${field}.type`));
    else if (!COLUMN_TYPES.includes(c['type'] as string)) causes.push(notSupported(`${field}.type`, c['type'], COLUMN_TYPES));
    if (asString(c['format']) && !COLUMN_FORMATS.includes(c['format'] as string)) causes.push(notSupported(`${field}.format`, c['format'], COLUMN_FORMATS));
    const jsonPath = c['jsonPath'];
    if (!asString(jsonPath)) causes.push(required(`${field}.jsonPath`));
    else if (!(jsonPath as string).startsWith('.') || /\s/.test(jsonPath as string)) causes.push(invalid(`${field}.jsonPath`, jsonPath, 'must be a simple json path'));
  });
  return causes;
}

function validateSubresources(subresources: unknown, path: string): StatusCause[] {
  const s = asRecord(subresources);
  if (!s) return [];
  const causes: StatusCause[] = [];
  if (s['status'] !== undefined && !isRecord(s['status'])) causes.push(invalid(`${path}.status`, s['status'], 'must be an object'));
  const scale = s['scale'];
  if (scale === undefined) return causes;
  const sc = asRecord(scale) ?? {};
  const pathUnder = (name: string, prefixes: string[], needed: boolean): void => {
    const value = sc[name];
    const field = `${path}.scale.${name}`;
    if (value === undefined || value === '') {
      if (needed) causes.push(required(field));
      return;
    }
    if (typeof value !== 'string' || !prefixes.some((p) => value.startsWith(p)) || /[\s[\]]/.test(value)) {
      causes.push(invalid(field, value, `should be a json path under ${prefixes.join(' or ')}`));
    }
  };
  pathUnder('specReplicasPath', ['.spec.'], true);
  pathUnder('statusReplicasPath', ['.status.'], true);
  pathUnder('labelSelectorPath', ['.spec.', '.status.'], false);
  return causes;
}

function validateVersionSchema(version: Fields, path: string): StatusCause[] {
  const raw = asRecord(version['schema'])?.['openAPIV3Schema'];
  const field = `${path}.schema.openAPIV3Schema`;
  if (raw === undefined || raw === null) return [required(field, 'schemas are required')];
  const normalized = normalizeExtensions(raw);
  const causes = structuralSchemaErrors(normalized, field);
  if (causes.length === 0 && isRecord(normalized)) causes.push(...defaultErrors(schemaFromStructural(normalized), field));
  if (causes.length === 0 && isRecord(normalized) && hasValidationRules(normalized)) causes.push(...compileValidationRules(normalized, field).causes);
  return causes;
}

function validateVersions(versions: unknown): StatusCause[] {
  const list = asList(versions);
  if (list.length === 0) return [required('spec.versions', 'must have exactly one version marked as storage version')];
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  let storage = 0;
  list.forEach((raw, i) => {
    const path = `spec.versions[${i}]`;
    const v = asRecord(raw) ?? {};
    const name = v['name'];
    if (typeof name !== 'string' || name === '') causes.push(required(`${path}.name`));
    else {
      causes.push(...dns1035LabelErrors(`${path}.name`, name));
      if (seen.has(name)) causes.push(duplicate(`${path}.name`, name));
      seen.add(name);
    }
    if (typeof v['served'] !== 'boolean') causes.push(required(`${path}.served`));
    if (typeof v['storage'] !== 'boolean') causes.push(required(`${path}.storage`));
    if (v['storage'] === true) storage++;
    causes.push(...validateVersionSchema(v, path));
    causes.push(...validatePrinterColumns(v['additionalPrinterColumns'], `${path}.additionalPrinterColumns`));
    causes.push(...validateSubresources(v['subresources'], `${path}.subresources`));
  });
  if (storage !== 1) causes.push(invalid('spec.versions', storage, 'must have exactly one version marked as storage version'));
  return causes;
}

/** ConversionReview versions this server sends and reads. */
const CONVERSION_REVIEW_VERSIONS = ['v1', 'v1beta1'];

function validateWebhookClientConfig(config: Fields | undefined, path: string): StatusCause[] {
  if (!config) return [required(path, 'required when strategy is set to Webhook')];
  return webhookClientConfigErrors(config, path);
}

function validateConversionReviewVersions(raw: unknown, path: string): StatusCause[] {
  const versions = asList(raw);
  if (versions.length === 0) return [required(path, 'must specify at least one version')];
  const causes: StatusCause[] = [];
  const seen = new Set<unknown>();
  versions.forEach((v, i) => {
    if (seen.has(v)) causes.push(duplicate(`${path}[${i}]`, v));
    seen.add(v);
  });
  if (!versions.some((v) => typeof v === 'string' && CONVERSION_REVIEW_VERSIONS.includes(v))) {
    causes.push(invalid(path, versions, `must include at least one of ${CONVERSION_REVIEW_VERSIONS.join(', ')}`));
  }
  return causes;
}

/** `spec.conversion`: a webhook only with strategy Webhook, reachable over https, speaking a ConversionReview version we do. */
function validateConversion(conversion: Fields | undefined): StatusCause[] {
  const strategy = conversion?.['strategy'];
  if (strategy !== undefined && strategy !== 'None' && strategy !== 'Webhook') return [notSupported('spec.conversion.strategy', strategy, ['None', 'Webhook'])];
  const webhook = asRecord(conversion?.['webhook']);
  if (strategy !== 'Webhook') return webhook ? [forbidden('spec.conversion.webhook', 'should not be set when strategy is not set to Webhook')] : [];
  if (!webhook) return [required('spec.conversion.webhook', 'required when strategy is set to Webhook')];
  return [
    ...validateWebhookClientConfig(asRecord(webhook['clientConfig']), 'spec.conversion.webhook.clientConfig'),
    ...validateConversionReviewVersions(webhook['conversionReviewVersions'], 'spec.conversion.webhook.conversionReviewVersions'),
  ];
}

export function validateCustomResourceDefinition(crd: ApiObject): StatusCause[] {
  const spec = asRecord(crd['spec']);
  if (!spec) return [required('spec')];
  const causes: StatusCause[] = [];
  const group = spec['group'];
  causes.push(...validateGroup(crd, group));
  causes.push(...validateNames(spec['names'], 'spec.names'));
  const plural = asString(asRecord(spec['names'])?.['plural']);
  if (plural && typeof group === 'string' && crd.metadata?.name !== `${plural}.${group}`) {
    causes.push(invalid('metadata.name', crd.metadata?.name ?? '', 'must be spec.names.plural+"."+spec.group'));
  }
  const scope = spec['scope'];
  if (scope === undefined || scope === '') causes.push(required('spec.scope'));
  else if (scope !== 'Namespaced' && scope !== 'Cluster') causes.push(notSupported('spec.scope', scope, ['Cluster', 'Namespaced']));
  causes.push(...validateVersions(spec['versions']));
  causes.push(...validateConversion(asRecord(spec['conversion'])));
  if (spec['preserveUnknownFields'] === true) causes.push(invalid('spec.preserveUnknownFields', true, 'must be false in order to use defaults in the schema'));
  const status = asRecord(crd['status']);
  const accepted = asRecord(status?.['acceptedNames']);
  if (accepted && asString(accepted['plural'])) causes.push(...validateNames(accepted, 'status.acceptedNames'));
  return causes;
}

export function validateCustomResourceDefinitionUpdate(crd: ApiObject, old: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = asRecord(crd['spec']) ?? {};
  const oldSpec = asRecord(old['spec']) ?? {};
  if (spec['group'] !== oldSpec['group']) causes.push(invalid('spec.group', spec['group'] ?? '', 'field is immutable'));
  if (spec['scope'] !== oldSpec['scope']) causes.push(invalid('spec.scope', spec['scope'] ?? '', 'field is immutable'));
  // A version objects are stored in may not go while it is listed in status.storedVersions.
  const names = new Set(asList(spec['versions']).map((v) => asRecord(v)?.['name']));
  asList(asRecord(old['status'])?.['storedVersions']).forEach((stored, i) => {
    if (!names.has(stored)) causes.push(invalid(`status.storedVersions[${i}]`, stored, 'must appear in spec.versions'));
  });
  return causes;
}
