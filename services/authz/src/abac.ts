import * as fs from 'node:fs';
import { canonicalGroup, type UserInfo } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import { AuthorizationConfigError, type Attributes, type Authorizer, type Mode } from './authorizer';
import type { PolicyRule } from './rbac';

/**
 * The ABAC mode (SPEC section 5, `--authorization-policy-file`), as the
 * original server's attribute-based authorizer reads and applies its policy
 * file: one JSON policy object per line, each allowing what it matches.
 * Blank lines and lines starting with `#` are skipped. A line is either a
 * `Policy` of `abac.authorization.svc.io/v1beta1` (the upstream group name
 * `abac.authorization.kubernetes.io` is accepted too) with its attributes
 * under `spec`, or an unversioned (v0) object with `user`, `group`,
 * `readonly`, `resource` and `namespace` at the top, converted the way the
 * original converts it. A request matched by a policy is allowed; otherwise
 * ABAC has no opinion (it never denies). The file is read once, at start.
 *
 * Stricter than the original, so that a mistake stops the start instead of
 * silently granting nothing: unknown fields and values of the wrong type are
 * refused, and so is a v1beta1 policy with neither `user` nor `group` (the
 * original loads it, but it can never match anyone).
 */

/** A policy in the one internal form both file versions convert to. */
export interface AbacPolicy {
  /** A user name, `*` or empty (then `group` decides). */
  user: string;
  /** A group name, `*` or empty (then `user` decides). */
  group: string;
  /** Only get, list and watch (GET and HEAD for non-resource paths). */
  readonly: boolean;
  /** `*`, or the exact API group (empty: the core group). */
  apiGroup: string;
  /** `*`, or the exact resource (subresources are not looked at). */
  resource: string;
  /** `*`, or the exact namespace (empty: cluster-scoped requests). */
  namespace: string;
  /** `*`, an exact path, or a prefix ending in `*` (`/foo/*`); empty matches no non-resource request. */
  nonResourcePath: string;
  /** Where the policy was read (1-based), for the reason of a decision. */
  line: number;
}

export const ABAC_GROUPS = ['abac.authorization.svc.io', 'abac.authorization.kubernetes.io'] as const;
export const ABAC_KIND = 'Policy';
export const ALL_AUTHENTICATED = 'system:authenticated';

const VERSIONED_V1BETA1 = ABAC_GROUPS.map((g) => `${g}/v1beta1`);
const VERSIONED_V0 = ABAC_GROUPS.map((g) => `${g}/v0`);
const V1BETA1_SPEC_FIELDS = ['user', 'group', 'readonly', 'apiGroup', 'resource', 'namespace', 'nonResourcePath'] as const;
const V0_FIELDS = ['user', 'group', 'readonly', 'resource', 'namespace'] as const;
const READONLY_VERBS = new Set(['get', 'list', 'watch']);
/** Non-resource requests carry the HTTP method as their verb. */
const READONLY_NON_RESOURCE_VERBS = new Set(['get', 'head']);

/** A policy file that cannot be used: names the file, the line (1-based) and the field. */
export class AbacPolicyError extends AuthorizationConfigError {
  constructor(
    readonly file: string,
    readonly line: number,
    readonly field: string,
    readonly detail: string,
  ) {
    super(`${file}, line ${line}: ${field ? `${field}: ` : ''}${detail}`);
    this.name = 'AbacPolicyError';
  }
}

export interface ParsedPolicyFile {
  policies: AbacPolicy[];
  /** Lines in the unversioned (v0) form; the original warns about them. */
  unversionedLines: number;
}

type JsonObject = Record<string, unknown>;

const isObject = (v: unknown): v is JsonObject => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Reads one line's fields with the line's file and number at hand for errors. */
class LineReader {
  constructor(
    private readonly file: string,
    private readonly line: number,
  ) {}

  fail(field: string, detail: string): never {
    throw new AbacPolicyError(this.file, this.line, field, detail);
  }

  onlyKnown(obj: JsonObject, known: readonly string[], prefix: string, hint: (key: string) => string): void {
    for (const key of Object.keys(obj)) {
      if (!known.includes(key)) this.fail(`${prefix}${key}`, `unknown field${hint(key)}`);
    }
  }

  /** A string field; missing or null is empty, as the original's decoder leaves it. */
  string(obj: JsonObject, key: string, prefix: string): string {
    const v = obj[key];
    if (v === undefined || v === null) return '';
    if (typeof v !== 'string') this.fail(`${prefix}${key}`, `Invalid value: ${JSON.stringify(v)}: must be a string`);
    return v;
  }

  boolean(obj: JsonObject, key: string, prefix: string): boolean {
    const v = obj[key];
    if (v === undefined || v === null) return false;
    if (typeof v !== 'boolean') this.fail(`${prefix}${key}`, `Invalid value: ${JSON.stringify(v)}: must be true or false`);
    return v;
  }

  nonResourcePath(value: string, field: string): string {
    if (value === '' || value === '*') return value;
    if (!value.startsWith('/')) this.fail(field, `Invalid value: ${JSON.stringify(value)}: must be "*" or a path starting with "/"`);
    if (value.slice(0, -1).includes('*')) this.fail(field, `Invalid value: ${JSON.stringify(value)}: "*" is a wildcard only at the end`);
    return value;
  }
}

/** v1beta1: the spec as written; a `*` user or group means every authenticated subject. */
function fromV1beta1(doc: JsonObject, r: LineReader, line: number): AbacPolicy {
  r.onlyKnown(doc, ['apiVersion', 'kind', 'spec'], '', (k) => ((V1BETA1_SPEC_FIELDS as readonly string[]).includes(k) ? ` (a v1beta1 policy has it under spec: spec.${k})` : ''));
  const spec = doc['spec'];
  if (spec === undefined || spec === null) r.fail('spec', 'Required value');
  if (!isObject(spec)) r.fail('spec', 'Invalid value: must be an object');
  r.onlyKnown(spec, V1BETA1_SPEC_FIELDS, 'spec.', () => `; known fields: ${V1BETA1_SPEC_FIELDS.join(', ')}`);
  const p: AbacPolicy = {
    user: r.string(spec, 'user', 'spec.'),
    group: r.string(spec, 'group', 'spec.'),
    readonly: r.boolean(spec, 'readonly', 'spec.'),
    apiGroup: canonicalGroup(r.string(spec, 'apiGroup', 'spec.')),
    resource: r.string(spec, 'resource', 'spec.'),
    namespace: r.string(spec, 'namespace', 'spec.'),
    nonResourcePath: r.nonResourcePath(r.string(spec, 'nonResourcePath', 'spec.'), 'spec.nonResourcePath'),
    line,
  };
  if (p.user === '' && p.group === '') r.fail('spec.user', 'Required value: a policy must name spec.user or spec.group ("*" for every authenticated user)');
  if (p.user === '*' || p.group === '*') return { ...p, user: '', group: ALL_AUTHENTICATED };
  return p;
}

/**
 * v0 (unversioned, or `.../v0`): empty or `*` subject = every authenticated
 * user; empty namespace or resource = all; every API group; and with both
 * namespace and resource empty, every non-resource path too.
 */
function fromV0(doc: JsonObject, r: LineReader, line: number, versioned: boolean): AbacPolicy {
  const known = versioned ? ['apiVersion', 'kind', ...V0_FIELDS] : [...V0_FIELDS];
  r.onlyKnown(doc, known, '', (k) =>
    k === 'spec' ? ` (a policy with spec needs apiVersion "${VERSIONED_V1BETA1[0] as string}" and kind "${ABAC_KIND}")` : `; the unversioned form has only ${V0_FIELDS.join(', ')}`,
  );
  const user = r.string(doc, 'user', '');
  const group = r.string(doc, 'group', '');
  const namespace = r.string(doc, 'namespace', '');
  const resource = r.string(doc, 'resource', '');
  const everyone = (user === '' && group === '') || user === '*' || group === '*';
  return {
    user: everyone ? '' : user,
    group: everyone ? ALL_AUTHENTICATED : group,
    readonly: r.boolean(doc, 'readonly', ''),
    apiGroup: '*',
    resource: resource === '' ? '*' : resource,
    namespace: namespace === '' ? '*' : namespace,
    nonResourcePath: namespace === '' && resource === '' ? '*' : '',
    line,
  };
}

function parseLine(text: string, file: string, line: number): { policy: AbacPolicy; unversioned: boolean } {
  const r = new LineReader(file, line);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return r.fail('', `not valid JSON: ${(err as Error).message}`);
  }
  if (!isObject(doc)) return r.fail('', 'a policy must be a JSON object');
  const apiVersion = r.string(doc, 'apiVersion', '');
  const kind = r.string(doc, 'kind', '');
  if (apiVersion === '' && kind === '') return { policy: fromV0(doc, r, line, false), unversioned: true };
  if (apiVersion === '') r.fail('apiVersion', `Required value: with kind, one of ${[...VERSIONED_V1BETA1, ...VERSIONED_V0].map((v) => JSON.stringify(v)).join(', ')}`);
  const v1beta1 = VERSIONED_V1BETA1.includes(apiVersion);
  if (!v1beta1 && !VERSIONED_V0.includes(apiVersion)) {
    r.fail('apiVersion', `Unsupported value: ${JSON.stringify(apiVersion)}: supported values: ${[...VERSIONED_V1BETA1, ...VERSIONED_V0].map((v) => JSON.stringify(v)).join(', ')}`);
  }
  if (kind === '') r.fail('kind', `Required value: "${ABAC_KIND}"`);
  if (kind !== ABAC_KIND) r.fail('kind', `Unsupported value: ${JSON.stringify(kind)}: supported values: "${ABAC_KIND}"`);
  return { policy: v1beta1 ? fromV1beta1(doc, r, line) : fromV0(doc, r, line, true), unversioned: false };
}

/** Parses a policy file's text; the first bad line throws an `AbacPolicyError`. */
export function parseAbacPolicies(text: string, file: string): ParsedPolicyFile {
  const policies: AbacPolicy[] = [];
  let unversionedLines = 0;
  const lines = text.split('\n');
  for (const [i, raw] of lines.entries()) {
    const trimmed = raw.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const { policy, unversioned } = parseLine(trimmed, file, i + 1);
    policies.push(policy);
    if (unversioned) unversionedLines++;
  }
  return { policies, unversionedLines };
}

function subjectMatches(p: AbacPolicy, user: UserInfo): boolean {
  // Each subject field given must match; at least one is always given.
  if (p.user !== '' && p.user !== '*' && p.user !== user.username) return false;
  if (p.group !== '' && p.group !== '*' && !user.groups.includes(p.group)) return false;
  return p.user !== '' || p.group !== '';
}

function verbMatches(p: AbacPolicy, attrs: Attributes): boolean {
  if (!p.readonly) return true;
  return (attrs.resourceRequest ? READONLY_VERBS : READONLY_NON_RESOURCE_VERBS).has(attrs.verb);
}

const wildcardOr = (pattern: string, value: string): boolean => pattern === '*' || pattern === value;

function resourceMatches(p: AbacPolicy, attrs: Attributes): boolean {
  return wildcardOr(p.namespace, attrs.namespace) && wildcardOr(p.resource, attrs.resource) && wildcardOr(p.apiGroup, attrs.apiGroup);
}

function nonResourceMatches(p: AbacPolicy, attrs: Attributes): boolean {
  const pattern = p.nonResourcePath;
  if (pattern === '') return false;
  if (pattern === '*' || pattern === attrs.path) return true;
  return pattern.endsWith('*') && attrs.path.startsWith(pattern.slice(0, -1));
}

/** Whether one policy allows the request. */
export function abacPolicyMatches(p: AbacPolicy, attrs: Attributes): boolean {
  if (!subjectMatches(p, attrs.user) || !verbMatches(p, attrs)) return false;
  return attrs.resourceRequest ? resourceMatches(p, attrs) : nonResourceMatches(p, attrs);
}

/** Allows what any policy matches; no opinion otherwise. */
export function abacAuthorizer(policies: readonly AbacPolicy[]): Authorizer {
  return (attrs) => {
    const p = policies.find((candidate) => abacPolicyMatches(candidate, attrs));
    return p ? { decision: 'allow', reason: `ABAC: allowed by policy line ${p.line}` } : { decision: 'no-opinion', reason: '' };
  };
}

const verbsOf = (p: AbacPolicy): string[] => (p.readonly ? ['get', 'list', 'watch'] : ['*']);

/**
 * What the policies grant the user in a namespace, for SelfSubjectRulesReview,
 * as the original's ABAC lists them: each policy whose subject matches and
 * whose namespace is `*` or the one asked gives a resource rule (when it names
 * a resource) and a non-resource rule (when it names a path), with get, list
 * and watch when read-only and `*` otherwise. The list is complete.
 */
export function abacRulesFor(policies: readonly AbacPolicy[], user: UserInfo, namespace: string): PolicyRule[] {
  const rules: PolicyRule[] = [];
  const nonResource: PolicyRule[] = [];
  for (const p of policies) {
    if (!subjectMatches(p, user) || !wildcardOr(p.namespace, namespace)) continue;
    if (p.resource !== '') rules.push({ verbs: verbsOf(p), apiGroups: [p.apiGroup], resources: [p.resource], resourceNames: [], nonResourceURLs: [] });
    if (p.nonResourcePath !== '') nonResource.push({ verbs: verbsOf(p), apiGroups: [], resources: [], resourceNames: [], nonResourceURLs: [p.nonResourcePath] });
  }
  return [...rules, ...nonResource];
}

/** The ABAC mode: its authorizer and the rules it lists for a user. */
export interface AbacMode {
  authorize: Authorizer;
  rulesFor(user: UserInfo, namespace: string): PolicyRule[];
}

/** Reads and parses a policy file; an unreadable file names itself. */
export function loadAbacPolicyFile(file: string): ParsedPolicyFile {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new AuthorizationConfigError(`--authorization-policy-file: ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`);
  }
  return parseAbacPolicies(text, file);
}

/**
 * The ABAC mode for the configured modes, or undefined when ABAC is not one
 * of them. The mode needs the policy file and the file needs the mode.
 */
export function abacModeFor(modes: readonly Mode[], policyFile: string | undefined, log: Logger): AbacMode | undefined {
  if (!modes.includes('ABAC')) {
    if (policyFile) throw new AuthorizationConfigError(`--authorization-policy-file is only used by the ABAC authorization mode, which --authorization-mode (${modes.join(',')}) does not name`);
    return undefined;
  }
  if (!policyFile) throw new AuthorizationConfigError('the ABAC authorization mode needs --authorization-policy-file');
  const { policies, unversionedLines } = loadAbacPolicyFile(policyFile);
  log.info('ABAC policy loaded', { file: policyFile, policies: policies.length });
  if (unversionedLines > 0) log.warn('ABAC policy file has unversioned (v0) lines; prefer apiVersion abac.authorization.svc.io/v1beta1', { file: policyFile, lines: unversionedLines });
  return { authorize: abacAuthorizer(policies), rulesFor: (user, namespace) => abacRulesFor(policies, user, namespace) };
}
