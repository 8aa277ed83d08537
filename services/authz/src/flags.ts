import { HEALTH_FLAGS, INTERNAL_TLS_FLAGS, METRICS_FLAGS, parseDuration, type FlagSpecs, type ParsedFlags } from '@svc/service-kit';
import { AuthorizationConfigError } from './authorizer';
import type { WebhookAuthorizerOptions } from './webhook-authorizer';

export const AUTHZ_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  ...HEALTH_FLAGS,
  ...METRICS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7103' },
  'authorization-mode': { description: 'Comma-separated ordered list of modes: AlwaysAllow, AlwaysDeny, ABAC, Node, RBAC, Webhook (system:masters is always allowed); not with --authorization-config', default: 'AlwaysDeny' },
  'authorization-policy-file': { description: 'ABAC policy file (the ABAC mode, and only with it): one JSON Policy per line, abac.authorization.svc.io/v1beta1 or the unversioned form', default: '' },
  'authorization-config': { description: 'AuthorizationConfiguration file (ordered, named authorizers: Webhook entries with match conditions and failure policies, RBAC, Node); reloaded when it changes; not with --authorization-mode, --authorization-policy-file or --authorization-webhook-*', default: '' },
  'authorization-webhook-config-file': { description: 'Kubeconfig-format file of the authorization webhook (the Webhook mode): its https server and CA, this server\'s client certificate', default: '' },
  'authorization-webhook-version': { description: 'SubjectAccessReview version sent to the webhook: v1 or v1beta1', default: 'v1beta1' },
  'authorization-webhook-cache-authorized-ttl': { description: 'How long an allow from the webhook is reused (Go duration)', default: '5m0s' },
  'authorization-webhook-cache-unauthorized-ttl': { description: 'How long a refusal from the webhook is reused (Go duration)', default: '30s' },
  'storage-address': { description: 'gRPC address of the storage service (RBAC reads its policy there, the Node mode its pods)', default: '' },
  'watch-fanout-address': { description: 'gRPC address(es) of watch-fanout, comma-separated (RBAC and the Node mode follow changes there)', default: '' },
};

const WEBHOOK_FLAGS = ['authorization-webhook-config-file', 'authorization-webhook-version', 'authorization-webhook-cache-authorized-ttl', 'authorization-webhook-cache-unauthorized-ttl'];

/** `--authorization-config`, or undefined; it may not be combined with the flags that configure modes. */
export function authorizationConfigFile(flags: ParsedFlags): string | undefined {
  const file = flags.get('authorization-config');
  if (!file) return undefined;
  for (const flag of ['authorization-mode', 'authorization-policy-file', ...WEBHOOK_FLAGS]) {
    if (flags.given(flag)) throw new AuthorizationConfigError(`--authorization-config and --${flag} may not be used together`);
  }
  return file;
}

/** The Webhook mode's settings, or undefined without a configuration file. */
export function webhookOptions(flags: ParsedFlags): WebhookAuthorizerOptions | undefined {
  const configFile = flags.get('authorization-webhook-config-file');
  if (!configFile) return undefined;
  const version = flags.get('authorization-webhook-version');
  if (version !== 'v1' && version !== 'v1beta1') throw new Error(`--authorization-webhook-version: ${JSON.stringify(version)} is not v1 or v1beta1`);
  return {
    configFile,
    version,
    authorizedTtlMs: parseDuration(flags.get('authorization-webhook-cache-authorized-ttl'), 'authorization-webhook-cache-authorized-ttl'),
    unauthorizedTtlMs: parseDuration(flags.get('authorization-webhook-cache-unauthorized-ttl'), 'authorization-webhook-cache-unauthorized-ttl'),
  };
}
