import { HEALTH_FLAGS, INTERNAL_TLS_FLAGS, METRICS_FLAGS, type FlagSpecs } from '@svc/service-kit';
import { ETCD_TLS_FLAGS } from './etcd-options';
import { DEFAULT_ETCD_MAX_REQUEST_BYTES } from './etcd-store';
import { ENCRYPTION_FLAGS } from './encryption/at-rest';

export const STORAGE_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  ...HEALTH_FLAGS,
  ...METRICS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7101' },
  'etcd-servers': { description: 'Comma-separated etcd client URLs', default: 'https://127.0.0.1:2379' },
  ...ETCD_TLS_FLAGS,
  'request-timeout-ms': { description: 'Deadline of each etcd request in milliseconds', default: '10000' },
  'etcd-max-request-bytes': {
    description: "etcd's --max-request-bytes: a write larger than this is refused with 413 before it is sent to etcd",
    default: String(DEFAULT_ETCD_MAX_REQUEST_BYTES),
  },
  ...ENCRYPTION_FLAGS,
};
