/**
 * The OpenAPI v2 document in its protobuf form (the `openapi.v2.Document`
 * message of the gnostic models, media type
 * `application/com.github.proto-openapi.spec.v2@v1.0+protobuf`), which
 * kubectl asks for to validate objects on the client (`--validate`, on by
 * default) when a kind has no PATCH operation to validate on the server, as
 * the review kinds do. Only what the JSON document holds is written: the
 * message fields below carry the field numbers of that schema; extension
 * values and `default`/`enum`/`example` values travel as YAML text (JSON is
 * YAML), as the original server writes them.
 */

export const OPENAPI_V2_PROTOBUF = 'application/com.github.proto-openapi.spec.v2@v1.0+protobuf';
/** The same type with a dot before the version, as some clients spell it. */
export const OPENAPI_V2_PROTOBUF_ALT = 'application/com.github.proto-openapi.spec.v2.v1.0+protobuf';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type JsonMap = { [key: string]: Json };

/** Protobuf wire writing: a growing list of chunks, measured once at the end. */
class Writer {
  private readonly chunks: Buffer[] = [];

  private tag(field: number, wireType: number): void {
    this.varint((field << 3) | wireType);
  }

  private varint(value: number): void {
    const bytes: number[] = [];
    let v = BigInt.asUintN(64, BigInt(Math.trunc(value)));
    while (v > 0x7fn) {
      bytes.push(Number(v & 0x7fn) | 0x80);
      v >>= 7n;
    }
    bytes.push(Number(v));
    this.chunks.push(Buffer.from(bytes));
  }

  /** A string field; empty strings are the default and are left out. */
  string(field: number, value: unknown): void {
    if (typeof value === 'string' && value !== '') this.text(field, value);
  }

  /** A repeated string field: every element is written, empty ones too. */
  strings(field: number, value: unknown): void {
    if (Array.isArray(value)) for (const v of value) if (typeof v === 'string') this.text(field, v);
  }

  private text(field: number, value: string): void {
    const bytes = Buffer.from(value, 'utf8');
    this.tag(field, 2);
    this.varint(bytes.length);
    this.chunks.push(bytes);
  }

  bool(field: number, value: unknown): void {
    if (value !== true) return;
    this.tag(field, 0);
    this.varint(1);
  }

  int(field: number, value: unknown): void {
    if (typeof value !== 'number' || !Number.isInteger(value) || value === 0) return;
    this.tag(field, 0);
    this.varint(value);
  }

  double(field: number, value: unknown): void {
    if (typeof value !== 'number' || value === 0) return;
    const b = Buffer.alloc(8);
    b.writeDoubleLE(value);
    this.tag(field, 1);
    this.chunks.push(b);
  }

  message(field: number, write: (w: Writer) => void): void {
    const inner = new Writer();
    write(inner);
    const bytes = inner.finish();
    this.tag(field, 2);
    this.varint(bytes.length);
    this.chunks.push(bytes);
  }

  finish(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

const isMap = (v: unknown): v is JsonMap => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `Any`: the value as YAML text (field 2). */
function writeAny(w: Writer, field: number, value: Json | undefined): void {
  if (value === undefined) return;
  w.message(field, (a) => a.string(2, JSON.stringify(value)));
}

/** `NamedAny` entries for every `x-` key of `obj`. */
function writeExtensions(w: Writer, field: number, obj: JsonMap): void {
  for (const [name, value] of Object.entries(obj)) {
    if (!name.startsWith('x-')) continue;
    w.message(field, (n) => {
      n.string(1, name);
      writeAny(n, 2, value);
    });
  }
}

function writeSchema(w: Writer, s: JsonMap): void {
  w.string(1, s['$ref']);
  w.string(2, s['format']);
  w.string(3, s['title']);
  w.string(4, s['description']);
  writeAny(w, 5, s['default']);
  w.double(6, s['multipleOf']);
  w.double(7, s['maximum']);
  w.bool(8, s['exclusiveMaximum']);
  w.double(9, s['minimum']);
  w.bool(10, s['exclusiveMinimum']);
  w.int(11, s['maxLength']);
  w.int(12, s['minLength']);
  w.string(13, s['pattern']);
  w.int(14, s['maxItems']);
  w.int(15, s['minItems']);
  w.bool(16, s['uniqueItems']);
  w.int(17, s['maxProperties']);
  w.int(18, s['minProperties']);
  w.strings(19, s['required']);
  if (Array.isArray(s['enum'])) for (const v of s['enum']) writeAny(w, 20, v);
  const additional = s['additionalProperties'];
  if (isMap(additional)) w.message(21, (a) => a.message(1, (x) => writeSchema(x, additional)));
  else if (typeof additional === 'boolean') w.message(21, (a) => a.bool(2, additional));
  const type = s['type'];
  if (typeof type === 'string' || Array.isArray(type)) w.message(22, (t) => t.strings(1, Array.isArray(type) ? type : [type]));
  const items = s['items'];
  if (isMap(items) || Array.isArray(items)) w.message(23, (i) => (Array.isArray(items) ? items : [items]).filter(isMap).forEach((item) => i.message(1, (x) => writeSchema(x, item))));
  if (Array.isArray(s['allOf'])) for (const part of s['allOf'].filter(isMap)) w.message(24, (x) => writeSchema(x, part));
  const properties = s['properties'];
  if (isMap(properties)) w.message(25, (p) => writeNamedSchemas(p, 1, properties));
  w.string(26, s['discriminator']);
  w.bool(27, s['readOnly']);
  writeAny(w, 30, s['example']);
  writeExtensions(w, 31, s);
}

function writeNamedSchemas(w: Writer, field: number, schemas: JsonMap): void {
  for (const [name, schema] of Object.entries(schemas)) {
    if (!isMap(schema)) continue;
    w.message(field, (n) => {
      n.string(1, name);
      n.message(2, (x) => writeSchema(x, schema));
    });
  }
}

/** A query, path, header or formData parameter: the sub-schema messages share their first fields, then differ by one. */
function writeNonBodyParameter(w: Writer, p: JsonMap): void {
  const where = p['in'];
  const oneof = where === 'header' ? 1 : where === 'formData' ? 2 : where === 'query' ? 3 : 4;
  // formData and query have allowEmptyValue at 5, which moves every later field by one.
  const shift = oneof === 2 || oneof === 3 ? 1 : 0;
  w.message(oneof, (s) => {
    s.bool(1, p['required']);
    s.string(2, p['in']);
    s.string(3, p['description']);
    s.string(4, p['name']);
    if (shift) s.bool(5, p['allowEmptyValue']);
    s.string(5 + shift, p['type']);
    s.string(6 + shift, p['format']);
    s.string(8 + shift, p['collectionFormat']);
    s.string(16 + shift, p['pattern']);
    s.bool(19 + shift, p['uniqueItems']);
    writeExtensions(s, 22 + shift, p);
  });
}

function writeParameter(w: Writer, field: number, p: JsonMap): void {
  w.message(field, (item) => {
    if (typeof p['$ref'] === 'string') {
      item.message(2, (ref) => ref.string(1, p['$ref']));
      return;
    }
    item.message(1, (param) => {
      if (p['in'] === 'body') {
        param.message(1, (b) => {
          b.string(1, p['description']);
          b.string(2, p['name']);
          b.string(3, p['in']);
          b.bool(4, p['required']);
          const schema = p['schema'];
          if (isMap(schema)) b.message(5, (x) => writeSchema(x, schema));
          writeExtensions(b, 6, p);
        });
      } else {
        param.message(2, (nb) => writeNonBodyParameter(nb, p));
      }
    });
  });
}

function writeOperation(w: Writer, op: JsonMap): void {
  w.strings(1, op['tags']);
  w.string(2, op['summary']);
  w.string(3, op['description']);
  w.string(5, op['operationId']);
  w.strings(6, op['produces']);
  w.strings(7, op['consumes']);
  if (Array.isArray(op['parameters'])) for (const p of op['parameters'].filter(isMap)) writeParameter(w, 8, p);
  const responses = op['responses'];
  if (isMap(responses)) {
    w.message(9, (r) => {
      for (const [code, response] of Object.entries(responses)) {
        if (!isMap(response)) continue;
        r.message(1, (named) => {
          named.string(1, code);
          named.message(2, (value) => {
            if (typeof response['$ref'] === 'string') return value.message(2, (ref) => ref.string(1, response['$ref']));
            value.message(1, (resp) => {
              resp.string(1, response['description']);
              const schema = response['schema'];
              if (isMap(schema)) resp.message(2, (item) => item.message(1, (x) => writeSchema(x, schema)));
              writeExtensions(resp, 5, response);
            });
          });
        });
      }
    });
  }
  w.strings(10, op['schemes']);
  w.bool(11, op['deprecated']);
  writeExtensions(w, 13, op);
}

const METHOD_FIELDS: Record<string, number> = { get: 2, put: 3, post: 4, delete: 5, options: 6, head: 7, patch: 8 };

function writePathItem(w: Writer, item: JsonMap): void {
  w.string(1, item['$ref']);
  for (const [method, field] of Object.entries(METHOD_FIELDS)) {
    const op = item[method];
    if (isMap(op)) w.message(field, (o) => writeOperation(o, op));
  }
  if (Array.isArray(item['parameters'])) for (const p of item['parameters'].filter(isMap)) writeParameter(w, 9, p);
  writeExtensions(w, 10, item);
}

/** Encodes an OpenAPI v2 (Swagger 2.0) JSON document as an `openapi.v2.Document` message. */
export function encodeOpenApiV2Protobuf(doc: unknown): Buffer {
  if (!isMap(doc as Json)) throw new TypeError('the OpenAPI v2 document is not an object');
  const d = doc as JsonMap;
  const w = new Writer();
  w.string(1, d['swagger']);
  const info = d['info'];
  if (isMap(info)) {
    w.message(2, (i) => {
      i.string(1, info['title']);
      i.string(2, info['version']);
      i.string(3, info['description']);
      writeExtensions(i, 7, info);
    });
  }
  w.string(3, d['host']);
  w.string(4, d['basePath']);
  w.strings(5, d['schemes']);
  w.strings(6, d['consumes']);
  w.strings(7, d['produces']);
  const paths = d['paths'];
  if (isMap(paths)) {
    w.message(8, (p) => {
      writeExtensions(p, 1, paths);
      for (const [path, item] of Object.entries(paths)) {
        if (path.startsWith('x-') || !isMap(item)) continue;
        p.message(2, (named) => {
          named.string(1, path);
          named.message(2, (x) => writePathItem(x, item));
        });
      }
    });
  }
  const definitions = d['definitions'];
  if (isMap(definitions)) w.message(9, (defs) => writeNamedSchemas(defs, 1, definitions));
  writeExtensions(w, 16, d);
  return w.finish();
}
