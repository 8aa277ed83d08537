import type { UserInfo } from '@svc/apimachinery';
import type { RequestInfo } from '../request-info';
import type { FlowSchema, NonResourceRule, PolicyRules, ResourceRule, Subject } from './config';

/**
 * Classification: the first FlowSchema (in matching order) one of whose
 * rules matches the request, and the flow it belongs to within that schema
 * (its distinguisher: the user name, the namespace, or none).
 */

export type ClassifiedRequest = Pick<RequestInfo, 'isResourceRequest' | 'verb' | 'apiGroup' | 'resource' | 'subresource' | 'namespace' | 'path'>;

const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';

function subjectMatches(subject: Subject, user: UserInfo): boolean {
  switch (subject.kind) {
    case 'User':
      return subject.user !== undefined && (subject.user.name === '*' || subject.user.name === user.username);
    case 'Group':
      return subject.group !== undefined && (subject.group.name === '*' || user.groups.includes(subject.group.name));
    case 'ServiceAccount': {
      const sa = subject.serviceAccount;
      if (!sa || !user.username.startsWith(SERVICE_ACCOUNT_PREFIX)) return false;
      const rest = user.username.slice(SERVICE_ACCOUNT_PREFIX.length);
      const colon = rest.indexOf(':');
      if (colon < 0) return false;
      return rest.slice(0, colon) === sa.namespace && (sa.name === '*' || rest.slice(colon + 1) === sa.name);
    }
    default:
      return false;
  }
}

const has = (list: readonly string[], value: string): boolean => list.includes('*') || list.includes(value);

function resourceRuleMatches(rule: ResourceRule, info: ClassifiedRequest): boolean {
  if (!has(rule.verbs, info.verb) || !has(rule.apiGroups, info.apiGroup)) return false;
  const resource = info.subresource ? `${info.resource}/${info.subresource}` : info.resource;
  if (!has(rule.resources, resource)) return false;
  return info.namespace === '' ? rule.clusterScope === true : has(rule.namespaces ?? [], info.namespace);
}

function nonResourceRuleMatches(rule: NonResourceRule, info: ClassifiedRequest): boolean {
  if (!has(rule.verbs, info.verb)) return false;
  return rule.nonResourceURLs.some((url) => url === '*' || url === info.path || (url.endsWith('*') && info.path.startsWith(url.slice(0, -1))));
}

function rulesMatch(rules: PolicyRules, user: UserInfo, info: ClassifiedRequest): boolean {
  if (!rules.subjects.some((s) => subjectMatches(s, user))) return false;
  if (info.isResourceRequest) return (rules.resourceRules ?? []).some((r) => resourceRuleMatches(r, info));
  return (rules.nonResourceRules ?? []).some((r) => nonResourceRuleMatches(r, info));
}

export function flowSchemaMatches(schema: FlowSchema, user: UserInfo, info: ClassifiedRequest): boolean {
  return schema.rules.some((r) => rulesMatch(r, user, info));
}

/** The first schema that matches, in the order given (the digested matching order). */
export function classify(schemas: readonly FlowSchema[], user: UserInfo, info: ClassifiedRequest): FlowSchema | undefined {
  for (const s of schemas) if (flowSchemaMatches(s, user, info)) return s;
  return undefined;
}

/** The flow distinguisher of a request within its schema. */
export function flowDistinguisher(schema: FlowSchema, user: UserInfo, info: ClassifiedRequest): string {
  if (schema.distinguisherMethod === 'ByUser') return user.username;
  if (schema.distinguisherMethod === 'ByNamespace') return info.namespace;
  return '';
}

/**
 * A 52-bit hash of the flow (schema name and distinguisher), from two
 * 32-bit FNV-1a passes, which shuffle sharding deals a hand of queues from.
 */
export function flowHash(schemaName: string, distinguisher: string): number {
  const text = `${schemaName}\u0000${distinguisher}`;
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193);
    b = Math.imul(b ^ c, 0x01000193) ^ (b >>> 13);
  }
  return (a >>> 0) * 0x100000 + ((b >>> 0) & 0xfffff);
}
