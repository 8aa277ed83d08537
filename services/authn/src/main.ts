import { internalTlsFromFlags, runMain } from '@svc/service-kit';
import { AUTHN_FLAGS, anonymousAuthEnabled } from './flags';
import { start } from './server';

runMain('authn', AUTHN_FLAGS, (flags) => {
  const config: Parameters<typeof start>[0] = { listen: flags.get('listen'), internalTls: internalTlsFromFlags(flags), anonymousAuth: anonymousAuthEnabled(flags) };
  if (flags.get('client-ca-file')) config.clientCaFile = flags.get('client-ca-file');
  if (flags.get('token-auth-file')) config.tokenAuthFile = flags.get('token-auth-file');
  return start(config);
});
