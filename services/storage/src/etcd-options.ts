import { ExponentialBackoff, handleWhen, noop, retry } from 'cockatiel';
import * as fs from 'node:fs';
import { GRPCUnavailableError, type IOptions } from 'etcd3';
import { tlsFilesFromFlags } from '@svc/service-kit';

/**
 * How every etcd client of the system (storage, watch-fanout) talks to etcd.
 *
 * The etcd3 client's defaults put a circuit breaker on each host that opens
 * after three consecutive "recoverable" failures (an answer too large for
 * one request, or one request's deadline, count as such) and then fails
 * every call of every caller for five seconds; and they retry each of those
 * failures three times. With one etcd, one bad request became an outage.
 * Here nothing is shared between calls: no breaker; only a transport failure
 * (etcd unreachable) is retried, once, quickly, and then answered 503 by the
 * caller; every other failure is that request's alone.
 *
 * A response may be large (an unpaged list is read in batches, see
 * EtcdStore.list): the limit is set for a batch of objects of the largest
 * size etcd accepts.
 */
export const ETCD_MAX_RESPONSE_BYTES = 512 * 1024 * 1024;

export function etcdFaultHandling(): NonNullable<IOptions['faultHandling']> {
  return {
    host: () => noop,
    global: retry(
      handleWhen((err) => err instanceof GRPCUnavailableError),
      { maxAttempts: 1, backoff: new ExponentialBackoff({ initialDelay: 50, maxDelay: 250 }) },
    ),
  };
}

export function etcdClientOptions(hosts: string[], extra: Partial<IOptions> = {}): IOptions {
  return {
    hosts,
    faultHandling: etcdFaultHandling(),
    grpcOptions: { 'grpc.max_receive_message_length': ETCD_MAX_RESPONSE_BYTES },
    ...extra,
  };
}

/** The files of an etcd client certificate (the original server's --etcd-cafile, --etcd-certfile, --etcd-keyfile). */
export interface EtcdTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/** Client options for etcd over TLS with a client certificate; none without files (plain http endpoints). */
export function etcdTlsOptions(files: EtcdTlsFiles | undefined): Partial<IOptions> {
  if (!files) return {};
  return { credentials: { rootCertificate: fs.readFileSync(files.caFile), certChain: fs.readFileSync(files.certFile), privateKey: fs.readFileSync(files.keyFile) } };
}

/** The etcd client flags of storage and watch-fanout. */
export const ETCD_TLS_FLAGS = {
  'etcd-cafile': { description: "CA bundle that verifies etcd's serving certificate (with --etcd-certfile and --etcd-keyfile: TLS with a client certificate)", default: '' },
  'etcd-certfile': { description: 'Client certificate presented to etcd (PEM)', default: '' },
  'etcd-keyfile': { description: 'Key of --etcd-certfile (PEM)', default: '' },
} as const;

/** The TLS files named by the flags above; undefined when none is given, an error when only some are. */
export function etcdTlsFromFlags(flags: { get(name: string): string }): EtcdTlsFiles | undefined {
  return tlsFilesFromFlags(flags, ['etcd-cafile', 'etcd-certfile', 'etcd-keyfile']);
}
