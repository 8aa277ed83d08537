import { METRICS_FLAGS, type FlagSpecs } from '@svc/service-kit';

export const CONTROLLER_MANAGER_FLAGS: FlagSpecs = {
  ...METRICS_FLAGS,
  kubeconfig: { description: 'Kubeconfig with the gateway URL and this process\'s credentials', required: true },
  listen: { description: 'HTTP listen address for /healthz, /livez and /readyz (host:port)', default: '127.0.0.1:7110' },
  controllers: {
    description: 'Comma-separated controllers to run: * (every default one: namespace, serviceaccount, rbac-bootstrap, flowcontrol-bootstrap, clusterrole-aggregation, customresourcedefinition, validatingadmissionpolicy-status, disruption, garbagecollector), a name to enable one (bootstrapsigner, tokencleaner are off by default), -name to disable one',
    default: '*',
  },
  'cluster-info-server': { description: 'Server URL the bootstrap signer publishes in the svc-public/cluster-info ConfigMap; default: the --kubeconfig server', default: '' },
  'use-service-account-credentials': {
    description: 'Run each controller as its own service account in svc-system (system:controller:<account> roles); the --kubeconfig identity then needs only to create those accounts and their tokens',
    default: 'false',
    boolean: true,
  },
  'rbac-bootstrap-kubeconfig': { description: 'Kubeconfig of a system:masters identity for the rbac-bootstrap and flowcontrol-bootstrap controllers, which write the default roles and the default API Priority and Fairness configuration; default: --kubeconfig', default: '' },
  'namespace-sync-period-seconds': { description: 'How often every namespace is looked at again, besides watching them', default: '30' },
  'leader-elect': {
    description: 'Run the controllers only while this process holds the leader Lease, so several replicas can run and one takes over when the leader goes (rbac-bootstrap and flowcontrol-bootstrap run on every replica)',
    default: 'true',
    boolean: true,
  },
  'leader-elect-lease-duration': { description: 'How long candidates wait after the leader\'s last observed renewal before they take the Lease over', default: '15s' },
  'leader-elect-renew-deadline': { description: 'How long the leader keeps trying to renew before it stops leading (and exits, for its supervisor to restart it); less than the lease duration', default: '10s' },
  'leader-elect-retry-period': { description: 'How often candidates try to acquire and the leader renews the Lease', default: '2s' },
  'leader-elect-resource-name': { description: 'Name of the coordination.svc.io/v1 Lease the replicas compete for', default: 'svc-controller-manager' },
  'leader-elect-resource-namespace': { description: 'Namespace of that Lease', default: 'svc-system' },
};
