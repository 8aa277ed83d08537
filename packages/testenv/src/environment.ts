import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { ETCD_MAX_REQUEST_BYTES, startEtcd, startNats, type EtcdInstance, type NatsInstance } from './backends';
import type { KubeConfig } from '@kubernetes/client-node' with { 'resolution-mode': 'import' };
import { crdDocumentsOf, installCrds, uninstallCrds, type CrdSource } from './crds';
import { encryptionArgs, type EncryptionEnvironmentOptions } from './encryption';
import { kubeConfigFromText, userKubeconfigFile } from './kube-config';
import { ensureInternalPki, ensurePki, issueClientCertificate, kubeconfig, type InternalIdentity, type InternalPki, type Pki } from './pki';
import { freePort, waitForPort } from './ports';
import { spawnManaged, tailLog, type ManagedProcess, type RestartPolicy } from './process';
import { installWebhooks, prepareWebhooks, readWebhookDocuments, uninstallWebhooks, type WebhookInstallOptions, type WebhookServing } from './webhooks';

/**
 * The whole system as real processes: etcd, NATS with JetStream, and every
 * service on loopback, ready when the gateway's /readyz answers 200. Tests
 * call `startEnvironment()`; `make up` runs the same with fixed ports and a
 * persistent data directory.
 */
/** The authorization modes an environment runs with unless told otherwise. */
export const DEFAULT_AUTHORIZATION_MODE = 'Node,RBAC';

export interface EnvironmentOptions {
  /** Where data, certificates, logs and the kubeconfig go; a fresh temp dir when unset. */
  dir?: string;
  gatewayPort?: number;
  etcdPort?: number;
  natsPort?: number;
  /** First of the consecutive ports of the services (storage, authn, authz, admission, the watch-fanout replicas, the controller-managers); free ports when unset. */
  grpcBasePort?: number;
  /** First of the consecutive ports the services serve their metrics on (`--metrics-bind-address`), in the order they start; free ports when unset. */
  metricsBasePort?: number;
  /** Replicas of watch-fanout (they elect one publisher). */
  watchFanoutReplicas?: number;
  /**
   * Replicas of storage (default 1): the first is `storage` on the first
   * service port, the others `storage-1`, ... (processes, `addresses`,
   * `metricsAddresses`) on free ports; every client is given them all.
   */
  storageReplicas?: number;
  /** authz's --authorization-mode; default DEFAULT_AUTHORIZATION_MODE (Node, then RBAC, as clusters of the original server run). */
  authorizationMode?: string;
  /** authz's `--authorization-policy-file` (the ABAC mode, which `authorizationMode` must then name). */
  authorizationPolicyFile?: string;
  tokenAuthFile?: string;
  anonymousAuth?: boolean;
  /** Also copy service logs here. */
  logStream?: NodeJS.WritableStream;
  readyTimeoutMs?: number;
  /** Extra flags for one service (for example `{ authn: ['--oidc-issuer-url=…'] }`), after the ones the environment sets. */
  serviceArgs?: Partial<Record<string, string[]>>;
  /** Extra flags for every service's node process (for example `--cpu-prof`). */
  nodeArgs?: string[];
  /**
   * Environment variables for every service's process, over this process's
   * own (for example `OTEL_EXPORTER_OTLP_ENDPOINT` to send their traces to
   * a collector).
   */
  env?: NodeJS.ProcessEnv;
  /**
   * Restart etcd, NATS and every service when one dies (default true): with
   * a backoff, logged to `logs/supervisor.log` (and `logStream`).
   */
  supervise?: boolean;
  /** Gateways to run (default 1), each on its own port; `url` is the first, `urls` has them all. */
  gateways?: number;
  /**
   * CustomResourceDefinitions to install before the environment is
   * returned: files or directories of YAML (or JSON) documents, or the
   * definitions as objects. The harness waits until each is Established and
   * served by every gateway. `stop()` deletes the ones it created unless
   * `keepCrds` (or `stop(true)`, which removes all the data anyway).
   */
  crds?: CrdSource[];
  /** Leave the definitions the harness installed in place on `stop()` (for a persistent `dir`). */
  keepCrds?: boolean;
  /** How long to wait for the definitions (default 30 s). */
  crdTimeoutMs?: number;
  /**
   * Controller-manager replicas (default 1), each with `--leader-elect`: one
   * holds the Lease and runs the controllers, the others stand by. They are
   * named `controller-manager`, `controller-manager-1`, ... (processes and
   * `addresses`), on consecutive ports after the watch-fanout replicas'.
   */
  controllerManagers?: number;
  /**
   * Admission webhooks the test serves itself (envtest's
   * WebhookInstallOptions): configurations from files or objects, pointed
   * at a local address with a CA made for it, installed once the control
   * plane is up (after `crds`). `env.webhooks` has the address, port and
   * certificate to serve them with. Given without configurations, only
   * the address and certificate are made.
   */
  webhooks?: WebhookInstallOptions;
  /**
   * The gateway's audit (off by default: auditing costs every request):
   * its policy file, and where events go (a log file, `-` for standard
   * output; a webhook's kubeconfig). Other `--audit-*` flags go in `args`.
   */
  audit?: AuditEnvironmentOptions;
  /**
   * Encryption at rest (storage's and watch-fanout's
   * --encryption-provider-config): by default Secrets are encrypted with a
   * key generated for the environment (encryption.ts); `false` stores every
   * value in plain text; `configFile` uses a configuration as it is.
   */
  encryption?: EncryptionEnvironmentOptions | false;
}

export interface AuditEnvironmentOptions {
  policyFile: string;
  logPath?: string;
  webhookConfigFile?: string;
  /** More `--audit-*` flags for every gateway (batch sizes, rotation). */
  args?: string[];
}

/** The gateway flags of `audit`. */
export function auditArgs(audit: AuditEnvironmentOptions | undefined): string[] {
  if (!audit) return [];
  return [
    `--audit-policy-file=${audit.policyFile}`,
    ...(audit.logPath ? [`--audit-log-path=${audit.logPath}`] : []),
    ...(audit.webhookConfigFile ? [`--audit-webhook-config-file=${audit.webhookConfigFile}`] : []),
    ...(audit.args ?? []),
  ];
}

export interface Environment {
  dir: string;
  url: string;
  /** Every gateway's URL (the first is `url`). */
  urls: string[];
  kubeconfigPath: string;
  pki: Pki;
  /** The internal CA and the services' own certificates (every internal edge is mutual TLS). */
  internalPki: InternalPki;
  etcd: EtcdInstance;
  nats: NatsInstance;
  processes: ManagedProcess[];
  addresses: Record<string, string>;
  /**
   * Each internal service's metrics endpoint (`host:port`; plain HTTP,
   * `GET /metrics`), by process name. The gateway serves its own at
   * `<url>/metrics`.
   */
  metricsAddresses: Record<string, string>;
  /** The EncryptionConfiguration storage and watch-fanout read (unset when encryption is off). */
  encryptionConfigPath?: string;
  /** Where and with what to serve the webhooks of `options.webhooks` (set only with that option). */
  webhooks?: WebhookServing;
  /** The admin's (system:masters) `@kubernetes/client-node` configuration, ready to use. */
  kubeConfig(): Promise<KubeConfig>;
  /** The configuration of `user` in `groups`: a client certificate from the environment's CA (its kubeconfig file is in `dir`). */
  userKubeConfig(user: string, groups?: string[]): Promise<KubeConfig>;
  /** Installs more definitions as `crds` does (files, directories or objects); `stop()` deletes the ones it created. */
  installCrds(crds: CrdSource[], timeoutMs?: number): Promise<void>;
  /**
   * Stops everything started, newest first, after deleting the definitions
   * the harness created (unless `keepCrds`). Data stays in `dir` unless
   * `removeData` (then the definitions go with it).
   */
  stop(removeData?: boolean): Promise<void>;
}

/** The issuer (and default audience) of the environment's service-account tokens. */
export const SERVICE_ACCOUNT_ISSUER = 'https://svc.default.svc';

function serviceMain(service: string): string {
  return path.join(path.dirname(require.resolve(`@svc/${service}/package.json`)), 'dist', 'main.js');
}

function getReady(url: string, ca: Buffer): Promise<number> {
  return new Promise((resolve) => {
    const req = https.get(`${url}/readyz`, { ca, timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', () => resolve(0));
    req.on('timeout', () => req.destroy());
  });
}

/** The gateway's verbose readiness report (which check fails), or why it could not be read. */
function readyzVerbose(url: string, ca: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const req = https.get(`${url}/readyz?verbose`, { ca, timeout: 3000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve(`/readyz?verbose: ${res.statusCode ?? 0}\n${Buffer.concat(chunks).toString('utf8').slice(0, 2000)}`));
    });
    req.on('error', (err) => resolve(`/readyz?verbose: ${err.message}`));
    req.on('timeout', () => req.destroy(new Error('no answer in 3 s')));
  });
}

/** Restarts with backoff, each one a JSON line in `file` (and on `stream`). */
function supervisorPolicy(file: string, stream: NodeJS.WritableStream | undefined): RestartPolicy {
  return {
    initialBackoffMs: 250,
    maxBackoffMs: 10_000,
    onRestart: ({ name, exitCode, signal, restarts, backoffMs }) => {
      const line = JSON.stringify({ time: new Date().toISOString(), level: 'warn', service: 'supervisor', msg: 'process died; restarting', process: name, exitCode, signal, restarts, backoffMs }) + '\n';
      fs.appendFileSync(file, line);
      stream?.write(line);
    },
  };
}

export async function startEnvironment(options: EnvironmentOptions = {}): Promise<Environment> {
  const dir = options.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'svc-env-'));
  const logDir = path.join(dir, 'logs');
  fs.mkdirSync(logDir, { recursive: true });
  const pki = await ensurePki(path.join(dir, 'pki'));
  const internalPki = await ensureInternalPki(path.join(dir, 'pki', 'internal'));
  const processes: ManagedProcess[] = [];
  const restart = options.supervise === false ? undefined : supervisorPolicy(path.join(logDir, 'supervisor.log'), options.logStream);
  let etcd: EtcdInstance | undefined;
  let nats: NatsInstance | undefined;
  let beforeStop: (() => Promise<void>) | undefined;
  // The API's clients first (controller-managers, then gateways, which take themselves out of the
  // default Service through storage), then the internal services together, then etcd and NATS.
  const stopAll = async (): Promise<void> => {
    const stage = (names: (name: string) => boolean) => Promise.all(processes.filter((p) => names(p.name)).map((p) => p.stop()));
    const isClient = (name: string) => name.startsWith('controller-manager');
    const isGateway = (name: string) => name.startsWith('gateway');
    await stage(isClient);
    await stage(isGateway);
    await stage((name) => !isClient(name) && !isGateway(name));
    await Promise.all([nats?.process.stop(), etcd?.process.stop()]);
  };
  try {
    const tlsOf = (identity: InternalIdentity) => ({ caFile: internalPki.caCert, certFile: internalPki.identities[identity].cert, keyFile: internalPki.identities[identity].key });
    etcd = await startEtcd({ dataDir: path.join(dir, 'etcd'), logDir, tls: tlsOf('etcd'), ...(options.etcdPort ? { clientPort: options.etcdPort } : {}), ...(restart ? { restart } : {}) });
    // Only storage and watch-fanout hold a certificate etcd is reached with.
    const etcdClientArgs = (identity: InternalIdentity): string[] => {
      const files = tlsOf(identity);
      return [`--etcd-servers=${etcd?.endpoint ?? ''}`, `--etcd-cafile=${files.caFile}`, `--etcd-certfile=${files.certFile}`, `--etcd-keyfile=${files.keyFile}`];
    };
    nats = await startNats({ storeDir: path.join(dir, 'nats'), logDir, tls: tlsOf('nats'), ...(options.natsPort ? { port: options.natsPort } : {}), ...(restart ? { restart } : {}) });
    // NATS maps each client certificate to a user: watch-fanout publishes, gateways only read.
    const natsClientArgs = (identity: InternalIdentity): string[] => {
      const files = tlsOf(identity);
      return [`--nats-url=${nats?.url ?? ''}`, `--nats-ca-file=${files.caFile}`, `--nats-cert-file=${files.certFile}`, `--nats-key-file=${files.keyFile}`];
    };
    const port = async (offset: number): Promise<number> => (options.grpcBasePort ? options.grpcBasePort + offset : freePort());
    const addresses: Record<string, string> = {};
    for (const [i, name] of ['storage', 'authn', 'authz', 'admission'].entries()) addresses[name] = `127.0.0.1:${await port(i)}`;
    const replicas = options.watchFanoutReplicas ?? 1;
    const fanoutAddresses: string[] = [];
    for (let i = 0; i < replicas; i++) fanoutAddresses.push(`127.0.0.1:${await port(4 + i)}`);
    addresses['watch-fanout'] = fanoutAddresses[0] as string;
    const storageAddresses = [addresses['storage'] as string];
    for (let i = 1; i < (options.storageReplicas ?? 1); i++) {
      storageAddresses.push(`127.0.0.1:${await freePort()}`);
      addresses[`storage-${i}`] = storageAddresses[i] as string;
    }
    const storageTarget = storageAddresses.join(',');
    const gatewayPorts = [options.gatewayPort || (await freePort())];
    for (let i = 1; i < (options.gateways ?? 1); i++) gatewayPorts.push(await freePort());
    const urls = gatewayPorts.map((p) => `https://127.0.0.1:${p}`);
    const url = urls[0] as string;
    // Read before anything starts, so a bad file fails at once.
    const crdDocs = options.crds ? crdDocumentsOf(options.crds) : [];
    if (options.webhooks) readWebhookDocuments(options.webhooks.paths ?? [], options.webhooks.ignoreErrorIfPathMissing);

    // Every gRPC service serves and calls with its own internal certificate.
    const identityArgs = (service: string): string[] => {
      const own = (internalPki.identities as Record<string, { cert: string; key: string } | undefined>)[service];
      return own ? [`--internal-ca-file=${internalPki.caCert}`, `--internal-cert-file=${own.cert}`, `--internal-key-file=${own.key}`] : [];
    };
    const metricsAddresses: Record<string, string> = {};
    let metricsOffset = 0;
    // Every internal service serves its metrics on a port of its own; the gateway on its HTTPS port.
    const metricsArgs = async (name: string, service: string): Promise<string[]> => {
      if (service === 'gateway') return [];
      const p = options.metricsBasePort ? options.metricsBasePort + metricsOffset++ : await freePort();
      metricsAddresses[name] = `127.0.0.1:${p}`;
      return [`--metrics-bind-address=${metricsAddresses[name]}`];
    };
    const launch = async (name: string, service: string, args: string[], listen: string): Promise<void> => {
      const metrics = await metricsArgs(name, service);
      const proc = spawnManaged({
        name,
        command: process.execPath,
        args: ['--enable-source-maps', ...(options.nodeArgs ?? []), serviceMain(service), ...args, ...metrics, ...identityArgs(service), ...(options.serviceArgs?.[service] ?? [])],
        logFile: path.join(logDir, `${name}.log`),
        ...(options.env ? { env: options.env } : {}),
        ...(options.logStream ? { tee: options.logStream } : {}),
        ...(restart ? { restart } : {}),
      });
      processes.push(proc);
      const [host, p] = [listen.slice(0, listen.lastIndexOf(':')), Number(listen.slice(listen.lastIndexOf(':') + 1))];
      try {
        await waitForPort(host, p, 20000, proc.alive);
      } catch (err) {
        throw new Error(`${name} did not start: ${(err as Error).message}\n${tailLog(proc.logFile)}`);
      }
    };
    // storage writes and reads etcd's values, watch-fanout reads them: both hold the same configuration.
    const encryption = encryptionArgs(dir, options.encryption);
    // Every service redials the services it calls until they answer, so all of them start at once;
    // the gateway's readiness below says when the whole system is up.
    const launches: Promise<void>[] = [];
    for (const [i, addr] of storageAddresses.entries()) {
      launches.push(launch(i === 0 ? 'storage' : `storage-${i}`, 'storage', [`--listen=${addr}`, ...etcdClientArgs('storage'), `--etcd-max-request-bytes=${ETCD_MAX_REQUEST_BYTES}`, ...encryption.args], addr));
    }
    const authnArgs = [
      `--listen=${addresses['authn']}`,
      `--client-ca-file=${pki.caCert}`,
      `--authorization-mode=${options.authorizationMode ?? DEFAULT_AUTHORIZATION_MODE}`,
      `--storage-address=${storageTarget}`,
      `--service-account-issuer=${SERVICE_ACCOUNT_ISSUER}`,
      `--service-account-signing-key-file=${pki.serviceAccountKey}`,
      `--service-account-key-file=${pki.serviceAccountKey}`,
      '--enable-bootstrap-token-auth',
    ];
    if (options.anonymousAuth !== undefined) authnArgs.push(`--anonymous-auth=${String(options.anonymousAuth)}`);
    if (options.tokenAuthFile) authnArgs.push(`--token-auth-file=${options.tokenAuthFile}`);
    launches.push(launch('authn', 'authn', authnArgs, addresses['authn'] as string));
    const authzHasConfigFile = (options.serviceArgs?.['authz'] ?? []).some((a) => a === '--authorization-config' || a.startsWith('--authorization-config='));
    launches.push(
      launch(
        'authz',
        'authz',
        [
          `--listen=${addresses['authz']}`,
          // A test's --authorization-config replaces the modes (the two may not be combined).
          ...(authzHasConfigFile ? [] : [`--authorization-mode=${options.authorizationMode ?? DEFAULT_AUTHORIZATION_MODE}`]),
          `--storage-address=${storageTarget}`,
          `--watch-fanout-address=${fanoutAddresses.join(',')}`,
          ...(options.authorizationPolicyFile ? [`--authorization-policy-file=${options.authorizationPolicyFile}`] : []),
        ],
        addresses['authz'] as string,
      ),
    );
    launches.push(
      launch(
        'admission',
        'admission',
        [`--listen=${addresses['admission']}`, `--storage-address=${storageTarget}`, `--watch-fanout-address=${fanoutAddresses.join(',')}`, `--authz-address=${addresses['authz']}`],
        addresses['admission'] as string,
      ),
    );
    for (const [i, addr] of fanoutAddresses.entries()) {
      launches.push(launch(`watch-fanout-${i}`, 'watch-fanout', [`--listen=${addr}`, ...etcdClientArgs('watch-fanout'), ...natsClientArgs('watch-fanout'), `--id=watch-fanout-${i}`, ...encryption.args], addr));
    }
    for (const [i, gatewayPort] of gatewayPorts.entries()) {
      launches.push(
        launch(
          i === 0 ? 'gateway' : `gateway-${i}`,
          'gateway',
          [
            `--listen=127.0.0.1:${gatewayPort}`,
            `--tls-cert-file=${pki.servingCert}`,
            `--tls-private-key-file=${pki.servingKey}`,
            `--client-ca-file=${pki.caCert}`,
            `--storage-address=${storageTarget}`,
            `--authn-address=${addresses['authn']}`,
            `--authz-address=${addresses['authz']}`,
            `--admission-address=${addresses['admission']}`,
            `--watch-fanout-address=${fanoutAddresses.join(',')}`,
            ...natsClientArgs('gateway'),
            ...auditArgs(options.audit),
          ],
          `127.0.0.1:${gatewayPort}`,
        ),
      );
    }
    // One that fails to start fails the start; the others are stopped with it below.
    const launched = await Promise.allSettled(launches);
    const failed = launched.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed) throw failed.reason;
    const ca = fs.readFileSync(pki.caCert);
    const deadline = Date.now() + (options.readyTimeoutMs ?? 30000);
    for (const [i, gatewayUrl] of urls.entries()) {
      while ((await getReady(gatewayUrl, ca)) !== 200) {
        if (Date.now() > deadline) {
          // Which check fails, the gateway's log, and the backends' own last words and restarts.
          const logs = [i === 0 ? 'gateway.log' : `gateway-${i}.log`, 'admission.log', 'authn.log', 'authz.log', 'storage.log', 'supervisor.log'];
          const tails = logs.map((file) => `--- ${file}\n${tailLog(path.join(logDir, file), 10)}`).join('\n');
          throw new Error(`the gateway did not become ready\n${await readyzVerbose(gatewayUrl, ca)}\n${tails}`);
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const kubeconfigPath = path.join(dir, 'admin.kubeconfig');
    fs.writeFileSync(kubeconfigPath, kubeconfig(url, pki.caCert, pki.adminCert, pki.adminKey), { mode: 0o600 });
    // Controllers are API clients, each with its own least-privilege service account; the
    // process's certificate may only create those accounts' tokens. Only the writer of the
    // default roles holds everything it grants.
    const cm = await issueClientCertificate(pki, 'controller-manager', 'system:svc-controller-manager', []);
    const cmKubeconfig = path.join(dir, 'controller-manager.kubeconfig');
    fs.writeFileSync(cmKubeconfig, kubeconfig(url, pki.caCert, cm.cert, cm.key, 'system:svc-controller-manager'), { mode: 0o600 });
    const bootstrap = await issueClientCertificate(pki, 'rbac-bootstrap', 'system:svc-rbac-bootstrap', ['system:masters']);
    const bootstrapKubeconfig = path.join(dir, 'rbac-bootstrap.kubeconfig');
    fs.writeFileSync(bootstrapKubeconfig, kubeconfig(url, pki.caCert, bootstrap.cert, bootstrap.key, 'system:svc-rbac-bootstrap'), { mode: 0o600 });
    // Every replica is elected (--leader-elect is on by default): one runs the controllers.
    for (let i = 0; i < Math.max(1, options.controllerManagers ?? 1); i++) {
      const name = i === 0 ? 'controller-manager' : `controller-manager-${i}`;
      const listen = `127.0.0.1:${await port(4 + replicas + i)}`;
      addresses[name] = listen;
      await launch(
        name,
        'controller-manager',
        [
          `--kubeconfig=${cmKubeconfig}`,
          `--rbac-bootstrap-kubeconfig=${bootstrapKubeconfig}`,
          '--use-service-account-credentials',
          `--listen=${listen}`,
          '--controllers=*,bootstrapsigner,tokencleaner',
          '--leader-elect',
        ],
        listen,
      );
    }
    const adminTls = { ca, cert: fs.readFileSync(pki.adminCert), key: fs.readFileSync(pki.adminKey) };
    const installedCrds: string[] = [];
    if (crdDocs.length > 0) installedCrds.push(...(await installCrds(urls, adminTls, crdDocs, options.crdTimeoutMs)));
    // The port is picked once every service listens, so none of them can take it.
    const webhooks = options.webhooks ? await prepareWebhooks(options.webhooks, path.join(dir, 'webhook-serving-certs')) : undefined;
    if (webhooks) {
      await installWebhooks(urls, adminTls, webhooks, options.webhooks?.timeoutMs);
      if (options.webhooks?.uninstallOnStop) {
        // Removed before anything stops, while the gateway still answers.
        beforeStop = () => uninstallWebhooks(url, adminTls, webhooks);
      }
    }
    const kubeconfigText = fs.readFileSync(kubeconfigPath, 'utf8');
    const started = { etcd, nats };
    return {
      dir,
      url,
      urls,
      kubeconfigPath,
      pki,
      internalPki,
      etcd: started.etcd,
      nats: started.nats,
      processes,
      addresses,
      metricsAddresses,
      ...(encryption.file ? { encryptionConfigPath: encryption.file } : {}),
      ...(webhooks ? { webhooks } : {}),
      kubeConfig: () => kubeConfigFromText(kubeconfigText),
      userKubeConfig: async (user, groups = []) => kubeConfigFromText(fs.readFileSync(await userKubeconfigFile(pki, url, dir, user, groups), 'utf8')),
      async installCrds(crds, timeoutMs = options.crdTimeoutMs) {
        installedCrds.push(...(await installCrds(urls, adminTls, crdDocumentsOf(crds), timeoutMs)));
      },
      async stop(removeData = false) {
        try {
          await beforeStop?.();
          if (!removeData && !options.keepCrds && installedCrds.length > 0) await uninstallCrds(url, adminTls, installedCrds.splice(0), options.crdTimeoutMs);
        } finally {
          await stopAll();
        }
        if (removeData) fs.rmSync(dir, { recursive: true, force: true });
      },
    };
  } catch (err) {
    await stopAll();
    throw err;
  }
}
