import type { ApiObject, ResourceDefinition, StatusCause, SubresourceDefinition } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { dnsLabelErrors, dnsSubdomainErrors, duplicate, forbidden, indexPath, invalid, notSupported, required, typeInvalid } from './field-errors';
import {
  FLOWCONTROL_GROUP,
  FLOW_SCHEMA_EXEMPT,
  PRIORITY_LEVEL_EXEMPT,
  mandatoryFlowSchemas,
  mandatoryPriorityLevelConfigurations,
} from './flowcontrol-bootstrap';
import { statusAndGenerationHooks } from './generation';
import { groupKindDefinition } from './group-definition';
import { objectSchema } from './object-meta';
import { asList, asNumber, asRecord, asString, isRecord, setDefault, type Fields } from './object-access';
import { atomicList, bool, int32, mapList, oneOf, str, struct, time } from './schema-builders';

/**
 * API Priority and Fairness configuration (flowcontrol.svc.io/v1):
 * FlowSchema sorts requests into flows and names the priority level that
 * serves them; PriorityLevelConfiguration sets a level's share of the
 * server's concurrency and what happens to requests over it (queue or
 * reject). Both are cluster-scoped, with a status subresource. Defaults and
 * validation are the original's v1 ones: `nominalConcurrencyShares`
 * defaults to 30 only when unspecified (an explicit 0 is kept), the
 * mandatory `exempt` and `catch-all` objects keep their fixed specs.
 */

export const FLOW_SCHEMA_DEFAULT_MATCHING_PRECEDENCE = 1000;
export const FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE = 10000;
export const DEFAULT_NOMINAL_CONCURRENCY_SHARES = 30;
export const DEFAULT_QUEUING = { queues: 64, handSize: 8, queueLengthLimit: 50 } as const;
/** At most 10^7 queues per level. */
export const MAX_QUEUES = 10_000_000;
/** Shuffle sharding deals hands from a 60-bit hash. */
export const MAX_HASH_BITS = 60;

const DISTINGUISHER_METHODS = ['ByNamespace', 'ByUser'];
const SUBJECT_KINDS = ['Group', 'ServiceAccount', 'User'];
const PRIORITY_LEVEL_TYPES = ['Exempt', 'Limited'];
const LIMIT_RESPONSE_TYPES = ['Queue', 'Reject'];
const SUPPORTED_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'proxy', 'update', 'watch'];

function flowControlConditions(description: string): Schema {
  const condition = struct({
    type: str('Type of the condition.'),
    status: oneOf(['True', 'False', 'Unknown'], 'Status of the condition.'),
    lastTransitionTime: time('When the status last changed.'),
    reason: str('Programmatic reason for the last transition, in CamelCase.'),
    message: str('Human-readable details of the last transition.'),
  });
  return mapList(condition, ['type'], { mergeKey: 'type', description });
}

const SUBJECT_SCHEMA = struct(
  {
    kind: oneOf(SUBJECT_KINDS, 'Which of user, group or serviceAccount is set: User, Group or ServiceAccount.'),
    user: struct({ name: str('Name of the user; "*" matches every user.') }, { description: 'The user, when kind is User.', required: ['name'] }),
    group: struct({ name: str('Name of the group; "*" matches every group.') }, { description: 'The group, when kind is Group.', required: ['name'] }),
    serviceAccount: struct(
      { namespace: str('Namespace of the service account.'), name: str('Name of the service account; "*" matches every account of the namespace.') },
      { description: 'The service account, when kind is ServiceAccount.', required: ['namespace', 'name'] },
    ),
  },
  { description: 'An identity a request may come from.', required: ['kind'] },
);

const RESOURCE_RULE_SCHEMA = struct(
  {
    verbs: atomicList(str(), 'Verbs that match; "*" (alone) matches every verb.'),
    apiGroups: atomicList(str(), 'API groups that match; "*" (alone) matches every group, "" is the core group.'),
    resources: atomicList(str(), 'Resources (and `resource/subresource`) that match; "*" (alone) matches every resource.'),
    clusterScope: bool('Whether requests that name no namespace match.'),
    namespaces: atomicList(str(), 'Namespaces that match for namespaced requests; "*" (alone) matches every namespace.'),
  },
  { description: 'Matches resource requests by verb, group, resource and namespace.', required: ['verbs', 'apiGroups', 'resources'] },
);

const NON_RESOURCE_RULE_SCHEMA = struct(
  {
    verbs: atomicList(str(), 'Verbs that match; "*" (alone) matches every verb.'),
    nonResourceURLs: atomicList(str(), 'URL paths that match: exact paths, or prefixes ending in "/*"; "*" (alone) matches every path.'),
  },
  { description: 'Matches non-resource requests by verb and path.', required: ['verbs', 'nonResourceURLs'] },
);

export const FLOW_SCHEMA_SCHEMA = objectSchema('FlowSchema sorts requests into flows and assigns them to a priority level.', {
  spec: struct(
    {
      priorityLevelConfiguration: struct(
        { name: str('Name of the priority level.') },
        { description: 'The priority level that serves the requests this schema matches.', required: ['name'] },
      ),
      matchingPrecedence: int32('Order among flow schemas: the matching schema with the lowest value wins; 1..10000, default 1000.'),
      distinguisherMethod: struct(
        { type: oneOf(DISTINGUISHER_METHODS, 'ByUser or ByNamespace.') },
        { description: 'How requests are split into flows; none puts them all in one flow.', required: ['type'] },
      ),
      rules: atomicList(
        struct(
          {
            subjects: atomicList(SUBJECT_SCHEMA, 'Identities the rule applies to.'),
            resourceRules: atomicList(RESOURCE_RULE_SCHEMA, 'Resource requests that match.'),
            nonResourceRules: atomicList(NON_RESOURCE_RULE_SCHEMA, 'Non-resource requests that match.'),
          },
          { description: 'A request matches when its subject and one of the rules match.', required: ['subjects'] },
        ),
        'The schema matches a request when any of these does; empty matches nothing.',
      ),
    },
    { description: 'What the flow schema matches and where it sends it.', required: ['priorityLevelConfiguration'] },
  ),
  status: struct({ conditions: flowControlConditions('Current state of the schema (Dangling: its priority level does not exist).') }, { description: 'The schema as last observed.' }),
});

const QUEUING_SCHEMA = struct(
  {
    queues: int32('Number of queues of the level; default 64.'),
    handSize: int32('Queues each flow is shuffle-sharded to; default 8, at most queues.'),
    queueLengthLimit: int32('Requests a queue may hold; default 50.'),
  },
  { description: 'Queuing parameters, when limitResponse.type is Queue.' },
);

export const PRIORITY_LEVEL_CONFIGURATION_SCHEMA = objectSchema('PriorityLevelConfiguration sets how much concurrency a priority level gets and how its excess requests are handled.', {
  spec: struct(
    {
      type: oneOf(PRIORITY_LEVEL_TYPES, 'Exempt (only the level named exempt: never limited) or Limited.'),
      limited: struct(
        {
          nominalConcurrencyShares: int32('Share of the server concurrency limit; default 30 when unspecified, 0 is allowed.'),
          limitResponse: struct(
            {
              type: oneOf(LIMIT_RESPONSE_TYPES, 'Queue or Reject.'),
              queuing: QUEUING_SCHEMA,
            },
            { description: 'What happens to requests that cannot run at once.', required: ['type'] },
          ),
          lendablePercent: int32('Percent of the nominal concurrency other levels may borrow; 0..100, default 0.'),
          borrowingLimitPercent: int32('Limit on what this level may borrow, in percent of its nominal concurrency; unset means unlimited.'),
        },
        { description: 'Parameters of a Limited level.' },
      ),
      exempt: struct(
        {
          nominalConcurrencyShares: int32('Share of the server concurrency limit counted for the exempt level; default 0.'),
          lendablePercent: int32('Percent of the nominal concurrency other levels may borrow; 0..100, default 0.'),
        },
        { description: 'Parameters of the Exempt level.' },
      ),
    },
    { description: 'How the level is limited.', required: ['type'] },
  ),
  status: struct({ conditions: flowControlConditions('Current state of the level.') }, { description: 'The level as last observed.' }),
});

// ---- Defaults ---------------------------------------------------------------

export function applyFlowSchemaDefaults(obj: ApiObject): void {
  const spec = asRecord(obj['spec']);
  if (!spec) return;
  if (spec['matchingPrecedence'] === undefined || spec['matchingPrecedence'] === null || spec['matchingPrecedence'] === 0) {
    spec['matchingPrecedence'] = FLOW_SCHEMA_DEFAULT_MATCHING_PRECEDENCE;
  }
}

export function applyPriorityLevelConfigurationDefaults(obj: ApiObject): void {
  const spec = asRecord(obj['spec']);
  if (!spec) return;
  if (spec['type'] === 'Exempt' && (spec['exempt'] === undefined || spec['exempt'] === null)) spec['exempt'] = {};
  const exempt = asRecord(spec['exempt']);
  if (exempt) {
    setDefault(exempt, 'nominalConcurrencyShares', 0);
    setDefault(exempt, 'lendablePercent', 0);
  }
  const limited = asRecord(spec['limited']);
  if (!limited) return;
  // Only an unspecified value is defaulted: an explicit 0 is a valid v1 value.
  setDefault(limited, 'nominalConcurrencyShares', DEFAULT_NOMINAL_CONCURRENCY_SHARES);
  setDefault(limited, 'lendablePercent', 0);
  const queuing = asRecord(asRecord(limited['limitResponse'])?.['queuing']);
  if (queuing) {
    for (const [key, value] of Object.entries(DEFAULT_QUEUING)) {
      if (queuing[key] === undefined || queuing[key] === null || queuing[key] === 0) queuing[key] = value;
    }
  }
}

// ---- Spec comparison ----------------------------------------------------------

/**
 * A spec with its zero values dropped (false, 0, "", null, empty lists), so
 * two specs compare as the original's semantic equality compares decoded
 * structs, where an omitted field and its zero value are the same.
 */
export function semanticSpec(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(semanticSpec);
  if (!isRecord(value)) return value;
  const out: Fields = {};
  for (const [key, v] of Object.entries(value)) {
    if (v === undefined || v === null || v === false || v === 0 || v === '' || (Array.isArray(v) && v.length === 0)) continue;
    out[key] = semanticSpec(v);
  }
  return out;
}

function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** Whether two (defaulted) specs are the same, zero values and key order aside. */
export function flowControlSpecsEqual(a: unknown, b: unknown): boolean {
  return canonical(semanticSpec(a)) === canonical(semanticSpec(b));
}

// ---- Validation -------------------------------------------------------------

function hasWildcard(values: unknown[]): boolean {
  return values.includes('*');
}

function stringList(value: unknown, field: string, causes: StatusCause[]): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value)) {
    causes.push(typeInvalid(field, value, 'a list of strings'));
    return [];
  }
  const out: string[] = [];
  value.forEach((v, i) => {
    if (typeof v === 'string') out.push(v);
    else causes.push(typeInvalid(indexPath(field, i), v, 'a string'));
  });
  return out;
}

function verbErrors(verbs: string[], field: string): StatusCause[] {
  if (verbs.length === 0) return [required(field, 'verbs must contain at least one value')];
  if (hasWildcard(verbs)) return verbs.length > 1 ? [invalid(field, verbs, "if '*' is present, must not specify other verbs")] : [];
  return verbs.every((v) => SUPPORTED_VERBS.includes(v)) ? [] : [notSupported(field, verbs, SUPPORTED_VERBS)];
}

/** The original's non-resource path rules: leading slash, no spaces, no `//`, `*` only as a final `/*`. */
export function nonResourceURLError(path: string, field: string): StatusCause | undefined {
  if (path.length === 0) return invalid(field, path, 'must not be empty');
  if (path === '/') return undefined;
  if (!path.startsWith('/')) return invalid(field, path, 'must start with slash');
  if (path.includes(' ')) return invalid(field, path, 'must not contain white-space');
  if (path.includes('//')) return invalid(field, path, 'must not contain double slash');
  const wildcards = path.split('*').length - 1;
  if (wildcards > 1 || (wildcards === 1 && !path.endsWith('/*'))) return invalid(field, path, 'wildcard can only do suffix matching');
  return undefined;
}

function subjectErrors(subject: unknown, path: string): StatusCause[] {
  const s = asRecord(subject);
  if (!s) return [typeInvalid(path, subject, 'an object')];
  const causes: StatusCause[] = [];
  const kind = s['kind'];
  const members: Record<string, string> = { User: 'user', Group: 'group', ServiceAccount: 'serviceAccount' };
  const member = typeof kind === 'string' ? members[kind] : undefined;
  if (!member) return [notSupported(`${path}.kind`, kind ?? '', SUBJECT_KINDS)];
  for (const [otherKind, other] of Object.entries(members)) {
    if (other !== member && s[other] !== undefined && s[other] !== null) {
      causes.push(forbidden(`${path}.${other}`, `${other} is forbidden when subject kind is not '${otherKind}'`));
    }
  }
  const value = s[member];
  if (value === undefined || value === null) return [...causes, required(`${path}.${member}`, `${member} is required when subject kind is '${String(kind)}'`)];
  const fields = asRecord(value);
  if (!fields) return [...causes, typeInvalid(`${path}.${member}`, value, 'an object')];
  const name = asString(fields['name']) ?? '';
  if (name === '') causes.push(required(`${path}.${member}.name`));
  if (member === 'serviceAccount') {
    if (name !== '' && name !== '*') causes.push(...dnsSubdomainErrors(`${path}.${member}.name`, name));
    const namespace = asString(fields['namespace']) ?? '';
    if (namespace === '') causes.push(required(`${path}.${member}.namespace`, 'must specify namespace for service account'));
    else causes.push(...dnsLabelErrors(`${path}.${member}.namespace`, namespace));
  }
  return causes;
}

function resourceRuleErrors(rule: unknown, path: string): StatusCause[] {
  const r = asRecord(rule);
  if (!r) return [typeInvalid(path, rule, 'an object')];
  const causes: StatusCause[] = [];
  causes.push(...verbErrors(stringList(r['verbs'], `${path}.verbs`, causes), `${path}.verbs`));
  const groups = stringList(r['apiGroups'], `${path}.apiGroups`, causes);
  if (groups.length === 0) causes.push(required(`${path}.apiGroups`, 'resource rules must supply at least one api group'));
  else if (groups.length > 1 && hasWildcard(groups)) causes.push(invalid(`${path}.apiGroups`, groups, "if '*' is present, must not specify other api groups"));
  const resources = stringList(r['resources'], `${path}.resources`, causes);
  if (resources.length === 0) causes.push(required(`${path}.resources`, 'resource rules must supply at least one resource'));
  else if (resources.length > 1 && hasWildcard(resources)) causes.push(invalid(`${path}.resources`, resources, "if '*' is present, must not specify other resources"));
  const clusterScope = r['clusterScope'];
  if (clusterScope !== undefined && clusterScope !== null && typeof clusterScope !== 'boolean') causes.push(typeInvalid(`${path}.clusterScope`, clusterScope, 'a boolean'));
  const namespaces = stringList(r['namespaces'], `${path}.namespaces`, causes);
  if (namespaces.length === 0 && clusterScope !== true) {
    causes.push(required(`${path}.namespaces`, 'resource rules that are not cluster scoped must supply at least one namespace'));
  } else if (hasWildcard(namespaces)) {
    if (namespaces.length > 1) causes.push(invalid(`${path}.namespaces`, namespaces, "if '*' is present, must not specify other namespaces"));
  } else {
    namespaces.forEach((ns, i) => {
      for (const c of dnsLabelErrors(indexPath(`${path}.namespaces`, i), ns)) {
        causes.push({ ...c, message: (c.message ?? '').replace(/^(Invalid value: "[^"]*": )/, "$1each member of this list must be '*' or a DNS-1123 label; ") });
      }
    });
  }
  return causes;
}

function nonResourceRuleErrors(rule: unknown, path: string): StatusCause[] {
  const r = asRecord(rule);
  if (!r) return [typeInvalid(path, rule, 'an object')];
  const causes: StatusCause[] = [];
  causes.push(...verbErrors(stringList(r['verbs'], `${path}.verbs`, causes), `${path}.verbs`));
  const urls = stringList(r['nonResourceURLs'], `${path}.nonResourceURLs`, causes);
  if (urls.length === 0) causes.push(required(`${path}.nonResourceURLs`, 'nonResourceURLs must contain at least one value'));
  else if (hasWildcard(urls)) {
    if (urls.length > 1) causes.push(invalid(`${path}.nonResourceURLs`, urls, "if '*' is present, must not specify other non-resource URLs"));
  } else {
    urls.forEach((url, i) => {
      const cause = nonResourceURLError(url, indexPath(`${path}.nonResourceURLs`, i));
      if (cause) causes.push(cause);
    });
  }
  return causes;
}

function policyRuleErrors(rule: unknown, path: string): StatusCause[] {
  const r = asRecord(rule);
  if (!r) return [typeInvalid(path, rule, 'an object')];
  const causes: StatusCause[] = [];
  const subjects = asList(r['subjects']);
  if (subjects.length === 0) causes.push(required(`${path}.subjects`, 'subjects must contain at least one value'));
  subjects.forEach((s, i) => causes.push(...subjectErrors(s, indexPath(`${path}.subjects`, i))));
  const resourceRules = asList(r['resourceRules']);
  const nonResourceRules = asList(r['nonResourceRules']);
  if (resourceRules.length === 0 && nonResourceRules.length === 0) causes.push(required(path, 'at least one of resourceRules and nonResourceRules has to be non-empty'));
  resourceRules.forEach((rr, i) => causes.push(...resourceRuleErrors(rr, indexPath(`${path}.resourceRules`, i))));
  nonResourceRules.forEach((nr, i) => causes.push(...nonResourceRuleErrors(nr, indexPath(`${path}.nonResourceRules`, i))));
  return causes;
}

function integerField(fields: Fields, key: string, path: string, causes: StatusCause[]): number | undefined {
  const v = fields[key];
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v)) {
    causes.push(typeInvalid(`${path}.${key}`, v, 'an integer'));
    return undefined;
  }
  return v;
}

function conditionErrors(obj: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  asList(asRecord(obj['status'])?.['conditions']).forEach((c, i) => {
    const type = asString(asRecord(c)?.['type']) ?? '';
    const path = `${indexPath('status.conditions', i)}.type`;
    if (type === '') causes.push(required(path, 'must not be empty'));
    else if (seen.has(type)) causes.push(duplicate(path, type));
    seen.add(type);
  });
  return causes;
}

function mandatorySpec(objects: ApiObject[], name: string | undefined): unknown {
  return objects.find((o) => o.metadata?.name === name)?.['spec'];
}

export function validateFlowSchema(obj: ApiObject): StatusCause[] {
  const name = obj.metadata?.name;
  const given = obj['spec'];
  if (given !== undefined && given !== null && !isRecord(given)) return [typeInvalid('spec', given, 'an object')];
  // A missing spec is the zero spec, as a decoded struct is: what it lacks is named below.
  const spec = asRecord(given) ?? {};
  const causes: StatusCause[] = [];
  const precedence = integerField(spec, 'matchingPrecedence', 'spec', causes);
  if (precedence !== undefined) {
    if (precedence <= 0) causes.push(invalid('spec.matchingPrecedence', precedence, 'must be a positive value'));
    if (precedence > FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE) causes.push(invalid('spec.matchingPrecedence', precedence, `must not be greater than ${FLOW_SCHEMA_MAX_MATCHING_PRECEDENCE}`));
    if (precedence === 1 && name !== FLOW_SCHEMA_EXEMPT) causes.push(invalid('spec.matchingPrecedence', precedence, "only the schema named 'exempt' may have matchingPrecedence 1"));
  }
  const method = spec['distinguisherMethod'];
  if (method !== undefined && method !== null) {
    const type = asRecord(method)?.['type'];
    if (typeof type !== 'string' || !DISTINGUISHER_METHODS.includes(type)) causes.push(notSupported('spec.distinguisherMethod.type', type ?? '', DISTINGUISHER_METHODS));
  }
  const level = asString(asRecord(spec['priorityLevelConfiguration'])?.['name']) ?? '';
  if (level === '') causes.push(required('spec.priorityLevelConfiguration.name', 'must reference a priority level'));
  else causes.push(...dnsSubdomainErrors('spec.priorityLevelConfiguration.name', level));
  const rules = spec['rules'];
  if (rules !== undefined && rules !== null && !Array.isArray(rules)) causes.push(typeInvalid('spec.rules', rules, 'a list'));
  asList(rules).forEach((rule, i) => causes.push(...policyRuleErrors(rule, indexPath('spec.rules', i))));
  const fixed = mandatorySpec(mandatoryFlowSchemas(), name);
  if (fixed !== undefined && !flowControlSpecsEqual(spec, fixed)) causes.push(invalid('spec', spec, `spec of '${name ?? ''}' must equal the fixed value`));
  return [...causes, ...conditionErrors(obj)];
}

function percentErrors(fields: Fields, path: string, causes: StatusCause[]): void {
  const lendable = integerField(fields, 'lendablePercent', path, causes);
  if (lendable !== undefined && (lendable < 0 || lendable > 100)) causes.push(invalid(`${path}.lendablePercent`, lendable, 'must be between 0 and 100, inclusive'));
}

/** Bits of hash a hand of `handSize` from `queues` queues takes: ceil(log2(queues) * handSize). */
export function requiredEntropyBits(queues: number, handSize: number): number {
  return Math.ceil(Math.log2(queues) * handSize);
}

function queuingErrors(queuing: Fields, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const limit = integerField(queuing, 'queueLengthLimit', path, causes) ?? 0;
  const queues = integerField(queuing, 'queues', path, causes) ?? 0;
  const hand = integerField(queuing, 'handSize', path, causes) ?? 0;
  if (limit <= 0) causes.push(invalid(`${path}.queueLengthLimit`, limit, 'must be positive'));
  if (queues <= 0) causes.push(invalid(`${path}.queues`, queues, 'must be positive'));
  else if (queues > MAX_QUEUES) causes.push(invalid(`${path}.queues`, queues, `must not be greater than ${MAX_QUEUES}`));
  if (hand <= 0) causes.push(invalid(`${path}.handSize`, hand, 'must be positive'));
  else if (hand > queues) causes.push(invalid(`${path}.handSize`, hand, `should not be greater than queues (${queues})`));
  else if (requiredEntropyBits(queues, hand) > MAX_HASH_BITS) {
    causes.push(invalid(`${path}.handSize`, hand, `required entropy bits of deckSize ${queues} and handSize ${hand} should not be greater than ${MAX_HASH_BITS}`));
  }
  return causes;
}

function limitedErrors(limited: Fields, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const shares = integerField(limited, 'nominalConcurrencyShares', path, causes);
  if (shares !== undefined && shares < 0) causes.push(invalid(`${path}.nominalConcurrencyShares`, shares, 'must be a non-negative integer'));
  percentErrors(limited, path, causes);
  const borrowing = integerField(limited, 'borrowingLimitPercent', path, causes);
  if (borrowing !== undefined && borrowing < 0) causes.push(invalid(`${path}.borrowingLimitPercent`, borrowing, 'if specified, must be a non-negative integer'));
  const response = asRecord(limited['limitResponse']) ?? {};
  const rpath = `${path}.limitResponse`;
  const type = response['type'];
  const queuing = response['queuing'];
  if (type === 'Reject') {
    if (queuing !== undefined && queuing !== null) causes.push(forbidden(`${rpath}.queuing`, 'must be nil if limited.limitResponse.type is not Limited'));
  } else if (type === 'Queue') {
    const q = asRecord(queuing);
    if (!q) causes.push(required(`${rpath}.queuing`, 'must not be empty if limited.limitResponse.type is Limited'));
    else causes.push(...queuingErrors(q, `${rpath}.queuing`));
  } else {
    causes.push(notSupported(`${rpath}.type`, type ?? '', LIMIT_RESPONSE_TYPES));
  }
  return causes;
}

function exemptErrors(exempt: Fields, path: string): StatusCause[] {
  const causes: StatusCause[] = [];
  const shares = integerField(exempt, 'nominalConcurrencyShares', path, causes);
  if (shares !== undefined && shares < 0) causes.push(invalid(`${path}.nominalConcurrencyShares`, shares, 'must be a non-negative number'));
  percentErrors(exempt, path, causes);
  return causes;
}

export function validatePriorityLevelConfiguration(obj: ApiObject): StatusCause[] {
  const name = obj.metadata?.name;
  const given = obj['spec'];
  if (given !== undefined && given !== null && !isRecord(given)) return [typeInvalid('spec', given, 'an object')];
  const spec = asRecord(given) ?? {};
  const causes: StatusCause[] = [];
  const type = spec['type'];
  if ((name === PRIORITY_LEVEL_EXEMPT) !== (type === 'Exempt')) causes.push(invalid('spec.type', type ?? '', "type must be 'Exempt' if and only if name is 'exempt'"));
  const limited = spec['limited'];
  const exempt = spec['exempt'];
  if (type === 'Exempt') {
    if (limited !== undefined && limited !== null) causes.push(forbidden('spec.limited', 'must be nil if the type is not Limited'));
    const e = asRecord(exempt);
    if (e) causes.push(...exemptErrors(e, 'spec.exempt'));
  } else if (type === 'Limited') {
    if (exempt !== undefined && exempt !== null) causes.push(forbidden('spec.exempt', 'must be nil if the type is Limited'));
    const l = asRecord(limited);
    if (!l) causes.push(required('spec.limited', 'must not be empty when type is Limited'));
    else causes.push(...limitedErrors(l, 'spec.limited'));
  } else {
    causes.push(notSupported('spec.type', type ?? '', PRIORITY_LEVEL_TYPES));
  }
  // The exempt level's shares and lendable percent may be tuned; everything else of a mandatory level is fixed.
  const fixed = asRecord(mandatorySpec(mandatoryPriorityLevelConfigurations(), name));
  if (fixed) {
    const compared = name === PRIORITY_LEVEL_EXEMPT && isRecord(exempt) ? { ...fixed, exempt: { ...asRecord(fixed['exempt']), ...exempt } } : fixed;
    if (!flowControlSpecsEqual(spec, compared)) causes.push(invalid('spec', spec, `spec of '${name ?? ''}' must equal the fixed value`));
  }
  return [...causes, ...conditionErrors(obj)];
}

// ---- Definitions --------------------------------------------------------------

function dangling(obj: ApiObject): string {
  const condition = asList(asRecord(obj['status'])?.['conditions']).map(asRecord).find((c) => c?.['type'] === 'Dangling');
  return asString(condition?.['status']) ?? '?';
}

function limitedField(obj: ApiObject, read: (limited: Fields) => unknown): string | number {
  const limited = asRecord(asRecord(obj['spec'])?.['limited']);
  const v = limited ? read(limited) : undefined;
  return typeof v === 'number' ? v : '<none>';
}

const queuingField = (key: string) => (limited: Fields) => asRecord(asRecord(limited['limitResponse'])?.['queuing'])?.[key];

const strategyFor = (defaults: (obj: ApiObject) => void, validate: (obj: ApiObject) => StatusCause[]): ResourceDefinition['strategy'] => ({
  ...statusAndGenerationHooks(),
  applyDefaults: defaults,
  validate,
});

const statusSubresource = (): SubresourceDefinition => ({ name: 'status', verbs: ['get', 'patch', 'update'] });

export function flowSchemaDefinition(): ResourceDefinition {
  return groupKindDefinition(FLOWCONTROL_GROUP, 'v1', 'FlowSchema', 'flowschemas', false, FLOW_SCHEMA_SCHEMA, {
    subresources: [statusSubresource()],
    printerColumns: [
      { name: 'PriorityLevel', type: 'string', jsonPath: '.spec.priorityLevelConfiguration.name', description: 'The priority level the matched requests go to.' },
      { name: 'MatchingPrecedence', type: 'integer', jsonPath: '.spec.matchingPrecedence', description: 'Lower values are matched first.' },
      {
        name: 'DistinguisherMethod',
        type: 'string',
        jsonPath: '.spec.distinguisherMethod.type',
        description: 'How matched requests are split into flows.',
        compute: (obj) => asString(asRecord(asRecord(obj['spec'])?.['distinguisherMethod'])?.['type']) ?? '<none>',
      },
      // Age comes before MissingPL, as in the original's table.
      { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp', description: 'CreationTimestamp is the time the object was created.' },
      { name: 'MissingPL', type: 'string', jsonPath: '.status.conditions', description: 'Whether the priority level is missing (the Dangling condition).', compute: dangling },
    ],
    strategy: strategyFor(applyFlowSchemaDefaults, validateFlowSchema),
    allowUnconditionalUpdate: true,
  });
}

export function priorityLevelConfigurationDefinition(): ResourceDefinition {
  return groupKindDefinition(FLOWCONTROL_GROUP, 'v1', 'PriorityLevelConfiguration', 'prioritylevelconfigurations', false, PRIORITY_LEVEL_CONFIGURATION_SCHEMA, {
    subresources: [statusSubresource()],
    printerColumns: [
      { name: 'Type', type: 'string', jsonPath: '.spec.type', description: 'Exempt or Limited.' },
      {
        name: 'NominalConcurrencyShares',
        type: 'string',
        jsonPath: '.spec.limited.nominalConcurrencyShares',
        description: 'Share of the server concurrency.',
        compute: (obj) => limitedField(obj, (l) => asNumber(l['nominalConcurrencyShares'])),
      },
      { name: 'Queues', type: 'string', jsonPath: '.spec.limited.limitResponse.queuing.queues', description: 'Number of queues.', compute: (obj) => limitedField(obj, queuingField('queues')) },
      { name: 'HandSize', type: 'string', jsonPath: '.spec.limited.limitResponse.queuing.handSize', description: 'Queues per flow.', compute: (obj) => limitedField(obj, queuingField('handSize')) },
      {
        name: 'QueueLengthLimit',
        type: 'string',
        jsonPath: '.spec.limited.limitResponse.queuing.queueLengthLimit',
        description: 'Requests a queue may hold.',
        compute: (obj) => limitedField(obj, queuingField('queueLengthLimit')),
      },
    ],
    strategy: strategyFor(applyPriorityLevelConfigurationDefaults, validatePriorityLevelConfiguration),
    allowUnconditionalUpdate: true,
  });
}

export function flowControlDefinitions(): ResourceDefinition[] {
  return [flowSchemaDefinition(), priorityLevelConfigurationDefinition()];
}
