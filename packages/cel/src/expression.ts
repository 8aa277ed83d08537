import { celEnv, isCelError, isCelList, isCelMap, parse, plan, type CelEnv, type CelFunc, type CelInput, type CelValue } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';
import { CostEstimator, largestSize, shapeOf, unknownShape, type Shape } from './cost';
import { inferType, referencesVariable, selectsField, TypeCheckProblem, typeName, undeclared, type CelDeclaredType } from './checks';
import { kubernetesLibrary } from './library';

/**
 * Compiling and evaluating one CEL expression (`@bufbuild/cel`, with the
 * strings extension; `matches` runs on the library's RE2 port, so regular
 * expressions take linear time). An expression is compiled once, when its
 * configuration loads, against the variables the caller declares; a
 * reference to any other variable, the selection of a field a declared
 * object does not have, or a result of another type than the one asked for
 * is a compile error naming the caller's field, as the original server's
 * type checker reports it.
 *
 * Every evaluation is preceded by a deterministic bound of its cost (see
 * cost.ts), and one whose bound exceeds the budget is refused with an error
 * instead of run.
 */

export const MAX_EXPRESSION_LENGTH = 10_000;
/** The cost budget of one evaluation (the original's per-call limit). */
export const COST_BUDGET = 1_000_000;

/** An expression that cannot be compiled; the message starts with the field (`a.b.expression: Invalid value: ...`). */
export class CelCompileError extends Error {
  constructor(
    readonly field: string,
    readonly detail: string,
  ) {
    super(`${field}: ${detail}`);
    this.name = 'CelCompileError';
  }
}

/** Why an evaluation failed: it would cost more than the budget, or it failed while running (a missing key, a wrong type). */
export type CelEvaluationFailure = 'CostExceeded' | 'Runtime';

export class CelEvaluationError extends Error {
  constructor(
    readonly reason: CelEvaluationFailure,
    message: string,
  ) {
    super(message);
    this.name = 'CelEvaluationError';
  }
}

export type CelOutcome = { ok: true; value: unknown } | { ok: false; error: CelEvaluationError };

/** An outcome whose value is still a CEL value (a variable another expression reads keeps its CEL types: a double stays a double). */
export interface CelValueOutcome {
  outcome: { ok: true; value: CelValue } | { ok: false; error: CelEvaluationError };
  cost: number;
}

/** An outcome with the cost charged for it (the bound it was admitted with; 0 when refused), for budgets spanning several expressions. */
export interface CelCostedOutcome {
  outcome: CelOutcome;
  cost: number;
}

export interface EvaluateOptions {
  /** The budget of this evaluation, when less than the expression's own (what is left of a request's budget). */
  costBudget?: number;
  /** Conversions and measurements shared by the expressions of one request. */
  cache?: CelInputCache;
}

export interface CompileOptions {
  /** The configuration field the expression comes from; every compile error names it. */
  field: string;
  /** The variables in scope and their declared types (`dyn` when any value may come). */
  variables: Readonly<Record<string, CelDeclaredType>>;
  /** The type the result must have; an expression that certainly has another is a compile error. */
  resultType?: CelDeclaredType;
  /** The cost budget of one evaluation; COST_BUDGET by default. */
  costBudget?: number;
  /** Functions beyond the Kubernetes library that this expression's environment has (the admission authorizer library). */
  functions?: readonly CelFunc[];
}

export interface CompiledExpression {
  /** The source, for messages. */
  readonly source: string;
  /** The inferred type of the result (`dyn` where it depends on the input). */
  readonly resultType: CelDeclaredType;
  /** Evaluates with the variables bound to `values` (JSON-like data); refused when its cost bound exceeds the budget. */
  evaluate(values: Readonly<Record<string, unknown>>, options?: EvaluateOptions): CelOutcome;
  /** As evaluate, with the cost charged. */
  evaluateWithCost(values: Readonly<Record<string, unknown>>, options?: EvaluateOptions): CelCostedOutcome;
  /** As evaluateWithCost, the value left as CEL made it. */
  evaluateToCel(values: Readonly<Record<string, unknown>>, options?: EvaluateOptions): CelValueOutcome;
  /** Whether the expression selects `<variable>.<field>` anywhere (how the original detects `claims.email`). */
  selects(variable: string, field: string): boolean;
  /** Whether the expression reads the variable at all (a transition rule reads `oldSelf`). */
  references(variable: string): boolean;
  /** The cost bound of an evaluation with these values. */
  estimateCost(values: Readonly<Record<string, unknown>>, cache?: CelInputCache): number;
  /**
   * The worst-case cost over every input of the given shapes (sizes from the
   * declared bounds of a schema); `unknownSize` bounds what no shape describes.
   */
  worstCaseCost(shapes: Readonly<Record<string, Shape>>, unknownSize: number): number;
}

/**
 * The JSON value as a CEL input, following the declared type where there is
 * one: objects become maps (a declared object keeps only its declared
 * fields), arrays lists, numbers ints where the type says int (or says
 * nothing and the number is integral) and doubles where it says double.
 */
export function toCel(value: unknown, type: CelDeclaredType = 'dyn', cache?: CelInputCache): CelInput {
  if (value === null || value === undefined) return null;
  // Values that are CEL already (an authorizer, lazily evaluated variables) are given as they are.
  if (isCelMap(value) || isCelList(value)) return value;
  if (typeof value === 'object' && typeof type === 'object' && cache) return cache.converted(value, type, () => convert(value, type, cache));
  return convert(value, type, cache);
}

function convert(value: unknown, type: CelDeclaredType, cache: CelInputCache | undefined): CelInput {
  if (value === null || value === undefined) return null;
  if (Array.isArray(value)) {
    const item = typeof type === 'object' && 'list' in type ? type.list : 'dyn';
    return value.map((v) => toCel(v, item, cache));
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    if (typeof type === 'object' && 'object' in type) {
      const out = new Map<string, CelInput>();
      for (const [k, v] of entries) {
        const field = type.object[k];
        if (field !== undefined && v !== undefined) out.set(k, toCel(v, field, cache));
      }
      return out;
    }
    const valueType = typeof type === 'object' && 'map' in type ? type.map : 'dyn';
    return new Map(entries.map(([k, v]) => [k, toCel(v, valueType, cache)]));
  }
  if (typeof value === 'number') {
    if (type === 'double') return value;
    return Number.isSafeInteger(value) ? BigInt(value) : value;
  }
  if (typeof value === 'string' || typeof value === 'boolean') return value;
  return String(value);
}

/**
 * What the expressions of one request share: each input object is converted
 * to CEL, and measured for the cost bound, once however many expressions
 * read it. Lives as long as the request; holds its objects weakly.
 */
export class CelInputCache {
  private readonly conversions = new WeakMap<object, Map<CelDeclaredType, CelInput>>();
  private readonly shapes = new WeakMap<object, Shape>();
  private readonly largest = new WeakMap<object, number>();

  converted(value: object, type: CelDeclaredType, make: () => CelInput): CelInput {
    let byType = this.conversions.get(value);
    if (!byType) {
      byType = new Map();
      this.conversions.set(value, byType);
    }
    let input = byType.get(type);
    if (input === undefined) {
      input = make();
      byType.set(type, input);
    }
    return input;
  }

  /** Records the shape of a value whose parts cannot be walked (a lazily evaluated map, once its parts are known). */
  describe(value: object, shape: Shape): void {
    this.shapes.set(value, shape);
  }

  /** The largest size within a value (what bounds the parts no shape describes), measured once per object. */
  largestSize(value: unknown): number {
    if (typeof value !== 'object' || value === null) return largestSize(value);
    let size = this.largest.get(value);
    if (size === undefined) {
      size = largestSize(value);
      this.largest.set(value, size);
    }
    return size;
  }

  shape(value: unknown): Shape {
    if (typeof value !== 'object' || value === null) return shapeOf(value);
    let shape = this.shapes.get(value);
    if (!shape) {
      shape = shapeOf(value);
      this.shapes.set(value, shape);
    }
    return shape;
  }
}

/** A CEL result as plain JSON-like data (lists as arrays, maps as objects, ints as numbers). */
export function fromCel(value: CelValue): unknown {
  if (isCelList(value)) return [...value].map(fromCel);
  if (isCelMap(value)) return Object.fromEntries([...value.entries()].map(([k, v]) => [String(k), fromCel(v)]));
  if (typeof value === 'bigint') return Number(value);
  return value;
}

const env = celEnv({ funcs: [...strings, ...kubernetesLibrary] });
/** Environments with more functions, one per function list. */
const extendedEnvs = new WeakMap<readonly CelFunc[], CelEnv>();

function environment(functions: readonly CelFunc[] | undefined): CelEnv {
  if (!functions || functions.length === 0) return env;
  let extended = extendedEnvs.get(functions);
  if (!extended) {
    extended = celEnv({ funcs: [...strings, ...kubernetesLibrary, ...functions] });
    extendedEnvs.set(functions, extended);
  }
  return extended;
}

function accepts(wanted: CelDeclaredType, actual: CelDeclaredType): boolean {
  return wanted === 'dyn' || actual === 'dyn' || typeName(wanted) === typeName(actual);
}

/**
 * Compiles `source`; an empty, too long or unparsable expression, one that
 * names an undeclared variable or field, or one whose result has another
 * type than `resultType`, is a CelCompileError naming `options.field`.
 */
export function compile(source: string, options: CompileOptions): CompiledExpression {
  const { field } = options;
  const budget = options.costBudget ?? COST_BUDGET;
  const names = Object.keys(options.variables);
  if (source.trim() === '') throw new CelCompileError(field, 'Required value: an expression is required');
  if (source.length > MAX_EXPRESSION_LENGTH) throw new CelCompileError(field, `Too long: may not be more than ${MAX_EXPRESSION_LENGTH} characters`);
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(source);
  } catch (err) {
    throw new CelCompileError(field, `Invalid value: compilation failed: ${(err as Error).message.split('\n')[0] ?? ''}`);
  }
  const expr = parsed.expr;
  if (!expr) throw new CelCompileError(field, 'Invalid value: compilation failed: empty expression');
  const unknown = new Set<string>();
  undeclared(expr, new Set(names), unknown);
  if (unknown.size > 0) {
    const available = names.map((n) => `'${n}'`).join(', ');
    throw new CelCompileError(field, `Invalid value: compilation failed: undeclared reference to ${[...unknown].map((n) => `'${n}'`).join(', ')} (only ${available} ${names.length === 1 ? 'is' : 'are'} available here)`);
  }
  let resultType: CelDeclaredType;
  try {
    resultType = inferType(expr, new Map(Object.entries(options.variables)));
  } catch (err) {
    if (err instanceof TypeCheckProblem) throw new CelCompileError(field, `Invalid value: compilation failed: ${err.message}`);
    throw err;
  }
  if (options.resultType && !accepts(options.resultType, resultType)) {
    throw new CelCompileError(field, `Invalid value: must evaluate to ${typeName(options.resultType)} (the expression's type is ${typeName(resultType)})`);
  }
  let run: (ctx: Record<string, CelInput>) => CelValue;
  try {
    run = plan(environment(options.functions), parsed) as (ctx: Record<string, CelInput>) => CelValue;
  } catch (err) {
    throw new CelCompileError(field, `Invalid value: compilation failed: ${(err as Error).message}`);
  }
  const estimateCost = (values: Readonly<Record<string, unknown>>, cache = new CelInputCache()): number => {
    const scope = new Map(names.map((n) => [n, cache.shape(values[n])]));
    const largest = Math.max(1, ...names.map((n) => cache.largestSize(values[n])));
    return new CostEstimator(unknownShape(largest)).estimate(expr, scope).cost;
  };
  return {
    source,
    resultType,
    estimateCost,
    selects: (variable, name) => selectsField(expr, variable, name),
    references: (variable) => referencesVariable(expr, variable),
    worstCaseCost(shapes, unknownSize) {
      const scope = new Map(names.map((n) => [n, shapes[n] ?? unknownShape(unknownSize)]));
      return new CostEstimator(unknownShape(unknownSize)).estimate(expr, scope).cost;
    },
    evaluate(values, evaluation) {
      return this.evaluateWithCost(values, evaluation).outcome;
    },
    evaluateWithCost(values, evaluation) {
      const { cost, outcome } = this.evaluateToCel(values, evaluation);
      return { cost, outcome: outcome.ok ? { ok: true, value: fromCel(outcome.value) } : outcome };
    },
    evaluateToCel(values, evaluation = {}) {
      const cache = evaluation.cache ?? new CelInputCache();
      const limit = Math.min(budget, evaluation.costBudget ?? budget);
      const cost = estimateCost(values, cache);
      if (cost > limit) return { cost: 0, outcome: { ok: false, error: new CelEvaluationError('CostExceeded', `operation cancelled: actual cost limit exceeded (bound ${cost} > budget ${limit})`) } };
      const ctx: Record<string, CelInput> = {};
      for (const n of names) ctx[n] = toCel(values[n], options.variables[n], cache);
      let result: CelValue;
      try {
        result = run(ctx);
      } catch (err) {
        return { cost, outcome: { ok: false, error: new CelEvaluationError('Runtime', (err as Error).message) } };
      }
      if (isCelError(result)) return { cost, outcome: { ok: false, error: new CelEvaluationError('Runtime', result.message) } };
      return { cost, outcome: { ok: true, value: result } };
    },
  };
}
