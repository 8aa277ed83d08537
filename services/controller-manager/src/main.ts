import { createLogger, parseDuration, runMain } from '@svc/service-kit';
import { CONTROLLER_MANAGER_FLAGS } from './flags';
import { start } from './server';

runMain('controller-manager', CONTROLLER_MANAGER_FLAGS, (flags) => {
  const log = createLogger('controller-manager');
  return start({
    kubeconfig: flags.get('kubeconfig'),
    listen: flags.get('listen'),
    namespaceSyncPeriodMs: flags.getInt('namespace-sync-period-seconds') * 1000,
    controllers: flags.get('controllers').split(','),
    useServiceAccountCredentials: flags.getBool('use-service-account-credentials'),
    ...(flags.get('rbac-bootstrap-kubeconfig') ? { rbacBootstrapKubeconfig: flags.get('rbac-bootstrap-kubeconfig') } : {}),
    ...(flags.get('cluster-info-server') ? { clusterInfoServer: flags.get('cluster-info-server') } : {}),
    leaderElection: {
      enabled: flags.getBool('leader-elect'),
      leaseDurationMs: parseDuration(flags.get('leader-elect-lease-duration'), 'leader-elect-lease-duration'),
      renewDeadlineMs: parseDuration(flags.get('leader-elect-renew-deadline'), 'leader-elect-renew-deadline'),
      retryPeriodMs: parseDuration(flags.get('leader-elect-retry-period'), 'leader-elect-retry-period'),
      resourceName: flags.get('leader-elect-resource-name'),
      resourceNamespace: flags.get('leader-elect-resource-namespace'),
    },
    logger: log,
    // As the original: a leader that lost its Lease exits at once, before another starts, and its supervisor restarts it as a candidate.
    onLostLeadership: () => process.exit(1),
  });
});
