import * as fs from 'node:fs';
import * as grpc from '@grpc/grpc-js';
import type { Logger } from './logger';

/**
 * Mutual TLS between the services. Every service holds one certificate of
 * the internal CA whose subject common name is its identity (`gateway`,
 * `storage`, `authn`, `authz`, `admission`, `watch-fanout`); it serves gRPC
 * with it and presents it when it calls another service. A server accepts a
 * connection only with a client certificate of that CA (the TLS handshake
 * fails otherwise), and then a call only from the identities its role needs
 * (PERMISSION_DENIED for any other, logged). A client checks that the server
 * it reached holds the certificate of the identity it meant to call,
 * whatever address it dialled.
 */
export interface InternalTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

export interface InternalTls {
  ca: Buffer;
  cert: Buffer;
  key: Buffer;
}

export function loadInternalTls(files: InternalTlsFiles): InternalTls {
  return { ca: fs.readFileSync(files.caFile), cert: fs.readFileSync(files.certFile), key: fs.readFileSync(files.keyFile) };
}

/** The flags every gRPC service takes for its internal certificate. */
export const INTERNAL_TLS_FLAGS = {
  'internal-ca-file': { description: 'PEM bundle of the internal CA: gRPC peers (servers and callers) must hold a certificate it signed', required: true },
  'internal-cert-file': { description: "This service's internal certificate (PEM; its CN is the service's identity), served and presented to other services", required: true },
  'internal-key-file': { description: 'Key of --internal-cert-file (PEM)', required: true },
} as const;

/**
 * The files named by three flags that go together (a CA bundle, a client
 * certificate and its key, e.g. `--etcd-cafile`, `--etcd-certfile`,
 * `--etcd-keyfile`): undefined when none is given, an error when only some are.
 */
export function tlsFilesFromFlags(flags: { get(name: string): string }, names: readonly [ca: string, cert: string, key: string]): InternalTlsFiles | undefined {
  const [caFile, certFile, keyFile] = names.map((n) => flags.get(n)) as [string, string, string];
  const given = [caFile, certFile, keyFile].filter(Boolean).length;
  if (given === 0) return undefined;
  if (given !== 3) throw new Error(`${names.map((n) => `--${n}`).join(', ')} go together`);
  return { caFile, certFile, keyFile };
}

export function internalTlsFromFlags(flags: { get(name: string): string }): InternalTlsFiles {
  return { caFile: flags.get('internal-ca-file'), certFile: flags.get('internal-cert-file'), keyFile: flags.get('internal-key-file') };
}

export function serverCredentials(tls: InternalTls): grpc.ServerCredentials {
  return grpc.ServerCredentials.createSsl(tls.ca, [{ cert_chain: tls.cert, private_key: tls.key }], true);
}

/**
 * Credentials and channel options for calling the service `identity`: the
 * server's certificate must name it (its identity is in every internal
 * certificate's SANs), so an address that leads elsewhere fails the handshake.
 */
export function clientCredentials(tls: InternalTls, identity: string): { credentials: grpc.ChannelCredentials; options: grpc.ClientOptions } {
  return {
    credentials: grpc.credentials.createSsl(tls.ca, tls.key, tls.cert),
    options: { 'grpc.ssl_target_name_override': identity, 'grpc.default_authority': identity },
  };
}

/** The identity of a verified peer: the common name of its certificate, in one place. */
export function peerIdentity(authContext: { sslPeerCertificate?: { subject?: { CN?: string | string[] } } }): string | undefined {
  const cn = authContext.sslPeerCertificate?.subject?.CN;
  const name = Array.isArray(cn) ? cn[0] : cn;
  return typeof name === 'string' && name.length > 0 ? name : undefined;
}

/** The health service answers every holder of an internal certificate (probes use the service's own). */
const OPEN_TO_EVERY_IDENTITY = '/grpc.health.v1.Health/';

/**
 * A server interceptor that lets through only calls from `allowed`
 * identities, for every method the server has and will have (unary,
 * streaming and the Calls streams alike); the health service takes any
 * identity the internal CA vouches for.
 */
export function callerCheck(allowed: readonly string[], log: Logger): grpc.ServerInterceptor {
  return (method, call) =>
    new grpc.ServerInterceptingCall(call, {
      start: (next) => {
        next({
          onReceiveMetadata: (metadata, proceed) => {
            const caller = peerIdentity(call.getAuthContext());
            if (caller !== undefined && (allowed.includes(caller) || method.path.startsWith(OPEN_TO_EVERY_IDENTITY))) {
              proceed(metadata);
              return;
            }
            log.warn('call refused', { caller: caller ?? '(no identity)', method: method.path, allowed });
            call.sendStatus({
              code: caller === undefined ? grpc.status.UNAUTHENTICATED : grpc.status.PERMISSION_DENIED,
              details: caller === undefined ? 'the caller presented no identity' : `${caller} may not call ${method.path}`,
            });
          },
        });
      },
    });
}
