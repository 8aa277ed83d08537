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
  COST_BUDGET,
  MAX_EXPRESSION_LENGTH,
  type CompileOptions,
  type CompiledExpression,
  type CelOutcome,
  type CelEvaluationFailure,
} from './expression';
export type { CelDeclaredType } from './checks';
