import { internalTlsFromFlags, runMain } from '@svc/service-kit';
import { parseModes } from './authorizer';
import { AUTHZ_FLAGS, webhookOptions } from './flags';
import { start } from './server';

runMain('authz', AUTHZ_FLAGS, (flags) => {
  const webhook = webhookOptions(flags);
  return start({
    listen: flags.get('listen'),
    internalTls: internalTlsFromFlags(flags),
    modes: parseModes(flags.get('authorization-mode')),
    ...(flags.get('storage-address') ? { storageAddress: flags.get('storage-address') } : {}),
    ...(flags.get('watch-fanout-address') ? { watchFanoutAddress: flags.get('watch-fanout-address') } : {}),
    ...(webhook ? { webhook } : {}),
    ...(flags.get('authorization-policy-file') ? { authorizationPolicyFile: flags.get('authorization-policy-file') } : {}),
  });
});
