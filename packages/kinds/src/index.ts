/**
 * The built-in kinds: one declarative registry entry per kind (schema with
 * merge markers, printer columns, short names, categories, and the
 * create/update strategy: status handling, defaults, kind-specific
 * validation). Generic metadata validation (names, namespaces, labels) is not
 * here; the API machinery runs it for every kind.
 */
export { builtinResources, registerBuiltins } from './builtins';
export {
  CONDITION_SCHEMA,
  LABEL_SELECTOR_SCHEMA,
  MANAGED_FIELDS_ENTRY_SCHEMA,
  OBJECT_META_SCHEMA,
  OBJECT_REFERENCE_SCHEMA,
  OWNER_REFERENCE_SCHEMA,
  TYPE_META_PROPERTIES,
  objectSchema,
} from './object-meta';
export { prepareFinalizeSubresourceUpdate, prepareStatusSubresourceUpdate, prepareSubresourceUpdate } from './status';
export { CONFIG_MAP_SCHEMA, configMapDefinition } from './config-map';
export { SECRET_SCHEMA, SECRET_TYPES, SERVICE_ACCOUNT_NAME_ANNOTATION, secretDefinition } from './secret';
export { SERVICE_ACCOUNT_SCHEMA, serviceAccountDefinition } from './service-account';
export { NAMESPACE_FINALIZER, NAMESPACE_NAME_LABEL, NAMESPACE_SCHEMA, namespaceDefinition } from './namespace';
export {
  AFFINITY_SCHEMA,
  CONTAINER_PORT_SCHEMA,
  CONTAINER_SCHEMA,
  CONTAINER_STATUS_SCHEMA,
  ENV_VAR_SCHEMA,
  POD_SCHEMA,
  POD_SECURITY_CONTEXT_SCHEMA,
  POD_SPEC_SCHEMA,
  POD_STATUS_SCHEMA,
  POD_TEMPLATE_SPEC_SCHEMA,
  PROBE_SCHEMA,
  RESOURCE_REQUIREMENTS_SCHEMA,
  SECURITY_CONTEXT_SCHEMA,
  TOLERATION_SCHEMA,
  VOLUME_SCHEMA,
} from './pod-schema';
export { defaultPullPolicy, podDefinition, podDisplayStatus, podGracePeriod, qosClass } from './pod';
export { EVICTION_SCHEMA, POD_DISRUPTION_BUDGET_SCHEMA, POLICY_GROUP, UNHEALTHY_POD_EVICTION_POLICIES, podDisruptionBudgetDefinition } from './pod-disruption-budget';
export { SERVICE_PORT_SCHEMA, SERVICE_SCHEMA, SERVICE_TYPES, serviceDefinition } from './service';
export { NODE_ROLE_LABEL_PREFIX, NODE_SCHEMA, nodeDefinition } from './node';
export { ENDPOINTS_SCHEMA, endpointsDefinition } from './endpoints';
export { EVENT_SCHEMA, eventDefinition } from './event';
export { EVENTS_API_VERSION, EVENTS_GROUP, EVENTS_V1_SCHEMA, convertEvent, eventsV1Definition, validateEventCreate, validateEventUpdate } from './events-v1';
export { LEASE_GROUP, LEASE_SCHEMA, leaseDefinition } from './lease';
export { AUTHENTICATION_GROUP, SELF_SUBJECT_REVIEW_SCHEMA, TOKEN_REQUEST_SCHEMA, TOKEN_REVIEW_SCHEMA, authenticationDefinitions } from './authentication';
export { BOOTSTRAPPERS_GROUP, BOOTSTRAP_TOKEN_SECRET_PREFIX, BOOTSTRAP_USER_PREFIX, CLUSTER_INFO_CONFIG_MAP, JWS_KEY_PREFIX, bootstrapSecretMatches, bootstrapTokenExpired, parseBootstrapToken, readBootstrapTokenSecret, type BootstrapTokenSecret } from './bootstrap-token';
export { CLUSTER_ROLE_BINDING_SCHEMA, CLUSTER_ROLE_SCHEMA, RBAC_GROUP, RBAC_GROUP_UPSTREAM, ROLE_BINDING_SCHEMA, ROLE_SCHEMA, rbacDefinitions } from './rbac';
export {
  ADMISSION_KINDS,
  ADMISSIONREGISTRATION_GROUP,
  ADMISSIONREGISTRATION_GROUP_UPSTREAM,
  ADMISSIONREGISTRATION_RESOURCES,
  DEFAULT_WEBHOOK_TIMEOUT_SECONDS,
  admissionRegistrationDefinitions,
  applyValidatingAdmissionPolicyBindingDefaults,
  applyValidatingAdmissionPolicyDefaults,
  applyWebhookConfigurationDefaults,
} from './admissionregistration';
export {
  MUTATING_WEBHOOK_CONFIGURATION_SCHEMA,
  VALIDATING_ADMISSION_POLICY_BINDING_SCHEMA,
  VALIDATING_ADMISSION_POLICY_SCHEMA,
  VALIDATING_WEBHOOK_CONFIGURATION_SCHEMA,
} from './admissionregistration-schemas';
export {
  ADMISSION_REVIEW_VERSIONS,
  MAX_MATCH_CONDITIONS,
  labelSelectorErrors,
  matchConditionsErrors,
  validateValidatingAdmissionPolicy,
  validateValidatingAdmissionPolicyBinding,
  validateWebhookConfiguration,
} from './admissionregistration-validation';
export { webhookClientConfigErrors } from './webhook-client-config';
export { AUTHORIZATION_GROUP, LOCAL_SUBJECT_ACCESS_REVIEW_SCHEMA, SELF_SUBJECT_ACCESS_REVIEW_SCHEMA, SUBJECT_ACCESS_REVIEW_SCHEMA, authorizationDefinitions } from './authorization';
export {
  API_APPROVED_ANNOTATION,
  APIEXTENSIONS_GROUP,
  CRD_CLEANUP_FINALIZER,
  CUSTOM_RESOURCE_DEFINITION_SCHEMA,
  applyCustomResourceDefinitionDefaults,
  crdCondition,
  crdConditionTrue,
  customResourceDefinitionDefinition,
  crdStorageVersion,
} from './custom-resource-definition';
export { BUILTIN_GROUPS, validateCustomResourceDefinition, validateNames } from './crd-validation';
export { forbidden, notSupported } from './field-errors';
export { customResourceDefinitions, customResourceStrategy, servedNames, specNames, type CustomResourceNames } from './custom-resources';
export { MAX_SCHEMA_DEPTH, defaultErrors, normalizeExtensions, schemaFromStructural, structuralSchemaErrors } from './structural-schema';
export { applySchemaDefaults, validateValue } from './schema-values';
export { compileValidationRules, declaredType, MAX_MESSAGE_EXPRESSION_LENGTH, PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET, STATIC_ESTIMATED_COST_LIMIT, STATIC_ESTIMATED_CRD_COST_LIMIT, type CompiledRules, type RuleValidator } from './validation-rules';
export { AUTOSCALING_GROUP, SCALE_PRINTER_COLUMNS, SCALE_SCHEMA, SCALE_SUBRESOURCE, UNSET_SPEC_REPLICAS, desiredReplicas, objectManagedFields, scaleFromObject, scaleManagedFields, validateScale, withSpecReplicas, type ScaleView } from './scale';
export {
  AUTOUPDATE_SPEC_ANNOTATION,
  FLOWCONTROL_API_VERSION,
  FLOWCONTROL_GROUP,
  FLOW_SCHEMA_CATCH_ALL,
  FLOW_SCHEMA_EXEMPT,
  PRIORITY_LEVEL_CATCH_ALL,
  PRIORITY_LEVEL_EXEMPT,
  mandatoryFlowSchemas,
  mandatoryPriorityLevelConfigurations,
  suggestedFlowSchemas,
  suggestedPriorityLevelConfigurations,
} from './flowcontrol-bootstrap';
export {
  DEFAULT_NOMINAL_CONCURRENCY_SHARES,
  DEFAULT_QUEUING,
  FLOW_SCHEMA_DEFAULT_MATCHING_PRECEDENCE,
  FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE,
  FLOW_SCHEMA_SCHEMA,
  MAX_HASH_BITS,
  MAX_QUEUES,
  PRIORITY_LEVEL_CONFIGURATION_SCHEMA,
  applyFlowSchemaDefaults,
  applyPriorityLevelConfigurationDefaults,
  flowControlDefinitions,
  flowControlSpecsEqual,
  flowSchemaDefinition,
  priorityLevelConfigurationDefinition,
  requiredEntropyBits,
  validateFlowSchema,
  validatePriorityLevelConfiguration,
} from './flowcontrol';
