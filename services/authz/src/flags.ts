import { INTERNAL_TLS_FLAGS, type FlagSpecs } from '@svc/service-kit';

export const AUTHZ_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7103' },
  'authorization-mode': { description: 'Comma-separated ordered list of modes: AlwaysAllow, AlwaysDeny, RBAC (system:masters is always allowed)', default: 'AlwaysDeny' },
  'storage-address': { description: 'gRPC address of the storage service (RBAC reads its policy there)', default: '' },
  'watch-fanout-address': { description: 'gRPC address(es) of watch-fanout, comma-separated (RBAC follows policy changes there)', default: '' },
};
