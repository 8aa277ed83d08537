import { ApiError, canonicalGroup, labelSelectorFromObject, type ApiObject, type LabelSelector, type LabelSelectorObject } from '@svc/apimachinery';
import type { UserInfo } from '@svc/apimachinery';
import type { AdmissionAttributes, AdmissionOperation, NamespaceReader } from '../plugins';

/**
 * Which requests a policy's `matchConstraints` (or a binding's
 * `matchResources`) select, as the original server's admission matching
 * decides it (`admission/plugin/policy/matching` and the webhook rule,
 * namespace and object predicates): the namespace selector, the object
 * selector, then the excluded rules, then the rules (with resource names),
 * then, under `matchPolicy: Equivalent`, the rules against the other
 * versions the request's resource is served at. Group names in rules may be
 * the upstream ones (`apps.k8s.io` reads as ours).
 */

export interface RuleWithOperations {
  operations?: string[];
  apiGroups?: string[];
  apiVersions?: string[];
  resources?: string[];
  scope?: string;
}

export interface NamedRuleWithOperations extends RuleWithOperations {
  resourceNames?: string[];
}

export interface MatchResources {
  namespaceSelector?: LabelSelectorObject | null;
  objectSelector?: LabelSelectorObject | null;
  resourceRules?: NamedRuleWithOperations[];
  excludeResourceRules?: NamedRuleWithOperations[];
  matchPolicy?: string;
}

export interface GroupVersionResource {
  group: string;
  version: string;
  resource: string;
}

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** Another version the request's resource is served at, and its kind there. */
export interface EquivalentResource {
  resource: GroupVersionResource;
  kind: GroupVersionKind;
}

/**
 * The versions a resource is served at besides the request's (upstream's
 * EquivalentResourceMapper); none when the server knows of no other.
 */
export interface EquivalentResourceMapper {
  equivalents(resource: GroupVersionResource, subresource: string): EquivalentResource[];
}

export const NO_EQUIVALENTS: EquivalentResourceMapper = { equivalents: () => [] };

/** What a match decides: the resource and kind it matched as (an equivalent one under `Equivalent`). */
export type MatchResult = { matches: false } | { matches: true; resource: GroupVersionResource; kind: GroupVersionKind };

const NO_MATCH: MatchResult = { matches: false };

function exactOrWildcard(items: readonly string[] | undefined, requested: string): boolean {
  return (items ?? []).some((item) => item === '*' || item === requested);
}

function isNamespaceResource(resource: GroupVersionResource): boolean {
  return resource.group === '' && resource.resource === 'namespaces';
}

/**
 * The namespace a request is in for selectors and scopes: a namespace
 * object's own name (as the original's attributes carry it), else the
 * request's namespace ('' for cluster-scoped objects).
 */
export function requestNamespace(attrs: Pick<AdmissionAttributes, 'resource' | 'namespace' | 'name'>): string {
  return isNamespaceResource(attrs.resource) ? attrs.name : attrs.namespace;
}

/** Whether one rule covers the request, seen as `resource` (the request's own or an equivalent). */
export function ruleMatches(rule: RuleWithOperations, attrs: AdmissionAttributes, resource: GroupVersionResource = attrs.resource): boolean {
  const scope = rule.scope ?? '*';
  const namespace = requestNamespace(attrs);
  if (scope === 'Namespaced' && (isNamespaceResource(resource) || namespace === '')) return false;
  if (scope === 'Cluster' && !(isNamespaceResource(resource) || namespace === '')) return false;
  if (scope !== '*' && scope !== 'Namespaced' && scope !== 'Cluster') return false;
  if (!(rule.operations ?? []).some((op) => op === '*' || op === attrs.operation)) return false;
  if (!(rule.apiGroups ?? []).some((g) => g === '*' || canonicalGroup(g) === resource.group)) return false;
  if (!exactOrWildcard(rule.apiVersions, resource.version)) return false;
  return (rule.resources ?? []).some((entry) => {
    const slash = entry.indexOf('/');
    const [res, sub] = slash < 0 ? [entry, ''] : [entry.slice(0, slash), entry.slice(slash + 1)];
    return (res === '*' || res === resource.resource) && (sub === '*' || sub === attrs.subresource);
  });
}

function namedRulesMatch(rules: readonly NamedRuleWithOperations[], attrs: AdmissionAttributes, resource: GroupVersionResource): boolean {
  return rules.some((rule) => ruleMatches(rule, attrs, resource) && ((rule.resourceNames ?? []).length === 0 || (rule.resourceNames ?? []).includes(attrs.name)));
}

/** The rules against the request, then (under Equivalent) against its equivalents; the resource and kind matched. */
export function resourceRulesMatch(rules: readonly NamedRuleWithOperations[], matchPolicy: string | undefined, attrs: AdmissionAttributes, mapper: EquivalentResourceMapper): MatchResult {
  if (namedRulesMatch(rules, attrs, attrs.resource)) return { matches: true, resource: attrs.resource, kind: attrs.kind };
  if (matchPolicy !== 'Equivalent') return NO_MATCH;
  for (const equivalent of mapper.equivalents(attrs.resource, attrs.subresource)) {
    const same = equivalent.resource.group === attrs.resource.group && equivalent.resource.version === attrs.resource.version && equivalent.resource.resource === attrs.resource.resource;
    if (!same && namedRulesMatch(rules, attrs, equivalent.resource)) return { matches: true, resource: equivalent.resource, kind: equivalent.kind };
  }
  return NO_MATCH;
}

/** Selectors parsed once per configuration object (they are read on every request); a broken one throws its error each time. */
const parsedSelectors = new WeakMap<LabelSelectorObject, LabelSelector | Error>();
const EVERYTHING = labelSelectorFromObject(undefined);

export function parseSelector(selector: LabelSelectorObject | null | undefined): LabelSelector {
  if (!selector) return EVERYTHING;
  let parsed = parsedSelectors.get(selector);
  if (!parsed) {
    try {
      parsed = labelSelectorFromObject(selector);
    } catch (err) {
      parsed = err as Error;
    }
    parsedSelectors.set(selector, parsed);
  }
  if (parsed instanceof Error) throw parsed;
  return parsed;
}

function labelsOf(obj: ApiObject | undefined): Record<string, string> | undefined {
  return obj?.metadata?.labels;
}

/**
 * Whether the namespace selector selects the request. A cluster-scoped
 * object (not a namespace) is always selected; a namespace being created or
 * updated is judged by its own labels; anything else by its namespace's,
 * and a namespace that does not exist is a NotFound, as upstream answers.
 */
async function namespaceSelected(selector: LabelSelectorObject | null | undefined, attrs: AdmissionAttributes, namespaces: NamespaceReader): Promise<boolean> {
  const name = requestNamespace(attrs);
  if (name === '' && !isNamespaceResource(attrs.resource)) return true;
  const parsed = parseSelector(selector);
  if (parsed.empty) return true;
  if (isNamespaceResource(attrs.resource) && attrs.subresource === '' && (attrs.operation === 'CREATE' || attrs.operation === 'UPDATE')) {
    return parsed.matches(labelsOf(attrs.object));
  }
  const ns = await namespaces.getNamespace(name);
  if (!ns) throw ApiError.notFound({ group: '', resource: 'namespaces' }, name);
  return parsed.matches(labelsOf(ns));
}

/** Whether the object selector selects the new or the old object (a missing object is never selected). */
function objectSelected(selector: LabelSelectorObject | null | undefined, attrs: AdmissionAttributes): boolean {
  const parsed = parseSelector(selector);
  if (parsed.empty) return true;
  const matches = (obj: ApiObject | undefined): boolean => obj !== undefined && obj !== null && parsed.matches(labelsOf(obj) ?? {});
  return matches(attrs.object) || matches(attrs.oldObject);
}

/** An error of a selector (a bad operator) as the original reports it: an internal error. */
function selectorError(err: unknown): ApiError {
  if (err instanceof ApiError && err.code === 404) return err;
  return new ApiError(500, 'InternalError', `Internal error occurred: ${(err as Error).message}`);
}

/**
 * Whether `criteria` select the request, in the original's order: a request
 * the selectors exclude never matches, even when a selector is broken; a
 * broken selector is an error only for a request the rules select. With no
 * `resourceRules` (a binding's matchResources) every resource matches.
 */
export async function matchesResources(criteria: MatchResources, attrs: AdmissionAttributes, namespaces: NamespaceReader, mapper: EquivalentResourceMapper = NO_EQUIVALENTS): Promise<MatchResult> {
  let namespaceError: ApiError | undefined;
  try {
    if (!(await namespaceSelected(criteria.namespaceSelector, attrs, namespaces))) return NO_MATCH;
  } catch (err) {
    namespaceError = selectorError(err);
  }
  let objectError: ApiError | undefined;
  try {
    if (!objectSelected(criteria.objectSelector, attrs)) return NO_MATCH;
  } catch (err) {
    objectError = selectorError(err);
  }
  if (resourceRulesMatch(criteria.excludeResourceRules ?? [], criteria.matchPolicy, attrs, mapper).matches) return NO_MATCH;
  const rules = criteria.resourceRules ?? [];
  const result: MatchResult = rules.length === 0 ? { matches: true, resource: attrs.resource, kind: attrs.kind } : resourceRulesMatch(rules, criteria.matchPolicy, attrs, mapper);
  if (!result.matches) return NO_MATCH;
  if (namespaceError) throw namespaceError;
  if (objectError) throw objectError;
  return result;
}

const CONFIGURATION_KINDS = new Set(['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding', 'MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding']);

/**
 * Whether the request is about admission's own configuration (webhook
 * configurations, policies and their bindings): never sent to webhooks nor
 * evaluated by policies, so none can lock the cluster out of fixing it.
 */
export function isAdmissionConfigurationResource(attrs: Pick<AdmissionAttributes, 'kind'>): boolean {
  return canonicalGroup(attrs.kind.group) === 'admissionregistration.svc.io' && CONFIGURATION_KINDS.has(attrs.kind.kind);
}

/**
 * The request as an admission hook (a policy's `request`, a webhook's
 * AdmissionRequest) sees it: the kind and resource it matched as (another
 * version's under `Equivalent`), and those the client asked for.
 */
export interface MatchedRequest {
  kind: GroupVersionKind;
  resource: GroupVersionResource;
  subResource: string;
  requestKind: GroupVersionKind;
  requestResource: GroupVersionResource;
  requestSubResource: string;
  name: string;
  namespace: string;
  operation: AdmissionOperation;
  userInfo: UserInfo;
  dryRun: boolean;
  /** The operation's options object; null when the caller has none. */
  options: unknown;
}

export function matchedRequest(attrs: AdmissionAttributes & { options?: unknown }, matched: { kind: GroupVersionKind; resource: GroupVersionResource }): MatchedRequest {
  return {
    kind: matched.kind,
    resource: matched.resource,
    subResource: attrs.subresource,
    requestKind: attrs.kind,
    requestResource: attrs.resource,
    requestSubResource: attrs.subresource,
    name: attrs.name,
    namespace: attrs.namespace,
    operation: attrs.operation,
    userInfo: attrs.userInfo,
    dryRun: attrs.dryRun,
    options: attrs.options ?? null,
  };
}

/** Several errors as one message, as the original's aggregate error reads: the one alone, else `[a, b]`. */
export function aggregateErrors(messages: readonly string[]): string {
  return messages.length === 1 ? (messages[0] as string) : `[${messages.join(', ')}]`;
}

/**
 * An object as the version a rule matched sees it: the same object under
 * that apiVersion (equivalents differ only by it); as it is when it is
 * already of that version.
 */
export function asVersion<T extends ApiObject | undefined>(obj: T, kind: { group: string; version: string }): T {
  if (!obj) return obj;
  const apiVersion = kind.group === '' ? kind.version : `${kind.group}/${kind.version}`;
  return obj.apiVersion === apiVersion ? obj : ({ ...obj, apiVersion } as T);
}
