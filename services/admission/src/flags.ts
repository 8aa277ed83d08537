import * as fs from 'node:fs';
import { FlagError, HEALTH_FLAGS, INTERNAL_TLS_FLAGS, METRICS_FLAGS, parseDuration, type FlagSpecs, type ParsedFlags } from '@svc/service-kit';
import type { WebhookSettings } from './server';
import { DEFAULT_MAX_RESPONSE_BYTES } from './webhook/dispatcher';

export const ADMISSION_FLAGS: FlagSpecs = {
  ...INTERNAL_TLS_FLAGS,
  ...HEALTH_FLAGS,
  ...METRICS_FLAGS,
  listen: { description: 'gRPC listen address (host:port)', default: '127.0.0.1:7104' },
  'storage-address': { description: 'Address of the storage service (host:port)', default: '127.0.0.1:7101' },
  'watch-fanout-address': { description: 'gRPC address(es) of watch-fanout, comma-separated: admission webhook configurations and policies are followed there (empty: only the built-in plugins run)', default: '127.0.0.1:7105' },
  'authz-address': { description: 'gRPC address of the authorization service, asked by the authorizer of CEL match conditions and policies', default: '127.0.0.1:7103' },
  'namespace-cache-ttl-ms': { description: 'How long an Active namespace is remembered by the namespace lifecycle check and the namespace selectors of webhooks and policies (0 always reads storage)', default: '1000' },
  'webhook-max-response-bytes': { description: 'Largest answer read from an admission webhook; a larger one is a failed call', default: String(DEFAULT_MAX_RESPONSE_BYTES) },
  'webhook-isolation-failures': { description: 'Consecutive failed calls (timeouts, connection or TLS errors, bad answers) after which an admission webhook is isolated: not called, its failurePolicy applied at once (0 never isolates)', default: '5' },
  'webhook-isolation-backoff': { description: 'How long an isolated webhook is not called before one trial call (Go duration); doubles after each failed trial', default: '10s' },
  'webhook-isolation-max-backoff': { description: 'The longest isolation period (Go duration)', default: '3m0s' },
  'webhook-client-cert-file': { description: 'Client certificate (PEM) presented to admission webhooks; with --webhook-client-key-file', default: '' },
  'webhook-client-key-file': { description: 'Key (PEM) of --webhook-client-cert-file', default: '' },
};

/** The webhook settings the flags give. */
export function webhookSettings(flags: ParsedFlags): WebhookSettings {
  const maxResponseBytes = flags.getInt('webhook-max-response-bytes');
  if (maxResponseBytes <= 0) throw new FlagError('--webhook-max-response-bytes must be positive');
  const failures = flags.getInt('webhook-isolation-failures');
  if (failures < 0) throw new FlagError('--webhook-isolation-failures may not be negative');
  const backoffMs = parseDuration(flags.get('webhook-isolation-backoff'), 'webhook-isolation-backoff');
  const maxBackoffMs = parseDuration(flags.get('webhook-isolation-max-backoff'), 'webhook-isolation-max-backoff');
  if (backoffMs <= 0 || maxBackoffMs < backoffMs) throw new FlagError('--webhook-isolation-backoff must be positive and at most --webhook-isolation-max-backoff');
  const certFile = flags.get('webhook-client-cert-file');
  const keyFile = flags.get('webhook-client-key-file');
  if ((certFile === '') !== (keyFile === '')) throw new FlagError('--webhook-client-cert-file and --webhook-client-key-file go together');
  return {
    maxResponseBytes,
    isolation: { failures, backoffMs, maxBackoffMs },
    ...(certFile ? { clientCertificate: { cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) } } : {}),
  };
}
