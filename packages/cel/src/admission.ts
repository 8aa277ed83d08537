import { celError, celMap, celMethod, CelScalar, type CelFunc, type CelMap, type CelValue } from '@bufbuild/cel';
import { parseFieldSelector, parseLabelSelector, validateDns1123Label, validateDns1123Subdomain, type AuthorizationAttributes, type UserInfo } from '@svc/apimachinery';
import { shapeOf, unknownShape, type Shape } from './cost';
import type { CelDeclaredType } from './declared-type';
import { CelCompileError, CelEvaluationError, CelInputCache, compile, COST_BUDGET, fromCel, type CelCostedOutcome, type CompiledExpression, type EvaluateOptions } from './expression';

/**
 * The CEL environment of admission expressions, as the original server
 * declares it for webhook `matchConditions` and for ValidatingAdmissionPolicy
 * expressions: `object` and `oldObject` (null when absent), `request` (the
 * admission request's attributes), `params` (only where the caller has a
 * parameter kind), `namespaceObject`, `variables` (the policy's composited
 * variables: evaluated lazily, each at most once per request, in order, so a
 * variable may read the ones before it) and `authorizer` with the original's
 * authorization library:
 *
 *   authorizer.group(g).resource(r).subresource(s).namespace(n).name(n).check(verb)
 *   authorizer.path(p).check(verb)
 *   authorizer.serviceAccount(namespace, name).group(...)...   (checks as that service account)
 *   authorizer.requestResource.check(verb)                     (the resource of the request)
 *   <ResourceCheck>.fieldSelector(s) / .labelSelector(s)
 *   <Decision>.allowed() .reason() .errored() .error()
 *
 * Evaluation is synchronous while an authorization decision is an
 * asynchronous question to the authorization service, so a check whose
 * decision is not known yet records its attributes and evaluates to an
 * error; `evaluateWithAuthorizer` then asks for the recorded checks and
 * evaluates again, a bounded number of times. An expression whose result
 * does not depend on the unknown decision (`true || authorizer...`) needs no
 * second pass.
 *
 * Every check costs 350000 (the original's fixed cost: two checks fit in the
 * per-call limit), builders and accessors 1.
 */

/** The attributes of one authorization check, as the authorization service takes them. */
export type AuthorizationCheck = AuthorizationAttributes;

/** An authorization decision as the expression sees it; `error` set when the check itself failed. */
export interface AuthorizationDecision {
  decision: 'allow' | 'deny' | 'no-opinion';
  reason: string;
  error?: string;
}

/**
 * Decisions known without waiting: `undefined` when this authorizer cannot
 * answer at once (then `evaluateWithAuthorizer` asks asynchronously).
 */
export interface CelAuthorizer {
  check(attributes: AuthorizationCheck): AuthorizationDecision | undefined;
}

/** Which variables an admission expression has besides `object`, `oldObject` and `request`. */
export interface AdmissionCelEnv {
  /** `params` (a policy with a paramKind). */
  params?: boolean;
  /** `namespaceObject` (policies; webhook match conditions have none). */
  namespaceObject?: boolean;
  /** The names of the composited variables in scope (`variables.<name>`). */
  variables?: readonly string[];
  /** Their types where known (the result types of their expressions); `dyn` otherwise. */
  variableTypes?: Readonly<Record<string, CelDeclaredType>>;
  /** `authorizer` and `authorizer.requestResource`. */
  authorizer?: boolean;
}

export interface AdmissionCompileOptions {
  /** The configuration field the expression comes from (compile errors name it); `expression` by default. */
  field?: string;
  /** The type the result must have (`bool` for conditions and validations, `string` for messages). */
  resultType?: CelDeclaredType;
  /** The per-call cost limit; COST_BUDGET by default. */
  costBudget?: number;
}

const GROUP_VERSION_KIND: CelDeclaredType = { object: { group: 'string', version: 'string', kind: 'string' } };
const GROUP_VERSION_RESOURCE: CelDeclaredType = { object: { group: 'string', version: 'string', resource: 'string' } };

/** The declared type of `request` (the original's AdmissionRequest type: no uid, no objects). */
export const ADMISSION_REQUEST_TYPE: CelDeclaredType = {
  object: {
    kind: GROUP_VERSION_KIND,
    resource: GROUP_VERSION_RESOURCE,
    subResource: 'string',
    requestKind: GROUP_VERSION_KIND,
    requestResource: GROUP_VERSION_RESOURCE,
    requestSubResource: 'string',
    name: 'string',
    namespace: 'string',
    operation: 'string',
    userInfo: { object: { username: 'string', uid: 'string', groups: { list: 'string' }, extra: { map: { list: 'string' } } } },
    dryRun: 'bool',
    options: 'dyn',
  },
};

const AUTHORIZER_TYPE: CelDeclaredType = { object: { requestResource: 'dyn' } };

/** The declared variables of an environment. */
export function admissionVariables(env: AdmissionCelEnv): Record<string, CelDeclaredType> {
  const out: Record<string, CelDeclaredType> = { object: 'dyn', oldObject: 'dyn', request: ADMISSION_REQUEST_TYPE };
  if (env.params) out['params'] = 'dyn';
  if (env.namespaceObject) out['namespaceObject'] = 'dyn';
  if (env.variables) out['variables'] = { object: Object.fromEntries(env.variables.map((n) => [n, env.variableTypes?.[n] ?? 'dyn'])) };
  if (env.authorizer) out['authorizer'] = AUTHORIZER_TYPE;
  return out;
}

/** Compiles an admission expression (throws CelCompileError naming `options.field`). */
export function compileAdmissionExpression(source: string, env: AdmissionCelEnv, options: AdmissionCompileOptions = {}): CompiledExpression {
  return compile(source, {
    field: options.field ?? 'expression',
    variables: admissionVariables(env),
    ...(options.resultType ? { resultType: options.resultType } : {}),
    costBudget: options.costBudget ?? COST_BUDGET,
    ...(env.authorizer ? { functions: authorizerLibrary } : {}),
  });
}

/** A compiled composited variable. */
export interface AdmissionVariable {
  name: string;
  program: CompiledExpression;
}

/**
 * Compiles a policy's variables in order: each sees the ones before it (with
 * their result types). Returns the compiled ones and the compile errors
 * (`<fieldPrefix>[i].expression`); a variable that does not compile is left
 * out, and later variables still see its name.
 */
export function compileAdmissionVariables(
  variables: ReadonlyArray<{ name: string; expression: string }>,
  env: Omit<AdmissionCelEnv, 'variables' | 'variableTypes'>,
  fieldPrefix = 'spec.variables',
): { variables: AdmissionVariable[]; errors: CelCompileError[]; env: AdmissionCelEnv } {
  const compiled: AdmissionVariable[] = [];
  const errors: CelCompileError[] = [];
  const names: string[] = [];
  const types: Record<string, CelDeclaredType> = {};
  variables.forEach((v, i) => {
    try {
      const program = compileAdmissionExpression(v.expression, { ...env, variables: [...names], variableTypes: { ...types } }, { field: `${fieldPrefix}[${i}].expression` });
      compiled.push({ name: v.name, program });
      types[v.name] = program.resultType;
    } catch (err) {
      if (!(err instanceof CelCompileError)) throw err;
      errors.push(err);
    }
    names.push(v.name);
  });
  return { variables: compiled, errors, env: { ...env, variables: names, variableTypes: types } };
}

/**
 * The lowest cost an expression can have whatever its input (every input of
 * size 1): what its constants, literals and authorization checks cost. Above
 * the per-call limit, the expression cannot succeed for any request, so it
 * is refused when the configuration is written.
 */
export function admissionMinimumCost(program: CompiledExpression): number {
  return program.worstCaseCost({}, 1);
}

// ---- the request ----

export interface GroupVersionKindValue {
  group: string;
  version: string;
  kind: string;
}

export interface GroupVersionResourceValue {
  group: string;
  version: string;
  resource: string;
}

/** The admission request as the caller knows it; absent parts take their empty values. */
export interface AdmissionRequestInput {
  kind: GroupVersionKindValue;
  resource: GroupVersionResourceValue;
  subResource?: string;
  /** The kind, resource and subresource the client asked for (differ from the above when matchPolicy Equivalent converted); the above when absent. */
  requestKind?: GroupVersionKindValue;
  requestResource?: GroupVersionResourceValue;
  requestSubResource?: string;
  name?: string;
  namespace?: string;
  operation: 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';
  userInfo: { username: string; uid?: string; groups?: readonly string[]; extra?: Readonly<Record<string, readonly string[]>> };
  dryRun?: boolean;
  /** The operation's options object (CreateOptions, UpdateOptions, DeleteOptions, ...); null when none. */
  options?: unknown;
}

/** The request with every field present, as `request` in an expression. */
export interface AdmissionRequestValue {
  kind: GroupVersionKindValue;
  resource: GroupVersionResourceValue;
  subResource: string;
  requestKind: GroupVersionKindValue;
  requestResource: GroupVersionResourceValue;
  requestSubResource: string;
  name: string;
  namespace: string;
  operation: string;
  userInfo: UserInfo;
  dryRun: boolean;
  options: unknown;
}

export function admissionRequestValue(r: AdmissionRequestInput): AdmissionRequestValue {
  const extra: Record<string, string[]> = {};
  for (const [k, v] of Object.entries(r.userInfo.extra ?? {})) extra[k] = [...v];
  return {
    kind: { ...r.kind },
    resource: { ...r.resource },
    subResource: r.subResource ?? '',
    requestKind: { ...(r.requestKind ?? r.kind) },
    requestResource: { ...(r.requestResource ?? r.resource) },
    requestSubResource: r.requestSubResource ?? r.subResource ?? '',
    name: r.name ?? '',
    namespace: r.namespace ?? '',
    operation: r.operation,
    userInfo: { username: r.userInfo.username, uid: r.userInfo.uid ?? '', groups: [...(r.userInfo.groups ?? [])], extra },
    dryRun: r.dryRun ?? false,
    options: r.options ?? null,
  };
}

// ---- the authorizer library ----

/** The per-request decisions: known ones, and the checks an evaluation wanted but could not have. */
class AuthorizerSession {
  readonly decisions = new Map<string, AuthorizationDecision>();
  readonly pending = new Map<string, AuthorizationCheck>();
  /** How many times a decision was wanted and not known (a check already pending counts again). */
  misses = 0;

  constructor(private readonly known: CelAuthorizer | undefined) {}

  decide(check: AuthorizationCheck): AuthorizationDecision {
    const key = JSON.stringify(check);
    let decision = this.decisions.get(key);
    if (!decision) {
      decision = this.known?.check(check);
      if (decision) this.decisions.set(key, decision);
    }
    if (decision) return decision;
    this.misses++;
    this.pending.set(key, check);
    throw new Error(`authorizer: the decision for ${check.verb} ${check.resourceRequest ? `${check.resource}${check.subresource ? `/${check.subresource}` : ''}` : check.path} is not available`);
  }
}

interface ResourceAttributes {
  group: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
  fieldSelector: string;
  labelSelector: string;
}

/** What an authorizer value is: the library's five types. */
type AuthzState =
  | { type: 'Authorizer'; session: AuthorizerSession; user: UserInfo }
  | { type: 'PathCheck'; session: AuthorizerSession; user: UserInfo; path: string }
  | { type: 'GroupCheck'; session: AuthorizerSession; user: UserInfo; group: string }
  | ({ type: 'ResourceCheck'; session: AuthorizerSession; user: UserInfo } & ResourceAttributes)
  | { type: 'Decision'; decision: AuthorizationDecision };

/** Values of the library are opaque maps; what they are is kept here. */
const states = new WeakMap<object, AuthzState>();

function authzValue(state: AuthzState, entries: ReadonlyArray<[string, CelValue]> = []): CelMap {
  const value = celMap(new Map(entries));
  states.set(value, state);
  return value;
}

function stateOf<T extends AuthzState['type']>(value: unknown, type: T): Extract<AuthzState, { type: T }> {
  const state = typeof value === 'object' && value !== null ? states.get(value) : undefined;
  if (!state || state.type !== type) throw new Error(`no such overload: expected kubernetes.authorization.${type}`);
  return state as Extract<AuthzState, { type: T }>;
}

function nonEmpty(value: string, what: string): string {
  if (value.trim() === '') throw new Error(`${what} must not be empty`);
  return value;
}

function parses(selector: string, parse: (s: string) => unknown): string {
  if (selector === '') return '';
  try {
    parse(selector);
    return selector;
  } catch {
    // As the original: a selector that does not parse adds no requirement to the check.
    return '';
  }
}

function resourceCheck(state: Extract<AuthzState, { type: 'ResourceCheck' }>, change: Partial<ResourceAttributes>): CelMap {
  return authzValue({ ...state, ...change });
}

function decisionValue(session: AuthorizerSession, check: AuthorizationCheck): CelMap {
  return authzValue({ type: 'Decision', decision: session.decide(check) });
}

const S = CelScalar.STRING;
const DYN = CelScalar.DYN;

/** The authorization library's functions (added to the environment of expressions that have `authorizer`). */
export const authorizerLibrary: readonly CelFunc[] = [
  celMethod('path', DYN, [S], DYN, function (this: CelValue, path: string) {
    const a = stateOf(this, 'Authorizer');
    return authzValue({ type: 'PathCheck', session: a.session, user: a.user, path: nonEmpty(path, 'path') });
  }),
  celMethod('group', DYN, [S], DYN, function (this: CelValue, group: string) {
    const a = stateOf(this, 'Authorizer');
    return authzValue({ type: 'GroupCheck', session: a.session, user: a.user, group });
  }),
  celMethod('serviceAccount', DYN, [S, S], DYN, function (this: CelValue, namespace: string, name: string) {
    const a = stateOf(this, 'Authorizer');
    if (validateDns1123Subdomain(name, 'name').length > 0) throw new Error('Invalid service account name');
    if (validateDns1123Label(namespace, 'namespace').length > 0) throw new Error('Invalid service account namespace');
    const user: UserInfo = { username: `system:serviceaccount:${namespace}:${name}`, uid: '', groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`], extra: {} };
    return authzValue({ type: 'Authorizer', session: a.session, user });
  }),
  celMethod('resource', DYN, [S], DYN, function (this: CelValue, resource: string) {
    const g = stateOf(this, 'GroupCheck');
    return authzValue({ type: 'ResourceCheck', session: g.session, user: g.user, group: g.group, resource: nonEmpty(resource, 'resource'), subresource: '', namespace: '', name: '', fieldSelector: '', labelSelector: '' });
  }),
  celMethod('subresource', DYN, [S], DYN, function (this: CelValue, subresource: string) {
    return resourceCheck(stateOf(this, 'ResourceCheck'), { subresource });
  }),
  celMethod('namespace', DYN, [S], DYN, function (this: CelValue, namespace: string) {
    return resourceCheck(stateOf(this, 'ResourceCheck'), { namespace });
  }),
  celMethod('name', DYN, [S], DYN, function (this: CelValue, name: string) {
    return resourceCheck(stateOf(this, 'ResourceCheck'), { name });
  }),
  celMethod('fieldSelector', DYN, [S], DYN, function (this: CelValue, selector: string) {
    return resourceCheck(stateOf(this, 'ResourceCheck'), { fieldSelector: parses(selector, parseFieldSelector) });
  }),
  celMethod('labelSelector', DYN, [S], DYN, function (this: CelValue, selector: string) {
    return resourceCheck(stateOf(this, 'ResourceCheck'), { labelSelector: parses(selector, parseLabelSelector) });
  }),
  celMethod('check', DYN, [S], DYN, function (this: CelValue, verb: string) {
    const state = typeof this === 'object' && this !== null ? states.get(this) : undefined;
    if (state?.type === 'PathCheck') {
      return decisionValue(state.session, { user: state.user, resourceRequest: false, verb, path: state.path, apiGroup: '', apiVersion: '', resource: '', subresource: '', namespace: '', name: '' });
    }
    const r = stateOf(this, 'ResourceCheck');
    const check: AuthorizationCheck = { user: r.user, resourceRequest: true, verb, path: '', apiGroup: r.group, apiVersion: '*', resource: r.resource, subresource: r.subresource, namespace: r.namespace, name: r.name };
    if (r.fieldSelector !== '') check.fieldSelector = r.fieldSelector;
    if (r.labelSelector !== '') check.labelSelector = r.labelSelector;
    return decisionValue(r.session, check);
  }),
  celMethod('allowed', DYN, [], CelScalar.BOOL, function (this: CelValue) {
    return stateOf(this, 'Decision').decision.decision === 'allow';
  }),
  celMethod('reason', DYN, [], S, function (this: CelValue) {
    return stateOf(this, 'Decision').decision.reason;
  }),
  celMethod('errored', DYN, [], CelScalar.BOOL, function (this: CelValue) {
    return (stateOf(this, 'Decision').decision.error ?? '') !== '';
  }),
  celMethod('error', DYN, [], S, function (this: CelValue) {
    return stateOf(this, 'Decision').decision.error ?? '';
  }),
];

// ---- composited variables ----

const CEL_MAP_MARK = Symbol.for('@bufbuild/cel/map');

type VariableOutcome = { ok: true; value: CelValue } | { ok: false; error: CelEvaluationError };

/**
 * `variables`: a CEL map whose entries are evaluated when first read, each
 * at most once per activation (an outcome that waited for an authorization
 * decision is not kept, so the next pass evaluates it again).
 */
class LazyVariables {
  readonly #names: readonly string[];
  readonly #read: (name: string) => VariableOutcome;

  constructor(names: readonly string[], read: (name: string) => VariableOutcome) {
    this.#names = names;
    this.#read = read;
    // What @bufbuild/cel recognises a map by (its isCelMap test); a symbol, so no walk of the value sees it.
    Object.defineProperty(this, CEL_MAP_MARK, { value: {}, enumerable: false });
  }

  get size(): number {
    return this.#names.length;
  }

  get(key: unknown): CelValue | undefined {
    if (typeof key !== 'string' || !this.#names.includes(key)) return undefined;
    const outcome = this.#read(key);
    return outcome.ok ? outcome.value : (celError(outcome.error.message) as unknown as CelValue);
  }

  has(key: unknown): boolean {
    return typeof key === 'string' && this.#names.includes(key);
  }

  *entries(): IterableIterator<[string, CelValue]> {
    for (const n of this.#names) yield [n, this.get(n) ?? null];
  }

  keys(): IterableIterator<string> {
    return this.#names[Symbol.iterator]();
  }

  *values(): IterableIterator<CelValue> {
    for (const [, v] of this.entries()) yield v;
  }

  forEach(callback: (value: CelValue, key: string, map: LazyVariables) => void, thisArg?: unknown): void {
    for (const [k, v] of this.entries()) callback.call(thisArg, v, k, this);
  }

  [Symbol.iterator](): IterableIterator<[string, CelValue]> {
    return this.entries();
  }
}

// ---- the activation ----

export interface AdmissionActivationInit {
  /** The object (null for DELETE and for CONNECT without one). */
  object?: unknown;
  /** The object before the change (UPDATE, DELETE); null otherwise. */
  oldObject?: unknown;
  request: AdmissionRequestInput;
  /** The parameter object (policies with a paramKind); null when none. */
  params?: unknown;
  /** The namespace of a namespaced request (null for cluster-scoped ones). */
  namespaceObject?: unknown;
  /** The policy's compiled variables, in order. */
  variables?: readonly AdmissionVariable[];
  /** Decisions known synchronously (a cache, or a test's fixed answers). */
  authorizer?: CelAuthorizer;
}

/**
 * The values admission expressions of one request (one policy or webhook
 * evaluation) see. Built once per request and given to every expression:
 * conversions, variables and authorization decisions are shared by all.
 */
export class AdmissionActivation {
  readonly object: unknown;
  readonly oldObject: unknown;
  readonly request: AdmissionRequestValue;
  readonly params: unknown;
  readonly namespaceObject: unknown;
  /** Conversions and measurements shared by the expressions. */
  readonly cache = new CelInputCache();
  private readonly session: AuthorizerSession;
  private readonly programs: ReadonlyMap<string, CompiledExpression>;
  private readonly outcomes = new Map<string, VariableOutcome>();
  private readonly evaluating = new Set<string>();
  private readonly lazy: LazyVariables;
  private readonly authorizerValue: CelMap;
  /** The cost of variables evaluated since the last expression took it (charged to the expression that read them first). */
  private variableCost = 0;
  /** The budget variables are evaluated within (the expression's). */
  private variableBudget: number | undefined;

  constructor(init: AdmissionActivationInit) {
    this.object = init.object ?? null;
    this.oldObject = init.oldObject ?? null;
    this.request = admissionRequestValue(init.request);
    this.params = init.params ?? null;
    this.namespaceObject = init.namespaceObject ?? null;
    this.session = new AuthorizerSession(init.authorizer);
    this.programs = new Map((init.variables ?? []).map((v) => [v.name, v.program]));
    this.lazy = new LazyVariables([...this.programs.keys()], (name) => this.variable(name));
    const r = this.request;
    const requestResource = authzValue({ type: 'ResourceCheck', session: this.session, user: r.userInfo, group: r.resource.group, resource: r.resource.resource, subresource: r.subResource, namespace: r.namespace, name: r.name, fieldSelector: '', labelSelector: '' });
    this.authorizerValue = authzValue({ type: 'Authorizer', session: this.session, user: r.userInfo }, [['requestResource', requestResource]]);
  }

  /** The checks evaluations wanted whose decisions are not known (what evaluateWithAuthorizer asks for). */
  pendingChecks(): AuthorizationCheck[] {
    return [...this.session.pending.values()];
  }

  /** Records decisions for checks (keyed by their attributes). */
  recordDecision(check: AuthorizationCheck, decision: AuthorizationDecision): void {
    const key = JSON.stringify(check);
    this.session.decisions.set(key, decision);
    this.session.pending.delete(key);
  }

  /** The evaluation bindings of a program: the variables it declares. */
  bindings(program: CompiledExpression): Record<string, unknown> {
    const values: Record<string, unknown> = { object: this.object, oldObject: this.oldObject, request: this.request };
    if (program.references('params')) values['params'] = this.params;
    if (program.references('namespaceObject')) values['namespaceObject'] = this.namespaceObject;
    if (program.references('authorizer')) values['authorizer'] = this.authorizerValue;
    if (program.references('variables')) {
      this.prepareVariables(program);
      values['variables'] = this.lazy;
    }
    return values;
  }

  /** Evaluates the variables a program selects before its cost is bounded, so the bound knows their sizes. */
  private prepareVariables(program: CompiledExpression): void {
    const names = [...this.programs.keys()];
    const selected = names.filter((n) => program.selects('variables', n));
    for (const n of selected.length > 0 ? selected : names) this.variable(n);
    const fields = new Map<string, Shape>();
    let largest = 1;
    for (const n of names) {
      const outcome = this.outcomes.get(n);
      const shape = outcome?.ok ? shapeOf(fromCel(outcome.value)) : unknownShape(1);
      fields.set(n, shape);
      largest = Math.max(largest, shape.size);
    }
    this.cache.describe(this.lazy, { size: names.length, fields, key: { size: Math.max(1, ...names.map((n) => n.length)) }, elem: unknownShape(largest) });
  }

  private variable(name: string): VariableOutcome {
    const known = this.outcomes.get(name);
    if (known) return known;
    const program = this.programs.get(name);
    if (!program) return { ok: false, error: new CelEvaluationError('Runtime', `no such key: ${name}`) };
    if (this.evaluating.has(name)) return { ok: false, error: new CelEvaluationError('Runtime', `variable ${name} refers to itself`) };
    this.evaluating.add(name);
    const missesBefore = this.session.misses;
    try {
      const options: EvaluateOptions = { cache: this.cache };
      if (this.variableBudget !== undefined) options.costBudget = this.variableBudget;
      const { outcome, cost } = program.evaluateToCel(this.bindings(program), options);
      this.variableCost += cost;
      const result: VariableOutcome = outcome.ok ? outcome : { ok: false, error: new CelEvaluationError(outcome.error.reason, `composited variable "${name}" failed: ${outcome.error.message}`) };
      if (this.session.misses === missesBefore) this.outcomes.set(name, result);
      return result;
    } finally {
      this.evaluating.delete(name);
    }
  }

  /** @internal evaluation with the variables' cost charged to it. */
  run(program: CompiledExpression, options: EvaluateOptions): CelCostedOutcome {
    this.session.pending.clear();
    this.variableBudget = options.costBudget;
    this.variableCost = 0;
    try {
      const { outcome, cost } = program.evaluateWithCost(this.bindings(program), { ...options, cache: this.cache });
      return { outcome, cost: cost + this.variableCost };
    } finally {
      this.variableBudget = undefined;
      this.variableCost = 0;
    }
  }
}

/** How many times an expression is evaluated at most while it waits for authorization decisions. */
export const MAX_AUTHORIZER_PASSES = 4;

/**
 * Evaluates synchronously with the decisions the activation knows; a check
 * whose decision is unknown is an error of the evaluation (its attributes are
 * then in `activation.pendingChecks()`).
 */
export function evaluateAdmission(program: CompiledExpression, activation: AdmissionActivation, options: Omit<EvaluateOptions, 'cache'> = {}): CelCostedOutcome {
  return activation.run(program, options);
}

/**
 * Evaluates; when the expression needs authorization decisions that are not
 * known yet, asks `ask` for them (all of one pass at once) and evaluates
 * again, at most MAX_AUTHORIZER_PASSES times. A question that fails gives a
 * decision with `error` set (`errored()` is then true), as the original's
 * authorizer errors are. The cost is that of every pass (the work done),
 * each pass bounded by the budget on its own.
 */
export async function evaluateWithAuthorizer(
  program: CompiledExpression,
  activation: AdmissionActivation,
  ask: (check: AuthorizationCheck) => Promise<AuthorizationDecision>,
  options: Omit<EvaluateOptions, 'cache'> = {},
): Promise<CelCostedOutcome> {
  let result = evaluateAdmission(program, activation, options);
  for (let pass = 1; pass < MAX_AUTHORIZER_PASSES; pass++) {
    const pending = activation.pendingChecks();
    // A result the unknown decisions did not keep from coming does not depend on them.
    if (pending.length === 0 || result.outcome.ok) return result;
    const decisions = await Promise.all(
      pending.map(async (check): Promise<AuthorizationDecision> => {
        try {
          return await ask(check);
        } catch (err) {
          return { decision: 'no-opinion', reason: '', error: (err as Error).message };
        }
      }),
    );
    pending.forEach((check, i) => {
      const decision = decisions[i];
      if (decision) activation.recordDecision(check, decision);
    });
    const spent = result.cost;
    result = evaluateAdmission(program, activation, options);
    result = { ...result, cost: result.cost + spent };
  }
  if (activation.pendingChecks().length > 0 && !result.outcome.ok) {
    return { cost: result.cost, outcome: { ok: false, error: new CelEvaluationError('Runtime', `authorizer: the expression needed more than ${MAX_AUTHORIZER_PASSES} rounds of authorization checks`) } };
  }
  return result;
}
