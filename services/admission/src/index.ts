/**
 * The admission service: built-in plugins that mutate and validate writes
 * before they are stored. `start(config)` runs it; `AdmissionClient` is how
 * the gateway calls it.
 */
export { start, storageNamespaces, type AdmissionConfig, type AdmissionHandle } from './server';
export { AdmissionClient, type AdmitInput, type AdmitOutput } from './client';
export { namespaceLifecycle, runMutating, runValidating, type AdmissionPlugin, type AdmissionAttributes, type AdmissionOperation, type NamespaceReader } from './plugins';
export { ADMISSION_FLAGS } from './flags';
