import { validateLabelValue, validateQualifiedName, validatePathSegmentName, type ApiObject, type StatusCause } from '@svc/apimachinery';
import {
  admissionMinimumCost,
  CelCompileError,
  compileAdmissionExpression,
  compileAdmissionVariables,
  type AdmissionCelEnv,
  type CelDeclaredType,
  type CompiledExpression,
} from '@svc/cel';
import { OPERATIONS } from './admissionregistration-schemas';
import { dns1035LabelErrors, dnsLabelErrors, dnsSubdomainErrors, duplicate, forbidden, indexPath, invalid, notSupported, qualifiedNameErrors, required, typeInvalid } from './field-errors';
import { asList, asRecord, asString, isRecord, type Fields } from './object-access';
import { compileCause, PER_CALL_LIMIT } from './validation-rules';
import { webhookClientConfigErrors } from './webhook-client-config';

/**
 * The original server's v1 validation of the admissionregistration kinds.
 * Every problem is a cause naming its field; CEL expressions are compiled
 * with the admission environment (packages/cel/src/admission.ts) they will
 * run in, and one whose cost exceeds the per-call limit for any input is
 * refused here rather than failing every request.
 */

export const ADMISSION_REVIEW_VERSIONS = ['v1', 'v1beta1'];
export const MAX_MATCH_CONDITIONS = 64;
const MAX_AUDIT_ANNOTATIONS = 20;
const MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH = 5 * 1024;
const FAILURE_POLICIES = ['Fail', 'Ignore'];
const MATCH_POLICIES = ['Equivalent', 'Exact'];
const SIDE_EFFECTS = ['None', 'NoneOnDryRun'];
const REINVOCATION_POLICIES = ['IfNeeded', 'Never'];
const SCOPES = ['*', 'Cluster', 'Namespaced'];
const VALIDATION_REASONS = ['Forbidden', 'Invalid', 'RequestEntityTooLarge', 'Unauthorized'];
const VALIDATION_ACTIONS = ['Audit', 'Deny', 'Warn'];
const PARAMETER_NOT_FOUND_ACTIONS = ['Allow', 'Deny'];
const SELECTOR_OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];
const CEL_IDENTIFIER = /^[_a-zA-Z][_a-zA-Z0-9]*$/;
const CEL_RESERVED = new Set(['true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while']);

function strings(value: unknown, path: string, causes: StatusCause[]): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    causes.push(typeInvalid(path, value, 'a list of strings'));
    return [];
  }
  return value.map((v, i) => {
    if (typeof v === 'string') return v;
    causes.push(typeInvalid(indexPath(path, i), v, 'a string'));
    return '';
  });
}

function records(value: unknown, path: string, causes: StatusCause[]): Array<Fields | undefined> {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    causes.push(typeInvalid(path, value, 'a list'));
    return [];
  }
  return value.map((v, i) => {
    if (isRecord(v)) return v;
    causes.push(typeInvalid(indexPath(path, i), v, 'an object'));
    return undefined;
  });
}

function oneOfErrors(value: unknown, path: string, supported: readonly string[]): StatusCause[] {
  return value === undefined || value === null || supported.includes(value as string) ? [] : [notSupported(path, value, supported)];
}

/** A metav1 LabelSelector, validated strictly (label keys, operators, values). */
export function labelSelectorErrors(value: unknown, path: string): StatusCause[] {
  if (value === undefined || value === null) return [];
  const selector = asRecord(value);
  if (!selector) return [typeInvalid(path, value, 'an object')];
  const causes: StatusCause[] = [];
  const labels = selector['matchLabels'];
  if (labels !== undefined && labels !== null) {
    const map = asRecord(labels);
    if (!map) causes.push(typeInvalid(`${path}.matchLabels`, labels, 'a map of strings'));
    else {
      for (const [k, v] of Object.entries(map)) {
        causes.push(...validateQualifiedName(k, `${path}.matchLabels`));
        if (typeof v !== 'string') causes.push(typeInvalid(`${path}.matchLabels`, v, 'a string'));
        else causes.push(...validateLabelValue(v, `${path}.matchLabels`));
      }
    }
  }
  records(selector['matchExpressions'], `${path}.matchExpressions`, causes).forEach((req, i) => {
    if (!req) return;
    const at = indexPath(`${path}.matchExpressions`, i);
    const operator = req['operator'];
    const values = strings(req['values'], `${at}.values`, causes);
    if (operator === 'In' || operator === 'NotIn') {
      if (values.length === 0) causes.push(required(`${at}.values`, "must be specified when `operator` is 'In' or 'NotIn'"));
    } else if (operator === 'Exists' || operator === 'DoesNotExist') {
      if (values.length > 0) causes.push(forbidden(`${at}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"));
    } else {
      causes.push(notSupported(`${at}.operator`, operator ?? '', SELECTOR_OPERATORS));
    }
    const key = asString(req['key']) ?? '';
    causes.push(...(key === '' ? [required(`${at}.key`)] : validateQualifiedName(key, `${at}.key`)));
    values.forEach((v, j) => causes.push(...validateLabelValue(v, indexPath(`${at}.values`, j))));
  });
  return causes;
}

/** The exclusivity rules of `resources`: `*` and `*\/*` stand alone, `res/*` and `*\/sub` exclude what they cover. */
function resourcesErrors(resources: string[], path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (resources.length === 0) causes.push(required(path));
  const wildcardSubresources = new Set<string>();
  const wildcardResources = new Set<string>();
  let doubleWildcard = false;
  let singleWildcard = false;
  let plainResource = false;
  resources.forEach((entry, i) => {
    if (entry === '') return causes.push(required(indexPath(path, i)));
    if (entry === '*/*') doubleWildcard = true;
    if (entry === '*') singleWildcard = true;
    const slash = entry.indexOf('/');
    if (slash < 0) {
      if (entry !== '*') plainResource = true;
      return undefined;
    }
    const res = entry.slice(0, slash);
    const sub = entry.slice(slash + 1);
    if (wildcardSubresources.has(res)) causes.push(invalid(indexPath(path, i), entry, `if '${res}/*' is present, must not specify ${entry}`));
    if (wildcardResources.has(sub)) causes.push(invalid(indexPath(path, i), entry, `if '*/${sub}' is present, must not specify ${entry}`));
    if (sub === '*') wildcardSubresources.add(res);
    if (res === '*') wildcardResources.add(sub);
    return undefined;
  });
  if (resources.length > 1 && doubleWildcard) causes.push(invalid(path, resources, "if '*/*' is present, must not specify other resources"));
  if (singleWildcard && plainResource) causes.push(invalid(path, resources, "if '*' is present, must not specify other resources without subresources"));
  return causes;
}

function wildcardAlone(values: string[], path: string, what: string): StatusCause[] {
  return values.length > 1 && values.includes('*') ? [invalid(path, values, `if '*' is present, must not specify other ${what}`)] : [];
}

/** A RuleWithOperations (webhook rules, policy resource rules). */
function ruleErrors(rule: Fields, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const operations = strings(rule['operations'], `${path}.operations`, causes);
  if (operations.length === 0) causes.push(required(`${path}.operations`));
  causes.push(...wildcardAlone(operations, `${path}.operations`, 'operations'));
  operations.forEach((op, i) => {
    if (!OPERATIONS.includes(op)) causes.push(notSupported(indexPath(`${path}.operations`, i), op, OPERATIONS));
  });
  const groups = strings(rule['apiGroups'], `${path}.apiGroups`, causes);
  if (groups.length === 0) causes.push(required(`${path}.apiGroups`));
  causes.push(...wildcardAlone(groups, `${path}.apiGroups`, 'API groups'));
  const versions = strings(rule['apiVersions'], `${path}.apiVersions`, causes);
  if (versions.length === 0) causes.push(required(`${path}.apiVersions`));
  causes.push(...wildcardAlone(versions, `${path}.apiVersions`, 'API versions'));
  versions.forEach((v, i) => {
    if (v === '') causes.push(required(indexPath(`${path}.apiVersions`, i)));
  });
  causes.push(...resourcesErrors(strings(rule['resources'], `${path}.resources`, causes), `${path}.resources`));
  causes.push(...oneOfErrors(rule['scope'], `${path}.scope`, SCOPES));
  return causes;
}

function namedRuleErrors(rule: Fields, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  strings(rule['resourceNames'], `${path}.resourceNames`, causes).forEach((name, i) => {
    const at = indexPath(`${path}.resourceNames`, i);
    causes.push(...validatePathSegmentName(name, at));
    if (seen.has(name)) causes.push(duplicate(at, name));
    seen.add(name);
  });
  causes.push(...ruleErrors(rule, path));
  return causes;
}

/** A fully qualified name: a DNS subdomain of at least three segments (webhook names). */
function fullyQualifiedNameErrors(name: unknown, path: string): StatusCause[] {
  if (typeof name !== 'string' || name === '') return [required(path)];
  const causes = dnsSubdomainErrors(path, name.toLowerCase());
  if (name.split('.').length < 3) causes.push(invalid(path, name, 'should be a domain with at least three segments separated by dots'));
  return causes;
}

function compiled(
  source: unknown,
  path: string,
  env: AdmissionCelEnv,
  causes: StatusCause[],
  options: { resultType?: CelDeclaredType; what?: string } = {},
): CompiledExpression | undefined {
  if (typeof source !== 'string' || source.trim() === '') {
    causes.push(required(path, `${options.what ?? 'expression'} is not specified`));
    return undefined;
  }
  let program: CompiledExpression;
  try {
    program = compileAdmissionExpression(source, env, { field: path, ...(options.resultType ? { resultType: options.resultType } : {}) });
  } catch (err) {
    if (!(err instanceof CelCompileError)) throw err;
    causes.push(compileCause(err, source));
    return undefined;
  }
  causes.push(...costErrors(program, path));
  return program;
}

function costErrors(program: CompiledExpression, path: string): StatusCause[] {
  const cost = admissionMinimumCost(program);
  return cost > PER_CALL_LIMIT ? [forbidden(path, `estimated cost of the expression for the smallest input (${cost}) exceeds the per-call cost limit (${PER_CALL_LIMIT}); it could never succeed`)] : [];
}

/** `matchConditions`: at most 64, names qualified and unique, expressions that compile to bool. */
export function matchConditionsErrors(value: unknown, path: string, env: AdmissionCelEnv): StatusCause[] {
  const causes: StatusCause[] = [];
  const conditions = records(value, path, causes);
  if (conditions.length > MAX_MATCH_CONDITIONS) causes.push({ reason: 'FieldValueTooMany', field: path, message: `Too many: ${conditions.length}: must have at most ${MAX_MATCH_CONDITIONS} items` });
  const names = new Set<string>();
  conditions.forEach((condition, i) => {
    if (!condition) return;
    const at = indexPath(path, i);
    compiled(condition['expression'], `${at}.expression`, env, causes, { resultType: 'bool' });
    const name = asString(condition['name']) ?? '';
    if (name === '') causes.push(required(`${at}.name`));
    else {
      causes.push(...qualifiedNameErrors(`${at}.name`, name));
      if (names.has(name)) causes.push(duplicate(`${at}.name`, name));
      names.add(name);
    }
  });
  return causes;
}

function admissionReviewVersionsErrors(value: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const versions = strings(value, path, causes);
  if (versions.length === 0) return [...causes, required(path, `must specify one of ${ADMISSION_REVIEW_VERSIONS.join(', ')}`)];
  const seen = new Set<string>();
  versions.forEach((v, i) => {
    const at = indexPath(path, i);
    if (seen.has(v)) return causes.push(invalid(at, v, 'duplicate version'));
    seen.add(v);
    causes.push(...dns1035LabelErrors(at, v));
    return undefined;
  });
  if (!versions.some((v) => ADMISSION_REVIEW_VERSIONS.includes(v))) causes.push(invalid(path, versions, `must include at least one of ${ADMISSION_REVIEW_VERSIONS.join(', ')}`));
  return causes;
}

function webhookErrors(hook: Fields, path: string, mutating: boolean): StatusCause[] {
  const causes = fullyQualifiedNameErrors(hook['name'], `${path}.name`);
  records(hook['rules'], `${path}.rules`, causes).forEach((rule, i) => {
    if (rule) causes.push(...ruleErrors(rule, indexPath(`${path}.rules`, i)));
  });
  causes.push(...oneOfErrors(hook['failurePolicy'], `${path}.failurePolicy`, FAILURE_POLICIES));
  causes.push(...oneOfErrors(hook['matchPolicy'], `${path}.matchPolicy`, MATCH_POLICIES));
  const sideEffects = hook['sideEffects'];
  if (sideEffects === undefined || sideEffects === null || sideEffects === '') causes.push(required(`${path}.sideEffects`, `must specify one of ${SIDE_EFFECTS.join(', ')}`));
  else causes.push(...oneOfErrors(sideEffects, `${path}.sideEffects`, SIDE_EFFECTS));
  const timeout = hook['timeoutSeconds'];
  if (timeout !== undefined && timeout !== null && (typeof timeout !== 'number' || timeout < 1 || timeout > 30)) causes.push(invalid(`${path}.timeoutSeconds`, timeout, 'the timeout value must be between 1 and 30 seconds'));
  causes.push(...labelSelectorErrors(hook['namespaceSelector'], `${path}.namespaceSelector`));
  causes.push(...labelSelectorErrors(hook['objectSelector'], `${path}.objectSelector`));
  if (mutating) causes.push(...oneOfErrors(hook['reinvocationPolicy'], `${path}.reinvocationPolicy`, REINVOCATION_POLICIES));
  causes.push(...webhookClientConfigErrors(asRecord(hook['clientConfig']) ?? {}, `${path}.clientConfig`, { pemCaBundle: true }));
  causes.push(...matchConditionsErrors(hook['matchConditions'], `${path}.matchConditions`, { authorizer: true }));
  causes.push(...admissionReviewVersionsErrors(hook['admissionReviewVersions'], `${path}.admissionReviewVersions`));
  return causes;
}

/** A MutatingWebhookConfiguration or ValidatingWebhookConfiguration. */
export function validateWebhookConfiguration(obj: ApiObject, mutating: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const names = new Set<string>();
  records(obj['webhooks'], 'webhooks', causes).forEach((hook, i) => {
    if (!hook) return;
    const path = indexPath('webhooks', i);
    causes.push(...webhookErrors(hook, path, mutating));
    const name = asString(hook['name']) ?? '';
    if (name !== '') {
      if (names.has(name)) causes.push(duplicate(`${path}.name`, name));
      names.add(name);
    }
  });
  return causes;
}

/** MatchResources (a policy's matchConstraints, a binding's matchResources). */
function matchResourcesErrors(match: Fields, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const policy = match['matchPolicy'];
  if (policy === undefined || policy === null || policy === '') causes.push(required(`${path}.matchPolicy`));
  else causes.push(...oneOfErrors(policy, `${path}.matchPolicy`, MATCH_POLICIES));
  for (const selector of ['namespaceSelector', 'objectSelector']) {
    const value = match[selector];
    if (value === undefined || value === null) causes.push(required(`${path}.${selector}`));
    else causes.push(...labelSelectorErrors(value, `${path}.${selector}`));
  }
  for (const list of ['resourceRules', 'excludeResourceRules']) {
    records(match[list], `${path}.${list}`, causes).forEach((rule, i) => {
      if (rule) causes.push(...namedRuleErrors(rule, indexPath(`${path}.${list}`, i)));
    });
  }
  return causes;
}

function paramKindErrors(kind: Fields, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const apiVersion = asString(kind['apiVersion']) ?? '';
  if (apiVersion === '') causes.push(required(`${path}.apiVersion`));
  else {
    const parts = apiVersion.split('/');
    if (parts.length > 2) causes.push(invalid(`${path}.apiVersion`, apiVersion, `unexpected GroupVersion string: ${apiVersion}`));
    else {
      const [group, version] = parts.length === 2 ? [parts[0] ?? '', parts[1] ?? ''] : ['', parts[0] ?? ''];
      if (group !== '') for (const c of dnsSubdomainErrors(`${path}.apiVersion`, group)) causes.push(c);
      if (version === '') causes.push(invalid(`${path}.apiVersion`, apiVersion, 'version must be specified'));
      else causes.push(...dns1035LabelErrors(`${path}.apiVersion`, version));
    }
  }
  const k = asString(kind['kind']) ?? '';
  if (k === '') causes.push(required(`${path}.kind`));
  else for (const c of dns1035LabelErrors(`${path}.kind`, k.toLowerCase())) causes.push(invalid(`${path}.kind`, k, `may have mixed case, but should otherwise match: ${(c.message ?? '').replace(/^Invalid value: "[^"]*": /, '')}`));
  return causes;
}

function hasNewlines(text: string): boolean {
  return /[\n\r]/.test(text);
}

/** The `spec` of a ValidatingAdmissionPolicy. */
function policySpecErrors(spec: Fields, policyName: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const failurePolicy = spec['failurePolicy'];
  if (failurePolicy === undefined || failurePolicy === null || failurePolicy === '') causes.push(required('spec.failurePolicy'));
  else causes.push(...oneOfErrors(failurePolicy, 'spec.failurePolicy', FAILURE_POLICIES));
  const paramKind = spec['paramKind'];
  const hasParams = paramKind !== undefined && paramKind !== null;
  if (hasParams) {
    const kind = asRecord(paramKind);
    causes.push(...(kind ? paramKindErrors(kind, 'spec.paramKind') : [typeInvalid('spec.paramKind', paramKind, 'an object')]));
  }
  const constraints = asRecord(spec['matchConstraints']);
  if (!constraints) causes.push(required('spec.matchConstraints'));
  else {
    causes.push(...matchResourcesErrors(constraints, 'spec.matchConstraints'));
    if (asList(constraints['resourceRules']).length === 0) causes.push(required('spec.matchConstraints.resourceRules'));
  }
  const base: AdmissionCelEnv = { params: hasParams, namespaceObject: true, authorizer: true };
  causes.push(...matchConditionsErrors(spec['matchConditions'], 'spec.matchConditions', base));

  const variableList = records(spec['variables'], 'spec.variables', causes);
  const variableNames = new Set<string>();
  variableList.forEach((v, i) => {
    if (!v) return;
    const at = indexPath('spec.variables', i);
    const name = asString(v['name']) ?? '';
    if (name.trim() === '') causes.push(required(`${at}.name`, 'name is not specified'));
    else if (!CEL_IDENTIFIER.test(name) || CEL_RESERVED.has(name)) causes.push(invalid(`${at}.name`, name, 'name is not a valid CEL identifier'));
    else if (variableNames.has(name)) causes.push(duplicate(`${at}.name`, name));
    variableNames.add(name);
    if (typeof v['expression'] !== 'string' || v['expression'].trim() === '') causes.push(required(`${at}.expression`, 'expression is not specified'));
  });
  const withExpressions = variableList.map((v) => ({ name: asString(v?.['name']) ?? '', expression: asString(v?.['expression']) ?? '' }));
  const variables = compileAdmissionVariables(withExpressions, base, 'spec.variables');
  for (const err of variables.errors) {
    // An empty expression is reported above.
    const index = Number(/\[(\d+)\]/.exec(err.field)?.[1] ?? -1);
    if ((withExpressions[index]?.expression ?? '').trim() !== '') causes.push(compileCause(err, withExpressions[index]?.expression ?? ''));
  }
  for (const v of variables.variables) causes.push(...costErrors(v.program, `spec.variables[${withExpressions.findIndex((w) => w.name === v.name)}].expression`));
  const env = variables.env;
  const messageEnv: AdmissionCelEnv = { ...env, authorizer: false };

  const validations = records(spec['validations'], 'spec.validations', causes);
  const annotations = records(spec['auditAnnotations'], 'spec.auditAnnotations', causes);
  if (validations.length === 0 && annotations.length === 0) {
    causes.push(required('spec.validations', 'validations or auditAnnotations must contain at least one item'));
    causes.push(required('spec.auditAnnotations', 'validations or auditAnnotations must contain at least one item'));
  }
  validations.forEach((v, i) => {
    if (!v) return;
    const at = indexPath('spec.validations', i);
    compiled(v['expression'], `${at}.expression`, env, causes, { resultType: 'bool' });
    const messageExpression = v['messageExpression'];
    if (typeof messageExpression === 'string' && messageExpression !== '') {
      if (messageExpression.trim() === '') causes.push(invalid(`${at}.messageExpression`, messageExpression, 'must be non-empty if specified'));
      else compiled(messageExpression, `${at}.messageExpression`, messageEnv, causes, { resultType: 'string', what: 'messageExpression' });
    }
    const message = v['message'];
    if (typeof message === 'string' && message !== '') {
      if (message.trim() === '') causes.push(invalid(`${at}.message`, message, 'message must be non-empty if specified'));
      else if (hasNewlines(message.trim())) causes.push(invalid(`${at}.message`, message, 'message must not contain line breaks'));
    }
    causes.push(...oneOfErrors(v['reason'], `${at}.reason`, VALIDATION_REASONS));
  });
  if (annotations.length > MAX_AUDIT_ANNOTATIONS) causes.push(invalid('spec.auditAnnotations', `${annotations.length} items`, `must not have more than ${MAX_AUDIT_ANNOTATIONS} auditAnnotations`));
  const keys = new Set<string>();
  annotations.forEach((a, i) => {
    if (!a) return;
    const at = indexPath('spec.auditAnnotations', i);
    const key = asString(a['key']) ?? '';
    if (policyName === '') causes.push(invalid(`${at}.key`, key, 'requires metadata.name be non-empty'));
    else causes.push(...validateQualifiedName(`${policyName}/${key}`, `${at}.key`));
    if (keys.has(key)) causes.push(duplicate(`${at}.key`, key));
    keys.add(key);
    const valueExpression = asString(a['valueExpression']) ?? '';
    if (valueExpression.trim().length > MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH) {
      causes.push(required(`${at}.valueExpression`, `must not exceed ${MAX_AUDIT_ANNOTATION_VALUE_EXPRESSION_LENGTH} bytes in length`));
      return;
    }
    const program = compiled(a['valueExpression'], `${at}.valueExpression`, env, causes, { what: 'valueExpression' });
    const type = program?.resultType;
    if (type !== undefined && type !== 'dyn' && type !== 'string' && type !== 'null') {
      causes.push(invalid(`${at}.valueExpression`, valueExpression, `must evaluate to one of [string null_type]`));
    }
  });
  return causes;
}

function statusErrors(status: Fields): StatusCause[] {
  const causes: StatusCause[] = [];
  const typeChecking = asRecord(status['typeChecking']);
  records(typeChecking?.['expressionWarnings'], 'status.typeChecking.expressionWarnings', causes).forEach((w, i) => {
    if (!w) return;
    const at = indexPath('status.typeChecking.expressionWarnings', i);
    if (!asString(w['warning'])) causes.push(required(`${at}.warning`));
    if (!(asString(w['fieldRef']) ?? '').trim()) causes.push(required(`${at}.fieldRef`));
  });
  records(status['conditions'], 'status.conditions', causes).forEach((c, i) => {
    if (!c) return;
    const at = indexPath('status.conditions', i);
    const type = asString(c['type']) ?? '';
    if (type === '') causes.push(required(`${at}.type`));
    else causes.push(...validateQualifiedName(type, `${at}.type`));
    causes.push(...oneOfErrors(c['status'], `${at}.status`, ['True', 'False', 'Unknown']));
    if (c['status'] === undefined) causes.push(required(`${at}.status`));
    const reason = asString(c['reason']) ?? '';
    if (reason === '') causes.push(required(`${at}.reason`));
    else if (!/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/.test(reason)) causes.push(invalid(`${at}.reason`, reason, "a condition reason must start with alphabetic character, optionally followed by a string of alphanumeric characters or '_,:', and must end with an alphanumeric character or '_'"));
    if (!asString(c['lastTransitionTime'])) causes.push(required(`${at}.lastTransitionTime`));
  });
  return causes;
}

export function validateValidatingAdmissionPolicy(obj: ApiObject): StatusCause[] {
  const spec = asRecord(obj['spec']);
  const causes = spec ? policySpecErrors(spec, obj.metadata?.name ?? '') : [required('spec')];
  const status = asRecord(obj['status']);
  if (status) causes.push(...statusErrors(status));
  return causes;
}

function paramRefErrors(ref: Fields, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const name = asString(ref['name']) ?? '';
  const selector = ref['selector'];
  const hasSelector = selector !== undefined && selector !== null;
  if (name !== '') {
    causes.push(...validatePathSegmentName(name, `${path}.name`));
    if (hasSelector) causes.push(forbidden(`${path}.name`, 'name and selector are mutually exclusive'));
  }
  if (hasSelector) {
    causes.push(...labelSelectorErrors(selector, `${path}.selector`));
    if (name !== '') causes.push(forbidden(`${path}.selector`, 'name and selector are mutually exclusive'));
  }
  if (name === '' && !hasSelector) causes.push(required(path, 'one of name or selector must be specified'));
  const namespace = asString(ref['namespace']) ?? '';
  if (namespace !== '') causes.push(...dnsLabelErrors(`${path}.namespace`, namespace));
  const action = ref['parameterNotFoundAction'];
  if (action === undefined || action === null || action === '') causes.push(required(`${path}.parameterNotFoundAction`));
  else causes.push(...oneOfErrors(action, `${path}.parameterNotFoundAction`, PARAMETER_NOT_FOUND_ACTIONS));
  return causes;
}

function validationActionsErrors(value: unknown, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const actions = strings(value, path, causes);
  const seen = new Set<string>();
  actions.forEach((a, i) => {
    causes.push(...oneOfErrors(a, indexPath(path, i), VALIDATION_ACTIONS));
    if (seen.has(a)) causes.push(duplicate(indexPath(path, i), a));
    seen.add(a);
  });
  if (seen.has('Deny') && seen.has('Warn')) causes.push(invalid(path, actions, 'must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)'));
  if (seen.size === 0) causes.push(required(path, 'at least one validation action is required'));
  return causes;
}

export function validateValidatingAdmissionPolicyBinding(obj: ApiObject): StatusCause[] {
  const spec = asRecord(obj['spec']);
  if (!spec) return [required('spec')];
  const causes: StatusCause[] = [];
  const policyName = asString(spec['policyName']) ?? '';
  if (policyName === '') causes.push(required('spec.policyName'));
  else causes.push(...dnsSubdomainErrors('spec.policyName', policyName));
  const ref = spec['paramRef'];
  if (ref !== undefined && ref !== null) {
    const r = asRecord(ref);
    causes.push(...(r ? paramRefErrors(r, 'spec.paramRef') : [typeInvalid('spec.paramRef', ref, 'an object')]));
  }
  const match = spec['matchResources'];
  if (match !== undefined && match !== null) {
    const m = asRecord(match);
    causes.push(...(m ? matchResourcesErrors(m, 'spec.matchResources') : [typeInvalid('spec.matchResources', match, 'an object')]));
  }
  causes.push(...validationActionsErrors(spec['validationActions'], 'spec.validationActions'));
  return causes;
}
