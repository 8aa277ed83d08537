import { createLogger, internalTlsFromFlags, runMain } from '@svc/service-kit';
import { encryptionFromFlags } from './encryption/at-rest';
import { etcdTlsFromFlags } from './etcd-options';
import { STORAGE_FLAGS } from './flags';
import { start } from './server';

runMain('storage', STORAGE_FLAGS, async (flags) => {
  const logger = createLogger('storage');
  // A configuration that does not read refuses the start, naming the file and the field.
  const encryption = encryptionFromFlags(flags, logger);
  return start({
    listen: flags.get('listen'),
    healthBindAddress: flags.get('health-bind-address'),
    internalTls: internalTlsFromFlags(flags),
    etcdEndpoints: flags.get('etcd-servers').split(',').filter(Boolean),
    etcdTls: etcdTlsFromFlags(flags),
    requestTimeoutMs: flags.getInt('request-timeout-ms'),
    maxRequestBytes: flags.getInt('etcd-max-request-bytes'),
    logger,
    ...(encryption ? { encryption } : {}),
  });
});
