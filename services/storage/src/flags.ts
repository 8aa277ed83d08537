import { INTERNAL_TLS_FLAGS, type FlagSpecs } from '@svc/service-kit';
import { ETCD_TLS_FLAGS } from './etcd-options';

export const STORAGE_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7101' },
  'etcd-servers': { description: 'Comma-separated etcd client URLs', default: 'https://127.0.0.1:2379' },
  ...ETCD_TLS_FLAGS,
  'request-timeout-ms': { description: 'Deadline of each etcd request in milliseconds', default: '10000' },
};
