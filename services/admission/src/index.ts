/**
 * The admission service: built-in plugins, admission webhooks and
 * ValidatingAdmissionPolicies that mutate and validate writes before they
 * are stored. `start(config)` runs it; `AdmissionClient` is how the gateway
 * calls it.
 */
export { start, storageNamespaces, policyValidator, type AdmissionConfig, type AdmissionHandle, type AdmissionStepDeps, type ValidatingPolicyStep, type WebhookSettings } from './server';
export { AdmissionConfigurations, ADMISSION_CONFIGURATION_SOURCES, ADMISSION_REGISTRATION_GROUP, type AdmissionConfigurationKind, type AdmissionConfigurationReader } from './configurations';
export { AdmissionWebhooks, AdmissionRecord, type AdmissionWebhooksOptions, type WebhookAttributes } from './webhook/dispatcher';
export { WebhookIsolation, type IsolationOptions, type IsolationStats } from './webhook/isolation';
export type { ServiceReference, WebhookClientConfig, WebhookConfiguration, WebhookSpec, MatchCondition, FailurePolicy, MatchPolicy } from './webhook/types';
export { AdmissionClient, type AdmitInput, type AdmitOutput } from './client';
export { namespaceLifecycle, runMutating, runValidating, type AdmissionPlugin, type AdmissionAttributes, type AdmissionOperation, type NamespaceReader } from './plugins';
export { ADMISSION_FLAGS, webhookSettings } from './flags';
