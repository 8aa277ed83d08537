import { ApiError, type ApiObject, type LabelSelectorObject, type StatusReason } from '@svc/apimachinery';
import { AdmissionActivation, evaluateWithAuthorizer, type AuthorizationCheck, type AuthorizationDecision, type CelAuthorizer, type CelCostedOutcome, type CompiledExpression } from '@svc/cel';
import { MAX_MESSAGE_EXPRESSION_LENGTH, PER_CALL_LIMIT, RUNTIME_CEL_COST_BUDGET } from '@svc/kinds';
import type { Logger } from '@svc/service-kit';
import type { AdmissionAttributes, NamespaceReader } from '../plugins';
import { PolicyCompilations, type Compiled, type CompiledPolicy, type FailurePolicy } from './compile';
import { aggregateErrors, asVersion, isAdmissionConfigurationResource, matchedRequest, matchesResources, NO_EQUIVALENTS, parseSelector, type EquivalentResourceMapper, type GroupVersionKind, type GroupVersionResource, type MatchResources } from './matching';
import { parseApiVersion, type ParamReader, type ParamResource } from './params';

/**
 * ValidatingAdmissionPolicy at run time, as the original server's validating
 * policy plugin (`admission/plugin/policy/validating`) decides: for each
 * policy whose `matchConstraints` select the request and each of its
 * bindings whose `matchResources` do too, the parameters the binding names
 * are read and, for each parameter, the match conditions, validations and
 * audit annotations are evaluated. A validation that is false is enforced
 * by the binding's `validationActions` (Deny refuses, Warn warns, Audit
 * records it in the audit annotation); an expression that fails, a
 * parameter that cannot be found under `Deny`, or a policy or binding that
 * cannot be configured follow the policy's `failurePolicy`. The first
 * refusal is the answer, worded as the original words it.
 *
 * Costs are bounded as the original bounds them: each expression by the
 * per-call limit, and the validations and message expressions of one
 * (binding, parameter) evaluation together by the runtime budget (the match
 * conditions and the audit annotations each have their own).
 */

/** The audit annotation listing validation failures under `Audit` (upstream's key, our group's name). */
export const VALIDATION_FAILURE_ANNOTATION = 'validation.policy.admission.svc.io/validation_failure';
/** The longest audit annotation value a policy may publish; longer ones are cut. */
export const MAX_AUDIT_ANNOTATION_VALUE_LENGTH = 10 * 1024;
const OUT_OF_BUDGET = 'validation failed due to running out of cost budget, no further validation rules will be run';

export type PolicyKind = 'ValidatingAdmissionPolicy' | 'ValidatingAdmissionPolicyBinding';

/** The stored policies and bindings (the admission configurations feed); `generation` changes on every change. */
export interface PolicySource {
  list(kind: PolicyKind): readonly ApiObject[];
  readonly generation: number;
}

/** The request's attributes, with its options object when the caller has it (`request.options`). */
export type PolicyAttributes = AdmissionAttributes & { options?: unknown };

export interface PolicyValidatorOptions {
  source: PolicySource;
  namespaces: NamespaceReader;
  params: ParamReader;
  /** Asks the authorization service (the `authorizer` library's checks). */
  authorize: (check: AuthorizationCheck) => Promise<AuthorizationDecision>;
  /** Other versions resources are served at (matchPolicy Equivalent); none by default. */
  equivalents?: EquivalentResourceMapper;
  /** The runtime budget of one evaluation; RUNTIME_CEL_COST_BUDGET by default. */
  runtimeCostBudget?: number;
  log?: Logger;
}

export interface PolicyOutcome {
  warnings: string[];
  auditAnnotations: Record<string, string>;
}

/** One entry of the validation failure annotation (upstream's JSON form). */
export interface ValidationFailureValue {
  message: string;
  policy: string;
  binding: string;
  expressionIndex: number;
  validationActions: string[];
}

type Decision =
  | { action: 'admit' }
  | { action: 'deny'; evaluation: 'deny' | 'error'; message: string; reason?: string };

type AnnotationResult = { action: 'publish'; key: string; value: string } | { action: 'error'; message: string } | { action: 'exclude' };

interface EvaluationResult {
  decisions: Decision[];
  annotations: AnnotationResult[];
}

interface Refusal {
  policy: string;
  binding: string | undefined;
  message: string;
  reason?: string;
}

interface Hook {
  policy: ApiObject;
  bindings: ApiObject[];
}

interface BindingSpec {
  policyName?: string;
  paramRef?: { name?: string; namespace?: string; selector?: LabelSelectorObject | null; parameterNotFoundAction?: string } | null;
  matchResources?: MatchResources | null;
  validationActions?: string[];
}

function bindingSpec(binding: ApiObject): BindingSpec {
  const spec = binding['spec'];
  return spec !== null && typeof spec === 'object' ? (spec as BindingSpec) : {};
}

const REASON_CODES: Partial<Record<StatusReason, number>> = { Unauthorized: 401, Forbidden: 403, RequestEntityTooLarge: 413, Invalid: 422 };

/** The CEL type name of a result, for the message about an audit annotation of the wrong type. */
function celTypeName(value: unknown): string {
  if (typeof value === 'boolean') return 'bool';
  if (typeof value === 'number') return Number.isInteger(value) ? 'int' : 'double';
  if (Array.isArray(value)) return 'list';
  if (value instanceof Uint8Array) return 'bytes';
  if (typeof value === 'object' && value !== null) return 'map';
  return typeof value;
}

/** What a namespace is to `namespaceObject`: its metadata's identifying parts, spec and status (as upstream's CreateNamespaceObject). */
export function namespaceObjectOf(ns: ApiObject): ApiObject {
  const m = ns.metadata ?? {};
  const pick = ['name', 'generateName', 'namespace', 'uid', 'resourceVersion', 'generation', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'labels', 'annotations', 'finalizers'] as const;
  const metadata: Record<string, unknown> = {};
  for (const k of pick) if (m[k] !== undefined) metadata[k] = m[k];
  const out: ApiObject = { metadata: metadata as ApiObject['metadata'] };
  if (ns['spec'] !== undefined) out['spec'] = ns['spec'];
  if (ns['status'] !== undefined) out['status'] = ns['status'];
  return out;
}

/** Decisions learnt from the authorization service during one request, shared by every evaluation of it. */
class RequestAuthorizer implements CelAuthorizer {
  private readonly decisions = new Map<string, AuthorizationDecision>();

  constructor(private readonly authorize: (check: AuthorizationCheck) => Promise<AuthorizationDecision>) {}

  check(attributes: AuthorizationCheck): AuthorizationDecision | undefined {
    return this.decisions.get(JSON.stringify(attributes));
  }

  readonly ask = async (check: AuthorizationCheck): Promise<AuthorizationDecision> => {
    const decision = await this.authorize(check);
    this.decisions.set(JSON.stringify(check), decision);
    return decision;
  };
}

/** Everything one evaluation of a policy (for one binding and one parameter) needs. */
interface EvaluationInput {
  policy: CompiledPolicy;
  activation: AdmissionActivation;
  authorizer: RequestAuthorizer;
}

/** An evaluation that ran out of the budget (ends the evaluation it belongs to). */
class OutOfBudget extends Error {}

export class PolicyValidator {
  private readonly compilations = new PolicyCompilations();
  private hooks: Hook[] = [];
  private hooksGeneration = Number.NaN;
  private readonly budget: number;
  private readonly equivalents: EquivalentResourceMapper;

  constructor(private readonly opts: PolicyValidatorOptions) {
    this.budget = opts.runtimeCostBudget ?? RUNTIME_CEL_COST_BUDGET;
    this.equivalents = opts.equivalents ?? NO_EQUIVALENTS;
  }

  /** How many policy versions were compiled so far (each once). */
  get compilationCount(): number {
    return this.compilations.compilations;
  }

  /** The policies with their bindings, rebuilt when the source changed: bindings of a missing policy are ignored, as upstream. */
  private currentHooks(): Hook[] {
    const generation = this.opts.source.generation;
    if (generation === this.hooksGeneration) return this.hooks;
    const byPolicy = new Map<string, ApiObject[]>();
    const bindings = [...this.opts.source.list('ValidatingAdmissionPolicyBinding')].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
    for (const binding of bindings) {
      const name = bindingSpec(binding).policyName ?? '';
      byPolicy.set(name, [...(byPolicy.get(name) ?? []), binding]);
    }
    const policies = [...this.opts.source.list('ValidatingAdmissionPolicy')].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
    this.hooks = policies.filter((p) => byPolicy.has(p.metadata?.name ?? '')).map((policy) => ({ policy, bindings: byPolicy.get(policy.metadata?.name ?? '') ?? [] }));
    this.compilations.retain(new Set(this.hooks.map((h) => h.policy.metadata?.name ?? '')));
    this.hooksGeneration = generation;
    return this.hooks;
  }

  /**
   * Evaluates every policy bound to the request. Resolves with the warnings
   * and audit annotations to report; throws the ApiError to refuse with.
   */
  async validate(attrs: PolicyAttributes): Promise<PolicyOutcome> {
    const outcome: PolicyOutcome = { warnings: [], auditAnnotations: {} };
    if (isAdmissionConfigurationResource(attrs)) return outcome;
    const hooks = this.currentHooks();
    if (hooks.length === 0) return outcome;
    const refusals: Refusal[] = [];
    const failures: ValidationFailureValue[] = [];
    const authorizer = new RequestAuthorizer(this.opts.authorize);
    let namespaceObject: Promise<ApiObject | undefined> | undefined;
    const namespaceOf = (): Promise<ApiObject | undefined> => (namespaceObject ??= this.namespaceObject(attrs));
    const warn = (text: string): void => {
      if (!outcome.warnings.includes(text)) outcome.warnings.push(text);
    };

    for (const hook of hooks) {
      const policyName = hook.policy.metadata?.name ?? '';
      const failurePolicy: FailurePolicy = (hook.policy['spec'] as { failurePolicy?: string } | undefined)?.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail';
      // A misconfiguration under Fail is enforced as a failed validation: by
      // the binding's validationActions once a binding is known, else denied.
      const configError = (message: string, binding?: { name: string; actions: string[] }): void => {
        if (failurePolicy === 'Ignore') return;
        const text = `failed to configure ${binding === undefined ? 'policy' : 'binding'}: ${message}`;
        if (!binding) {
          refusals.push({ policy: policyName, binding: undefined, message: text });
          return;
        }
        for (const action of binding.actions) {
          if (action === 'Deny') refusals.push({ policy: policyName, binding: binding.name, message: text });
          else if (action === 'Warn') warn(`Validation failed for ValidatingAdmissionPolicy '${policyName}' with binding '${binding.name}': ${text}`);
          else if (action === 'Audit') failures.push({ message: text, policy: policyName, binding: binding.name, expressionIndex: 0, validationActions: [...binding.actions] });
        }
      };
      const constraints = (hook.policy['spec'] as { matchConstraints?: MatchResources | null } | undefined)?.matchConstraints;
      if (!constraints) {
        configError('policy contained no match constraints, a required field');
        continue;
      }
      let matched: { resource: GroupVersionResource; kind: GroupVersionKind };
      try {
        const m = await matchesResources(constraints, attrs, this.opts.namespaces, this.equivalents);
        if (!m.matches) continue;
        matched = m;
      } catch (err) {
        configError((err as Error).message);
        continue;
      }
      const policy = this.compilations.get(hook.policy);
      let paramResource: ParamResource | undefined;
      if (policy.paramKind) {
        const resolved = await this.resolveParamKind(policy.paramKind);
        if (typeof resolved === 'string') {
          configError(resolved);
          continue;
        }
        paramResource = resolved;
      }
      const annotations = new Map<string, string[]>();
      for (const binding of hook.bindings) {
        const bindingName = binding.metadata?.name ?? '';
        const spec = bindingSpec(binding);
        const actions = spec.validationActions ?? [];
        const bound = { name: bindingName, actions };
        try {
          if (spec.matchResources && !(await matchesResources(spec.matchResources, attrs, this.opts.namespaces, this.equivalents)).matches) continue;
        } catch (err) {
          configError((err as Error).message, bound);
          continue;
        }
        let params: Array<ApiObject | null>;
        try {
          params = await this.collectParams(policy, paramResource, spec.paramRef ?? undefined, attrs.namespace);
        } catch (err) {
          configError((err as Error).message, bound);
          continue;
        }
        if (params.length === 0) continue;
        const ns = policy.readsNamespaceObject ? await namespaceOf() : undefined;
        for (const param of params) {
          const activation = new AdmissionActivation({
            object: attrs.operation === 'DELETE' ? null : (asVersion(attrs.object, matched.kind) ?? null),
            oldObject: asVersion(attrs.oldObject, matched.kind) ?? null,
            request: matchedRequest(attrs, matched),
            params: param,
            namespaceObject: ns ? namespaceObjectOf(ns) : null,
            variables: policy.variables,
            authorizer,
          });
          const result = await this.evaluate({ policy, activation, authorizer });
          result.decisions.forEach((decision, index) => {
            if (decision.action !== 'deny') return;
            for (const action of actions) {
              if (action === 'Deny') refusals.push({ policy: policyName, binding: bindingName, message: decision.message, ...(decision.reason ? { reason: decision.reason } : {}) });
              else if (action === 'Warn') warn(`Validation failed for ValidatingAdmissionPolicy '${policyName}' with binding '${bindingName}': ${decision.message}`);
              else if (action === 'Audit') failures.push({ message: decision.message, policy: spec.policyName ?? policyName, binding: bindingName, expressionIndex: index, validationActions: [...actions] });
            }
          });
          for (const a of result.annotations) {
            if (a.action === 'publish') {
              const values = annotations.get(a.key) ?? [];
              const value = a.value.length > MAX_AUDIT_ANNOTATION_VALUE_LENGTH ? a.value.slice(0, MAX_AUDIT_ANNOTATION_VALUE_LENGTH) : a.value;
              if (!values.includes(value)) annotations.set(a.key, [...values, value]);
            } else if (a.action === 'error') {
              refusals.push({ policy: policyName, binding: bindingName, message: a.message });
            }
          }
        }
      }
      for (const [key, values] of annotations) outcome.auditAnnotations[`${policyName}/${key}`] = values.join(', ');
    }
    if (failures.length > 0) outcome.auditAnnotations[VALIDATION_FAILURE_ANNOTATION] = JSON.stringify(failures);
    const first = refusals[0];
    if (first) {
      const refusal = refusalError(attrs, first);
      refusal.warnings.push(...outcome.warnings);
      // The audit annotations of a refused request are recorded too, as the original records them.
      Object.assign(refusal.auditAnnotations, outcome.auditAnnotations);
      throw refusal;
    }
    return outcome;
  }

  /**
   * The namespace `namespaceObject` shows: none for cluster-scoped requests
   * and for namespaces themselves; one that does not exist is a NotFound, as
   * upstream answers. Read only for policies whose expressions use it.
   */
  private async namespaceObject(attrs: PolicyAttributes): Promise<ApiObject | undefined> {
    const isNamespaceKind = attrs.kind.group === '' && attrs.kind.version === 'v1' && attrs.kind.kind === 'Namespace';
    const name = isNamespaceKind ? '' : attrs.namespace;
    if (name === '') return undefined;
    const ns = await this.opts.namespaces.getNamespace(name);
    if (!ns) throw ApiError.notFound({ group: '', resource: 'namespaces' }, name);
    return ns;
  }

  /** The resource of a paramKind, or the configuration error when none serves it. */
  private async resolveParamKind(paramKind: { apiVersion: string; kind: string }): Promise<ParamResource | string> {
    const { group, version } = parseApiVersion(paramKind.apiVersion);
    if (paramKind.apiVersion.split('/').length > 2) return `failed to parse paramKind APIVersion: unexpected GroupVersion string: ${paramKind.apiVersion}`;
    const resource = await this.opts.params.resolve(paramKind.apiVersion, paramKind.kind);
    return resource ?? `failed to find resource referenced by paramKind: '${group}/${version}, Kind=${paramKind.kind}'`;
  }

  /**
   * The parameters a binding evaluates with (upstream's CollectParams): one
   * null without a paramKind or paramRef; the named one, or every one the
   * selector selects; none found is an error under `Deny`, else nothing is
   * evaluated.
   */
  private async collectParams(policy: CompiledPolicy, resource: ParamResource | undefined, ref: BindingSpec['paramRef'] | undefined, requestNamespace: string): Promise<Array<ApiObject | null>> {
    if (!policy.paramKind || !resource || !ref) return [null];
    let namespace = '';
    if (resource.namespaced) {
      namespace = ref.namespace || requestNamespace;
      if (namespace === '') throw new Error('cannot use namespaced paramRef in policy binding that matches cluster-scoped resources');
    } else if (ref.namespace) {
      throw new Error('paramRef.namespace must not be provided for a cluster-scoped `paramKind`');
    }
    let params: ApiObject[];
    if (ref.name) {
      if (ref.selector) throw new Error('paramRef.name and paramRef.selector are mutually exclusive');
      const found = await this.opts.params.get(resource, namespace, ref.name);
      params = found ? [found] : [];
    } else if (ref.selector) {
      const selector = parseSelector(ref.selector);
      params = (await this.opts.params.list(resource, namespace)).filter((p) => selector.matches(p.metadata?.labels ?? {}));
    } else {
      throw new Error('one of name or selector must be provided');
    }
    if (params.length === 0 && ref.parameterNotFoundAction === 'Deny') throw new Error('no params found for policy binding with `Deny` parameterNotFoundAction');
    const kind = policy.paramKind;
    return params.map((p) => (p.apiVersion && p.kind ? p : { ...p, apiVersion: p.apiVersion || kind.apiVersion, kind: p.kind || kind.kind }));
  }

  /** Runs one program within `remaining` (the per-call limit applies too); OutOfBudget when the evaluation's budget cannot cover it. */
  private async run(program: CompiledExpression, input: EvaluationInput, remaining: number): Promise<CelCostedOutcome> {
    const result = await evaluateWithAuthorizer(program, input.activation, input.authorizer.ask, { costBudget: Math.min(PER_CALL_LIMIT, remaining) });
    if (!result.outcome.ok && result.outcome.error.reason === 'CostExceeded' && remaining < PER_CALL_LIMIT) throw new OutOfBudget(OUT_OF_BUDGET);
    if (result.cost > remaining) throw new OutOfBudget(OUT_OF_BUDGET);
    return result;
  }

  private errorDecision(policy: CompiledPolicy, message: string): Decision {
    return policy.failurePolicy === 'Ignore' ? { action: 'admit' } : { action: 'deny', evaluation: 'error', message };
  }

  /** Match conditions, validations (with their messages) and audit annotations of one evaluation. */
  private async evaluate(input: EvaluationInput): Promise<EvaluationResult> {
    const { policy } = input;
    const matched = await this.matchConditions(input);
    if (matched !== true) return { decisions: matched ? [matched] : [], annotations: [] };
    let decisions: Decision[];
    try {
      decisions = await this.validations(input);
    } catch (err) {
      if (err instanceof OutOfBudget) return { decisions: [this.errorDecision(policy, err.message)], annotations: [] };
      throw err;
    }
    try {
      return { decisions, annotations: await this.auditAnnotations(input) };
    } catch (err) {
      if (err instanceof OutOfBudget) return { decisions: [this.errorDecision(policy, err.message)], annotations: [] };
      throw err;
    }
  }

  /** true when every condition holds; false (nothing to evaluate) when one does not; a decision when they could not be evaluated. */
  private async matchConditions(input: EvaluationInput): Promise<true | false | Decision> {
    const { policy } = input;
    if (policy.matchConditions.length === 0) return true;
    let remaining = this.budget;
    const errors: string[] = [];
    try {
      for (const condition of policy.matchConditions) {
        const evaluated = await this.evaluateCompiled(condition.check, input, remaining);
        if (evaluated.error !== undefined) {
          errors.push(evaluated.error);
          continue;
        }
        remaining -= evaluated.cost;
        if (evaluated.value === false) return false;
      }
    } catch (err) {
      if (!(err instanceof OutOfBudget)) throw err;
      return policy.failurePolicy === 'Ignore' ? false : this.errorDecision(policy, err.message);
    }
    if (errors.length === 0) return true;
    return policy.failurePolicy === 'Ignore' ? false : this.errorDecision(policy, aggregateErrors(errors));
  }

  /** A compiled expression's value, or its error as evaluation reports it. */
  private async evaluateCompiled(compiled: Compiled, input: EvaluationInput, remaining: number): Promise<{ value?: unknown; error?: string; cost: number }> {
    if (!compiled.program) return { error: compiled.error, cost: 0 };
    const result = await this.run(compiled.program, input, remaining);
    if (!result.outcome.ok) return { error: `expression '${compiled.program.source}' resulted in error: ${result.outcome.error.message}`, cost: result.cost };
    return { value: result.outcome.value, cost: result.cost };
  }

  private async validations(input: EvaluationInput): Promise<Decision[]> {
    const { policy } = input;
    let remaining = this.budget;
    const decisions: Decision[] = [];
    const denied: number[] = [];
    for (const validation of policy.validations) {
      const evaluated = await this.evaluateCompiled(validation.check, input, remaining);
      remaining -= evaluated.cost;
      if (evaluated.error !== undefined) {
        decisions.push(this.errorDecision(policy, evaluated.error));
      } else if (evaluated.value === true) {
        decisions.push({ action: 'admit' });
      } else {
        denied.push(decisions.length);
        decisions.push({ action: 'deny', evaluation: 'deny', message: '', reason: validation.reason ?? 'Invalid' });
      }
    }
    // Messages are made only for the validations that failed, with what is left of the budget.
    for (const i of denied) {
      const validation = policy.validations[i];
      if (!validation) continue;
      let message = '';
      if (validation.messageExpression) {
        try {
          const evaluated = await this.evaluateCompiled(validation.messageExpression, input, remaining);
          remaining -= evaluated.cost;
          if (evaluated.error !== undefined) this.opts.log?.debug('messageExpression failed; using the message', { policy: policy.name, err: evaluated.error });
          if (typeof evaluated.value === 'string') {
            const text = evaluated.value.trim();
            if (text.length <= MAX_MESSAGE_EXPRESSION_LENGTH && !text.includes('\n')) message = text;
          }
        } catch (err) {
          if (!(err instanceof OutOfBudget)) throw err;
          decisions[i] = this.errorDecision(policy, `failed messageExpression: ${err.message}`);
          continue;
        }
      }
      if (message === '' && validation.message && validation.message.trim() !== '') message = validation.message.trim();
      if (message === '') message = `failed expression: ${validation.expression.trim()}`;
      decisions[i] = { action: 'deny', evaluation: 'deny', message, reason: validation.reason ?? 'Invalid' };
    }
    return decisions;
  }

  private async auditAnnotations(input: EvaluationInput): Promise<AnnotationResult[]> {
    const { policy } = input;
    let remaining = this.budget;
    const out: AnnotationResult[] = [];
    for (const annotation of policy.auditAnnotations) {
      const evaluated = await this.evaluateCompiled(annotation.value, input, remaining);
      remaining -= evaluated.cost;
      if (evaluated.error !== undefined) {
        out.push(policy.failurePolicy === 'Ignore' ? { action: 'exclude' } : { action: 'error', message: evaluated.error });
      } else if (typeof evaluated.value === 'string') {
        const value = evaluated.value.trim();
        out.push(value === '' ? { action: 'exclude' } : { action: 'publish', key: annotation.key, value });
      } else if (evaluated.value === null || evaluated.value === undefined) {
        out.push({ action: 'exclude' });
      } else {
        out.push({ action: 'error', message: `valueExpression '${annotation.valueExpression}' resulted in unsupported return type: ${celTypeName(evaluated.value)}. Return type must be either string or null.` });
      }
    }
    return out;
  }
}

/** The name a refusal is about: the request's, else the object's name or generateName (upstream's extractResourceName). */
function requestName(attrs: PolicyAttributes): string {
  if (attrs.name) return attrs.name;
  const meta = attrs.object?.metadata;
  return meta?.name || meta?.generateName || 'Unknown';
}

/** The refusal as the original words it: a Forbidden-style message with the decision's reason and its code. */
function refusalError(attrs: PolicyAttributes, refusal: Refusal): ApiError {
  const message =
    refusal.binding !== undefined
      ? `ValidatingAdmissionPolicy '${refusal.policy}' with binding '${refusal.binding}' denied request: ${refusal.message}`
      : `ValidatingAdmissionPolicy '${refusal.policy}' denied request: ${refusal.message}`;
  const base = ApiError.forbidden({ group: attrs.resource.group, resource: attrs.resource.resource }, requestName(attrs), message);
  const reason = (refusal.reason && refusal.reason in REASON_CODES ? refusal.reason : 'Invalid') as StatusReason;
  return new ApiError(REASON_CODES[reason] ?? 422, reason, base.message, { ...(base.details ?? {}), causes: [{ message }] });
}
