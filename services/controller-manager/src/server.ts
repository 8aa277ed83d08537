import * as http from 'node:http';
import { createLogger, type Logger } from '@svc/service-kit';
import { ApiClient, loadKubeconfig } from './client';
import { NamespaceController } from './namespace-controller';
import { ServiceAccountController } from './service-account-controller';

export interface ControllerManagerConfig {
  /** Kubeconfig with the gateway URL and this process's credentials. */
  kubeconfig: string;
  /** HTTP listen address for the health endpoints, host:port (port 0 picks a free one). */
  listen: string;
  /** How often every namespace is looked at again. */
  namespaceSyncPeriodMs?: number;
  logger?: Logger;
}

export interface ControllerManagerHandle {
  address: string;
  port: number;
  namespaces: NamespaceController;
  serviceAccounts: ServiceAccountController;
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
  const client = new ApiClient(loadKubeconfig(config.kubeconfig));
  const namespaces = new NamespaceController(client, log.with({ controller: 'namespace' }), { resyncMs: config.namespaceSyncPeriodMs ?? 30000 });
  const serviceAccounts = new ServiceAccountController(client, log.with({ controller: 'serviceaccount' }), { resyncMs: config.namespaceSyncPeriodMs ?? 30000 });
  const health = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const ok = path === '/healthz' || path === '/livez' || (path === '/readyz' && namespaces.synced && serviceAccounts.synced);
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
  namespaces.start();
  serviceAccounts.start();
  log.info('controller-manager started', { health: `${host}:${bound}`, controllers: ['namespace', 'serviceaccount'] });
  return {
    address: `${host}:${bound}`,
    port: bound,
    namespaces,
    serviceAccounts,
    close: async () => {
      await Promise.all([namespaces.stop(), serviceAccounts.stop()]);
      client.close();
      await new Promise<void>((resolve) => health.close(() => resolve()));
    },
  };
}
