import { RE2JS } from '@bufbuild/re2';
import type { StatusCause } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { isRecord } from './object-access';

/**
 * Values against a structural schema, as the original server validates and
 * defaults custom resources: types and formats, enum, bounds, lengths,
 * pattern, required and nullable fields; `default` filled where a field is
 * absent. Messages follow the original's (`spec.replicas in body should be
 * less than or equal to 10`), each cause naming its field.
 */

function show(value: unknown): string {
  return typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? 'null');
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number';
  return typeof v;
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

const RFC3339 = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/;
const DATE = /^\d{4}-\d{2}-\d{2}$/;
const UUID = /^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$/;
const BYTE = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/** String formats checked; others (as upstream, unknown ones) are accepted. */
const STRING_FORMATS: Record<string, (v: string) => boolean> = {
  'date-time': (v) => RFC3339.test(v) && !Number.isNaN(Date.parse(v)),
  date: (v) => DATE.test(v),
  uuid: (v) => UUID.test(v),
  byte: (v) => BYTE.test(v),
};

const INT_RANGES: Record<string, [number, number]> = {
  int32: [-2147483648, 2147483647],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

/**
 * Memo of compiled patterns; bounded, since schemas come from the API.
 * Patterns run on RE2 (linear in the input, as the original server's Go
 * regular expressions): a definition's author could otherwise stall the
 * gateway with a backtracking pattern such as `(a+)+$`.
 */
const patterns = new Map<string, RE2JS | null>();
const MAX_PATTERNS = 1000;

export function compilePattern(pattern: string): RE2JS | null {
  let re = patterns.get(pattern);
  if (re === undefined) {
    try {
      re = RE2JS.compile(pattern);
    } catch {
      re = null;
    }
    if (patterns.size >= MAX_PATTERNS) patterns.clear();
    patterns.set(pattern, re);
  }
  return re;
}

function typeMismatch(path: string, expected: string, v: unknown): StatusCause {
  return { reason: 'FieldValueTypeInvalid', field: path, message: `Invalid value: "${typeName(v)}": ${path} in body must be of type ${expected}: "${typeName(v)}"` };
}

function invalid(path: string, v: unknown, detail: string): StatusCause {
  return { reason: 'FieldValueInvalid', field: path, message: `Invalid value: ${show(v)}: ${detail}` };
}

function matchesType(v: unknown, type: Schema['type']): boolean {
  switch (type) {
    case 'string':
      return typeof v === 'string';
    case 'boolean':
      return typeof v === 'boolean';
    case 'integer':
      return typeof v === 'number' && Number.isInteger(v);
    case 'number':
      return typeof v === 'number';
    case 'array':
      return Array.isArray(v);
    case 'object':
      return isRecord(v);
    default:
      return true;
  }
}

/** Every cause `value` breaks of `schema`, with field paths under `path`. */
export function validateValue(value: unknown, schema: Schema, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  walk(value, schema, path, causes, 0);
  return causes;
}

function walk(v: unknown, s: Schema, path: string, causes: StatusCause[], depth: number): void {
  if (v === undefined || depth > 256) return;
  if (v === null) {
    if (!s.nullable && s.type !== undefined && !s['x-svc-preserve-unknown-fields']) causes.push(typeMismatch(path, s.type, v));
    return;
  }
  if (s['x-svc-int-or-string']) {
    if (typeof v !== 'string' && !(typeof v === 'number' && Number.isInteger(v))) {
      causes.push({ reason: 'FieldValueTypeInvalid', field: path, message: `Invalid value: "${typeName(v)}": ${path} in body must be of type integer or string: "${typeName(v)}"` });
      return;
    }
  } else if (!matchesType(v, s.type)) {
    causes.push(typeMismatch(path, s.type ?? 'object', v));
    return;
  }
  if (s.enum && s.enum.length > 0 && !s.enum.some((e) => e === v)) {
    causes.push({ reason: 'FieldValueNotSupported', field: path, message: `Unsupported value: ${show(v)}: supported values: ${s.enum.map(show).join(', ')}` });
  }
  if (typeof v === 'number') checkNumber(v, s, path, causes);
  else if (typeof v === 'string') checkString(v, s, path, causes);
  else if (Array.isArray(v)) {
    if (s.maxItems !== undefined && v.length > s.maxItems) causes.push({ reason: 'FieldValueTooMany', field: path, message: `Too many: ${v.length}: must have at most ${s.maxItems} items` });
    if (s.minItems !== undefined && v.length < s.minItems) causes.push(invalid(path, v.length, `${path} in body should have at least ${s.minItems} items`));
    if (s.uniqueItems) {
      const seen = new Set<string>();
      v.forEach((item, i) => {
        const k = JSON.stringify(item);
        if (seen.has(k)) causes.push({ reason: 'FieldValueDuplicate', field: `${path}[${i}]`, message: `Duplicate value: ${show(item)}` });
        seen.add(k);
      });
    }
    if (s.items) v.forEach((item, i) => walk(item, s.items as Schema, `${path}[${i}]`, causes, depth + 1));
  } else if (isRecord(v)) {
    const count = Object.keys(v).length;
    if (s.maxProperties !== undefined && count > s.maxProperties) causes.push({ reason: 'FieldValueTooMany', field: path, message: `Too many: ${count}: must have at most ${s.maxProperties} items` });
    if (s.minProperties !== undefined && count < s.minProperties) causes.push(invalid(path, count, `${path} in body should have at least ${s.minProperties} properties`));
    for (const name of s.required ?? []) {
      if (v[name] === undefined) causes.push({ reason: 'FieldValueRequired', field: join(path, name), message: 'Required value' });
    }
    for (const [key, child] of Object.entries(v)) {
      const sub = s.properties?.[key] ?? (typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined);
      if (sub) walk(child, sub, join(path, key), causes, depth + 1);
    }
  }
}

function checkNumber(v: number, s: Schema, path: string, causes: StatusCause[]): void {
  const range = s.format ? INT_RANGES[s.format] : undefined;
  if (range && (v < range[0] || v > range[1])) causes.push(invalid(path, v, `${path} in body must be of type ${s.format ?? ''}: "${v}"`));
  if (s.maximum !== undefined && (s.exclusiveMaximum ? v >= s.maximum : v > s.maximum)) {
    causes.push(invalid(path, v, `${path} in body should be less than ${s.exclusiveMaximum ? '' : 'or equal to '}${s.maximum}`));
  }
  if (s.minimum !== undefined && (s.exclusiveMinimum ? v <= s.minimum : v < s.minimum)) {
    causes.push(invalid(path, v, `${path} in body should be greater than ${s.exclusiveMinimum ? '' : 'or equal to '}${s.minimum}`));
  }
  if (s.multipleOf !== undefined && s.multipleOf > 0 && !Number.isInteger(v / s.multipleOf)) causes.push(invalid(path, v, `${path} in body should be a multiple of ${s.multipleOf}`));
}

function checkString(v: string, s: Schema, path: string, causes: StatusCause[]): void {
  const length = [...v].length;
  if (s.maxLength !== undefined && length > s.maxLength) causes.push({ reason: 'FieldValueTooLong', field: path, message: `Too long: may not be longer than ${s.maxLength}` });
  if (s.minLength !== undefined && length < s.minLength) causes.push(invalid(path, v, `${path} in body should be at least ${s.minLength} chars long`));
  if (s.pattern !== undefined) {
    const re = compilePattern(s.pattern);
    if (re && !re.test(v)) causes.push(invalid(path, v, `${path} in body should match '${s.pattern}'`));
  }
  const format = s.format ? STRING_FORMATS[s.format] : undefined;
  if (format && !format(v)) causes.push(invalid(path, v, `${path} in body must be of type ${s.format ?? ''}: ${show(v)}`));
}

/**
 * Fills `default` values where a field is absent (or null and not
 * nullable), then defaults inside what is there, as the original server
 * defaults custom resources on write and on read. Mutates `value`.
 */
export function applySchemaDefaults(value: unknown, schema: Schema, depth = 0): void {
  if (depth > 256) return;
  if (Array.isArray(value)) {
    if (schema.items) for (const item of value) applySchemaDefaults(item, schema.items, depth + 1);
    return;
  }
  if (!isRecord(value)) return;
  for (const [name, sub] of Object.entries(schema.properties ?? {})) {
    const current = value[name];
    if (sub.default !== undefined && (current === undefined || (current === null && !sub.nullable))) value[name] = JSON.parse(JSON.stringify(sub.default)) as unknown;
    if (value[name] !== undefined) applySchemaDefaults(value[name], sub, depth + 1);
  }
  const values = schema.additionalProperties;
  if (typeof values === 'object') {
    for (const [key, child] of Object.entries(value)) {
      if (child === null && !values.nullable && values.default !== undefined) value[key] = JSON.parse(JSON.stringify(values.default)) as unknown;
      applySchemaDefaults(value[key], values, depth + 1);
    }
  }
}
