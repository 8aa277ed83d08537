import * as http from 'node:http';
import { createLogger, type Logger } from '@svc/service-kit';
import { AdmissionPolicyStatusController } from './admission-policy-status';
import { BootstrapSigner, TokenCleaner } from './bootstrap-controllers';
import { ApiClient, loadKubeconfig, type Credentials } from './client';
import { realClock, sleep } from './clock';
import { CustomResourceDefinitionController } from './crd-controller';
import { DisruptionController } from './disruption-controller';
import { EventRecorder } from './event-recorder';
import { FlowControlBootstrap } from './flowcontrol-bootstrap';
import { GarbageCollector } from './garbage-collector';
import { SharedInformerFactory } from './informer';
import { apiLease, candidateIdentity, LeaderElector } from './leader-election';
import { ClusterRoleAggregation, RbacBootstrap } from './rbac-controllers';
import { SYSTEM_NAMESPACE } from '@svc/apimachinery';
import { CONTROLLER_ACCOUNTS, CONTROLLER_MANAGER_LEASE, INFORMER_ACCOUNT } from './rbac-defaults';
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
   * (it must hold every permission it grants: `system:masters`) and the
   * default API Priority and Fairness configuration; the `--kubeconfig` one
   * when unset.
   */
  rbacBootstrapKubeconfig?: string;
  /** `--leader-elect` and its settings; without it the controllers run at once. */
  leaderElection?: LeaderElectionSettings;
  /**
   * Called when this process led and lost its Lease; the controllers are
   * stopped instead when unset. The command exits, as the original does.
   */
  onLostLeadership?: () => void;
  logger?: Logger;
}

export interface LeaderElectionSettings {
  enabled: boolean;
  leaseDurationMs?: number;
  renewDeadlineMs?: number;
  retryPeriodMs?: number;
  resourceName?: string;
  resourceNamespace?: string;
  /** This candidate's identity; the host name and a random suffix when unset. */
  identity?: string;
}

export const DEFAULT_LEASE_NAME = CONTROLLER_MANAGER_LEASE;
export const DEFAULT_LEASE_NAMESPACE = SYSTEM_NAMESPACE;
/** The reporter of the controller-manager's own events (leader election). */
export const CONTROLLER_MANAGER_REPORTER = 'svc-controller-manager';

/** How long past the renew deadline a leader that did not renew is reported unhealthy (as upstream's leader-election health check). */
const LEADER_HEALTH_SLACK_MS = 20_000;

/** Controllers that run unless disabled, and those that run only when named (as upstream). */
export const DEFAULT_CONTROLLERS = ['namespace', 'serviceaccount', 'rbac-bootstrap', 'flowcontrol-bootstrap', 'clusterrole-aggregation', 'customresourcedefinition', 'validatingadmissionpolicy-status', 'disruption', 'garbagecollector'];
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
  /** The namespace controller, when enabled. */
  namespaces: NamespaceController | undefined;
  /** The service-account controller, when enabled. */
  serviceAccounts: ServiceAccountController | undefined;
  /** The controllers that run, by name. */
  controllers: string[];
  /** This process's identity in the leader election (undefined without it). */
  identity: string | undefined;
  /** Whether the controllers run here: always without leader election, while holding the Lease with it. */
  isLeader(): boolean;
  close(): Promise<void>;
}

interface Runnable {
  name: string;
  synced: boolean;
  start(): void;
  stop(): Promise<void>;
}

/**
 * Starts the controllers. They are clients of the API like any other (they
 * never reach storage directly) and take what they watch from shared
 * informers, one list-watch per collection for the whole process. With
 * leader election they start once this process holds the Lease; the RBAC
 * defaults are put in place by every replica at once (the Lease's own
 * permission is among them). `/readyz` answers 200 once the controllers
 * that run here have read the state they work from (a standby is ready);
 * `/healthz/leader-election` tells who leads.
 */
export async function start(config: ControllerManagerConfig): Promise<ControllerManagerHandle> {
  const log = config.logger ?? createLogger('controller-manager');
  if (!config.kubeconfig) throw new Error('--kubeconfig is required');
  const enabled = enabledControllers(config.controllers ?? ['*']);
  const creds = loadKubeconfig(config.kubeconfig);
  const ownClient = new ApiClient(creds);
  const clients: ApiClient[] = [ownClient];
  const tokenSources: ServiceAccountTokenSource[] = [];
  const stopping = new AbortController();
  // The client of a service account in the system namespace, whose token the process's identity asks for.
  const accountClient = (account: string, logFields: Record<string, string>): ApiClient => {
    const tokenSource = new ServiceAccountTokenSource(ownClient, account, log.with(logFields));
    tokenSources.push(tokenSource);
    const client = new ApiClient(creds, { tokenSource, userAgent: `svc-controller-manager/${account}` });
    clients.push(client);
    return client;
  };
  // The client a controller works with: its own service account's, or the process's.
  const clientFor = (controller: string): ApiClient => {
    const account = CONTROLLER_ACCOUNTS[controller];
    return config.useServiceAccountCredentials && account ? accountClient(account, { controller }) : ownClient;
  };
  const resyncMs = config.namespaceSyncPeriodMs ?? 30000;
  // The informers read for every controller, under one identity that may only list and watch what they follow.
  const informerClient = config.useServiceAccountCredentials ? accountClient(INFORMER_ACCOUNT, { component: 'informers' }) : ownClient;
  const informers = new SharedInformerFactory(informerClient, log.with({ component: 'informers' }), { resyncMs });
  const controllerLog = (name: string): Logger => log.with({ controller: name });
  // A controller asks the factory for its informers when it is made: only enabled ones are.
  const namespaces = enabled.has('namespace') ? new NamespaceController(clientFor('namespace'), informers, controllerLog('namespace')) : undefined;
  const serviceAccounts = enabled.has('serviceaccount') ? new ServiceAccountController(clientFor('serviceaccount'), informers, controllerLog('serviceaccount')) : undefined;
  const elected: Runnable[] = [];
  const add = (name: string, make: () => Omit<Runnable, 'name'> | undefined): void => {
    const made = enabled.has(name) ? make() : undefined;
    if (made) elected.push(Object.assign(made, { name }));
  };
  add('namespace', () => namespaces);
  add('serviceaccount', () => serviceAccounts);
  add('bootstrapsigner', () => {
    const kubeconfig = clusterInfoKubeconfig(creds, config.clusterInfoServer);
    return new BootstrapSigner(clientFor('bootstrapsigner'), informers, controllerLog('bootstrapsigner'), { resyncMs, clusterInfoKubeconfig: kubeconfig });
  });
  add('clusterrole-aggregation', () => new ClusterRoleAggregation(clientFor('clusterrole-aggregation'), informers, controllerLog('clusterrole-aggregation')));
  add('customresourcedefinition', () => new CustomResourceDefinitionController(clientFor('customresourcedefinition'), informers, controllerLog('customresourcedefinition')));
  add('validatingadmissionpolicy-status', () => new AdmissionPolicyStatusController(clientFor('validatingadmissionpolicy-status'), informers, controllerLog('validatingadmissionpolicy-status')));
  add('garbagecollector', () => new GarbageCollector(clientFor('garbagecollector'), informers, controllerLog('garbagecollector')));
  add('disruption', () => new DisruptionController(clientFor('disruption'), informers, controllerLog('disruption')));
  add('tokencleaner', () => new TokenCleaner(clientFor('tokencleaner'), informers, controllerLog('tokencleaner'), { resyncMs }));
  // Every replica writes the defaults, as every replica of the original server does at start: they are idempotent.
  // The RBAC defaults and the API Priority and Fairness configuration are written with the privileged identity,
  // as the original server writes both with its loopback one.
  const bootstraps: Runnable[] = [];
  let privileged: ApiClient | undefined;
  const bootstrapClient = (): ApiClient => {
    if (!privileged) {
      privileged = config.rbacBootstrapKubeconfig ? new ApiClient(loadKubeconfig(config.rbacBootstrapKubeconfig)) : ownClient;
      if (privileged !== ownClient) clients.push(privileged);
    }
    return privileged;
  };
  if (enabled.has('rbac-bootstrap')) bootstraps.push(Object.assign(new RbacBootstrap(bootstrapClient(), controllerLog('rbac-bootstrap')), { name: 'rbac-bootstrap' }));
  if (enabled.has('flowcontrol-bootstrap')) {
    bootstraps.push(Object.assign(new FlowControlBootstrap(bootstrapClient(), controllerLog('flowcontrol-bootstrap')), { name: 'flowcontrol-bootstrap' }));
  }
  const names = [...bootstraps.map((b) => b.name), ...elected.map((c) => c.name)];

  let controllersRunning = false;
  let controllersStopped: Promise<void> | undefined;
  const startControllers = (): void => {
    if (controllersRunning || controllersStopped) return;
    controllersRunning = true;
    // Handlers first, so the first lists reach every controller.
    for (const c of elected) c.start();
    informers.start();
    // As upstream's client builder: a controller's account and token exist once it starts, not only at its first write.
    for (const source of tokenSources) void warmUp(source);
    log.info('controllers started', { controllers: elected.map((c) => c.name), informers: informers.collections });
  };
  const warmUp = async (source: ServiceAccountTokenSource): Promise<void> => {
    while (!stopping.signal.aborted) {
      try {
        await source.token();
        return;
      } catch (err) {
        log.debug('service account token not issued yet; retrying', { account: source.account, err: (err as Error).message });
        await sleep(realClock, 1000, stopping.signal);
      }
    }
  };
  const stopControllers = (): Promise<void> => {
    stopping.abort();
    controllersStopped ??= (async () => {
      controllersRunning = false;
      await Promise.all(elected.map((c) => c.stop()));
      await informers.stop();
    })();
    return controllersStopped;
  };

  const election = config.leaderElection?.enabled ? config.leaderElection : undefined;
  const leaseNamespace = election?.resourceNamespace || DEFAULT_LEASE_NAMESPACE;
  const leaseName = election?.resourceName || DEFAULT_LEASE_NAME;
  const elector = election
    ? new LeaderElector({
        // The process's own identity holds the Lease (system:svc-controller-manager may get, create and update it).
        lease: apiLease(ownClient, leaseNamespace, leaseName),
        namespace: leaseNamespace,
        name: leaseName,
        identity: election.identity ?? candidateIdentity(),
        ...(election.leaseDurationMs ? { leaseDurationMs: election.leaseDurationMs } : {}),
        ...(election.renewDeadlineMs ? { renewDeadlineMs: election.renewDeadlineMs } : {}),
        ...(election.retryPeriodMs ? { retryPeriodMs: election.retryPeriodMs } : {}),
        log: log.with({ component: 'leader-election' }),
        // The original's LeaderElection event on the Lease, written with the same identity.
        events: new EventRecorder(ownClient, { controller: CONTROLLER_MANAGER_REPORTER, log: log.with({ component: 'leader-election' }) }),
      })
    : undefined;
  const renewDeadlineMs = election?.renewDeadlineMs ?? 10_000;
  const isLeader = (): boolean => (elector ? elector.isLeader() : controllersRunning);

  const health = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    const answer = (code: number, body: string, type = 'text/plain'): void => {
      res.writeHead(code, { 'content-type': type });
      res.end(body);
    };
    if (path === '/healthz' || path === '/livez') return answer(200, 'ok');
    if (path === '/readyz') {
      const bootstrapped = bootstraps.every((b) => b.synced);
      // A standby is ready: it waits for the Lease, which is its job.
      const ready = bootstrapped && (!isLeader() || elected.every((c) => c.synced));
      const role = elector ? (isLeader() ? ' (leading)' : ` (standby; leader: ${elector.leader() ?? 'none'})`) : '';
      return answer(ready ? 200 : 503, ready ? `ok${role}` : `not ready${role}`);
    }
    if (path === '/healthz/leader-election') {
      // Unhealthy only when leading without a renewal for well past the deadline (this process would have exited).
      const overdue = elector !== undefined && elector.isLeader() && Date.now() - elector.lastRenewal() > renewDeadlineMs + LEADER_HEALTH_SLACK_MS;
      const body = { enabled: elector !== undefined, identity: elector?.identity, leading: isLeader(), leader: elector ? elector.leader() : undefined, lease: elector ? `${leaseNamespace}/${leaseName}` : undefined };
      return answer(overdue ? 503 : 200, JSON.stringify(body), 'application/json');
    }
    return answer(404, 'not found');
  });
  const [host, port] = [config.listen.slice(0, config.listen.lastIndexOf(':')), Number(config.listen.slice(config.listen.lastIndexOf(':') + 1))];
  await new Promise<void>((resolve, reject) => {
    health.once('error', reject);
    health.listen(port, host, () => resolve());
  });
  const bound = (health.address() as { port: number }).port;
  for (const b of bootstraps) b.start();
  if (elector) {
    void elector.run({
      onStartedLeading: startControllers,
      onStoppedLeading: () => {
        if (config.onLostLeadership) config.onLostLeadership();
        else void stopControllers();
      },
    });
  } else {
    startControllers();
  }
  log.info('controller-manager started', {
    health: `${host}:${bound}`,
    controllers: names,
    serviceAccountCredentials: config.useServiceAccountCredentials === true,
    leaderElection: elector ? { lease: `${leaseNamespace}/${leaseName}`, identity: elector.identity } : false,
  });
  return {
    address: `${host}:${bound}`,
    port: bound,
    namespaces,
    serviceAccounts,
    controllers: names,
    identity: elector?.identity,
    isLeader,
    close: async () => {
      await Promise.all([stopControllers(), ...bootstraps.map((b) => b.stop())]);
      // Given up only once the controllers stopped, so two never act at once.
      await elector?.stop();
      for (const c of clients) c.close();
      await new Promise<void>((resolve) => health.close(() => resolve()));
    },
  };
}
