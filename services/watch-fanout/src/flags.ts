import { HEALTH_FLAGS, INTERNAL_TLS_FLAGS, METRICS_FLAGS, type FlagSpecs } from '@svc/service-kit';
import { ETCD_TLS_FLAGS } from '@svc/storage/etcd-options';
import { ENCRYPTION_FLAGS } from '@svc/storage/encryption';
import { NATS_TLS_FLAGS } from './nats-options';

export const WATCH_FANOUT_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  ...HEALTH_FLAGS,
  ...METRICS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7105' },
  'etcd-servers': { description: 'Comma-separated etcd client URLs', default: 'https://127.0.0.1:2379' },
  ...ETCD_TLS_FLAGS,
  'nats-url': { description: 'NATS server URL (JetStream enabled)', default: 'tls://127.0.0.1:4222' },
  ...NATS_TLS_FLAGS,
  id: { description: 'Replica identity in the publisher election (random when empty)', default: '' },
  'history-window-seconds': { description: 'How long changes stay available for catch-up', default: '300' },
  'history-max-bytes': { description: 'Most bytes of changes the history holds (in memory, and in the bus stream); older changes go first', default: String(128 * 1024 * 1024) },
  ...ENCRYPTION_FLAGS,
  'compaction-interval-seconds': { description: 'How often the leading replica compacts etcd history to what it held one interval ago (0 never)', default: '300' },
};
