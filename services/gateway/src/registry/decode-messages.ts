import { ApiError, type ApiObject, type StatusCause } from '@svc/apimachinery';

/**
 * Decoding errors in the words of the original server, whose typed decoding
 * is Go's: a body is unmarshalled by encoding/json (`json: cannot unmarshal
 * string into Go struct field ObjectMeta.metadata.labels of type
 * map[string]string`), a strategic merge patch's result converted from a map
 * (`cannot restore map from string`). The Go types are known here for
 * ObjectMeta, which every kind shares and clients most often get wrong (a
 * label given as a string); other fields keep the schema's own message.
 */

/** ObjectMeta's fields as encoding/json names their Go types. */
const OBJECT_META_TYPES: Readonly<Record<string, string>> = {
  name: 'string',
  generateName: 'string',
  namespace: 'string',
  selfLink: 'string',
  uid: 'types.UID',
  resourceVersion: 'string',
  generation: 'int64',
  deletionGracePeriodSeconds: 'int64',
  labels: 'map[string]string',
  annotations: 'map[string]string',
  finalizers: '[]string',
  ownerReferences: '[]v1.OwnerReference',
  managedFields: '[]v1.ManagedFieldsEntry',
};

/** The element type of a map or slice type (`map[string]string` holds `string`). */
function elementType(goType: string): string | undefined {
  if (goType.startsWith('map[')) return goType.slice(goType.indexOf(']') + 1);
  if (goType.startsWith('[]')) return goType.slice(2);
  return undefined;
}

/** encoding/json's name of a JSON value's kind. */
function jsonKind(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'boolean') return 'bool';
  return typeof v === 'object' ? 'object' : typeof v;
}

/** reflect's kind of a value decoded into an unstructured map. */
function reflectKind(v: unknown): string {
  if (Array.isArray(v)) return 'slice';
  if (typeof v === 'boolean') return 'bool';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int64' : 'float64';
  return typeof v === 'object' ? 'map' : typeof v;
}

interface MetaField {
  /** ObjectMeta's field (`labels`). */
  field: string;
  /** The Go type the value was to fill: the field's, or its element's for `labels[key]`, `finalizers[0]`. */
  goType: string;
  value: unknown;
}

/** The ObjectMeta field a type error names, with the value found there. */
function metaFieldOf(cause: StatusCause, obj: ApiObject): MetaField | undefined {
  const m = /^metadata\.([A-Za-z]+)(?:\[(.*)\])?$/.exec(cause.field ?? '');
  const field = m?.[1];
  const type = field !== undefined ? OBJECT_META_TYPES[field] : undefined;
  if (!m || field === undefined || type === undefined) return undefined;
  const container = (obj.metadata as Record<string, unknown> | undefined)?.[field];
  if (m[2] === undefined) return { field, goType: type, value: container };
  const element = elementType(type);
  if (element === undefined) return undefined;
  const key = m[2];
  const value = Array.isArray(container) ? container[Number(key)] : (container as Record<string, unknown> | undefined)?.[key];
  return { field, goType: element, value };
}

/** encoding/json's message for a type error in ObjectMeta, or undefined for any other field. */
export function jsonUnmarshalMessage(cause: StatusCause, obj: ApiObject): string | undefined {
  const meta = metaFieldOf(cause, obj);
  if (!meta) return undefined;
  return `json: cannot unmarshal ${jsonKind(meta.value)} into Go struct field ObjectMeta.metadata.${meta.field} of type ${meta.goType}`;
}

/** The unstructured converter's message for a map, slice or struct field of ObjectMeta given the wrong kind of value. */
function converterMessage(cause: StatusCause, obj: ApiObject): string | undefined {
  const meta = metaFieldOf(cause, obj);
  if (!meta) return undefined;
  const kind = reflectKind(meta.value);
  if (meta.goType.startsWith('map[')) return `cannot restore map from ${kind}`;
  if (meta.goType.startsWith('[]')) return `cannot restore slice from ${kind}`;
  return undefined;
}

/** A value as Go's `%+v` prints an unstructured map: `map[metadata:map[labels:x]]`. */
export function goFormat(v: unknown): string {
  if (v === null || v === undefined) return '<nil>';
  if (Array.isArray(v)) return `[${v.map(goFormat).join(' ')}]`;
  if (typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `map[${entries.map(([k, child]) => `${k}:${goFormat(child)}`).join(' ')}]`;
  }
  return String(v);
}

/**
 * The refusal of a patch whose result does not decode, as the original's
 * patcher words it: 422 for the `patch` field, its value the patched object
 * (JSON and merge patches) or the patch itself (strategic merge patches).
 */
export function undecodablePatch(strategic: boolean, patch: unknown, patched: ApiObject, cause: StatusCause): ApiError {
  const goMessage = strategic ? converterMessage(cause, patched) : jsonUnmarshalMessage(cause, patched);
  const value = strategic ? goFormat(patch) : JSON.stringify(patched);
  const message = `Invalid value: ${JSON.stringify(value)}: ${goMessage ?? cause.message ?? ''}`;
  return ApiError.invalid({ group: '', kind: '' }, '', [{ reason: 'FieldValueInvalid', field: 'patch', message }]);
}
