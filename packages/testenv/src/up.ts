#!/usr/bin/env node
import * as fs from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_AUTHORIZATION_MODE, startEnvironment } from './environment';

/**
 * `make up`: the whole system in the foreground with fixed ports and data
 * under .svc/ (kept between runs). Ctrl-C or SIGTERM stops everything it
 * started. Ports and paths come from SVC_* environment variables.
 */
function encryptionOption(value: string | undefined): { encryption?: { configFile: string } | false } {
  if (!value) return {};
  return value === 'none' ? { encryption: false } : { encryption: { configFile: path.resolve(value) } };
}

async function main(): Promise<void> {
  const env = (name: string, fallback: string): string => process.env[name] ?? fallback;
  const dir = path.resolve(env('SVC_DATA_DIR', '.svc'));
  fs.mkdirSync(dir, { recursive: true });
  // The audit log, on by default with the repository's policy (SVC_AUDIT_POLICY_FILE= turns it off).
  // The repository's policy is there only in a checkout, not where the package is installed.
  const repositoryPolicy = path.resolve(__dirname, '../../../deploy/audit-policy.yaml');
  const auditPolicy = env('SVC_AUDIT_POLICY_FILE', fs.existsSync(repositoryPolicy) ? repositoryPolicy : '');
  const auditLog = path.resolve(env('SVC_AUDIT_LOG_PATH', path.join(dir, 'logs', 'audit.log')));
  const started = await startEnvironment({
    dir,
    gatewayPort: Number(env('SVC_GATEWAY_PORT', '6443')),
    etcdPort: Number(env('SVC_ETCD_PORT', '2379')),
    natsPort: Number(env('SVC_NATS_PORT', '4222')),
    grpcBasePort: Number(env('SVC_GRPC_BASE_PORT', '7101')),
    metricsBasePort: Number(env('SVC_METRICS_BASE_PORT', '9101')),
    watchFanoutReplicas: Number(env('SVC_WATCH_FANOUT_REPLICAS', '2')),
    controllerManagers: Number(env('SVC_CONTROLLER_MANAGER_REPLICAS', '2')),
    authorizationMode: env('SVC_AUTHORIZATION_MODE', DEFAULT_AUTHORIZATION_MODE),
    ...(process.env['SVC_AUTHORIZATION_POLICY_FILE'] ? { authorizationPolicyFile: process.env['SVC_AUTHORIZATION_POLICY_FILE'] } : {}),
    ...(process.env['SVC_TOKEN_AUTH_FILE'] ? { tokenAuthFile: process.env['SVC_TOKEN_AUTH_FILE'] } : {}),
    ...(process.env['SVC_QUIET'] ? {} : { logStream: process.stderr }),
    nodeArgs: env('SVC_NODE_ARGS', '').split(' ').filter(Boolean),
    ...(auditPolicy ? { audit: { policyFile: auditPolicy, logPath: auditLog, args: ['--audit-log-maxsize=100', '--audit-log-maxbackup=10'] } } : {}),
    // Secrets encrypted at rest by default, with a key generated on the first start and kept in the data
    // directory (0600); SVC_ENCRYPTION_PROVIDER_CONFIG names another configuration, `none` turns it off.
    ...encryptionOption(process.env['SVC_ENCRYPTION_PROVIDER_CONFIG']),
  });
  process.stdout.write(
    [
      '',
      `gateway            ${started.url}`,
      `kubeconfig         ${started.kubeconfigPath}`,
      `etcd               ${started.etcd.endpoint}`,
      `nats               ${started.nats.url}`,
      ...Object.entries(started.addresses).map(([k, v]) => `${k.padEnd(18)} ${v}`),
      `metrics            ${started.url}/metrics (gateway, authorized); plain HTTP for the others:`,
      ...Object.entries(started.metricsAddresses).map(([k, v]) => `  ${k.padEnd(16)} http://${v}/metrics`),
      `logs               ${path.join(dir, 'logs')}`,
      ...(auditPolicy ? [`audit log          ${auditLog} (policy ${auditPolicy})`] : []),
      `encryption config  ${started.encryptionConfigPath ?? 'none: values are stored in plain text'}`,
      '',
      `try: kubectl --kubeconfig ${path.relative(process.cwd(), started.kubeconfigPath)} get namespaces`,
      'Ctrl-C stops everything.',
      '',
    ].join('\n'),
  );
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    process.stdout.write('stopping...\n');
    started.stop().then(
      () => process.exit(0),
      () => process.exit(1),
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(`svc-up: ${(err as Error).message}\n`);
  process.exit(1);
});
