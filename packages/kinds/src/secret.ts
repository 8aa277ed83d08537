import type { ApiObject, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import { MAX_DATA_BYTES, validateImmutableData } from './config-map';
import { configKeyErrors, decodedLength, invalid, isBase64, keyPath, required } from './field-errors';
import { asRecord, asString, isRecord } from './object-access';
import { objectSchema } from './object-meta';
import { bool, bytes, mapOf, str, stringMap } from './schema-builders';

/**
 * Secret: sensitive data as base64 values. `stringData` is a write-only
 * convenience merged into `data` before validation, as the original server
 * does when it decodes the object.
 */

export const SECRET_TYPES = {
  opaque: 'Opaque',
  serviceAccountToken: 'svc.io/service-account-token',
  dockercfg: 'svc.io/dockercfg',
  dockerConfigJson: 'svc.io/dockerconfigjson',
  basicAuth: 'svc.io/basic-auth',
  sshAuth: 'svc.io/ssh-auth',
  tls: 'svc.io/tls',
  bootstrapToken: 'bootstrap.svc.io/token',
} as const;

/** Annotation naming the service account a token secret belongs to. */
export const SERVICE_ACCOUNT_NAME_ANNOTATION = 'svc.io/service-account.name';

export const SECRET_SCHEMA = objectSchema('Secret holds sensitive data such as passwords, tokens or keys.', {
  immutable: bool('When true, data cannot be changed; the object can only be deleted and recreated.'),
  data: mapOf(bytes(), 'Secret values, base64-encoded. Keys consist of alphanumerics, `-`, `_` or `.`.'),
  stringData: stringMap('Write-only plain-text values, merged into data on write (winning over data for the same key); never returned.'),
  type: str('How the data is meant to be used; `Opaque` when unset. Cannot be changed.'),
});

function applySecretDefaults(obj: ApiObject): void {
  const stringData = asRecord(obj['stringData']);
  if (stringData) {
    const data = isRecord(obj['data']) ? obj['data'] : {};
    for (const [key, value] of Object.entries(stringData)) {
      if (typeof value === 'string') data[key] = Buffer.from(value, 'utf8').toString('base64');
    }
    obj['data'] = data;
    delete obj['stringData'];
  }
  if (obj['type'] === undefined || obj['type'] === null || obj['type'] === '') obj['type'] = SECRET_TYPES.opaque;
}

function dataValue(data: Record<string, unknown>, key: string): string | undefined {
  return asString(data[key]);
}

function requireKeys(data: Record<string, unknown>, keys: string[]): StatusCause[] {
  return keys.filter((k) => !dataValue(data, k)).map((k) => required(keyPath('data', k)));
}

function requireJson(data: Record<string, unknown>, key: string): StatusCause[] {
  const value = dataValue(data, key);
  if (!value) return [required(keyPath('data', key))];
  if (!isBase64(value)) return [];
  try {
    JSON.parse(Buffer.from(value, 'base64').toString('utf8'));
    return [];
  } catch (err) {
    return [invalid(keyPath('data', key), '<secret contents redacted>', `invalid JSON: ${(err as Error).message}`)];
  }
}

function validateTypeRules(obj: ApiObject, data: Record<string, unknown>): StatusCause[] {
  switch (obj['type']) {
    case SECRET_TYPES.serviceAccountToken: {
      const annotations = obj.metadata?.annotations ?? {};
      return annotations[SERVICE_ACCOUNT_NAME_ANNOTATION] ? [] : [required(keyPath('metadata.annotations', SERVICE_ACCOUNT_NAME_ANNOTATION))];
    }
    case SECRET_TYPES.dockercfg:
      return requireJson(data, '.dockercfg');
    case SECRET_TYPES.dockerConfigJson:
      return requireJson(data, '.dockerconfigjson');
    case SECRET_TYPES.basicAuth:
      return dataValue(data, 'username') || dataValue(data, 'password') ? [] : [required(keyPath('data', 'username')), required(keyPath('data', 'password'))];
    case SECRET_TYPES.sshAuth:
      return requireKeys(data, ['ssh-privatekey']);
    case SECRET_TYPES.tls:
      return requireKeys(data, ['tls.crt', 'tls.key']);
    default:
      return [];
  }
}

function validateSecret(obj: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const data = asRecord(obj['data']) ?? {};
  let total = 0;
  for (const [key, value] of Object.entries(data)) {
    const field = keyPath('data', key);
    causes.push(...configKeyErrors(field, key));
    if (typeof value === 'string') {
      if (!isBase64(value)) causes.push(invalid(field, '<secret contents redacted>', 'must be base64-encoded data'));
      else total += decodedLength(value);
    }
  }
  if (total > MAX_DATA_BYTES) causes.push({ reason: 'FieldValueTooLong', field: 'data', message: `Too long: must have at most ${MAX_DATA_BYTES} bytes` });
  const type = obj['type'];
  if (typeof type === 'string' && type.length > 0) causes.push(...validateTypeRules(obj, data));
  return causes;
}

function validateSecretUpdate(obj: ApiObject, old: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const oldType = old['type'] ?? SECRET_TYPES.opaque;
  const newType = obj['type'] ?? SECRET_TYPES.opaque;
  if (oldType !== newType) causes.push(invalid('type', newType, 'field is immutable'));
  causes.push(...validateImmutableData(obj, old, ['data']));
  return causes;
}

function dataCount(obj: ApiObject): number {
  return Object.keys(asRecord(obj['data']) ?? {}).length;
}

export function secretDefinition(): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind: 'Secret',
    listKind: 'SecretList',
    plural: 'secrets',
    singular: 'secret',
    shortNames: [],
    categories: [],
    namespaced: true,
    verbs: [...STANDARD_VERBS],
    subresources: [],
    schema: SECRET_SCHEMA,
    printerColumns: [
      { name: 'Type', type: 'string', jsonPath: '.type', description: 'How the data is meant to be used.' },
      { name: 'Data', type: 'integer', jsonPath: '.data', description: 'Number of keys in data.', compute: dataCount },
    ],
    strategy: {
      applyDefaults: applySecretDefaults,
      validate: validateSecret,
      validateUpdate: validateSecretUpdate,
    },
    openApiName: 'io.svc.api.core.v1.Secret',
    allowUnconditionalUpdate: true,
  };
}
