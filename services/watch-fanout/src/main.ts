import { internalTlsFromFlags, runMain } from '@svc/service-kit';
import { etcdTlsFromFlags } from '@svc/storage/etcd-options';
import { WATCH_FANOUT_FLAGS } from './flags';
import { natsTlsFromFlags } from './nats-options';
import { start } from './server';

runMain('watch-fanout', WATCH_FANOUT_FLAGS, (flags) => {
  const config: Parameters<typeof start>[0] = {
    listen: flags.get('listen'),
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
  return start(config);
});
