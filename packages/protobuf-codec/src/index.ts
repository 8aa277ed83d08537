/**
 * The protobuf encoding of built-in kinds (`application/vnd.svc.protobuf`,
 * also accepted under the upstream media type): the envelope, and conversion
 * to and from the JSON form by walking the descriptors of proto/svc/api.
 */
export { ProtobufObjectCodec, PROTOBUF_PREFIX } from './codec';
export { ConversionError, jsonToMessage, messageToJson } from './convert';
export { API_REGISTRY } from './descriptors';
export { encodeListChunks, encodeObjectMessage } from './list-stream';
