import { createLogger, internalTlsFromFlags, runMain } from '@svc/service-kit';
import { encryptionFromFlags } from '@svc/storage/encryption';
import { etcdTlsFromFlags } from '@svc/storage/etcd-options';
import { WATCH_FANOUT_FLAGS } from './flags';
import { natsTlsFromFlags } from './nats-options';
import { start } from './server';

runMain('watch-fanout', WATCH_FANOUT_FLAGS, async (flags) => {
  const logger = createLogger('watch-fanout');
  // The same file as storage's: watch-fanout reads values from etcd too (server.ts).
  const encryption = encryptionFromFlags(flags, logger);
  const config: Parameters<typeof start>[0] = {
    listen: flags.get('listen'),
    healthBindAddress: flags.get('health-bind-address'),
    internalTls: internalTlsFromFlags(flags),
    etcdEndpoints: flags.get('etcd-servers').split(',').filter(Boolean),
    etcdTls: etcdTlsFromFlags(flags),
    natsUrl: flags.get('nats-url'),
    natsTls: natsTlsFromFlags(flags),
    historyWindowMs: flags.getInt('history-window-seconds') * 1000,
    historyMaxBytes: flags.getInt('history-max-bytes'),
    compactionIntervalMs: flags.getInt('compaction-interval-seconds') * 1000,
  };
  if (flags.get('id')) config.id = flags.get('id');
  config.logger = logger;
  if (encryption) config.encryption = encryption;
  return start(config);
});
