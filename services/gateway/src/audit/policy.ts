import * as fs from 'node:fs';
import { load } from 'js-yaml';
import type { UserInfo } from '@svc/apimachinery';
import { FieldReader, type JsonObject } from '@svc/service-kit';
import { LEVELS, POLICY_API_VERSIONS, STAGES, type Level, type Stage } from './types';

/**
 * The audit Policy (`--audit-policy-file`): rules in order, the first that
 * matches a request decides its level, the stages left out and whether
 * managedFields are left out of the objects logged; a request no rule
 * matches is not audited. Rules are compiled once into predicates over the
 * request's attributes, cheapest checks first.
 */
export interface GroupResources {
  group?: string;
  resources?: string[];
  resourceNames?: string[];
}

export interface PolicyRule {
  level: Level;
  users?: string[];
  userGroups?: string[];
  verbs?: string[];
  resources?: GroupResources[];
  namespaces?: string[];
  nonResourceURLs?: string[];
  omitStages?: Stage[];
  omitManagedFields?: boolean;
}

export interface Policy {
  rules: PolicyRule[];
  omitStages?: Stage[];
  omitManagedFields?: boolean;
}

/** What the policy is asked about: the authorizer's attributes of the request (before impersonation). */
export interface AuditAttributes {
  /** Undefined when the request was not authenticated (refused with 401, or a path served without authentication). */
  user: UserInfo | undefined;
  verb: string;
  isResourceRequest: boolean;
  path: string;
  apiGroup: string;
  resource: string;
  subresource: string;
  namespace: string;
  name: string;
}

export interface RequestAuditConfig {
  level: Level;
  omitStages: ReadonlySet<Stage>;
  omitManagedFields: boolean;
}

export interface PolicyEvaluator {
  evaluate(attrs: AuditAttributes): RequestAuditConfig;
}

type Predicate = (attrs: AuditAttributes) => boolean;

function nonResourcePredicate(specs: string[]): Predicate {
  if (specs.includes('*')) return (a) => !a.isResourceRequest;
  const exact = new Set(specs.filter((s) => !s.endsWith('*')));
  const prefixes = specs.filter((s) => s.endsWith('*')).map((s) => s.replace(/\*+$/, ''));
  return (a) => !a.isResourceRequest && (exact.has(a.path) || prefixes.some((p) => a.path.startsWith(p)));
}

function resourcePredicate(namespaces: string[] | undefined, groups: GroupResources[] | undefined): Predicate {
  const inNamespaces = namespaces && namespaces.length > 0 ? new Set(namespaces) : undefined;
  const compiled = (groups ?? []).map((gr) => {
    const names = gr.resourceNames && gr.resourceNames.length > 0 ? new Set(gr.resourceNames) : undefined;
    const resources = gr.resources ?? [];
    const all = resources.length === 0;
    const exact = new Set(resources);
    const anyResource = exact.has('*');
    // `*/log`: that subresource of any resource; `pods/*`: the resource and all its subresources.
    const subresourcesOfAny = new Set(resources.filter((r) => r.startsWith('*/')).map((r) => r.slice(2)));
    const allSubresourcesOf = new Set(resources.filter((r) => r.endsWith('/*')).map((r) => r.slice(0, -2)));
    return { group: gr.group ?? '', names, all, exact, anyResource, subresourcesOfAny, allSubresourcesOf };
  });
  return (a) => {
    if (!a.isResourceRequest) return false;
    if (inNamespaces && !inNamespaces.has(a.namespace)) return false;
    if (compiled.length === 0) return true;
    const combined = a.subresource ? `${a.resource}/${a.subresource}` : a.resource;
    for (const gr of compiled) {
      if (gr.group !== a.apiGroup) continue;
      if (gr.all) return true;
      if (gr.names && !gr.names.has(a.name)) continue;
      if (gr.anyResource || gr.exact.has(combined)) return true;
      if (a.subresource && gr.subresourcesOfAny.has(a.subresource)) return true;
      if (gr.allSubresourcesOf.has(a.resource)) return true;
    }
    return false;
  };
}

function compileRule(rule: PolicyRule): Predicate {
  const checks: Predicate[] = [];
  if (rule.verbs && rule.verbs.length > 0) {
    const verbs = new Set(rule.verbs);
    checks.push((a) => verbs.has(a.verb));
  }
  if (rule.users && rule.users.length > 0) {
    const users = new Set(rule.users);
    checks.push((a) => a.user !== undefined && users.has(a.user.username));
  }
  if (rule.userGroups && rule.userGroups.length > 0) {
    const groups = new Set(rule.userGroups);
    checks.push((a) => a.user !== undefined && a.user.groups.some((g) => groups.has(g)));
  }
  if ((rule.namespaces && rule.namespaces.length > 0) || (rule.resources && rule.resources.length > 0)) {
    checks.push(resourcePredicate(rule.namespaces, rule.resources));
  } else if (rule.nonResourceURLs && rule.nonResourceURLs.length > 0) {
    checks.push(nonResourcePredicate(rule.nonResourceURLs));
  }
  if (checks.length === 1) return checks[0] as Predicate;
  return (a) => checks.every((c) => c(a));
}

/** Compiles a policy; an evaluator of a policy with no rules audits nothing. */
export function compilePolicy(policy: Policy): PolicyEvaluator {
  const rules = policy.rules.map((rule) => ({
    matches: compileRule(rule),
    config: {
      level: rule.level,
      omitStages: new Set<Stage>([...(policy.omitStages ?? []), ...(rule.omitStages ?? [])]),
      omitManagedFields: rule.omitManagedFields ?? policy.omitManagedFields ?? false,
    } satisfies RequestAuditConfig,
  }));
  const fallback: RequestAuditConfig = { level: 'None', omitStages: new Set(policy.omitStages ?? []), omitManagedFields: policy.omitManagedFields ?? false };
  return {
    evaluate(attrs) {
      for (const rule of rules) if (rule.matches(attrs)) return rule.config;
      return fallback;
    },
  };
}

const POLICY_FIELDS = ['apiVersion', 'kind', 'metadata', 'rules', 'omitStages', 'omitManagedFields'] as const;
const RULE_FIELDS = ['level', 'users', 'userGroups', 'verbs', 'resources', 'namespaces', 'nonResourceURLs', 'omitStages', 'omitManagedFields'] as const;
const GROUP_RESOURCE_FIELDS = ['group', 'resources', 'resourceNames'] as const;

/** A policy file that cannot be used: every problem, each naming its field and, where known, its line. */
export class PolicyError extends Error {
  constructor(
    readonly file: string,
    readonly problems: string[],
  ) {
    super(`audit policy ${file}: ${problems.join('; ')}`);
    this.name = 'PolicyError';
  }
}

/**
 * Lines of the YAML document's objects (1-based), and of the keys within
 * them, so a problem names where it is. Positions come from the parser's
 * events; a key's line is found from its object's first line.
 */
class Lines {
  private readonly starts = new WeakMap<object, number>();
  private readonly text: string[];

  constructor(source: string) {
    this.text = source.split('\n');
  }

  listener(): (event: string, state: { line: number; result: unknown }) => void {
    const open: number[] = [];
    return (event, state) => {
      if (event === 'open') {
        open.push(state.line);
        return;
      }
      const line = open.pop();
      if (line !== undefined && typeof state.result === 'object' && state.result !== null && !this.starts.has(state.result)) this.starts.set(state.result, line);
    };
  }

  /** The line of `key` in `obj` (or of `obj` itself when the key is not found on its lines). */
  of(obj: object, key?: string): number | undefined {
    const start = this.starts.get(obj);
    if (start === undefined) return undefined;
    if (key === undefined) return start + 1;
    const pattern = new RegExp(`^\\s*(?:-\\s+)?["']?${key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}["']?\\s*:`);
    for (let i = start; i < this.text.length; i++) if (pattern.test(this.text[i] as string)) return i + 1;
    return start + 1;
  }
}

const fieldPath = (field: string, key: string): string => (field ? `${field}.${key}` : key);

/** A FieldReader whose problems also name the line of the field. */
class PolicyReader extends FieldReader {
  constructor(private readonly lines: Lines) {
    super();
  }

  at(obj: object, key: string | undefined, field: string, message: string): void {
    const line = this.lines.of(obj, key);
    this.problem(line === undefined ? field : `line ${line}: ${field}`, message);
  }

  /** Strict object: unknown fields are reported with their line. */
  strict(value: unknown, field: string, known: readonly string[]): JsonObject | undefined {
    const obj = this.object(value, field);
    if (!obj) return undefined;
    for (const key of Object.keys(obj)) if (!known.includes(key)) this.at(obj, key, field === '<root>' ? key : `${field}.${key}`, 'unknown field');
    return obj;
  }

  strings(parent: JsonObject, key: string, field: string): string[] | undefined {
    const value = parent[key];
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) {
      this.at(parent, key, fieldPath(field, key), 'Invalid value: must be a list of strings');
      return undefined;
    }
    return value as string[];
  }

  bool(parent: JsonObject, key: string, field: string): boolean | undefined {
    const value = parent[key];
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') {
      this.at(parent, key, fieldPath(field, key), 'Invalid value: must be true or false');
      return undefined;
    }
    return value;
  }

  stages(parent: JsonObject, field: string): Stage[] | undefined {
    const values = this.strings(parent, 'omitStages', field);
    if (!values) return undefined;
    const out: Stage[] = [];
    for (const [i, v] of values.entries()) {
      if ((STAGES as readonly string[]).includes(v)) out.push(v as Stage);
      else this.at(parent, 'omitStages', `${fieldPath(field, 'omitStages')}[${i}]`, `Unsupported value: ${JSON.stringify(v)}: supported values: ${STAGES.map((s) => JSON.stringify(s)).join(', ')}`);
    }
    return out;
  }
}

function readRule(r: PolicyReader, value: unknown, field: string): PolicyRule | undefined {
  const obj = r.strict(value, field, RULE_FIELDS);
  if (!obj) {
    if (value === undefined || value === null) r.problem(field, 'Required value: a rule');
    return undefined;
  }
  const level = obj['level'];
  if (level === undefined) r.at(obj, undefined, `${field}.level`, 'Required value');
  else if (typeof level !== 'string' || !(LEVELS as readonly string[]).includes(level)) {
    r.at(obj, 'level', `${field}.level`, `Unsupported value: ${JSON.stringify(level)}: supported values: ${LEVELS.map((l) => JSON.stringify(l)).join(', ')}`);
  }
  const rule: PolicyRule = { level: level as Level };
  const users = r.strings(obj, 'users', field);
  const userGroups = r.strings(obj, 'userGroups', field);
  const verbs = r.strings(obj, 'verbs', field);
  const namespaces = r.strings(obj, 'namespaces', field);
  const nonResourceURLs = r.strings(obj, 'nonResourceURLs', field);
  if (users) rule.users = users;
  if (userGroups) rule.userGroups = userGroups;
  if (verbs) rule.verbs = verbs;
  if (namespaces) rule.namespaces = namespaces;
  if (nonResourceURLs) {
    rule.nonResourceURLs = nonResourceURLs;
    for (const [i, url] of nonResourceURLs.entries()) {
      const starAt = url.indexOf('*');
      if (url !== '*' && !url.startsWith('/')) r.at(obj, 'nonResourceURLs', `${field}.nonResourceURLs[${i}]`, `Invalid value: ${JSON.stringify(url)}: non-resource URL rules must begin with a '/' character`);
      else if (starAt >= 0 && starAt !== url.length - 1) r.at(obj, 'nonResourceURLs', `${field}.nonResourceURLs[${i}]`, `Invalid value: ${JSON.stringify(url)}: non-resource URL wildcards ('*') must be the final character`);
    }
  }
  const resources = r.list(obj['resources'], `${field}.resources`);
  if (resources.length > 0) {
    rule.resources = [];
    for (const [i, entry] of resources.entries()) {
      const gf = `${field}.resources[${i}]`;
      const gr = r.strict(entry, gf, GROUP_RESOURCE_FIELDS);
      if (!gr) continue;
      const group = r.string(gr['group'], `${gf}.group`);
      const names = r.strings(gr, 'resources', gf);
      const resourceNames = r.strings(gr, 'resourceNames', gf);
      if (resourceNames && resourceNames.length > 0 && names?.some((n) => n.includes('*'))) {
        r.at(gr, 'resourceNames', `${gf}.resourceNames`, 'Invalid value: resourceNames are not allowed with wildcard resources');
      }
      rule.resources.push({ ...(group !== undefined ? { group } : {}), ...(names ? { resources: names } : {}), ...(resourceNames ? { resourceNames } : {}) });
    }
  }
  if ((rule.resources || rule.namespaces) && rule.nonResourceURLs && rule.nonResourceURLs.length > 0) {
    r.at(obj, 'nonResourceURLs', `${field}.nonResourceURLs`, 'Invalid value: rules cannot apply to both regular resources and non-resource URLs');
  }
  const omitStages = r.stages(obj, field);
  if (omitStages) rule.omitStages = omitStages;
  const omitManagedFields = r.bool(obj, 'omitManagedFields', field);
  if (omitManagedFields !== undefined) rule.omitManagedFields = omitManagedFields;
  return rule;
}

/** Reads a policy document (YAML or JSON) strictly: an unknown field, level or stage is refused, naming the file, line and field. */
export function parsePolicy(text: string, file: string): Policy {
  const lines = new Lines(text);
  let doc: unknown;
  try {
    doc = load(text, { listener: lines.listener() } as Parameters<typeof load>[1]);
  } catch (err) {
    // The parser's position (0-based) and reason, as the other problems name theirs.
    const { mark, reason, message } = err as Error & { mark?: { line: number; column: number }; reason?: string };
    throw new PolicyError(file, [mark && reason ? `line ${mark.line + 1}, column ${mark.column + 1}: ${reason}` : (message.split('\n')[0] ?? 'cannot be parsed')]);
  }
  const r = new PolicyReader(lines);
  const root = r.strict(doc, '<root>', POLICY_FIELDS);
  if (!root) throw new PolicyError(file, ['the file holds no Policy document']);
  r.typeMeta(root, 'Policy', POLICY_API_VERSIONS);
  const rules: PolicyRule[] = [];
  for (const [i, value] of r.list(root['rules'], 'rules').entries()) {
    const rule = readRule(r, value, `rules[${i}]`);
    if (rule) rules.push(rule);
  }
  const policy: Policy = { rules };
  const omitStages = r.stages(root, '');
  if (omitStages) policy.omitStages = omitStages;
  const omitManagedFields = r.bool(root, 'omitManagedFields', '');
  if (omitManagedFields !== undefined) policy.omitManagedFields = omitManagedFields;
  if (r.problems.length > 0) throw new PolicyError(file, r.problems);
  return policy;
}

/** Reads and compiles `--audit-policy-file`. */
export function loadPolicyFile(file: string): PolicyEvaluator {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new PolicyError(file, [(err as Error).message]);
  }
  return compilePolicy(parsePolicy(text, file));
}
