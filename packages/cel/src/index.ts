/**
 * The project's one CEL layer: compile an expression against declared
 * variables (compile errors name the configuration field), evaluate it with
 * a deterministic cost budget. Used by the authentication configuration,
 * the authorization webhooks' match conditions, and schema validation rules.
 */
export {
  compile,
  toCel,
  fromCel,
  CelCompileError,
  CelEvaluationError,
  CelInputCache,
  COST_BUDGET,
  MAX_EXPRESSION_LENGTH,
  type CompileOptions,
  type CompiledExpression,
  type CelOutcome,
  type CelValueOutcome,
  type CelCostedOutcome,
  type CelEvaluationFailure,
  type EvaluateOptions,
} from './expression';
export { unknownShape, AUTHORIZATION_CHECK_COST, type Shape } from './cost';
export {
  compileAdmissionExpression,
  compileAdmissionVariables,
  admissionVariables,
  admissionMinimumCost,
  admissionRequestValue,
  evaluateAdmission,
  evaluateWithAuthorizer,
  authorizerLibrary,
  AdmissionActivation,
  ADMISSION_REQUEST_TYPE,
  MAX_AUTHORIZER_PASSES,
  type AdmissionCelEnv,
  type AdmissionCompileOptions,
  type AdmissionActivationInit,
  type AdmissionVariable,
  type AdmissionRequestInput,
  type AdmissionRequestValue,
  type AuthorizationCheck,
  type AuthorizationDecision,
  type CelAuthorizer,
  type GroupVersionKindValue,
  type GroupVersionResourceValue,
} from './admission';
export { kubernetesLibrary } from './library';
export type { CelDeclaredType } from './declared-type';
