import { internalTlsFromFlags, runMain } from '@svc/service-kit';
import { AUTHN_FLAGS, anonymousAuthEnabled, apiAudiences, authenticationConfigFile, oidcSettings, requestHeaderConfig, serviceAccountConfig, tokenWebhookConfig } from './flags';
import { start } from './server';

runMain('authn', AUTHN_FLAGS, async (flags) => {
  const config: Parameters<typeof start>[0] = { listen: flags.get('listen'), healthBindAddress: flags.get('health-bind-address'), internalTls: internalTlsFromFlags(flags), anonymousAuth: anonymousAuthEnabled(flags) };
  if (flags.get('client-ca-file')) config.clientCaFile = flags.get('client-ca-file');
  if (flags.get('token-auth-file')) config.tokenAuthFile = flags.get('token-auth-file');
  if (flags.getBool('enable-bootstrap-token-auth')) config.enableBootstrapTokenAuth = true;
  if (flags.get('storage-address')) config.storageAddress = flags.get('storage-address');
  const serviceAccounts = serviceAccountConfig(flags);
  if (serviceAccounts) config.serviceAccounts = serviceAccounts;
  config.apiAudiences = apiAudiences(flags);
  const requestHeader = requestHeaderConfig(flags);
  if (requestHeader) config.requestHeader = requestHeader;
  // The file first: with --oidc-* flags too, the conflict is the error to report.
  const configFile = authenticationConfigFile(flags);
  if (configFile) config.authenticationConfigFile = configFile;
  const oidc = oidcSettings(flags);
  if (oidc) config.oidc = oidc;
  config.anonymousAuthExplicit = flags.given('anonymous-auth');
  const tokenWebhook = tokenWebhookConfig(flags);
  if (tokenWebhook) config.tokenWebhook = tokenWebhook;
  return start(config);
});
