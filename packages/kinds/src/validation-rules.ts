import type { StatusCause } from '@svc/apimachinery';
import { CelCompileError, CelInputCache, compile, unknownShape, type CelDeclaredType, type CompiledExpression, type Shape } from '@svc/cel';
import { forbidden, invalid, notSupported, required } from './field-errors';
import { asList, asRecord, isRecord, type Fields } from './object-access';

/**
 * CEL validation rules of a custom resource's schema (`x-svc-validations`,
 * read from `x-kubernetes-validations` too), as the original server runs
 * them (apiextensions-apiserver `pkg/apiserver/schema/cel`): each rule is
 * compiled once, when the definition is validated and again when its
 * registry entry is built, with `self` (and `oldSelf`) typed from the
 * structural schema; each is evaluated on every create and update of an
 * object at every place its schema node has a value. A rule that reads
 * `oldSelf` is a transition rule: it runs on update only, where an old value
 * is found at the same place (same key of a map or object, same keys of a
 * `map` list).
 *
 * Costs are bounded twice, with the original's limits: when the definition
 * is written, the worst case over every value the schema allows (sizes from
 * maxLength, maxItems and maxProperties, else from the largest request) per
 * rule times the number of places it runs, and the total of the schema;
 * when an object is written, the bound of each evaluation against the
 * per-call limit and the sum of one request's against the runtime budget.
 */

/** The worst-case estimated cost of one rule, times the places it runs (StaticEstimatedCostLimit). */
export const STATIC_ESTIMATED_COST_LIMIT = 10_000_000;
/** The worst-case estimated cost of all rules of one schema (StaticEstimatedCRDCostLimit). */
export const STATIC_ESTIMATED_CRD_COST_LIMIT = 100_000_000;
/** The cost budget of one evaluation (PerCallLimit). */
export const PER_CALL_LIMIT = 1_000_000;
/** The cost budget of all evaluations for one object write (RuntimeCELCostBudget). */
export const RUNTIME_CEL_COST_BUDGET = 10_000_000;
/** The largest request; it bounds values whose schema declares no size (MaxRequestSizeBytes). */
export const MAX_REQUEST_SIZE_BYTES = 3 * 1024 * 1024;
/** The longest message a messageExpression may produce (MaxEvaluatedMessageExpressionSizeBytes). */
export const MAX_MESSAGE_EXPRESSION_LENGTH = 5 * 1024;

const EXTENSION = 'x-svc-validations';
const REASONS = ['FieldValueDuplicate', 'FieldValueForbidden', 'FieldValueInvalid', 'FieldValueRequired'] as const;
type RuleReason = (typeof REASONS)[number];

interface CompiledRule {
  source: string;
  message: string | undefined;
  program: CompiledExpression;
  messageProgram: CompiledExpression | undefined;
  reason: RuleReason;
  /** The rule's fieldPath as a field path suffix (`.a[k]`), '' without one. */
  fieldPath: string;
  transition: boolean;
}

/** One schema node that has rules, or a descendant with some. */
interface RuleNode {
  type: CelDeclaredType;
  schemaType: string | undefined;
  rules: CompiledRule[];
  properties?: Map<string, RuleNode>;
  additional?: RuleNode;
  items?: RuleNode;
  listMapKeys?: string[];
}

/** Checks the rules of a definition's schema and runs them on its objects. */
export interface RuleValidator {
  /**
   * Causes for each rule `obj` breaks (with `old`, the stored object, on
   * update), each naming its field; `only` runs just the transition rules
   * or just the others (a write path that checks an update in two steps).
   */
  validate(obj: Fields, old?: Fields, only?: 'transition' | 'stateless'): StatusCause[];
}

export interface CompiledRules {
  /** Undefined when the schema has no rules. */
  validator: RuleValidator | undefined;
  /** Every problem of the rules, each naming its field under the schema's path. */
  causes: StatusCause[];
}

// ---- types and worst-case shapes of schema nodes ----

const ROOT_FIELDS: Record<string, CelDeclaredType> = {
  apiVersion: 'string',
  kind: 'string',
  metadata: { object: { name: 'string', generateName: 'string' } },
};

function isResourceRoot(node: Fields, root: boolean): boolean {
  return root || node['x-svc-embedded-resource'] === true;
}

/** The CEL type of values of a (normalized, structural) schema node. */
export function declaredType(node: Fields, root = false, depth = 0): CelDeclaredType {
  if (node['x-svc-int-or-string'] === true || depth > 64) return 'dyn';
  const props = asRecord(node['properties']);
  const additional = node['additionalProperties'];
  switch (node['type']) {
    case 'string':
      return 'string';
    case 'integer':
      return 'int';
    case 'number':
      return 'double';
    case 'boolean':
      return 'bool';
    case 'array':
      return { list: isRecord(node['items']) ? declaredType(node['items'], false, depth + 1) : 'dyn' };
    case 'object': {
      if (isRecord(additional)) return { map: declaredType(additional, false, depth + 1) };
      if (additional === true) return { map: 'dyn' };
      if (!props && node['x-svc-preserve-unknown-fields'] === true) return 'dyn';
      const fields: Record<string, CelDeclaredType> = isResourceRoot(node, root) ? { ...ROOT_FIELDS } : {};
      for (const [name, sub] of Object.entries(props ?? {})) {
        if (isRecord(sub) && !(isResourceRoot(node, root) && name === 'metadata')) fields[name] = declaredType(sub, false, depth + 1);
      }
      return { object: fields };
    }
    default:
      return 'dyn';
  }
}

/** The smallest JSON text of a value of the node, as the original estimates list and map sizes from the request size. */
function minSerializedSize(node: Fields): number {
  if (node['x-svc-int-or-string'] === true) return 1;
  switch (node['type']) {
    case 'string':
      return 2;
    case 'boolean':
      return 4;
    case 'integer':
    case 'number':
      return 1;
    case 'array':
    case 'object':
      return 2;
    default:
      return 1;
  }
}

function bound(value: unknown): number | undefined {
  return typeof value === 'number' && value >= 0 ? value : undefined;
}

/** The largest value the node admits: declared bounds, else what fits in the largest request. */
export function worstCaseShape(node: Fields, depth = 0): Shape {
  if (depth > 64 || node['x-svc-int-or-string'] === true) return unknownShape(MAX_REQUEST_SIZE_BYTES - 2);
  switch (node['type']) {
    case 'string': {
      const enumLongest = asList(node['enum']).reduce<number>((m, v) => Math.max(m, typeof v === 'string' ? v.length : 0), 0);
      return { size: bound(node['maxLength']) ?? (enumLongest > 0 ? enumLongest : MAX_REQUEST_SIZE_BYTES - 2) };
    }
    case 'array': {
      const items = asRecord(node['items']);
      const item = items ? worstCaseShape(items, depth + 1) : unknownShape(MAX_REQUEST_SIZE_BYTES);
      const size = bound(node['maxItems']) ?? Math.floor((MAX_REQUEST_SIZE_BYTES - 2) / ((items ? minSerializedSize(items) : 1) + 1));
      return { size, elem: item };
    }
    case 'object': {
      const additional = node['additionalProperties'];
      const props = asRecord(node['properties']);
      if (isRecord(additional) || additional === true || (!props && node['x-svc-preserve-unknown-fields'] === true)) {
        const value = isRecord(additional) ? worstCaseShape(additional, depth + 1) : unknownShape(MAX_REQUEST_SIZE_BYTES);
        const size = bound(node['maxProperties']) ?? Math.floor((MAX_REQUEST_SIZE_BYTES - 2) / ((isRecord(additional) ? minSerializedSize(additional) : 1) + 4));
        // Keys share the request with each other: their lengths add up to at most its size.
        return { size, elem: value, key: { size: Math.floor((MAX_REQUEST_SIZE_BYTES - 2) / Math.max(1, size)) } };
      }
      const fields = new Map<string, Shape>();
      let elem: Shape | undefined;
      for (const [name, sub] of Object.entries(props ?? {})) {
        if (!isRecord(sub)) continue;
        const s = worstCaseShape(sub, depth + 1);
        fields.set(name, s);
        elem = elem && elem.size >= s.size ? elem : s;
      }
      const shape: Shape = { size: fields.size, fields, key: { size: Math.max(1, ...[...fields.keys()].map((k) => k.length)) } };
      if (elem) shape.elem = elem;
      return shape;
    }
    default:
      return { size: 1 };
  }
}

// ---- fieldPath ----

/**
 * A rule's `fieldPath` (`.a.b`, `['a.b']`, `.map['key']`) resolved against
 * the node's schema: the field path suffix it stands for, or why it is not
 * valid. List items cannot be named, as upstream.
 */
export function resolveFieldPath(fieldPath: string, node: Fields): { path: string } | { error: string } {
  let schema: Fields = node;
  let out = '';
  let i = 0;
  const step = (name: string): string | undefined => {
    const props = asRecord(schema['properties']);
    const additional = schema['additionalProperties'];
    if (props) {
      const sub = asRecord(props[name]);
      if (!sub) return 'does not refer to a valid field';
      schema = sub;
      out += `.${name}`;
      return undefined;
    }
    if (isRecord(additional)) {
      schema = additional;
      out += `[${name}]`;
      return undefined;
    }
    return 'does not refer to a valid field';
  };
  if (fieldPath === '') return { error: 'unexpected end of JSON path' };
  while (i < fieldPath.length) {
    const c = fieldPath[i];
    if (c === '.') {
      const rest = fieldPath.slice(i + 1);
      const m = /^[^.[\]]+/.exec(rest);
      if (!m) return { error: 'unexpected end of JSON path' };
      const problem = step(m[0]);
      if (problem) return { error: problem };
      i += 1 + m[0].length;
    } else if (c === '[') {
      const m = /^\['((?:[^'\\]|\\.)*)'\]/.exec(fieldPath.slice(i));
      if (!m) return { error: `expected single quoted string in [...] at offset ${i}` };
      const problem = step((m[1] ?? '').replace(/\\(.)/g, '$1'));
      if (problem) return { error: problem };
      i += m[0].length;
    } else {
      return { error: `expected [ or . but got: ${fieldPath.slice(i)}` };
    }
  }
  return { path: out };
}

// ---- compiling a schema's rules ----

interface Walk {
  causes: StatusCause[];
  /** Each rule's worst-case cost times its cardinality, and the field naming the rule. */
  costs: Array<{ field: string; cost: number }>;
}

function costFactor(cost: number, limit: number): string {
  const factor = cost / limit;
  if (factor > 100) return 'more than 100x';
  return factor < 1.5 ? `${factor.toFixed(6)}x` : `${factor.toFixed(1)}x`;
}

function costMessage(what: string, cost: number, limit: number): string {
  return `${what} exceeds budget by factor of ${costFactor(cost, limit)} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)`;
}

export function compileCause(err: CelCompileError, source: string, prefix = ''): StatusCause {
  const detail = err.detail;
  if (detail.startsWith('Invalid value: ')) return invalid(err.field, source, `${prefix}${detail.slice('Invalid value: '.length)}`);
  if (detail.startsWith('Required value')) return required(err.field, `${prefix}${detail.replace(/^Required value:? ?/, '')}`);
  return { reason: 'FieldValueInvalid', field: err.field, message: detail };
}

function compileRule(raw: unknown, field: string, node: Fields, type: CelDeclaredType, correlatable: boolean, shape: Shape, cardinality: number, walk: Walk): CompiledRule | undefined {
  const r = asRecord(raw);
  if (!r) {
    walk.causes.push(invalid(field, raw, 'must be an object'));
    return undefined;
  }
  const source = r['rule'];
  if (typeof source !== 'string' || source.trim() === '') {
    walk.causes.push(required(`${field}.rule`, 'rule is not specified'));
    return undefined;
  }
  const before = walk.causes.length;
  const message = r['message'];
  if (message !== undefined) {
    if (typeof message !== 'string' || message.trim() === '') walk.causes.push(required(`${field}.message`, 'message must be non-empty if specified'));
    else if (/[\n\r]/.test(message)) walk.causes.push(invalid(`${field}.message`, message, 'message must not contain line breaks'));
  }
  const reason = r['reason'] ?? 'FieldValueInvalid';
  if (!(REASONS as readonly string[]).includes(reason as string)) walk.causes.push(notSupported(`${field}.reason`, reason, REASONS));
  let fieldPath = '';
  if (r['fieldPath'] !== undefined && r['fieldPath'] !== '') {
    const resolved = typeof r['fieldPath'] === 'string' ? resolveFieldPath(r['fieldPath'], node) : { error: 'must be a string' };
    if ('error' in resolved) walk.causes.push(invalid(`${field}.fieldPath`, r['fieldPath'], `fieldPath must be a valid path: ${resolved.error}`));
    else fieldPath = resolved.path;
  }
  const variables = { self: type, oldSelf: type };
  let program: CompiledExpression | undefined;
  try {
    program = compile(source, { field: `${field}.rule`, variables, resultType: 'bool', costBudget: PER_CALL_LIMIT });
  } catch (err) {
    if (!(err instanceof CelCompileError)) throw err;
    walk.causes.push(compileCause(err, source));
  }
  const transition = program?.references('oldSelf') ?? false;
  if (r['optionalOldSelf'] !== undefined && r['optionalOldSelf'] !== false) {
    if (!transition) walk.causes.push(forbidden(`${field}.optionalOldSelf`, 'may not be set if oldSelf is not used in rule'));
    else walk.causes.push(forbidden(`${field}.optionalOldSelf`, 'is not supported by this server (CEL optional types are not available); write a rule that runs on update only'));
  }
  if (transition && !correlatable) walk.causes.push(invalid(`${field}.rule`, source, 'oldSelf cannot be used on the uncorrelatable portion of the schema within items of a list that is not x-svc-list-type=map'));
  let messageProgram: CompiledExpression | undefined;
  const messageExpression = r['messageExpression'];
  if (messageExpression !== undefined) {
    if (typeof messageExpression !== 'string' || messageExpression.trim() === '') walk.causes.push(required(`${field}.messageExpression`, 'messageExpression must be non-empty if specified'));
    else {
      try {
        messageProgram = compile(messageExpression, { field: `${field}.messageExpression`, variables, resultType: 'string', costBudget: PER_CALL_LIMIT });
      } catch (err) {
        if (!(err instanceof CelCompileError)) throw err;
        walk.causes.push(compileCause(err, messageExpression, 'messageExpression '));
      }
    }
  }
  const shapes = { self: shape, oldSelf: shape };
  for (const [program_, name] of [[program, 'rule'], [messageProgram, 'messageExpression']] as const) {
    if (!program_) continue;
    const cost = Math.min(1e18, program_.worstCaseCost(shapes, MAX_REQUEST_SIZE_BYTES) * cardinality);
    walk.costs.push({ field: `${field}.${name}`, cost });
    if (cost > STATIC_ESTIMATED_COST_LIMIT) walk.causes.push(forbidden(`${field}.${name}`, costMessage(name === 'rule' ? 'estimated rule cost' : 'estimated messageExpression cost', cost, STATIC_ESTIMATED_COST_LIMIT)));
  }
  if (!program || walk.causes.length > before) return undefined;
  return {
    source,
    message: typeof message === 'string' ? message.trim() : undefined,
    program,
    messageProgram,
    reason: reason as RuleReason,
    fieldPath,
    transition,
  };
}

function compileNode(node: Fields, path: string, root: boolean, correlatable: boolean, cardinality: number, depth: number, walk: Walk): RuleNode | undefined {
  if (depth > 64) return undefined;
  const type = declaredType(node, root);
  const shape = worstCaseShape(node);
  const rules: CompiledRule[] = [];
  asList(node[EXTENSION]).forEach((raw, i) => {
    const rule = compileRule(raw, `${path}.${EXTENSION}[${i}]`, node, type, correlatable, shape, cardinality, walk);
    if (rule) rules.push(rule);
  });
  const out: RuleNode = { type, schemaType: typeof node['type'] === 'string' ? node['type'] : undefined, rules };
  let any = rules.length > 0;
  const props = asRecord(node['properties']);
  if (props) {
    for (const [name, sub] of Object.entries(props)) {
      if (!isRecord(sub) || (root && name === 'metadata')) continue;
      const child = compileNode(sub, `${path}.properties[${name}]`, false, correlatable, cardinality, depth + 1, walk);
      if (child) {
        (out.properties ??= new Map()).set(name, child);
        any = true;
      }
    }
  }
  const additional = asRecord(node['additionalProperties']);
  if (additional) {
    const child = compileNode(additional, `${path}.additionalProperties`, false, correlatable, cardinality * Math.max(1, shape.size), depth + 1, walk);
    if (child) {
      out.additional = child;
      any = true;
    }
  }
  const items = asRecord(node['items']);
  if (items) {
    const keys = node['x-svc-list-type'] === 'map' ? asList(node['x-svc-list-map-keys']).filter((k): k is string => typeof k === 'string') : undefined;
    const child = compileNode(items, `${path}.items`, false, correlatable && keys !== undefined, cardinality * Math.max(1, shape.size), depth + 1, walk);
    if (child) {
      out.items = child;
      if (keys) out.listMapKeys = keys;
      any = true;
    }
  }
  return any ? out : undefined;
}

/**
 * Compiles the rules of a version's `openAPIV3Schema` (normalized and
 * structurally valid); `path` names the schema in causes
 * (`spec.versions[0].schema.openAPIV3Schema`).
 */
export function compileValidationRules(schema: Fields, path: string): CompiledRules {
  const walk: Walk = { causes: [], costs: [] };
  const root = compileNode(schema, path, true, true, 1, 0, walk);
  const total = walk.costs.reduce((sum, c) => Math.min(1e18, sum + c.cost), 0);
  if (total > STATIC_ESTIMATED_CRD_COST_LIMIT) {
    walk.causes.push(forbidden(path, costMessage(`${EXTENSION} estimated rule cost total for entire OpenAPIv3 schema`, total, STATIC_ESTIMATED_CRD_COST_LIMIT)));
  }
  return { validator: root && walk.causes.length === 0 ? new Validator(root) : undefined, causes: walk.causes };
}

/** Whether a raw schema (normalized) declares any rule; cheap, so definitions without rules pay nothing. */
export function hasValidationRules(schema: unknown, depth = 0): boolean {
  if (!isRecord(schema) || depth > 66) return false;
  if (asList(schema[EXTENSION]).length > 0) return true;
  const props = asRecord(schema['properties']);
  if (props && Object.values(props).some((p) => hasValidationRules(p, depth + 1))) return true;
  return hasValidationRules(schema['additionalProperties'], depth + 1) || hasValidationRules(schema['items'], depth + 1);
}

// ---- evaluating ----

function show(value: unknown): string {
  return JSON.stringify(value) ?? 'null';
}

function isComposite(node: RuleNode, value: unknown): boolean {
  return node.schemaType === 'object' || node.schemaType === 'array' || (typeof value === 'object' && value !== null);
}

function failure(node: RuleNode, field: string, value: unknown, reason: RuleReason, detail: string): StatusCause {
  const composite = isComposite(node, value);
  switch (reason) {
    case 'FieldValueForbidden':
      return { reason, field, message: `Forbidden: ${detail}` };
    case 'FieldValueRequired':
      return { reason, field, message: `Required value: ${detail}` };
    case 'FieldValueDuplicate':
      return { reason, field, message: composite ? 'Duplicate value' : `Duplicate value: ${show(value)}` };
    default:
      return { reason: 'FieldValueInvalid', field, message: composite ? `Invalid value: ${detail}` : `Invalid value: ${show(value)}: ${detail}` };
  }
}

function outOfBudget(node: RuleNode, field: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: "${node.schemaType ?? 'object'}": validation failed due to running out of cost budget, no further validation rules will be run` };
}

function join(path: string, key: string): string {
  return path ? `${path}.${key}` : key;
}

interface Run {
  only: 'transition' | 'stateless' | undefined;
  causes: StatusCause[];
  remaining: number;
  cache: CelInputCache;
}

class Validator implements RuleValidator {
  constructor(private readonly root: RuleNode) {}

  validate(obj: Fields, old?: Fields, only?: 'transition' | 'stateless'): StatusCause[] {
    const run: Run = { only, causes: [], remaining: RUNTIME_CEL_COST_BUDGET, cache: new CelInputCache() };
    this.walk(this.root, obj, old, '', run, 0);
    return run.causes;
  }

  /** Returns false once the budget is spent: no further rule runs. */
  private walk(node: RuleNode, value: unknown, old: unknown, path: string, run: Run, depth: number): boolean {
    // Only values are validated; a rule on an absent or null field does not run.
    if (value === undefined || value === null || depth > 256) return true;
    if (!this.rules(node, value, old, path, run)) return false;
    if (Array.isArray(value)) {
      if (!node.items) return true;
      const olds = node.listMapKeys && Array.isArray(old) ? indexByKeys(old, node.listMapKeys) : undefined;
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        const oldItem = olds && node.listMapKeys && isRecord(item) ? olds.get(keyOf(item, node.listMapKeys)) : undefined;
        if (!this.walk(node.items, item, oldItem, `${path}[${i}]`, run, depth + 1)) return false;
      }
      return true;
    }
    if (!isRecord(value)) return true;
    const oldRecord = isRecord(old) ? old : undefined;
    for (const [key, child] of Object.entries(value)) {
      const sub = node.properties?.get(key);
      if (sub && !this.walk(sub, child, oldRecord?.[key], join(path, key), run, depth + 1)) return false;
      if (!sub && node.additional && !this.walk(node.additional, child, oldRecord?.[key], `${path}[${key}]`, run, depth + 1)) return false;
    }
    return true;
  }

  private rules(node: RuleNode, value: unknown, old: unknown, path: string, run: Run): boolean {
    for (const rule of node.rules) {
      if (rule.transition && (old === undefined || old === null)) continue;
      if ((run.only === 'transition' && !rule.transition) || (run.only === 'stateless' && rule.transition)) continue;
      if (run.remaining <= 0) {
        run.causes.push(outOfBudget(node, path));
        return false;
      }
      const values = { self: value, oldSelf: old ?? null };
      const { outcome, cost } = rule.program.evaluateWithCost(values, { cache: run.cache, costBudget: run.remaining });
      run.remaining -= cost;
      if (!outcome.ok) {
        if (outcome.error.reason === 'CostExceeded') {
          const overall = rule.program.estimateCost(values, run.cache) <= PER_CALL_LIMIT;
          run.causes.push(
            overall
              ? outOfBudget(node, path)
              : { reason: 'FieldValueInvalid', field: path, message: `Invalid value: "${node.schemaType ?? 'object'}": '${outcome.error.message}': no further validation rules will be run due to call cost exceeds limit for rule: ${rule.message ?? rule.source}` },
          );
          return false;
        }
        run.causes.push({ reason: 'FieldValueInvalid', field: path, message: `Invalid value: "${node.schemaType ?? 'object'}": ${outcome.error.message} evaluating rule: ${rule.message ?? rule.source}` });
        continue;
      }
      if (outcome.value === true) continue;
      const field = path + rule.fieldPath;
      let detail = rule.message ?? `failed rule: ${rule.source}`;
      if (rule.messageProgram) {
        const evaluated = rule.messageProgram.evaluateWithCost(values, { cache: run.cache, costBudget: Math.max(0, run.remaining) });
        const message = evaluated.outcome;
        run.remaining -= evaluated.cost;
        if (!message.ok && message.error.reason === 'CostExceeded') {
          run.causes.push({ reason: 'FieldValueInvalid', field, message: `Invalid value: "${node.schemaType ?? 'object'}": messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run` });
          return false;
        }
        if (message.ok) {
          const text = typeof message.value === 'string' ? message.value.trim() : '';
          // As upstream, a message that is not usable falls back to the rule's message.
          if (text !== '' && text.length <= MAX_MESSAGE_EXPRESSION_LENGTH && !text.includes('\n')) detail = text;
        }
      }
      run.causes.push(failure(node, field, value, rule.reason, detail));
    }
    return true;
  }
}

function keyOf(item: Fields, keys: readonly string[]): string {
  return JSON.stringify(keys.map((k) => item[k] ?? null));
}

function indexByKeys(list: readonly unknown[], keys: readonly string[]): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const item of list) if (isRecord(item)) out.set(keyOf(item, keys), item);
  return out;
}
