import * as http from 'node:http';
import { createLogger, type Logger } from '@svc/service-kit';
import { BootstrapSigner, TokenCleaner } from './bootstrap-controllers';
import { ApiClient, loadKubeconfig, type Credentials } from './client';
import { CustomResourceDefinitionController } from './crd-controller';
import { ClusterRoleAggregation, RbacBootstrap } from './rbac-controllers';
import { CONTROLLER_ACCOUNTS } from './rbac-defaults';
import { ServiceAccountTokenSource } from './service-account-credentials';
import { NamespaceController } from './namespace-controller';
import { ServiceAccountController } from './service-account-controller';

export interface ControllerManagerConfig {
  /** Kubeconfig with the gateway URL and this process's credentials. */
  kubeconfig: string;
  /** HTTP listen address for the health endpoints, host:port (port 0 picks a free one). */
  listen: string;
  /** How often every namespace is looked at again. */
  namespaceSyncPeriodMs?: number;
  /** `--controllers`: which controllers run (see `enabledControllers`). */
  controllers?: string[];
  /** The server URL published in cluster-info; the kubeconfig's server when unset. */
  clusterInfoServer?: string;
  /**
   * Each controller talks to the API as its own service account in
   * svc-system (`system:controller:<account>` grants what it needs); the
   * kubeconfig's identity then only creates those accounts and their tokens.
   */
  useServiceAccountCredentials?: boolean;
  /**
   * Kubeconfig of the identity that writes the default roles and bindings
   * (it must hold every permission it grants: `system:masters`); the
   * `--kubeconfig` one when unset.
   */
  rbacBootstrapKubeconfig?: string;
  logger?: Logger;
}

/** Controllers that run unless disabled, and those that run only when named (as upstream). */
export const DEFAULT_CONTROLLERS = ['namespace', 'serviceaccount', 'rbac-bootstrap', 'clusterrole-aggregation', 'customresourcedefinition'];
export const OPTIONAL_CONTROLLERS = ['bootstrapsigner', 'tokencleaner'];

/**
 * The controllers a `--controllers` list enables: `*` is every default one,
 * a name enables that controller, `-name` disables it. An unknown name is an
 * error.
 */
export function enabledControllers(list: string[]): Set<string> {
  const known = new Set([...DEFAULT_CONTROLLERS, ...OPTIONAL_CONTROLLERS]);
  const out = new Set<string>();
  for (const raw of list.map((x) => x.trim()).filter(Boolean)) {
    if (raw === '*') {
      for (const c of DEFAULT_CONTROLLERS) out.add(c);
      continue;
    }
    const name = raw.startsWith('-') ? raw.slice(1) : raw;
    if (!known.has(name)) throw new Error(`--controllers: unknown controller ${JSON.stringify(name)} (known: ${[...known].join(', ')})`);
  }
  for (const raw of list.map((x) => x.trim())) {
    if (raw === '*' || raw === '') continue;
    if (raw.startsWith('-')) out.delete(raw.slice(1));
    else out.add(raw);
  }
  return out;
}

/** The kubeconfig cluster-info publishes: the server and its CA, no credentials. */
export function clusterInfoKubeconfig(creds: Credentials, server?: string): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- cluster:',
    ...(creds.ca ? [`    certificate-authority-data: ${creds.ca.toString('base64')}`] : []),
    `    server: ${server ?? creds.server}`,
    '  name: ""',
    'contexts: null',
    'current-context: ""',
    'preferences: {}',
    'users: null',
    '',
  ].join('\n');
}

export interface ControllerManagerHandle {
  address: string;
  port: number;
  namespaces: NamespaceController;
  serviceAccounts: ServiceAccountController;
  /** The controllers that run, by name. */
  controllers: string[];
  close(): Promise<void>;
}

/**
 * Starts the controllers. They are clients of the API like any other (they
 * never reach storage directly); `/readyz` answers 200 once they have read
 * the state they work from.
 */
export async function start(config: ControllerManagerConfig): Promise<ControllerManagerHandle> {
  const log = config.logger ?? createLogger('controller-manager');
  if (!config.kubeconfig) throw new Error('--kubeconfig is required');
  const enabled = enabledControllers(config.controllers ?? ['*']);
  const creds = loadKubeconfig(config.kubeconfig);
  const ownClient = new ApiClient(creds);
  const clients: ApiClient[] = [ownClient];
  // The client a controller works with: its own service account's, or the process's.
  const clientFor = (controller: string): ApiClient => {
    const account = CONTROLLER_ACCOUNTS[controller];
    if (!config.useServiceAccountCredentials || !account) return ownClient;
    const tokenSource = new ServiceAccountTokenSource(ownClient, account, log.with({ controller }));
    const client = new ApiClient(creds, { tokenSource, userAgent: `svc-controller-manager/${account}` });
    clients.push(client);
    return client;
  };
  const resyncMs = config.namespaceSyncPeriodMs ?? 30000;
  const namespaces = new NamespaceController(clientFor('namespace'), log.with({ controller: 'namespace' }), { resyncMs });
  const serviceAccounts = new ServiceAccountController(clientFor('serviceaccount'), log.with({ controller: 'serviceaccount' }), { resyncMs });
  const running: Array<{ name: string; synced: boolean; start(): void; stop(): Promise<void> }> = [];
  if (enabled.has('namespace')) running.push(Object.assign(namespaces, { name: 'namespace' }));
  if (enabled.has('serviceaccount')) running.push(Object.assign(serviceAccounts, { name: 'serviceaccount' }));
  if (enabled.has('bootstrapsigner')) {
    const kubeconfig = clusterInfoKubeconfig(creds, config.clusterInfoServer);
    running.push(Object.assign(new BootstrapSigner(clientFor('bootstrapsigner'), log.with({ controller: 'bootstrapsigner' }), { resyncMs, clusterInfoKubeconfig: kubeconfig }), { name: 'bootstrapsigner' }));
  }
  if (enabled.has('rbac-bootstrap')) {
    const bootstrapClient = config.rbacBootstrapKubeconfig ? new ApiClient(loadKubeconfig(config.rbacBootstrapKubeconfig)) : ownClient;
    if (bootstrapClient !== ownClient) clients.push(bootstrapClient);
    running.push(Object.assign(new RbacBootstrap(bootstrapClient, log.with({ controller: 'rbac-bootstrap' })), { name: 'rbac-bootstrap' }));
  }
  if (enabled.has('clusterrole-aggregation')) running.push(Object.assign(new ClusterRoleAggregation(clientFor('clusterrole-aggregation'), log.with({ controller: 'clusterrole-aggregation' }), { resyncMs }), { name: 'clusterrole-aggregation' }));
  if (enabled.has('customresourcedefinition')) {
    running.push(Object.assign(new CustomResourceDefinitionController(clientFor('customresourcedefinition'), log.with({ controller: 'customresourcedefinition' }), { resyncMs }), { name: 'customresourcedefinition' }));
  }
  if (enabled.has('tokencleaner')) running.push(Object.assign(new TokenCleaner(clientFor('tokencleaner'), log.with({ controller: 'tokencleaner' }), { resyncMs }), { name: 'tokencleaner' }));
  const health = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const ok = path === '/healthz' || path === '/livez' || (path === '/readyz' && running.every((c) => c.synced));
    const known = path === '/healthz' || path === '/livez' || path === '/readyz';
    res.writeHead(known ? (ok ? 200 : 503) : 404, { 'content-type': 'text/plain' });
    res.end(known ? (ok ? 'ok' : 'not ready') : 'not found');
  });
  const [host, port] = [config.listen.slice(0, config.listen.lastIndexOf(':')), Number(config.listen.slice(config.listen.lastIndexOf(':') + 1))];
  await new Promise<void>((resolve, reject) => {
    health.once('error', reject);
    health.listen(port, host, () => resolve());
  });
  const bound = (health.address() as { port: number }).port;
  for (const c of running) c.start();
  log.info('controller-manager started', { health: `${host}:${bound}`, controllers: running.map((c) => c.name), serviceAccountCredentials: config.useServiceAccountCredentials === true });
  return {
    address: `${host}:${bound}`,
    port: bound,
    namespaces,
    serviceAccounts,
    controllers: running.map((c) => c.name),
    close: async () => {
      await Promise.all(running.map((c) => c.stop()));
      for (const c of clients) c.close();
      await new Promise<void>((resolve) => health.close(() => resolve()));
    },
  };
}
