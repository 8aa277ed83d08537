import type { ConnectionOptions } from 'nats';
import { tlsFilesFromFlags } from '@svc/service-kit';

/**
 * How a service connects to NATS: TLS with its client certificate, which
 * NATS maps to a user with that service's permissions (watch-fanout
 * publishes change events; gateways only subscribe). Reconnects forever;
 * what is missed meanwhile is caught up from watch-fanout's history.
 */
export interface NatsTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

export const NATS_TLS_FLAGS = {
  'nats-ca-file': { description: "CA bundle that verifies the NATS server's certificate (with --nats-cert-file and --nats-key-file: TLS with a client certificate)", default: '' },
  'nats-cert-file': { description: 'Client certificate presented to NATS (PEM); NATS maps its subject to a user', default: '' },
  'nats-key-file': { description: 'Key of --nats-cert-file (PEM)', default: '' },
} as const;

export function natsTlsFromFlags(flags: { get(name: string): string }): NatsTlsFiles | undefined {
  return tlsFilesFromFlags(flags, ['nats-ca-file', 'nats-cert-file', 'nats-key-file']);
}

export function natsConnectOptions(url: string, name: string, tls: NatsTlsFiles | undefined): ConnectionOptions {
  return { servers: url, name, maxReconnectAttempts: -1, reconnectTimeWait: 500, ...(tls ? { tls: { caFile: tls.caFile, certFile: tls.certFile, keyFile: tls.keyFile } } : {}) };
}
