import { isUtf8 } from 'node:buffer';

/**
 * An object's JSON with `metadata.resourceVersion` set or removed, without
 * parsing and serialising the object again.
 *
 * Objects are stored without a resourceVersion and answered with one (the
 * key's revision); storage answers every read and write, and watch-fanout
 * publishes every change, with it set. Parsing the stored JSON, adding one
 * field and serialising it again costs more than the rest of what those
 * hops do with an object, so the field is spliced into the bytes instead.
 *
 * The splice gives exactly the bytes of
 * `JSON.stringify({ ...obj, metadata: { ...(obj.metadata ?? {}), resourceVersion } })`
 * with `obj = JSON.parse(json)` (an existing resourceVersion keeps its place,
 * a new one ends metadata, a missing metadata ends the object), and only
 * for JSON that serialising its parse would give back unchanged: what
 * `JSON.stringify` writes for a parsed object. Anything else (whitespace,
 * escapes or numbers written another way, duplicate keys, keys that are
 * array indices and so would move, invalid UTF-8 or invalid JSON, a
 * top-level value that is not an object, a `metadata` that is neither an
 * object nor null) is left to the caller, who parses it as before: the scan
 * reads the whole document and checks it, so nothing it accepts would parse
 * differently.
 */

/** Where the resourceVersion is, or would go, in an object's JSON. */
export interface ResourceVersionLayout {
  /** The top-level object's closing brace. */
  readonly objectEnd: number;
  /** The top-level object has no keys. */
  readonly objectEmpty: boolean;
  /** The value of the top-level `metadata` key: absent, JSON null, or an object. */
  readonly metadata: 'absent' | 'null' | 'object';
  /** Where the `metadata` value starts and ends (end exclusive); -1 when absent. */
  readonly metadataStart: number;
  readonly metadataEnd: number;
  /** The metadata object has no keys. */
  readonly metadataEmpty: boolean;
  /** Where the `"resourceVersion"` key of metadata starts, and its value starts and ends; -1 when there is none. */
  readonly resourceVersionKey: number;
  readonly resourceVersionStart: number;
  readonly resourceVersionEnd: number;
}

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;

/** Nesting past this is left to JSON.parse. */
const MAX_DEPTH = 512;
/** Objects with more keys than this look duplicates up in a set, not pairwise. */
const PAIRWISE_KEYS = 16;

const METADATA = Buffer.from('"metadata"', 'latin1');
const RESOURCE_VERSION = Buffer.from('"resourceVersion"', 'latin1');
const TRUE = Buffer.from('true', 'latin1');
const FALSE = Buffer.from('false', 'latin1');
const NULL = Buffer.from('null', 'latin1');

/** Where each object's part of the scan is: the object's role decides what is recorded. */
const enum Role {
  Top,
  Metadata,
  Other,
}

/** One scan: fails by returning -1 from any step. */
class Scan {
  objectEnd = -1;
  objectEmpty = false;
  metadata: 'absent' | 'null' | 'object' = 'absent';
  metadataStart = -1;
  metadataEnd = -1;
  metadataEmpty = false;
  resourceVersionKey = -1;
  resourceVersionStart = -1;
  resourceVersionEnd = -1;
  /** Start and end of every key of the objects being read, innermost last. */
  private readonly keys: number[] = [];

  constructor(private readonly b: Buffer) {}

  private equals(start: number, end: number, literal: Buffer): boolean {
    const length = end - start;
    if (length !== literal.length) return false;
    for (let i = 0; i < length; i++) if (this.b[start + i] !== literal[i]) return false;
    return true;
  }

  value(i: number, depth: number, role: Role): number {
    const c = this.b[i];
    if (c === LBRACE) return this.object(i, depth + 1, role);
    if (c === QUOTE) return this.string(i);
    if (c === LBRACKET) return this.array(i, depth + 1);
    if (c === MINUS || (c !== undefined && c >= DIGIT_0 && c <= DIGIT_9)) return this.number(i);
    if (c === 0x74 /* t */) return this.literal(i, TRUE);
    if (c === 0x66 /* f */) return this.literal(i, FALSE);
    if (c === 0x6e /* n */) return this.literal(i, NULL);
    return -1;
  }

  private literal(i: number, word: Buffer): number {
    return this.equals(i, i + word.length, word) ? i + word.length : -1;
  }

  /** A number as JSON.stringify writes it: the shortest form that reads back the same. */
  private number(i: number): number {
    let j = i;
    for (;;) {
      const c = this.b[j];
      if (c === undefined || !((c >= DIGIT_0 && c <= DIGIT_9) || c === MINUS || c === 0x2b /* + */ || c === 0x2e /* . */ || c === 0x65 /* e */)) break;
      j++;
    }
    const text = this.b.toString('latin1', i, j);
    // String(Number(x)) is valid JSON for any finite number, so equality also proves the token valid.
    return String(Number(text)) === text ? j : -1;
  }

  /** A string as JSON.stringify writes it: escapes only for '"', '\' and control characters, in their one form. */
  private string(i: number): number {
    const b = this.b;
    let j = i + 1;
    for (;;) {
      const c = b[j];
      // Most bytes: past '"' and not '\' (a read past the end is undefined, and fails below).
      if ((c as number) > QUOTE && c !== BACKSLASH) {
        j++;
        continue;
      }
      if (c === undefined || c < 0x20) return -1;
      if (c === QUOTE) return j + 1;
      if (c !== BACKSLASH) {
        j++;
        continue;
      }
      const e = b[j + 1];
      if (e === QUOTE || e === BACKSLASH || e === 0x62 /* b */ || e === 0x66 /* f */ || e === 0x6e /* n */ || e === 0x72 /* r */ || e === 0x74 /* t */) {
        j += 2;
        continue;
      }
      // \u00XX, lower-case hex, for the control characters without a short escape; any other \u is not how stringify writes it.
      if (e !== 0x75 /* u */ || b[j + 2] !== DIGIT_0 || b[j + 3] !== DIGIT_0) return -1;
      const high = b[j + 4];
      const low = b[j + 5];
      if (high !== DIGIT_0 && high !== 0x31 /* 1 */) return -1;
      const lowValue = low !== undefined && low >= DIGIT_0 && low <= DIGIT_9 ? low - DIGIT_0 : low !== undefined && low >= 0x61 && low <= 0x66 ? low - 0x61 + 10 : -1;
      if (lowValue < 0) return -1;
      const code = (high === DIGIT_0 ? 0 : 16) + lowValue;
      if (code === 0x08 || code === 0x09 || code === 0x0a || code === 0x0c || code === 0x0d) return -1;
      j += 6;
    }
  }

  private array(i: number, depth: number): number {
    if (depth > MAX_DEPTH) return -1;
    let j = i + 1;
    if (this.b[j] === RBRACKET) return j + 1;
    for (;;) {
      j = this.value(j, depth, Role.Other);
      if (j < 0) return -1;
      const c = this.b[j];
      if (c === RBRACKET) return j + 1;
      if (c !== COMMA) return -1;
      j++;
    }
  }

  /**
   * A key that names an array index (all digits) would be moved before the
   * others by JSON.parse; a key seen before in the same object would be
   * dropped. Either way serialising the parse would not give these bytes.
   * `seen` holds the object's keys once it has more than PAIRWISE_KEYS.
   */
  private keyAccepted(start: number, end: number, base: number, seen: Set<string> | undefined): boolean {
    const b = this.b;
    if (end - start > 2 && end - start <= 12) {
      let digits = true;
      for (let i = start + 1; i < end - 1; i++) {
        const c = b[i] as number;
        if (c < DIGIT_0 || c > DIGIT_9) {
          digits = false;
          break;
        }
      }
      if (digits) return false;
    }
    if (seen) return !seen.has(b.toString('latin1', start, end));
    const keys = this.keys;
    const length = end - start;
    for (let k = base; k < keys.length; k += 2) {
      const s = keys[k] as number;
      if ((keys[k + 1] as number) - s !== length || b[s + 1] !== b[start + 1]) continue;
      let same = true;
      for (let i = 2; i < length; i++) {
        if (b[s + i] !== b[start + i]) {
          same = false;
          break;
        }
      }
      if (same) return false;
    }
    return true;
  }

  private object(i: number, depth: number, role: Role): number {
    if (depth > MAX_DEPTH) return -1;
    const b = this.b;
    let j = i + 1;
    if (b[j] === RBRACE) {
      if (role === Role.Top) this.objectEmpty = true;
      else if (role === Role.Metadata) this.metadataEmpty = true;
      return j + 1;
    }
    const keys = this.keys;
    const base = keys.length;
    let seen: Set<string> | undefined;
    for (;;) {
      if (b[j] !== QUOTE) return -1;
      const keyStart = j;
      j = this.string(j);
      if (j < 0 || !this.keyAccepted(keyStart, j, base, seen)) return -1;
      if (seen) seen.add(b.toString('latin1', keyStart, j));
      else {
        keys.push(keyStart, j);
        if (keys.length - base > 2 * PAIRWISE_KEYS) {
          seen = new Set<string>();
          for (let k = base; k < keys.length; k += 2) seen.add(b.toString('latin1', keys[k], keys[k + 1]));
        }
      }
      if (b[j] !== COLON) return -1;
      const valueStart = j + 1;
      if (role === Role.Top && this.equals(keyStart, j, METADATA)) {
        const c = b[valueStart];
        if (c === LBRACE) {
          this.metadata = 'object';
          j = this.object(valueStart, depth + 1, Role.Metadata);
        } else if (c === 0x6e /* n */) {
          this.metadata = 'null';
          j = this.literal(valueStart, NULL);
        } else {
          // A metadata that is a string, number or list spreads oddly ({..."ab"}): left to the parse.
          return -1;
        }
        this.metadataStart = valueStart;
        this.metadataEnd = j;
      } else {
        j = this.value(valueStart, depth, Role.Other);
        if (role === Role.Metadata && this.equals(keyStart, valueStart - 1, RESOURCE_VERSION)) {
          this.resourceVersionKey = keyStart;
          this.resourceVersionStart = valueStart;
          this.resourceVersionEnd = j;
        }
      }
      if (j < 0) return -1;
      const c = b[j];
      if (c === RBRACE) {
        keys.length = base;
        if (role === Role.Top) this.objectEnd = j;
        return j + 1;
      }
      if (c !== COMMA) return -1;
      j++;
    }
  }
}

/**
 * Where `json`'s resourceVersion is or would go, when `json` is an object
 * exactly as JSON.stringify writes one that JSON.parse read; undefined for
 * anything else (parse it then).
 */
export function resourceVersionLayout(json: Buffer): ResourceVersionLayout | undefined {
  if (json[0] !== LBRACE || !isUtf8(json)) return undefined;
  const scan = new Scan(json);
  if (scan.value(0, 0, Role.Top) !== json.length) return undefined;
  return scan;
}

/** `head`, then `text` (if any), then `tail`, in one allocation. */
function joined(head: Uint8Array, text: string, tail: Uint8Array): Buffer {
  const textLength = Buffer.byteLength(text);
  const out = Buffer.allocUnsafe(head.length + textLength + tail.length);
  out.set(head, 0);
  out.write(text, head.length);
  out.set(tail, head.length + textLength);
  return out;
}

function resourceVersionField(resourceVersion: string): string {
  return `"resourceVersion":${JSON.stringify(resourceVersion)}`;
}

/** `json` (as `layout` describes it) with `metadata.resourceVersion` set to `resourceVersion`, in the place the parse-and-spread would give it. */
export function spliceResourceVersion(json: Buffer, layout: ResourceVersionLayout, resourceVersion: string): Buffer {
  const field = resourceVersionField(resourceVersion);
  if (layout.resourceVersionKey >= 0) {
    return joined(json.subarray(0, layout.resourceVersionStart), JSON.stringify(resourceVersion), json.subarray(layout.resourceVersionEnd));
  }
  if (layout.metadata === 'object') {
    const at = layout.metadataEnd - 1;
    return joined(json.subarray(0, at), layout.metadataEmpty ? field : `,${field}`, json.subarray(at));
  }
  if (layout.metadata === 'null') {
    return joined(json.subarray(0, layout.metadataStart), `{${field}}`, json.subarray(layout.metadataEnd));
  }
  const at = layout.objectEnd;
  return joined(json.subarray(0, at), `${layout.objectEmpty ? '' : ','}"metadata":{${field}}`, json.subarray(at));
}

/**
 * `json` (as `layout` describes it) without `metadata.resourceVersion`: the
 * bytes of `JSON.stringify({ ...obj, metadata: rest })` where `rest` is
 * metadata without it; `json` itself when there is none.
 */
export function removeResourceVersion(json: Buffer, layout: ResourceVersionLayout): Buffer {
  const key = layout.resourceVersionKey;
  if (key < 0) return json;
  const end = layout.resourceVersionEnd;
  // The field and the comma that separated it from its neighbour.
  if (json[key - 1] === COMMA) return joined(json.subarray(0, key - 1), '', json.subarray(end));
  if (json[end] === COMMA) return joined(json.subarray(0, key), '', json.subarray(end + 1));
  return joined(json.subarray(0, key), '', json.subarray(end));
}

/**
 * Whether `json` is an object exactly as JSON.stringify writes one that
 * JSON.parse read, with a metadata that is an object or null, or none: it
 * then parses, to an object, and serialising that gives `json` back.
 */
export function isStringifiedObject(json: Buffer): boolean {
  return resourceVersionLayout(json) !== undefined;
}

/**
 * `json` with `metadata.resourceVersion` set, spliced (see above); undefined
 * when `json` is not as JSON.stringify writes a parsed object, so the
 * caller parses it instead.
 */
export function withResourceVersion(json: Buffer, resourceVersion: string): Buffer | undefined {
  const layout = resourceVersionLayout(json);
  return layout ? spliceResourceVersion(json, layout, resourceVersion) : undefined;
}
