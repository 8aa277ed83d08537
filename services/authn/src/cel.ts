import { compile, CelCompileError, COST_BUDGET } from '@svc/cel';

/**
 * The authentication configuration's expressions over the shared CEL layer
 * (`@svc/cel`): each has one variable, `claims` (the token's payload; claim
 * rules and mappings) or `user` (the mapped user; user rules), of any shape.
 */

export { CelCompileError, COST_BUDGET };

export type CelVariable = 'claims' | 'user';

export type CelOutcome = { ok: true; value: unknown } | { ok: false; error: string };

export interface CompiledExpression {
  readonly source: string;
  /** Evaluates with `value` bound to the expression's variable; refused when its cost bound exceeds the budget. */
  evaluate(value: unknown): CelOutcome;
  /** Whether the expression selects `<variable>.<field>` anywhere (how the original detects `claims.email`). */
  selects(field: string): boolean;
  estimateCost(value: unknown): number;
}

export function compileExpression(source: string, field: string, variable: CelVariable = 'claims'): CompiledExpression {
  const compiled = compile(source, { field, variables: { [variable]: 'dyn' } });
  return {
    source,
    evaluate(value) {
      const r = compiled.evaluate({ [variable]: value });
      return r.ok ? r : { ok: false, error: r.error.message };
    },
    selects: (name) => compiled.selects(variable, name),
    estimateCost: (value) => compiled.estimateCost({ [variable]: value }),
  };
}
