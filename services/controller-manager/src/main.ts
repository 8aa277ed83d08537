import { runMain } from '@svc/service-kit';
import { CONTROLLER_MANAGER_FLAGS } from './flags';
import { start } from './server';

runMain('controller-manager', CONTROLLER_MANAGER_FLAGS, (flags) =>
  start({
    kubeconfig: flags.get('kubeconfig'),
    listen: flags.get('listen'),
    namespaceSyncPeriodMs: flags.getInt('namespace-sync-period-seconds') * 1000,
    controllers: flags.get('controllers').split(','),
    useServiceAccountCredentials: flags.getBool('use-service-account-credentials'),
    ...(flags.get('rbac-bootstrap-kubeconfig') ? { rbacBootstrapKubeconfig: flags.get('rbac-bootstrap-kubeconfig') } : {}),
    ...(flags.get('cluster-info-server') ? { clusterInfoServer: flags.get('cluster-info-server') } : {}),
  }),
);
