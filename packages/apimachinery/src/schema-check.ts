import type { Schema } from './schema';
import type { StatusCause } from './errors';
import { decodeBytesField, decodeTimeField, integerRangeProblem, quantityProblem, type FormatDecoding } from './scalar-formats';

/**
 * Checks a decoded object against its structural schema the way typed
 * decoding does in the original server: values of the wrong type are errors
 * naming the field; fields the schema does not know are reported (for
 * `fieldValidation`) and pruned from the stored object.
 */
export interface SchemaCheckResult {
  /** Paths of unknown fields, like `spec.foo` or `metadata.labelz`. */
  unknownFields: string[];
  /** Type mismatches, each naming its field path. */
  typeErrors: StatusCause[];
  /** The object without unknown fields. */
  pruned: unknown;
  /**
   * Values their format does not decode from (with `formats`), and in a
   * custom resource values of the wrong type in its metadata (with
   * `formats: 'metadata'`), each naming its field; also among `typeErrors`.
   */
  formatErrors: StatusCause[];
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

export interface SchemaCheckOptions {
  /**
   * Read as custom resources are (the original server's unstructured
   * decoding): a null in a field that is not nullable and has no default is
   * pruned, one with a default is kept for defaulting, and a null anywhere
   * else (a list item) is kept for validation to refuse (422). Typed
   * decoding, as for built-in kinds, reads every such null as unset.
   */
  unstructured?: boolean;
  /**
   * Decode typed scalars by their format as the original's typed decoding
   * does for built-in kinds: bytes as base64, times as RFC 3339, int32 and
   * int64 (and int-or-string's integer) within range, quantities as
   * quantities. A value that does not decode is a type error naming its
   * field; one the original writes back in another spelling (base64
   * re-encoded, a time in UTC at its precision) is stored so. `metadata`
   * decodes only the object's metadata so: it is typed (ObjectMeta) even in
   * a custom resource, whose other fields leave formats to their schema
   * validation.
   */
  formats?: boolean | 'metadata';
}

export function checkAgainstSchema(value: unknown, schema: Schema | undefined, options: SchemaCheckOptions = {}): SchemaCheckResult {
  const unknownFields: string[] = [];
  const typeErrors: StatusCause[] = [];
  const formatErrors: StatusCause[] = [];
  const refuse = (path: string, problem: string): void => {
    const cause = undecodable(path, problem);
    typeErrors.push(cause);
    formatErrors.push(cause);
  };
  /** A string of a format: as sent, in the spelling to store, or (refused) as sent with the problem recorded. */
  const decodeString = (v: string, s: Schema, path: string): string => {
    let decoded: FormatDecoding;
    if (s.format === 'byte') decoded = decodeBytesField(v);
    else if (s.format === 'date-time') decoded = decodeTimeField(v, s['x-svc-micro-time'] ? 'micro' : 'second');
    else return v;
    if (decoded.outcome === 'accepted') return v;
    if (decoded.outcome === 'normalized') return decoded.value;
    refuse(path, decoded.message);
    return v;
  };
  /**
   * What typed decoding makes of a null list item or map value: the zero
   * value of its type, as Go's decoder leaves it (`[null]` in a list of
   * strings is `[""]`, in a list of objects `[{}]`), for validation to judge.
   * Unstructured decoding keeps the null (validation refuses it).
   */
  const zeroOf = (s: Schema | undefined, typed: boolean): unknown => {
    if (!typed || !s || s.nullable) return null;
    if (s['x-svc-int-or-string']) return 0;
    if (s.format === 'quantity') return '0';
    switch (s.type) {
      case 'string':
        return '';
      case 'integer':
      case 'number':
        return 0;
      case 'boolean':
        return false;
      case 'array':
        return [];
      case 'object':
        return {};
      default:
        return s.properties || s.additionalProperties ? {} : null;
    }
  };
  /**
   * A value of the wrong type. In a custom resource only its metadata is
   * typed (ObjectMeta): a wrong type there cannot be decoded either, and is
   * refused as one (formatErrors) before anything reads the metadata.
   */
  const wrongType = (cause: StatusCause, typed: boolean): void => {
    typeErrors.push(cause);
    if (typed && options.unstructured) formatErrors.push(cause);
  };
  /** `typed`: read as typed decoding reads it (a built-in kind; a custom resource's metadata). */
  const walk = (v: unknown, s: Schema | undefined, path: string, formats: boolean, typed: boolean): unknown => {
    if (!s || v === undefined) return v;
    if (v === null) return s.nullable || s.type === undefined || !typed ? v : undefined;
    if (s['x-svc-int-or-string']) {
      if (typeof v !== 'string' && !(typeof v === 'number' && Number.isInteger(v))) {
        wrongType({ reason: 'FieldValueTypeInvalid', field: path, message: `Invalid value: "${typeName(v)}": ${path} must be an integer or a string` }, typed);
      } else if (formats && typeof v === 'number') {
        // The integer of an int-or-string is an int32.
        const problem = integerRangeProblem('int32', v);
        if (problem !== undefined) refuse(path, problem);
      }
      return v;
    }
    if (formats && s.format === 'quantity') {
      const problem = quantityProblem(v);
      if (problem !== undefined) refuse(path, problem);
      return v;
    }
    if (s['x-svc-embedded-resource'] && s['x-svc-preserve-unknown-fields'] && !s.properties) return v;
    switch (s.type) {
      case 'string':
        if (typeof v !== 'string') wrongType(mismatch(path, 'string', v), typed);
        else if (formats && s.format !== undefined) return decodeString(v, s, path);
        return v;
      case 'boolean':
        if (typeof v !== 'boolean') wrongType(mismatch(path, 'boolean', v), typed);
        return v;
      case 'integer':
        if (typeof v !== 'number' || !Number.isInteger(v)) wrongType(mismatch(path, 'integer', v), typed);
        else if (formats && s.format !== undefined) {
          const problem = integerRangeProblem(s.format, v);
          if (problem !== undefined) refuse(path, problem);
        }
        return v;
      case 'number':
        if (typeof v !== 'number') wrongType(mismatch(path, 'number', v), typed);
        return v;
      case 'array': {
        if (!Array.isArray(v)) {
          wrongType(mismatch(path, 'array', v), typed);
          return v;
        }
        return v.map((item, i) => walk(item === null ? zeroOf(s.items, typed) : item, s.items, `${path}[${i}]`, formats, typed));
      }
      case 'object':
      case undefined: {
        if (s.type === undefined && !s.properties && !s.additionalProperties) return v;
        if (typeof v !== 'object' || Array.isArray(v)) {
          wrongType(mismatch(path, 'object', v), typed);
          return v;
        }
        const obj = v as Record<string, unknown>;
        const out: Record<string, unknown> = {};
        for (const [k, child] of Object.entries(obj)) {
          const prop = s.properties?.[k];
          if (!typed && child === null && prunesNull(prop ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined))) continue;
          if (prop) {
            const metadata = metadataFormats && path === '' && k === 'metadata';
            out[k] = walk(child, prop, join(path, k), formats || metadata, typed || metadata);
          }
          else if (s.additionalProperties && typeof s.additionalProperties === 'object') {
            out[k] = walk(child === null ? zeroOf(s.additionalProperties, typed) : child, s.additionalProperties, `${path}[${k}]`, formats, typed);
          }
          else if (s.additionalProperties === true || s['x-svc-preserve-unknown-fields']) out[k] = child;
          else unknownFields.push(join(path, k));
        }
        return out;
      }
    }
  };
  const metadataFormats = options.formats === 'metadata';
  const pruned = walk(value, schema, '', options.formats === true, !options.unstructured);
  return { unknownFields, typeErrors, pruned, formatErrors };
}

/** A null the original server drops from a custom resource: the field is not nullable and has no default. */
function prunesNull(field: Schema | undefined): boolean {
  return field !== undefined && !field.nullable && field.default === undefined;
}

function mismatch(path: string, expected: string, v: unknown): StatusCause {
  return {
    reason: 'FieldValueTypeInvalid',
    field: path,
    message: `Invalid value: "${typeName(v)}": ${path} in body must be of type ${expected}: "${typeName(v)}"`,
  };
}

/** A value its type cannot be decoded from; the message leads with the field, as the decoder's own message does not name it. */
function undecodable(path: string, problem: string): StatusCause {
  return { reason: 'FieldValueInvalid', field: path, message: `${path}: ${problem}` };
}
