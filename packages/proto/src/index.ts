/**
 * gRPC contracts generated from `proto/` (see buf.gen.yaml). The generated
 * modules are re-exported by service so names stay unambiguous.
 */
export * as common from './gen/svc/common/v1/common';
export * as storage from './gen/svc/storage/v1/storage';
export * as watch from './gen/svc/watch/v1/watch';
export * as authn from './gen/svc/authn/v1/authn';
export * as authz from './gen/svc/authz/v1/authz';
export * as admission from './gen/svc/admission/v1/admission';
export * as health from './gen/grpc/health/v1/health';
