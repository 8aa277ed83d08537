import * as yaml from 'js-yaml';
import { ApiError, duplicateJsonFields, isJsonObject, type ApiObject } from '@svc/apimachinery';

/**
 * Content negotiation: which representation a client asked for (`Accept`) and
 * how to read the body it sent (`Content-Type`). The upstream protobuf media
 * type and Table group are accepted as aliases of ours, because unchanged
 * clients send them.
 */
export const JSON_TYPE = 'application/json';
export const YAML_TYPE = 'application/yaml';
export const PROTOBUF_TYPE = 'application/vnd.svc.protobuf';
export const PROTOBUF_TYPES = [PROTOBUF_TYPE, 'application/vnd.kubernetes.protobuf'];
export const TABLE_GROUPS = ['meta.svc.io', 'meta.k8s.io'];

export type OutputFormat =
  | { kind: 'json'; mediaType: string }
  | { kind: 'yaml'; mediaType: string }
  | { kind: 'protobuf'; mediaType: string }
  | { kind: 'table'; mediaType: string; group: string; version: string };

/** Encodes and decodes objects in the binary envelope (provided by the protobuf codec). */
export interface ProtobufCodec {
  decode(body: Uint8Array): ApiObject;
  encode(obj: ApiObject): Uint8Array;
  supports(apiVersion: string, kind: string): boolean;
  /** One frame of a protobuf watch stream: a 4-byte length, then the event. */
  encodeWatchEvent(type: string, object: ApiObject): Uint8Array;
  /** An object's own message (no prefix or envelope): an item of a list written item by item. */
  encodeObjectMessage(obj: ApiObject): Uint8Array;
  /** A list (without its items) and its items' own messages as the chunks of the list's encoding, in order. */
  encodeListChunks(list: ApiObject, items: readonly Uint8Array[]): Uint8Array[];
}

interface MediaRange {
  type: string;
  params: Record<string, string>;
}

export function parseMediaRanges(header: string | undefined): MediaRange[] {
  if (!header) return [];
  return header
    .split(',')
    .map((part) => {
      const [type, ...params] = part.split(';').map((s) => s.trim());
      const p: Record<string, string> = {};
      for (const kv of params) {
        const eq = kv.indexOf('=');
        if (eq > 0) p[kv.slice(0, eq).trim().toLowerCase()] = kv.slice(eq + 1).trim().replace(/^"|"$/g, '');
      }
      return { type: (type ?? '').toLowerCase(), params: p };
    })
    .filter((r) => r.type.length > 0)
    .sort((a, b) => Number(b.params['q'] ?? '1') - Number(a.params['q'] ?? '1'));
}

export interface OutputOptions {
  /** Table is offered for reads of resources. */
  table: boolean;
  /** Protobuf is offered for built-in kinds. */
  protobuf: boolean;
}

export function negotiateOutput(accept: string | undefined, opts: OutputOptions): OutputFormat {
  const ranges = parseMediaRanges(accept);
  if (ranges.length === 0) return { kind: 'json', mediaType: JSON_TYPE };
  for (const r of ranges) {
    const as = r.params['as'];
    if (as !== undefined) {
      const group = r.params['g'] ?? '';
      const version = r.params['v'] ?? '';
      if (opts.table && as === 'Table' && TABLE_GROUPS.includes(group) && (version === 'v1' || version === 'v1beta1') && r.type === JSON_TYPE) {
        return { kind: 'table', mediaType: JSON_TYPE, group, version };
      }
      continue; // PartialObjectMetadata and other conversions are not offered
    }
    if (r.type === JSON_TYPE || r.type === 'application/*' || r.type === '*/*') return { kind: 'json', mediaType: JSON_TYPE };
    if (r.type === YAML_TYPE) return { kind: 'yaml', mediaType: YAML_TYPE };
    if (opts.protobuf && PROTOBUF_TYPES.includes(r.type)) return { kind: 'protobuf', mediaType: r.type };
  }
  const offered = [JSON_TYPE, YAML_TYPE, ...(opts.protobuf ? [PROTOBUF_TYPE] : [])];
  throw ApiError.notAcceptable(`only the following media types are accepted: ${offered.join(', ')}`);
}

/** Aggregated discovery's group by our name and by the upstream one unchanged clients ask with; the versions served. */
export const DISCOVERY_GROUPS = ['apidiscovery.svc.io', 'apidiscovery.k8s.io'];
export const DISCOVERY_VERSIONS = ['v2', 'v2beta1'];
export const DISCOVERY_LIST_KIND = 'APIGroupDiscoveryList';

/** An aggregated discovery list as asked for: its encoding, and the group and version it is named by. */
export interface DiscoveryFormat {
  output: Exclude<OutputFormat, { kind: 'table' }>;
  group: string;
  version: string;
}

/**
 * Whether `/api` or `/apis` is asked for as an aggregated discovery list
 * (`application/json;g=apidiscovery.svc.io;v=v2;as=APIGroupDiscoveryList`),
 * and in which form. The Accept ranges are read by preference, then in the
 * order listed, and the first this endpoint can answer decides, as upstream
 * negotiates: a range naming the list asks for it; a range asking for
 * another conversion (`as=Table`, another group or version) is passed over;
 * a plain range of a served type asks for the legacy document (undefined).
 * Nothing is refused: with no range that fits, the legacy document.
 */
export function negotiateDiscovery(accept: string | undefined, opts: { protobuf: boolean }): DiscoveryFormat | undefined {
  for (const r of parseMediaRanges(accept)) {
    if (Number(r.params['q'] ?? '1') === 0) continue;
    const output = discoveryOutput(r.type, opts.protobuf);
    if (!output) continue;
    const { as, g: group, v: version } = r.params;
    if (as === undefined && group === undefined && version === undefined) return undefined;
    if (as === DISCOVERY_LIST_KIND && group !== undefined && DISCOVERY_GROUPS.includes(group) && version !== undefined && DISCOVERY_VERSIONS.includes(version)) {
      return { output, group, version };
    }
  }
  return undefined;
}

function discoveryOutput(type: string, protobuf: boolean): DiscoveryFormat['output'] | undefined {
  if (type === JSON_TYPE || type === 'application/*' || type === '*/*') return { kind: 'json', mediaType: JSON_TYPE };
  if (type === YAML_TYPE) return { kind: 'yaml', mediaType: YAML_TYPE };
  if (protobuf && PROTOBUF_TYPES.includes(type)) return { kind: 'protobuf', mediaType: type };
  return undefined;
}

/** The bare media type of a Content-Type header, lower-cased. */
export function mediaTypeOf(contentType: string | undefined): string {
  return (contentType ?? '').split(';')[0]?.trim().toLowerCase() ?? '';
}

/** A decoded request body, and the keys a JSON body repeated (JSON.parse keeps the last). */
export interface DecodedBody {
  object: ApiObject;
  duplicateFields: string[];
}

/**
 * What a decoded body may grow to. Nesting deeper than this is refused (the
 * handlers and merge code walk objects recursively); the number of values
 * after decoding may be at most `MAX_EXPANSION` times the body's bytes plus a
 * small allowance, which a body without YAML aliases can never exceed (every
 * value costs at least a byte) and an alias bomb exceeds at once. The walk
 * that checks it stops at the first value past the budget, so it costs at
 * most what the body may legitimately cost.
 */
export const MAX_DECODED_DEPTH = 256;
const MAX_EXPANSION = 4;
const EXPANSION_ALLOWANCE = 10_000;

export function checkDecodedSize(value: unknown, bodyBytes: number, format: string): void {
  checkShape(value, `the ${format} body`, bodyBytes * MAX_EXPANSION + EXPANSION_ALLOWANCE);
}

/**
 * Refuses an object nested deeper than a body may be (MAX_DECODED_DEPTH):
 * a patch that stays within the limit can still deepen the stored object,
 * and an object no client could send back whole is not stored.
 */
export function checkNesting(value: unknown, what: string): void {
  checkShape(value, what, Infinity);
}

/** Walks `value` (without recursion) and refuses it past `budget` values or MAX_DECODED_DEPTH levels. */
function checkShape(value: unknown, what: string, budget: number): void {
  let count = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop() as [unknown, number];
    if (++count > budget) {
      throw ApiError.badRequest(`${what} expands to more than ${budget} values (${MAX_EXPANSION} per byte of the body): excessive aliasing is not allowed`);
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth > MAX_DECODED_DEPTH) throw ApiError.badRequest(`${what} is nested deeper than the limit of ${MAX_DECODED_DEPTH} levels`);
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
}

export function decodeBody(contentType: string | undefined, body: Buffer, protobuf: ProtobufCodec | undefined): DecodedBody {
  if (body.length === 0) throw ApiError.badRequest('the request body is empty; an object is required');
  const type = mediaTypeOf(contentType);
  let value: unknown;
  let duplicateFields: string[] = [];
  if (type === '' || type === JSON_TYPE) {
    const text = body.toString('utf8');
    value = parseJsonText(text);
    duplicateFields = duplicateJsonFields(text);
  } else if (type === YAML_TYPE || type === 'application/x-yaml' || type === 'text/yaml') {
    value = parseYaml(body);
  } else if (PROTOBUF_TYPES.includes(type)) {
    if (!protobuf) throw ApiError.unsupportedMediaType(type);
    const object = protobuf.decode(body);
    checkDecodedSize(object, body.length, 'protobuf');
    return { object, duplicateFields };
  } else {
    throw ApiError.unsupportedMediaType(type);
  }
  if (!isJsonObject(value)) throw ApiError.badRequest('the request body must be a JSON object');
  return { object: value as ApiObject, duplicateFields };
}

/** Parses JSON and checks its nesting before anything else walks it. */
function parseJsonText(text: string): unknown {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw ApiError.badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message}`);
  }
  checkDecodedSize(value, Buffer.byteLength(text), 'JSON');
  return value;
}

export function parseJson(body: Buffer): unknown {
  return parseJsonText(body.toString('utf8'));
}

/**
 * Parses YAML. Aliases come back as shared references, cheap to hold but
 * exponential to walk or encode, so the expanded size is checked first
 * (as the original server's YAML decoder refuses excessive aliasing), and
 * then the value is copied so no two places share an object.
 */
export function parseYaml(body: Buffer, onDuplicateKey?: (problem: string) => void): unknown {
  const text = body.toString('utf8');
  const load = (lastKeyWins: boolean): unknown => {
    try {
      return yaml.load(text, { schema: yaml.JSON_SCHEMA, json: lastKeyWins });
    } catch (err) {
      const problem = (err as Error).message.split('\n')[0] ?? '';
      // A repeated key is refused unless the caller takes it (the last value wins, as in the original's lenient decoding).
      if (lastKeyWins || !onDuplicateKey || (err as { reason?: string }).reason !== 'duplicated mapping key') throw ApiError.badRequest(`error converting YAML to JSON: ${problem}`);
      onDuplicateKey(problem);
      return load(true);
    }
  };
  const value = load(false);
  checkDecodedSize(value, body.length, 'YAML');
  return value === undefined ? undefined : (JSON.parse(JSON.stringify(value)) as unknown);
}
