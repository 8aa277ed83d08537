import type { ApiObject, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import { configKeyErrors, forbidden, invalid, keyPath } from './field-errors';
import { asRecord, deepEqual } from './object-access';
import { objectSchema } from './object-meta';
import { bool, bytes, mapOf, stringMap } from './schema-builders';

/** ConfigMap: non-secret configuration as string and binary data keyed by file-like names. */

/** Largest total size of a ConfigMap's or Secret's data, as in the original server. */
export const MAX_DATA_BYTES = 1024 * 1024;

export const CONFIG_MAP_SCHEMA = objectSchema('ConfigMap holds configuration data for workloads to consume.', {
  immutable: bool('When true, data and binaryData cannot be changed; the object can only be deleted and recreated.'),
  data: stringMap('UTF-8 configuration values. Keys consist of alphanumerics, `-`, `_` or `.`; a key may not also appear in binaryData.'),
  binaryData: mapOf(bytes(), 'Binary configuration values, base64-encoded. Keys follow the rules of data and may not also appear there.'),
});

function dataKeys(obj: ApiObject, field: 'data' | 'binaryData'): string[] {
  return Object.keys(asRecord(obj[field]) ?? {});
}

/** Data keys present in both maps, and the key rules for each map. */
export function validateConfigData(obj: ApiObject, stringField: string, byteField: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const strings = asRecord(obj[stringField]) ?? {};
  const binary = asRecord(obj[byteField]) ?? {};
  // A key in both is reported on the string side, as the original does.
  for (const key of Object.keys(strings)) {
    causes.push(...configKeyErrors(keyPath(stringField, key), key));
    if (key in binary) causes.push(invalid(keyPath(stringField, key), key, `duplicate of key present in ${byteField}`));
  }
  for (const key of Object.keys(binary)) causes.push(...configKeyErrors(keyPath(byteField, key), key));
  return causes;
}

function validateConfigMap(obj: ApiObject): StatusCause[] {
  const causes = validateConfigData(obj, 'data', 'binaryData');
  let total = 0;
  for (const value of Object.values(asRecord(obj['data']) ?? {})) if (typeof value === 'string') total += Buffer.byteLength(value);
  for (const value of Object.values(asRecord(obj['binaryData']) ?? {})) if (typeof value === 'string') total += Buffer.byteLength(value, 'base64');
  if (total > MAX_DATA_BYTES) causes.push({ reason: 'FieldValueTooLong', field: '', message: `Too long: must have at most ${MAX_DATA_BYTES} bytes` });
  return causes;
}

/** Rules of an immutable ConfigMap or Secret: the data maps are frozen, and so is the flag. */
export function validateImmutableData(obj: ApiObject, old: ApiObject, fields: string[]): StatusCause[] {
  if (old['immutable'] !== true) return [];
  const causes: StatusCause[] = [];
  if (obj['immutable'] !== true) causes.push(forbidden('immutable', 'field is immutable when `immutable` is set'));
  for (const field of fields) {
    if (!deepEqual(obj[field] ?? {}, old[field] ?? {})) causes.push(forbidden(field, 'field is immutable when `immutable` is set'));
  }
  return causes;
}

export function configMapDefinition(): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind: 'ConfigMap',
    listKind: 'ConfigMapList',
    plural: 'configmaps',
    singular: 'configmap',
    shortNames: ['cm'],
    categories: [],
    namespaced: true,
    verbs: [...STANDARD_VERBS],
    subresources: [],
    schema: CONFIG_MAP_SCHEMA,
    printerColumns: [
      {
        name: 'Data',
        type: 'integer',
        jsonPath: '.data',
        description: 'Number of keys in data and binaryData.',
        compute: (obj) => dataKeys(obj, 'data').length + dataKeys(obj, 'binaryData').length,
      },
    ],
    strategy: {
      validate: validateConfigMap,
      validateUpdate: (obj, old) => validateImmutableData(obj, old, ['data', 'binaryData']),
    },
    openApiName: 'io.svc.api.core.v1.ConfigMap',
    allowUnconditionalUpdate: true,
  };
}
