import * as fs from 'node:fs';
import * as path from 'node:path';
import { etcdBinary, natsBinary } from './binaries';
import { freePort, waitForPort } from './ports';
import { spawnManaged, tailLog, type ManagedProcess, type RestartPolicy } from './process';

/** etcd and NATS as real processes on loopback. */

export interface EtcdInstance {
  endpoint: string;
  clientPort: number;
  process: ManagedProcess;
}

export interface NatsInstance {
  url: string;
  port: number;
  process: ManagedProcess;
}

/** A server's TLS files: its certificate and key, and the CA whose client certificates it accepts. */
export interface ServerTlsFiles {
  caFile: string;
  certFile: string;
  keyFile: string;
}

/**
 * The largest request etcd accepts (its --max-request-bytes), told to
 * storage too (--etcd-max-request-bytes), which refuses larger writes with
 * 413 before sending them.
 */
export const ETCD_MAX_REQUEST_BYTES = 1572864;

/**
 * etcd on loopback. With `tls` it serves its clients on HTTPS and accepts
 * only clients presenting a certificate of `tls.caFile` (`--client-cert-auth`).
 */
export async function startEtcd(opts: { dataDir: string; logDir: string; clientPort?: number; peerPort?: number; restart?: RestartPolicy; tls?: ServerTlsFiles }): Promise<EtcdInstance> {
  return onFreshPorts(!opts.clientPort && !opts.peerPort, () => startEtcdOnce(opts));
}

/** How often a server whose free port was taken before it bound is started again on other ports. */
const PORT_ATTEMPTS = 3;

/**
 * Starts a server on ports picked by freePort, again on new ones when one
 * was taken between the pick and the bind (another process's connection may
 * get the same ephemeral port); fixed ports are tried once.
 */
export async function onFreshPorts<T>(picked: boolean, start: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (!picked || attempt >= PORT_ATTEMPTS || !/address already in use/i.test((err as Error).message)) throw err;
    }
  }
}

async function startEtcdOnce(opts: { dataDir: string; logDir: string; clientPort?: number; peerPort?: number; restart?: RestartPolicy; tls?: ServerTlsFiles }): Promise<EtcdInstance> {
  fs.mkdirSync(opts.dataDir, { recursive: true });
  const clientPort = opts.clientPort || (await freePort());
  const peerPort = opts.peerPort || (await freePort());
  const client = `${opts.tls ? 'https' : 'http'}://127.0.0.1:${clientPort}`;
  const tlsArgs = opts.tls ? ['--client-cert-auth', `--trusted-ca-file=${opts.tls.caFile}`, `--cert-file=${opts.tls.certFile}`, `--key-file=${opts.tls.keyFile}`] : [];
  const peer = `http://127.0.0.1:${peerPort}`;
  const proc = spawnManaged({
    name: 'etcd',
    command: etcdBinary(),
    args: [
      '--name=svc-etcd',
      `--data-dir=${opts.dataDir}`,
      `--listen-client-urls=${client}`,
      `--advertise-client-urls=${client}`,
      `--listen-peer-urls=${peer}`,
      `--initial-advertise-peer-urls=${peer}`,
      `--initial-cluster=svc-etcd=${peer}`,
      '--initial-cluster-state=new',
      // Requests up to 1.5 MiB, as the original server's store accepts.
      `--max-request-bytes=${ETCD_MAX_REQUEST_BYTES}`,
      // Progress notifications let the change stream follow etcd's revision past writes outside the registry (see ARCHITECTURE.md, consistent reads from the cache).
      '--experimental-watch-progress-notify-interval=250ms',
      '--quota-backend-bytes=8589934592',
      '--log-level=warn',
      '--logger=zap',
      ...tlsArgs,
    ],
    logFile: path.join(opts.logDir, 'etcd.log'),
    env: { ETCD_UNSUPPORTED_ARCH: process.arch === 'x64' ? '' : process.arch },
    ...(opts.restart ? { restart: opts.restart } : {}),
  });
  try {
    await waitForPort('127.0.0.1', clientPort, 20000, proc.alive);
  } catch (err) {
    await proc.stop();
    throw new Error(`etcd did not start: ${(err as Error).message}\n${tailLog(proc.logFile)}`);
  }
  return { endpoint: client, clientPort, process: proc };
}

/** The certificate subject a service's internal certificate has, as NATS maps it to a user (RFC 2253). */
export function natsUserOf(identity: string): string {
  return `CN=${identity},O=svc:internal`;
}

export interface NatsServerConfigOptions {
  /** host:port of the client listener. */
  listen: string;
  storeDir: string;
  maxPayload?: number;
  /** Plain-HTTP monitoring port (health checks), if any. */
  httpPort?: number;
  /**
   * TLS with client certificates mapped to users: only watch-fanout may
   * publish change events and use the JetStream API; gateways may only
   * subscribe to them; any other certificate, or none, gets nothing.
   */
  tls?: ServerTlsFiles;
}

/**
 * The NATS server's configuration, in one place for the harness and the
 * deployments (deploy/scripts/pki.js writes it for docker-compose and
 * Kubernetes).
 */
export function natsServerConfig(opts: NatsServerConfigOptions): string {
  const lines = [
    `listen: ${opts.listen}`,
    `max_payload: ${opts.maxPayload ?? 1048576}`,
    ...(opts.httpPort ? [`http_port: ${opts.httpPort}`] : []),
    'jetstream {',
    `  store_dir: ${JSON.stringify(opts.storeDir)}`,
    '  max_memory_store: 268435456',
    '  max_file_store: 4294967296',
    '}',
  ];
  if (opts.tls) {
    lines.push(
      'tls {',
      `  cert_file: ${JSON.stringify(opts.tls.certFile)}`,
      `  key_file: ${JSON.stringify(opts.tls.keyFile)}`,
      `  ca_file: ${JSON.stringify(opts.tls.caFile)}`,
      '  verify_and_map: true',
      '  timeout: 2',
      '}',
      'authorization {',
      '  users = [',
      // The publisher: change events, the JetStream API (stream, consumers, message reads), acknowledgements,
      // flow control of its ordered consumer, and replies on its inboxes.
      `    { user: ${JSON.stringify(natsUserOf('watch-fanout'))}, permissions: { publish: { allow: ["svc.changes.>", "$JS.API.>", "$JS.ACK.>", "$JS.FC.>", "_INBOX.>"] }, subscribe: { allow: ["svc.changes.>", "_INBOX.>"] } } }`,
      // Gateways read the change events and nothing else.
      `    { user: ${JSON.stringify(natsUserOf('gateway'))}, permissions: { publish: { deny: [">"] }, subscribe: { allow: ["svc.changes.>"] } } }`,
      '  ]',
      '}',
    );
  }
  return lines.join('\n') + '\n';
}

export async function startNats(opts: { storeDir: string; logDir: string; port?: number; maxPayload?: number; restart?: RestartPolicy; tls?: ServerTlsFiles }): Promise<NatsInstance> {
  return onFreshPorts(!opts.port, () => startNatsOnce(opts));
}

async function startNatsOnce(opts: { storeDir: string; logDir: string; port?: number; maxPayload?: number; restart?: RestartPolicy; tls?: ServerTlsFiles }): Promise<NatsInstance> {
  fs.mkdirSync(opts.storeDir, { recursive: true });
  const port = opts.port || (await freePort());
  const configFile = path.join(opts.logDir, 'nats.conf');
  const config = natsServerConfig({ listen: `127.0.0.1:${port}`, storeDir: opts.storeDir, ...(opts.maxPayload ? { maxPayload: opts.maxPayload } : {}), ...(opts.tls ? { tls: opts.tls } : {}) });
  fs.writeFileSync(configFile, config);
  const proc = spawnManaged({
    name: 'nats',
    command: natsBinary(),
    args: ['-c', configFile],
    logFile: path.join(opts.logDir, 'nats.log'),
    ...(opts.restart ? { restart: opts.restart } : {}),
  });
  try {
    await waitForPort('127.0.0.1', port, 20000, proc.alive);
  } catch (err) {
    await proc.stop();
    throw new Error(`nats-server did not start: ${(err as Error).message}\n${tailLog(proc.logFile)}`);
  }
  return { url: `${opts.tls ? 'tls' : 'nats'}://127.0.0.1:${port}`, port, process: proc };
}
