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
  type CelCostedOutcome,
  type CelEvaluationFailure,
  type EvaluateOptions,
} from './expression';
export { unknownShape, type Shape } from './cost';
export { kubernetesLibrary } from './library';
export type { CelDeclaredType } from './declared-type';
