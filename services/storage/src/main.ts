import { internalTlsFromFlags, runMain } from '@svc/service-kit';
import { etcdTlsFromFlags } from './etcd-options';
import { STORAGE_FLAGS } from './flags';
import { start } from './server';

runMain('storage', STORAGE_FLAGS, (flags) =>
  start({
    listen: flags.get('listen'),
    internalTls: internalTlsFromFlags(flags),
    etcdEndpoints: flags.get('etcd-servers').split(',').filter(Boolean),
    etcdTls: etcdTlsFromFlags(flags),
    requestTimeoutMs: flags.getInt('request-timeout-ms'),
    maxRequestBytes: flags.getInt('etcd-max-request-bytes'),
  }),
);
