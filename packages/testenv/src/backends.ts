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
 * etcd on loopback. With `tls` it serves its clients on HTTPS and accepts
 * only clients presenting a certificate of `tls.caFile` (`--client-cert-auth`).
 */
export async function startEtcd(opts: { dataDir: string; logDir: string; clientPort?: number; peerPort?: number; restart?: RestartPolicy; tls?: ServerTlsFiles }): Promise<EtcdInstance> {
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
      '--max-request-bytes=1572864',
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

export async function startNats(opts: { storeDir: string; logDir: string; port?: number; maxPayload?: number; restart?: RestartPolicy }): Promise<NatsInstance> {
  fs.mkdirSync(opts.storeDir, { recursive: true });
  const port = opts.port || (await freePort());
  const configFile = path.join(opts.logDir, 'nats.conf');
  const config = [
    `listen: 127.0.0.1:${port}`,
    `max_payload: ${opts.maxPayload ?? 1048576}`,
    'jetstream {',
    `  store_dir: ${JSON.stringify(opts.storeDir)}`,
    '  max_memory_store: 268435456',
    '  max_file_store: 4294967296',
    '}',
    '',
  ].join('\n');
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
  return { url: `nats://127.0.0.1:${port}`, port, process: proc };
}
