import { INTERNAL_TLS_FLAGS, type FlagSpecs } from '@svc/service-kit';

export const STORAGE_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7101' },
  'etcd-servers': { description: 'Comma-separated etcd client URLs', default: 'http://127.0.0.1:2379' },
  'request-timeout-ms': { description: 'Deadline of each etcd request in milliseconds', default: '10000' },
};
