import { internalTlsFromFlags, runMain } from '@svc/service-kit';
import { ADMISSION_FLAGS, webhookSettings } from './flags';
import { start } from './server';

runMain('admission', ADMISSION_FLAGS, (flags) =>
  start({
    listen: flags.get('listen'),
    healthBindAddress: flags.get('health-bind-address'),
    internalTls: internalTlsFromFlags(flags),
    storageAddress: flags.get('storage-address'),
    namespaceCacheTtlMs: flags.getInt('namespace-cache-ttl-ms'),
    ...(flags.get('watch-fanout-address') ? { watchFanoutAddress: flags.get('watch-fanout-address') } : {}),
    ...(flags.get('authz-address') ? { authzAddress: flags.get('authz-address') } : {}),
    webhooks: webhookSettings(flags),
  }),
);
