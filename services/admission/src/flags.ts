import { INTERNAL_TLS_FLAGS, type FlagSpecs } from '@svc/service-kit';

export const ADMISSION_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7104' },
  'storage-address': { description: 'Address of the storage service (host:port)', default: '127.0.0.1:7101' },
  'namespace-cache-ttl-ms': { description: 'How long an Active namespace is remembered by the namespace lifecycle check (0 always reads storage)', default: '1000' },
};
