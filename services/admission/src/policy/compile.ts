import type { ApiObject } from '@svc/apimachinery';
import { CelCompileError, compileAdmissionExpression, compileAdmissionVariables, type AdmissionCelEnv, type AdmissionVariable, type CompiledExpression } from '@svc/cel';
import { PER_CALL_LIMIT } from '@svc/kinds';
import type { MatchResources } from './matching';

/**
 * A ValidatingAdmissionPolicy compiled for evaluation, as the original's
 * `compilePolicy` does it: the variables first (each sees the ones before
 * it), then the match conditions, validations and audit annotations with
 * `object`, `oldObject`, `request`, `namespaceObject`, `variables`,
 * `authorizer` and, with a `paramKind`, `params`; message expressions
 * without `authorizer`. An expression that does not compile (the write-time
 * checks refuse such policies, so only one written before those checks
 * could have it) is kept with its error, which evaluation reports under the
 * policy's failurePolicy.
 */

export type FailurePolicy = 'Fail' | 'Ignore';

/** One expression, compiled or with the reason it is not. */
export type Compiled = { program: CompiledExpression; error?: undefined } | { program?: undefined; error: string };

export interface CompiledValidation {
  expression: string;
  message: string | undefined;
  reason: string | undefined;
  check: Compiled;
  /** The messageExpression, when there is one. */
  messageExpression: Compiled | undefined;
}

export interface CompiledMatchCondition {
  name: string;
  check: Compiled;
}

export interface CompiledAuditAnnotation {
  key: string;
  valueExpression: string;
  value: Compiled;
}

export interface CompiledPolicy {
  name: string;
  uid: string;
  resourceVersion: string;
  failurePolicy: FailurePolicy;
  paramKind: { apiVersion: string; kind: string } | undefined;
  matchConstraints: MatchResources | undefined;
  variables: AdmissionVariable[];
  matchConditions: CompiledMatchCondition[];
  validations: CompiledValidation[];
  auditAnnotations: CompiledAuditAnnotation[];
  /** Whether any expression (a variable included) reads `namespaceObject`: the namespace is read only then. */
  readsNamespaceObject: boolean;
}

interface PolicySpec {
  paramKind?: { apiVersion?: string; kind?: string } | null;
  matchConstraints?: MatchResources | null;
  validations?: Array<{ expression?: string; message?: string; reason?: string; messageExpression?: string }>;
  failurePolicy?: string;
  auditAnnotations?: Array<{ key?: string; valueExpression?: string }>;
  matchConditions?: Array<{ name?: string; expression?: string }>;
  variables?: Array<{ name?: string; expression?: string }>;
}

/** The spec of a policy object (absent parts empty). */
export function policySpec(policy: ApiObject): PolicySpec {
  const spec = policy['spec'];
  return spec !== null && typeof spec === 'object' ? (spec as PolicySpec) : {};
}

/** A compile error as evaluation reports it (the original's `compilation error: ...`). */
function compileFailure(err: CelCompileError): string {
  return `compilation error: ${err.detail.replace(/^Invalid value: /, '')}`;
}

/** The variables that did not compile, by name, with their errors: an expression that reads one fails as it would. */
type BrokenVariables = ReadonlyMap<string, string>;

function compileOne(source: string, env: AdmissionCelEnv, broken: BrokenVariables, field: string, resultType?: 'bool' | 'string'): Compiled {
  try {
    const program = compileAdmissionExpression(source, env, { field, costBudget: PER_CALL_LIMIT, ...(resultType ? { resultType } : {}) });
    for (const [name, error] of broken) {
      if (program.selects('variables', name)) return { error: `composited variable "${name}" fails to compile: ${error}` };
    }
    return { program };
  } catch (err) {
    if (err instanceof CelCompileError) return { error: compileFailure(err) };
    throw err;
  }
}

/** Compiles a policy object. */
export function compilePolicy(policy: ApiObject): CompiledPolicy {
  const spec = policySpec(policy);
  const paramKind = spec.paramKind ? { apiVersion: spec.paramKind.apiVersion ?? '', kind: spec.paramKind.kind ?? '' } : undefined;
  const base: AdmissionCelEnv = { params: paramKind !== undefined, namespaceObject: true, authorizer: true };
  const variables = (spec.variables ?? []).map((v) => ({ name: v.name ?? '', expression: v.expression ?? '' }));
  const composited = compileAdmissionVariables(variables, base, 'spec.variables');
  const env = composited.env;
  const broken = new Map<string, string>();
  composited.errors.forEach((err) => {
    const index = Number(/^spec\.variables\[(\d+)\]/.exec(err.field)?.[1] ?? -1);
    const name = variables[index]?.name;
    if (name !== undefined) broken.set(name, compileFailure(err));
  });
  const messageEnv: AdmissionCelEnv = { ...env, authorizer: false };
  const compiled: Omit<CompiledPolicy, 'readsNamespaceObject'> = {
    name: policy.metadata?.name ?? '',
    uid: policy.metadata?.uid ?? '',
    resourceVersion: policy.metadata?.resourceVersion ?? '',
    failurePolicy: spec.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
    paramKind,
    matchConstraints: spec.matchConstraints ?? undefined,
    variables: composited.variables,
    matchConditions: (spec.matchConditions ?? []).map((c, i) => ({ name: c.name ?? '', check: compileOne(c.expression ?? '', env, broken, `spec.matchConditions[${i}].expression`, 'bool') })),
    validations: (spec.validations ?? []).map((v, i) => ({
      expression: v.expression ?? '',
      message: v.message,
      reason: v.reason,
      check: compileOne(v.expression ?? '', env, broken, `spec.validations[${i}].expression`, 'bool'),
      messageExpression: v.messageExpression ? compileOne(v.messageExpression, messageEnv, broken, `spec.validations[${i}].messageExpression`, 'string') : undefined,
    })),
    auditAnnotations: (spec.auditAnnotations ?? []).map((a, i) => ({
      key: a.key ?? '',
      valueExpression: a.valueExpression ?? '',
      value: compileOne(a.valueExpression ?? '', env, broken, `spec.auditAnnotations[${i}].valueExpression`),
    })),
  };
  const programs = [
    ...compiled.variables.map((v) => v.program),
    ...compiled.matchConditions.map((c) => c.check.program),
    ...compiled.validations.flatMap((v) => [v.check.program, v.messageExpression?.program]),
    ...compiled.auditAnnotations.map((a) => a.value.program),
  ];
  return { ...compiled, readsNamespaceObject: programs.some((p) => p?.references('namespaceObject') ?? false) };
}

/**
 * Compiled policies by name, each compiled once per version of the object
 * (its uid and resourceVersion); versions no longer current are dropped by
 * `retain`.
 */
export class PolicyCompilations {
  private readonly byName = new Map<string, CompiledPolicy>();
  /** How many compilations were made (for tests and metrics). */
  compilations = 0;

  get(policy: ApiObject): CompiledPolicy {
    const name = policy.metadata?.name ?? '';
    const known = this.byName.get(name);
    if (known && known.uid === (policy.metadata?.uid ?? '') && known.resourceVersion === (policy.metadata?.resourceVersion ?? '')) return known;
    const compiled = compilePolicy(policy);
    this.compilations++;
    this.byName.set(name, compiled);
    return compiled;
  }

  /** Forgets the policies not named. */
  retain(names: ReadonlySet<string>): void {
    for (const name of this.byName.keys()) if (!names.has(name)) this.byName.delete(name);
  }
}
