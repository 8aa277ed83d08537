import { create, toBinary, type DescMessage } from '@bufbuild/protobuf';
import { ApiError, isJsonObject, type ApiObject } from '@svc/apimachinery';
import { ConversionError, jsonToMessage } from './convert';
import { PROTOBUF_PREFIX } from './envelope';
import { UnknownSchema } from './gen/svc/api/runtime/generated_pb';

/**
 * A protobuf list written item by item, as the original server's streaming
 * encoder writes one: the envelope's length and each item's length come
 * first on the wire, so the items are encoded (or taken already encoded)
 * one by one and the list is never assembled as one message. The bytes are
 * those `encode` gives for the whole list: the 4-byte prefix, the `Unknown`
 * envelope (type meta, then `raw`), and in `raw` the list's own fields
 * followed by one length-delimited `items` field per item (protobuf readers
 * accept fields in any order).
 */

/** Where the message of a kind is found (the codec). */
export interface MessageLookup {
  messageFor(apiVersion: string, kind: string): DescMessage | undefined;
}

/** Protobuf's base-128 varint. */
function varint(n: number): Buffer {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return Buffer.from(out);
}

/** One object's own message, without prefix or envelope (what `raw` holds); an object with no protobuf form is a 406. */
export function encodeObjectMessage(codec: MessageLookup, obj: ApiObject): Uint8Array {
  const apiVersion = obj.apiVersion ?? '';
  const kind = obj.kind ?? '';
  const desc = codec.messageFor(apiVersion, kind);
  if (!desc || !isJsonObject(obj)) throw ApiError.notAcceptable(`${kind || 'the object'} (${apiVersion}) has no protobuf form`);
  try {
    return toBinary(desc, jsonToMessage(desc, obj, '').message);
  } catch (err) {
    if (err instanceof ConversionError) throw ApiError.notAcceptable(`the ${kind} cannot be represented in protobuf: ${err.message}`);
    throw err;
  }
}

/**
 * The chunks of a list whose items are already encoded as their own
 * messages (`encodeObjectMessage`): `list` is the list without its items.
 * The chunks reference the item bytes, they are not copied.
 */
export function encodeListChunks(codec: MessageLookup, list: ApiObject, items: readonly Uint8Array[]): Uint8Array[] {
  const apiVersion = list.apiVersion ?? '';
  const kind = list.kind ?? '';
  const desc = codec.messageFor(apiVersion, kind);
  const field = desc?.fields.find((f) => f.name === 'items');
  if (!desc || !field) throw ApiError.notAcceptable(`${kind || 'the list'} (${apiVersion}) has no protobuf form`);
  const own = encodeObjectMessage(codec, { ...list, items: [] } as ApiObject);
  const tag = varint((field.number << 3) | 2);
  const chunks: Uint8Array[] = [];
  let rawLength = own.length;
  for (const item of items) {
    const length = varint(item.length);
    chunks.push(Buffer.concat([tag, length]), item);
    rawLength += tag.length + length.length + item.length;
  }
  const typeMeta = toBinary(UnknownSchema, create(UnknownSchema, { typeMeta: { apiVersion, kind } }));
  // `raw` is field 2 of the envelope, length-delimited.
  const head = Buffer.concat([PROTOBUF_PREFIX, typeMeta, Buffer.from([(2 << 3) | 2]), varint(rawLength), own]);
  return [head, ...chunks];
}
