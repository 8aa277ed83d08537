import { internalTlsFromFlags, runMain } from '@svc/service-kit';
import { parseModes } from './authorizer';
import { AUTHZ_FLAGS, authorizationConfigFile, webhookOptions } from './flags';
import { start } from './server';

runMain('authz', AUTHZ_FLAGS, async (flags) => {
  const configFile = authorizationConfigFile(flags);
  const webhook = configFile ? undefined : webhookOptions(flags);
  return start({
    listen: flags.get('listen'),
    healthBindAddress: flags.get('health-bind-address'),
    internalTls: internalTlsFromFlags(flags),
    modes: configFile ? [] : parseModes(flags.get('authorization-mode')),
    ...(configFile ? { authorizationConfigFile: configFile } : {}),
    ...(flags.get('storage-address') ? { storageAddress: flags.get('storage-address') } : {}),
    ...(flags.get('watch-fanout-address') ? { watchFanoutAddress: flags.get('watch-fanout-address') } : {}),
    ...(webhook ? { webhook } : {}),
    ...(flags.get('authorization-policy-file') ? { authorizationPolicyFile: flags.get('authorization-policy-file') } : {}),
  });
});
