/**
 * What every service shares at its edges: structured logs, flags, gRPC
 * servers and clients with API errors carried across.
 */
export { createLogger, type Logger, type LogLevel, type LogFields, type LoggerOptions } from './logger';
export { parseFlags, usage, FlagError, type FlagSpec, type FlagSpecs, type ParsedFlags } from './flags';
export {
  STATUS_TRAILER,
  REQUEST_ID_HEADER,
  CLIENT_OPTIONS,
  toGrpcError,
  fromGrpcError,
  unary,
  serverStream,
  startGrpcServer,
  outgoingMetadata,
  callUnary,
  type CallContext,
  type CallOptions,
  type GrpcServerHandle,
} from './grpc';
export { runMain } from './main';
export { toProtoUser, fromProtoUser } from './user';
export * from './ttl-cache';
