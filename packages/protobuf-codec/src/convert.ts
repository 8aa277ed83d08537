import { ScalarType, getOption, hasOption, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { reflect, type ReflectMessage } from '@bufbuild/protobuf/reflect';
import { isJsonObject, type JsonObject, type JsonValue } from '@svc/apimachinery';
import { inline } from './gen/svc/api/json_pb';
import { formatMicroTime, formatTime, parseTimestamp } from './timestamps';

/**
 * Converts between an object's JSON form and its protobuf message by walking
 * the message descriptor. Proto field names are the JSON field names, so the
 * walk is generic; a handful of message types have a JSON form of their own
 * (timestamps, quantities, int-or-string, embedded JSON) and are handled here.
 */

/** A value with no protobuf form: an unknown field or a value of the wrong type. */
export class ConversionError extends Error {
  constructor(
    readonly field: string,
    readonly reason: string,
  ) {
    super(`${field}: ${reason}`);
    this.name = 'ConversionError';
  }
}

const TIME = 'svc.api.meta.v1.Time';
const MICRO_TIME = 'svc.api.meta.v1.MicroTime';
const OBJECT_META = 'svc.api.meta.v1.ObjectMeta';
const FIELDS_V1 = 'svc.api.meta.v1.FieldsV1';
const QUANTITY = 'svc.api.resource.Quantity';
const INT_OR_STRING = 'svc.api.intstr.IntOrString';
const RAW_EXTENSION = 'svc.api.runtime.RawExtension';

/**
 * Messages that only wrap a list of strings (`items`), written in JSON as
 * the bare list: the values of a user's `extra` map.
 */
function isStringListWrapper(desc: DescMessage): boolean {
  return desc.name === 'ExtraValue';
}

/** Fields that travel in the envelope's TypeMeta, not in the message. */
const TYPE_META_FIELDS = new Set(['apiVersion', 'kind']);

/**
 * How a JSON key of a message reaches its field: directly, or through the
 * inline fields (Go's embedded structs) whose messages carry it.
 */
type FieldPath = readonly DescField[];

const fieldIndex = new WeakMap<DescMessage, Map<string, FieldPath>>();

function isInline(f: DescField): boolean {
  return f.fieldKind === 'message' && hasOption(f, inline) && getOption(f, inline);
}

/** The field a JSON key of `desc` is carried in (the last of the path), if any. */
export function fieldForJsonKey(desc: DescMessage, key: string): DescField | undefined {
  const path = fieldsByName(desc).get(key);
  return path?.[path.length - 1];
}

function fieldsByName(desc: DescMessage): Map<string, FieldPath> {
  let index = fieldIndex.get(desc);
  if (!index) {
    index = new Map();
    for (const f of desc.fields) {
      if (isInline(f) && f.message) {
        for (const [key, path] of fieldsByName(f.message)) index.set(key, [f, ...path]);
      } else {
        index.set(f.name, [f]);
      }
    }
    fieldIndex.set(desc, index);
  }
  return index;
}

function field(desc: DescMessage, name: string): DescField {
  const f = desc.fields.find((candidate) => candidate.name === name);
  if (!f) throw new Error(`protobuf message ${desc.typeName} has no field ${name}`);
  return f;
}

// ---- JSON -> message -------------------------------------------------------

/** Builds the message `desc` from a JSON object; `path` names it in errors. */
export function jsonToMessage(desc: DescMessage, value: JsonObject, path: string): ReflectMessage {
  const msg = reflect(desc);
  const index = fieldsByName(desc);
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined || v === null) continue;
    const fieldPath = index.get(key);
    if (!fieldPath) {
      if (TYPE_META_FIELDS.has(key)) continue;
      throw new ConversionError(join(path, key), `field is not part of ${desc.name}`);
    }
    let target = msg;
    for (const via of fieldPath.slice(0, -1)) target = embedded(target, via);
    setField(target, fieldPath[fieldPath.length - 1] as DescField, v, join(path, key));
  }
  return msg;
}

/** The message of an inline field, created on first use. */
function embedded(msg: ReflectMessage, via: DescField): ReflectMessage {
  if (via.fieldKind !== 'message') throw new Error(`inline field ${via.name} is not a message`);
  if (!msg.isSet(via)) msg.set(via, reflect(via.message));
  return msg.get(via);
}

function join(path: string, key: string): string {
  return path === '' ? key : `${path}.${key}`;
}

function setField(msg: ReflectMessage, f: DescField, v: JsonValue, path: string): void {
  switch (f.fieldKind) {
    case 'scalar':
      msg.set(f, scalarFromJson(f.scalar, v, path));
      return;
    case 'message':
      msg.set(f, messageFromJson(f.message, v, path));
      return;
    case 'list': {
      if (!Array.isArray(v)) throw new ConversionError(path, 'expected an array');
      const list = msg.get(f);
      v.forEach((item, i) => {
        const p = `${path}[${i}]`;
        if (item === null) throw new ConversionError(p, 'null is not allowed in a list');
        list.add(f.listKind === 'message' ? messageFromJson(f.message, item, p) : f.listKind === 'scalar' ? scalarFromJson(f.scalar, item, p) : enumUnsupported(p));
      });
      return;
    }
    case 'map': {
      if (!isJsonObject(v)) throw new ConversionError(path, 'expected an object');
      const map = msg.get(f);
      for (const [k, item] of Object.entries(v)) {
        if (item === undefined) continue;
        const p = `${path}[${k}]`;
        if (item === null) throw new ConversionError(p, 'null is not allowed as a map value');
        map.set(k, f.mapKind === 'message' ? messageFromJson(f.message, item, p) : f.mapKind === 'scalar' ? scalarFromJson(f.scalar, item, p) : enumUnsupported(p));
      }
      return;
    }
    case 'enum':
      enumUnsupported(path);
  }
}

function enumUnsupported(path: string): never {
  throw new ConversionError(path, 'enumerations are not used by the API types');
}

function messageFromJson(desc: DescMessage, v: JsonValue, path: string): ReflectMessage {
  const msg = reflect(desc);
  if (isStringListWrapper(desc)) {
    setField(msg, field(desc, 'items'), v, path);
    return msg;
  }
  switch (desc.typeName) {
    case TIME:
    case MICRO_TIME: {
      const ts = typeof v === 'string' ? parseTimestamp(v) : undefined;
      if (!ts) throw new ConversionError(path, 'expected an RFC 3339 timestamp');
      msg.set(field(desc, 'seconds'), ts.seconds);
      if (ts.nanos !== 0) msg.set(field(desc, 'nanos'), ts.nanos);
      return msg;
    }
    case QUANTITY:
      if (typeof v !== 'string' && typeof v !== 'number') throw new ConversionError(path, 'expected a quantity');
      msg.set(field(desc, 'string'), String(v));
      return msg;
    case INT_OR_STRING:
      if (typeof v === 'number' && Number.isInteger(v)) {
        msg.set(field(desc, 'type'), 0n);
        msg.set(field(desc, 'intVal'), v);
      } else if (typeof v === 'string') {
        msg.set(field(desc, 'type'), 1n);
        msg.set(field(desc, 'strVal'), v);
      } else {
        throw new ConversionError(path, 'expected an integer or a string');
      }
      return msg;
    case FIELDS_V1:
    case RAW_EXTENSION:
      if (!isJsonObject(v)) throw new ConversionError(path, 'expected an object');
      msg.set(desc.fields[0] as DescField, Buffer.from(JSON.stringify(v), 'utf8'));
      return msg;
    default:
      if (!isJsonObject(v)) throw new ConversionError(path, 'expected an object');
      return jsonToMessage(desc, v, path);
  }
}

const INT32_TYPES = new Set([ScalarType.INT32, ScalarType.UINT32, ScalarType.SINT32, ScalarType.FIXED32, ScalarType.SFIXED32]);
const INT64_TYPES = new Set([ScalarType.INT64, ScalarType.UINT64, ScalarType.SINT64, ScalarType.FIXED64, ScalarType.SFIXED64]);

function scalarFromJson(type: ScalarType, v: JsonValue, path: string): string | boolean | number | bigint | Uint8Array {
  if (type === ScalarType.STRING) {
    if (typeof v === 'string') return v;
    throw new ConversionError(path, 'expected a string');
  }
  if (type === ScalarType.BOOL) {
    if (typeof v === 'boolean') return v;
    throw new ConversionError(path, 'expected a boolean');
  }
  if (type === ScalarType.BYTES) {
    if (typeof v === 'string') return Buffer.from(v, 'base64');
    throw new ConversionError(path, 'expected base64-encoded bytes');
  }
  if (typeof v !== 'number') throw new ConversionError(path, 'expected a number');
  if (INT32_TYPES.has(type)) {
    if (Number.isInteger(v)) return v;
    throw new ConversionError(path, 'expected an integer');
  }
  if (INT64_TYPES.has(type)) {
    if (Number.isSafeInteger(v)) return BigInt(v);
    throw new ConversionError(path, 'expected an integer');
  }
  return v;
}

// ---- message -> JSON -------------------------------------------------------

/**
 * The JSON form of a message. Fields the sender left unset are absent, and so
 * are empty strings, which the upstream encoder writes for every string field
 * it knows; numbers and booleans are kept, since a pointer field's explicit
 * zero means something.
 */
export function messageToJson(msg: ReflectMessage): JsonObject {
  const out: JsonObject = {};
  for (const f of msg.fields) {
    if (!msg.isSet(f)) continue;
    if (msg.desc.typeName === OBJECT_META && f.name === 'generation' && msg.get(f) === 0n) continue; // server-managed; always written
    const v = fieldToJson(msg, f);
    if (v === undefined) continue;
    if (isInline(f) && isJsonObject(v)) Object.assign(out, v);
    else out[f.name] = v;
  }
  return out;
}

function fieldToJson(msg: ReflectMessage, f: DescField): JsonValue | undefined {
  switch (f.fieldKind) {
    case 'scalar':
      return scalarToJson(msg.get(f));
    case 'message':
      return messageValueToJson(msg.get(f));
    case 'list': {
      const out: JsonValue[] = [];
      for (const item of msg.get(f)) {
        const v = isReflectMessage(item) ? messageValueToJson(item) : scalarToJson(item, true);
        out.push(v ?? null);
      }
      return out.length > 0 ? out : undefined;
    }
    case 'map': {
      const out: JsonObject = {};
      for (const [k, item] of msg.get(f)) {
        out[String(k)] = (isReflectMessage(item) ? messageValueToJson(item) : scalarToJson(item, true)) ?? null;
      }
      return out;
    }
    case 'enum':
      return undefined;
  }
}

function isReflectMessage(v: unknown): v is ReflectMessage {
  return typeof v === 'object' && v !== null && 'desc' in v && 'fields' in v;
}

function scalarToJson(v: unknown, keepEmpty = false): JsonValue | undefined {
  if (typeof v === 'string') return v === '' && !keepEmpty ? undefined : v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'number' || typeof v === 'boolean') return v;
  if (v instanceof Uint8Array) return Buffer.from(v.buffer, v.byteOffset, v.byteLength).toString('base64');
  return undefined;
}

function messageValueToJson(msg: ReflectMessage): JsonValue | undefined {
  const desc = msg.desc;
  if (isStringListWrapper(desc)) return fieldToJson(msg, field(desc, 'items')) ?? [];
  switch (desc.typeName) {
    case TIME:
    case MICRO_TIME: {
      const seconds = field(desc, 'seconds');
      const nanos = field(desc, 'nanos');
      if (!msg.isSet(seconds) && !msg.isSet(nanos)) return undefined; // the zero time: null upstream
      const ts = { seconds: msg.get(seconds) as bigint, nanos: msg.get(nanos) as number };
      return desc.typeName === TIME ? formatTime(ts) : formatMicroTime(ts);
    }
    case QUANTITY:
      return scalarToJson(msg.get(field(desc, 'string')));
    case INT_OR_STRING:
      return msg.get(field(desc, 'type')) === 1n ? (msg.get(field(desc, 'strVal')) as string) : (msg.get(field(desc, 'intVal')) as number);
    case FIELDS_V1:
    case RAW_EXTENSION: {
      const raw = msg.get(desc.fields[0] as DescField) as Uint8Array;
      if (raw.length === 0) return undefined;
      try {
        return JSON.parse(Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8')) as JsonValue;
      } catch {
        throw new ConversionError(desc.name, 'embedded bytes are not JSON');
      }
    }
    default:
      return messageToJson(msg);
  }
}
