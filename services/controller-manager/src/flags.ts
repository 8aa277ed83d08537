import type { FlagSpecs } from '@svc/service-kit';

export const CONTROLLER_MANAGER_FLAGS: FlagSpecs = {
  kubeconfig: { description: 'Kubeconfig with the gateway URL and this process\'s credentials', required: true },
  listen: { description: 'HTTP listen address for /healthz, /livez and /readyz (host:port)', default: '127.0.0.1:7110' },
  'namespace-sync-period-seconds': { description: 'How often every namespace is looked at again, besides watching them', default: '30' },
};
