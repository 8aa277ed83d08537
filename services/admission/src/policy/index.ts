/**
 * ValidatingAdmissionPolicy at run time: the validator the admission
 * service calls in its validating phase, and where it reads parameters.
 */
export { PolicyValidator, VALIDATION_FAILURE_ANNOTATION, MAX_AUDIT_ANNOTATION_VALUE_LENGTH, type PolicyAttributes, type PolicyKind, type PolicyOutcome, type PolicySource, type PolicyValidatorOptions, type ValidationFailureValue } from './validator';
export { storageParams, type ParamReader, type ParamResource, type StorageParamsOptions } from './params';
export { aggregateErrors, isAdmissionConfigurationResource, matchedRequest, matchesResources, NO_EQUIVALENTS, parseSelector, type EquivalentResource, type EquivalentResourceMapper, type MatchedRequest, type MatchResources } from './matching';
