/**
 * The integration harness: real etcd, NATS and every service as processes on
 * free loopback ports, with a kubeconfig and a ready client. Users start it
 * from their own test suites; `make up` runs the same code in the foreground.
 */
export { freePort, waitForPort } from './ports';
export { spawnManaged, tailLog, type ManagedProcess, type SpawnOptions, type RestartPolicy } from './process';
export { etcdBinary, natsBinary } from './binaries';
export { startEtcd, startNats, natsServerConfig, natsUserOf, type EtcdInstance, type NatsInstance, type NatsServerConfigOptions, type ServerTlsFiles } from './backends';
export { ensurePki, ensureInternalPki, ensureServingCertificate, issueClientCertificate, kubeconfig, tokenKubeconfig, INTERNAL_IDENTITIES, type Pki, type InternalPki, type InternalIdentity, type CertificatePair } from './pki';
export { startEnvironment, SERVICE_ACCOUNT_ISSUER, DEFAULT_AUTHORIZATION_MODE, type Environment, type EnvironmentOptions, type AuditEnvironmentOptions } from './environment';
export { encryptionConfigText, ensureEncryptionConfig, newEncryptionKey, writeEncryptionConfig, ENCRYPTION_CONFIG_FILE, type EncryptionEnvironmentOptions } from './encryption';
export { crdDocumentsOf, installCrds, readCrdDocuments, readDocuments, uninstallCrds, type AdminTls, type CrdSource } from './crds';
export { kubeConfigFromText, userKubeconfigFile } from './kube-config';
export {
  installWebhooks,
  prepareWebhooks,
  readWebhookDocuments,
  uninstallWebhooks,
  WEBHOOK_GROUP,
  type ServiceReference,
  type Webhook,
  type WebhookClientConfig,
  type WebhookConfiguration,
  type WebhookInstallOptions,
  type WebhookServing,
} from './webhooks';
