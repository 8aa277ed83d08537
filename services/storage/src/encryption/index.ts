/**
 * Encryption at rest: the values storage writes to etcd, and every reader
 * of etcd's values (storage, watch-fanout), go through a ValueTransformer.
 */
export { EncryptionConfigError, ENCRYPTION_CONFIG_API_VERSION, ENCRYPTION_CONFIG_KIND, parseEncryptionConfig, readEncryptionConfig, type EncryptionConfig, type ProviderConfig } from './config';
export { ENCRYPTED_PREFIX } from './providers';
export { ConfiguredTransformer, isEncrypted, PLAIN_TRANSFORMER, ValueTransformError, type ValueTransformer } from './transformer';
export { EncryptionAtRest, encryptionFromFlags, ENCRYPTION_FLAGS, type EncryptionAtRestOptions } from './at-rest';
