/** The four bytes before every protobuf envelope ("k8s" and a zero byte, SPEC section 2). */
export const PROTOBUF_PREFIX = Buffer.from([0x6b, 0x38, 0x73, 0x00]);
