import { create, fromBinary, toBinary, type DescMessage, type Registry } from '@bufbuild/protobuf';
import { reflect } from '@bufbuild/protobuf/reflect';
import { ApiError, type ApiObject } from '@svc/apimachinery';
import { ConversionError, messageToJson } from './convert';
import { API_REGISTRY } from './descriptors';
import { PROTOBUF_PREFIX } from './envelope';
import { WatchEventSchema } from './gen/svc/api/meta/v1/generated_pb';
import { UnknownSchema } from './gen/svc/api/runtime/generated_pb';
import { encodeListChunks, encodeObjectMessage } from './list-stream';

export { PROTOBUF_PREFIX };

/** Proto package of each API group/version whose kinds have a protobuf form. */
const PACKAGES: Record<string, string> = {
  v1: 'svc.api.core.v1',
  'coordination.svc.io/v1': 'svc.api.coordination.v1',
  'policy/v1': 'svc.api.policy.v1',
  // An Eviction may still be sent as policy/v1beta1; its message is v1's.
  'policy/v1beta1': 'svc.api.policy.v1',
  'events.svc.io/v1': 'svc.api.events.v1',
  'events.k8s.io/v1': 'svc.api.events.v1',
  'flowcontrol.svc.io/v1': 'svc.api.flowcontrol.v1',
  'flowcontrol.apiserver.k8s.io/v1': 'svc.api.flowcontrol.v1',
  'authentication.svc.io/v1': 'svc.api.authentication.v1',
  'authentication.svc.io/v1beta1': 'svc.api.authentication.v1beta1',
  // Clients built against the upstream type names send these in the
  // envelope (a TokenRequest to serviceaccounts/<name>/token, a
  // SelfSubjectReview); the messages are the same.
  'authentication.k8s.io/v1': 'svc.api.authentication.v1',
  'authentication.k8s.io/v1beta1': 'svc.api.authentication.v1beta1',
  'rbac.authorization.svc.io/v1': 'svc.api.rbac.v1',
  'authorization.svc.io/v1': 'svc.api.authorization.v1',
  'authorization.k8s.io/v1': 'svc.api.authorization.v1',
  'rbac.authorization.k8s.io/v1': 'svc.api.rbac.v1',
  'admissionregistration.svc.io/v1': 'svc.api.admissionregistration.v1',
  'admissionregistration.k8s.io/v1': 'svc.api.admissionregistration.v1',
  // Aggregated discovery (served at /api and /apis, never stored); v2beta1's messages are v2's.
  'apidiscovery.svc.io/v2': 'svc.api.apidiscovery.v2',
  'apidiscovery.svc.io/v2beta1': 'svc.api.apidiscovery.v2',
  'apidiscovery.k8s.io/v2': 'svc.api.apidiscovery.v2',
  'apidiscovery.k8s.io/v2beta1': 'svc.api.apidiscovery.v2',
};

/**
 * Kinds of the meta group that any group/version may carry: errors, and the
 * DeleteOptions of a DELETE body (clients encode it in the group/version of
 * the resource they delete; its message is the one an Eviction embeds).
 */
const META_KINDS: Record<string, string> = { Status: 'svc.api.meta.v1.Status', DeleteOptions: 'svc.api.policy.v1.DeleteOptions' };

/**
 * The binary representation of built-in kinds: a 4-byte prefix, then the
 * `Unknown` envelope (type meta + the object's own message in `raw`). Objects
 * convert to and from their JSON form by walking the message descriptors
 * generated from `proto/svc/api`.
 */
export class ProtobufObjectCodec {
  constructor(private readonly registry: Registry = API_REGISTRY) {}

  /** The message of a kind, when the kind has a protobuf form. */
  messageFor(apiVersion: string, kind: string): DescMessage | undefined {
    const meta = META_KINDS[kind];
    if (meta !== undefined) return this.registry.getMessage(meta);
    const pkg = PACKAGES[apiVersion];
    return pkg === undefined ? undefined : this.registry.getMessage(`${pkg}.${kind}`);
  }

  supports(apiVersion: string, kind: string): boolean {
    return this.messageFor(apiVersion, kind) !== undefined;
  }

  /** Reads a request body; every failure is a 400 or 415 naming what was wrong. */
  decode(body: Uint8Array): ApiObject {
    if (body.length < PROTOBUF_PREFIX.length || !PROTOBUF_PREFIX.equals(body.subarray(0, PROTOBUF_PREFIX.length))) {
      throw ApiError.badRequest('the protobuf body does not start with the expected 4-byte prefix');
    }
    let envelope;
    try {
      envelope = fromBinary(UnknownSchema, body.subarray(PROTOBUF_PREFIX.length));
    } catch (err) {
      throw ApiError.badRequest(`the protobuf envelope could not be read: ${(err as Error).message}`);
    }
    const apiVersion = envelope.typeMeta?.apiVersion ?? '';
    const kind = envelope.typeMeta?.kind ?? '';
    if (envelope.contentEncoding !== '') throw ApiError.unsupportedMediaType(`protobuf content encoding "${envelope.contentEncoding}"`);
    if (envelope.contentType !== '' && !envelope.contentType.includes('protobuf')) {
      throw ApiError.unsupportedMediaType(envelope.contentType);
    }
    if (apiVersion === '' || kind === '') throw ApiError.badRequest("the protobuf envelope is missing its apiVersion or kind ('typeMeta')");
    const desc = this.messageFor(apiVersion, kind);
    if (!desc) throw ApiError.badRequest(`no kind "${kind}" is registered for version "${apiVersion}" in the protobuf encoding`);
    let json;
    try {
      json = messageToJson(reflect(desc, fromBinary(desc, envelope.raw)));
    } catch (err) {
      if (err instanceof ConversionError) throw ApiError.badRequest(`the ${kind} in the protobuf body is malformed: ${err.message}`);
      throw ApiError.badRequest(`the ${kind} in the protobuf body could not be read: ${(err as Error).message}`);
    }
    return { apiVersion, kind, ...json };
  }

  /**
   * One frame of a watch stream: a 4-byte big-endian length, then a
   * `WatchEvent` message (no prefix or envelope of its own) whose `object`
   * holds the object encoded as by `encode`.
   */
  encodeWatchEvent(type: string, object: ApiObject): Uint8Array {
    const event = toBinary(WatchEventSchema, create(WatchEventSchema, { type, object: { raw: this.encode(object) } }));
    const frame = Buffer.alloc(4 + event.length);
    frame.writeUInt32BE(event.length, 0);
    frame.set(event, 4);
    return frame;
  }

  /** Writes an object; an object with no protobuf form is a 406. */
  encode(obj: ApiObject): Uint8Array {
    const apiVersion = obj.apiVersion ?? '';
    const kind = obj.kind ?? '';
    const raw = encodeObjectMessage(this, obj);
    const envelope = toBinary(UnknownSchema, create(UnknownSchema, { typeMeta: { apiVersion, kind }, raw }));
    return Buffer.concat([PROTOBUF_PREFIX, envelope]);
  }

  /** An object's own message, without prefix or envelope: an item of a list written item by item. */
  encodeObjectMessage(obj: ApiObject): Uint8Array {
    return encodeObjectMessage(this, obj);
  }

  /** A list (without its items) and its items' own messages as the chunks of the list's encoding (see list-stream.ts). */
  encodeListChunks(list: ApiObject, items: readonly Uint8Array[]): Uint8Array[] {
    return encodeListChunks(this, list, items);
  }
}
