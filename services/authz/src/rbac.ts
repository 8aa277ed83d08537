import { canonicalGroup, type ApiObject, type UserInfo } from '@svc/apimachinery';
import type { FeedSource } from '@svc/watch-fanout/feed';
import type { Attributes, AuthorizerDecision } from './authorizer';

/**
 * RBAC evaluation (SPEC section 5, "RBAC rules"): the roles and bindings in
 * memory, indexed by subject so that a decision looks only at the bindings
 * that name the requester (its user name, its groups, or its service
 * account), however many bindings there are. Permissions only add up: a
 * request is allowed when one rule of one role granted to the requester
 * matches it, and RBAC has no opinion otherwise. A binding to a role that
 * does not exist grants nothing.
 */

const RBAC_STORAGE_GROUP = 'rbac.authorization.svc.io';

/** The four stored kinds RBAC's policy is made of (what its feed follows). */
export const RBAC_SOURCES: FeedSource[] = [
  { group: RBAC_STORAGE_GROUP, resource: 'roles', kind: 'Role' },
  { group: RBAC_STORAGE_GROUP, resource: 'clusterroles', kind: 'ClusterRole' },
  { group: RBAC_STORAGE_GROUP, resource: 'rolebindings', kind: 'RoleBinding' },
  { group: RBAC_STORAGE_GROUP, resource: 'clusterrolebindings', kind: 'ClusterRoleBinding' },
];

export interface PolicyRule {
  verbs: string[];
  apiGroups: string[];
  resources: string[];
  resourceNames: string[];
  nonResourceURLs: string[];
}

export interface Subject {
  kind: string;
  name: string;
  namespace: string;
}

export interface Binding {
  /** Empty for a ClusterRoleBinding. */
  namespace: string;
  name: string;
  subjects: Subject[];
  roleRef: { kind: string; name: string };
}

const SERVICE_ACCOUNT_PREFIX = 'system:serviceaccount:';

function strings(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

export function rulesOf(obj: ApiObject): PolicyRule[] {
  const raw = Array.isArray(obj['rules']) ? (obj['rules'] as unknown[]) : [];
  return raw
    .filter((r): r is Record<string, unknown> => typeof r === 'object' && r !== null)
    .map((r) => ({
      verbs: strings(r['verbs']),
      apiGroups: strings(r['apiGroups']).map(canonicalGroup),
      resources: strings(r['resources']),
      resourceNames: strings(r['resourceNames']),
      nonResourceURLs: strings(r['nonResourceURLs']),
    }));
}

export function bindingOf(obj: ApiObject): Binding {
  const ref = (obj['roleRef'] ?? {}) as Record<string, unknown>;
  const subjects = (Array.isArray(obj['subjects']) ? (obj['subjects'] as unknown[]) : [])
    .filter((s): s is Record<string, unknown> => typeof s === 'object' && s !== null)
    .map((s) => ({ kind: String(s['kind'] ?? ''), name: String(s['name'] ?? ''), namespace: typeof s['namespace'] === 'string' ? s['namespace'] : '' }));
  return {
    namespace: obj.metadata?.namespace ?? '',
    name: obj.metadata?.name ?? '',
    subjects,
    roleRef: { kind: String(ref['kind'] ?? ''), name: String(ref['name'] ?? '') },
  };
}

function verbMatches(rule: PolicyRule, verb: string): boolean {
  return rule.verbs.includes('*') || rule.verbs.includes(verb);
}

function groupMatches(rule: PolicyRule, group: string): boolean {
  return rule.apiGroups.includes('*') || rule.apiGroups.includes(group);
}

function resourceMatches(rule: PolicyRule, resource: string, subresource: string): boolean {
  const combined = subresource === '' ? resource : `${resource}/${subresource}`;
  return rule.resources.some((r) => r === '*' || r === combined || (subresource !== '' && r === `*/${subresource}`));
}

function nameMatches(rule: PolicyRule, name: string): boolean {
  return rule.resourceNames.length === 0 || rule.resourceNames.includes(name);
}

function urlMatches(rule: PolicyRule, path: string): boolean {
  return rule.nonResourceURLs.some((u) => u === '*' || u === path || (u.endsWith('*') && path.startsWith(u.slice(0, -1))));
}

/** Whether `rule` allows the request. */
export function ruleAllows(rule: PolicyRule, attrs: Pick<Attributes, 'resourceRequest' | 'verb' | 'apiGroup' | 'resource' | 'subresource' | 'name' | 'path'>): boolean {
  if (!verbMatches(rule, attrs.verb)) return false;
  if (attrs.resourceRequest) return rule.resources.length > 0 && groupMatches(rule, attrs.apiGroup) && resourceMatches(rule, attrs.resource, attrs.subresource) && nameMatches(rule, attrs.name);
  return urlMatches(rule, attrs.path);
}

function describeSubject(s: Subject, bindingNamespace: string): string {
  if (s.kind === 'ServiceAccount') return `ServiceAccount "${s.namespace || bindingNamespace}/${s.name}"`;
  return `${s.kind} "${s.name}"`;
}

export class RbacPolicy {
  private readonly roles = new Map<string, PolicyRule[]>();
  private readonly clusterRoles = new Map<string, PolicyRule[]>();
  private readonly bindings = new Map<string, Binding>();
  /** Binding keys by subject key (`User:alice`, `Group:dev`, `ServiceAccount:ns/name`). */
  private readonly bySubject = new Map<string, Set<string>>();

  private static bindingKey(b: Pick<Binding, 'namespace' | 'name'>): string {
    return `${b.namespace}/${b.name}`;
  }

  private static subjectKeys(b: Binding): string[] {
    return b.subjects.map((s) => (s.kind === 'ServiceAccount' ? `ServiceAccount:${s.namespace || b.namespace}/${s.name}` : `${s.kind}:${s.name}`));
  }

  clear(): void {
    this.roles.clear();
    this.clusterRoles.clear();
    this.bindings.clear();
    this.bySubject.clear();
  }

  setRole(namespace: string, name: string, rules: PolicyRule[]): void {
    this.roles.set(`${namespace}/${name}`, rules);
  }

  deleteRole(namespace: string, name: string): void {
    this.roles.delete(`${namespace}/${name}`);
  }

  setClusterRole(name: string, rules: PolicyRule[]): void {
    this.clusterRoles.set(name, rules);
  }

  deleteClusterRole(name: string): void {
    this.clusterRoles.delete(name);
  }

  setBinding(binding: Binding): void {
    this.deleteBinding(binding.namespace, binding.name);
    const key = RbacPolicy.bindingKey(binding);
    this.bindings.set(key, binding);
    for (const s of RbacPolicy.subjectKeys(binding)) {
      let set = this.bySubject.get(s);
      if (!set) this.bySubject.set(s, (set = new Set()));
      set.add(key);
    }
  }

  deleteBinding(namespace: string, name: string): void {
    const key = RbacPolicy.bindingKey({ namespace, name });
    const old = this.bindings.get(key);
    if (!old) return;
    this.bindings.delete(key);
    for (const s of RbacPolicy.subjectKeys(old)) {
      const set = this.bySubject.get(s);
      set?.delete(key);
      if (set?.size === 0) this.bySubject.delete(s);
    }
  }

  /** Applies a stored object of one of the four kinds (`deleted` for a DELETED event). */
  apply(kind: string, obj: ApiObject, deleted = false): void {
    const ns = obj.metadata?.namespace ?? '';
    const name = obj.metadata?.name ?? '';
    switch (kind) {
      case 'Role':
        return deleted ? this.deleteRole(ns, name) : this.setRole(ns, name, rulesOf(obj));
      case 'ClusterRole':
        return deleted ? this.deleteClusterRole(name) : this.setClusterRole(name, rulesOf(obj));
      case 'RoleBinding':
      case 'ClusterRoleBinding':
        return deleted ? this.deleteBinding(kind === 'RoleBinding' ? ns : '', name) : this.setBinding({ ...bindingOf(obj), namespace: kind === 'RoleBinding' ? ns : '' });
    }
  }

  /** The bindings that name this user, directly, by a group, or as a service account. */
  private bindingsFor(user: UserInfo): Binding[] {
    const keys = new Set<string>();
    const add = (subject: string) => this.bySubject.get(subject)?.forEach((k) => keys.add(k));
    if (user.username.startsWith(SERVICE_ACCOUNT_PREFIX)) {
      const [ns, name] = user.username.slice(SERVICE_ACCOUNT_PREFIX.length).split(':');
      if (ns && name) add(`ServiceAccount:${ns}/${name}`);
    }
    add(`User:${user.username}`);
    for (const g of user.groups) add(`Group:${g}`);
    return [...keys].map((k) => this.bindings.get(k)).filter((b): b is Binding => b !== undefined);
  }

  private rolesOf(b: Binding): PolicyRule[] {
    if (b.roleRef.kind === 'ClusterRole') return this.clusterRoles.get(b.roleRef.name) ?? [];
    if (b.roleRef.kind === 'Role' && b.namespace !== '') return this.roles.get(`${b.namespace}/${b.roleRef.name}`) ?? [];
    return [];
  }

  /** The subject of `b` that names `user` (for the reason of a decision). */
  private matchingSubject(b: Binding, user: UserInfo): Subject | undefined {
    return b.subjects.find((s) => {
      if (s.kind === 'User') return s.name === user.username;
      if (s.kind === 'Group') return user.groups.includes(s.name);
      if (s.kind === 'ServiceAccount') return user.username === `${SERVICE_ACCOUNT_PREFIX}${s.namespace || b.namespace}:${s.name}`;
      return false;
    });
  }

  authorize(attrs: Attributes): AuthorizerDecision {
    for (const b of this.bindingsFor(attrs.user)) {
      // A RoleBinding grants only inside its namespace, and only resources there.
      if (b.namespace !== '' && (!attrs.resourceRequest || attrs.namespace !== b.namespace)) continue;
      if (!this.rolesOf(b).some((rule) => ruleAllows(rule, attrs))) continue;
      const subject = this.matchingSubject(b, attrs.user);
      const binding = b.namespace === '' ? `ClusterRoleBinding "${b.name}"` : `RoleBinding "${b.name}/${b.namespace}"`;
      return { decision: 'allow', reason: `RBAC: allowed by ${binding} of ${b.roleRef.kind} "${b.roleRef.name}" to ${subject ? describeSubject(subject, b.namespace) : 'the user'}` };
    }
    return { decision: 'no-opinion', reason: '' };
  }

  /** Every rule granted to `user` in `namespace` (cluster-wide ones included): SelfSubjectRulesReview, escalation checks. */
  rulesFor(user: UserInfo, namespace: string): PolicyRule[] {
    return this.bindingsFor(user)
      .filter((b) => b.namespace === '' || b.namespace === namespace)
      .flatMap((b) => this.rolesOf(b));
  }

  get size(): { roles: number; clusterRoles: number; bindings: number } {
    return { roles: this.roles.size, clusterRoles: this.clusterRoles.size, bindings: this.bindings.size };
  }
}

/**
 * The single-verb, single-group, single-resource (and single-name) pieces
 * of a rule, or single-verb, single-URL pieces of a non-resource rule.
 */
export function ruleAtoms(rule: PolicyRule): PolicyRule[] {
  const out: PolicyRule[] = [];
  for (const verb of rule.verbs) {
    for (const url of rule.nonResourceURLs) out.push({ verbs: [verb], apiGroups: [], resources: [], resourceNames: [], nonResourceURLs: [url] });
    for (const group of rule.apiGroups) {
      for (const resource of rule.resources) {
        const names = rule.resourceNames.length > 0 ? rule.resourceNames.map((n) => [n]) : [[]];
        for (const resourceNames of names) out.push({ verbs: [verb], apiGroups: [group], resources: [resource], resourceNames, nonResourceURLs: [] });
      }
    }
  }
  return out;
}

function resourceCovered(owner: string, servant: string): boolean {
  if (owner === '*' || owner === servant) return true;
  // `*/status` covers `pods/status`.
  const slash = servant.indexOf('/');
  return owner.startsWith('*/') && slash > 0 && owner.slice(1) === servant.slice(slash);
}

function urlCovered(owner: string, servant: string): boolean {
  if (owner === '*' || owner === servant) return true;
  return owner.endsWith('*') && servant.startsWith(owner.slice(0, -1));
}

/** Whether `owner` grants everything the single-piece rule `atom` does (a wildcard is covered only by a wildcard). */
function atomCovered(owner: PolicyRule, atom: PolicyRule): boolean {
  const verb = atom.verbs[0] as string;
  if (!(owner.verbs.includes('*') || owner.verbs.includes(verb))) return false;
  if (atom.nonResourceURLs.length > 0) return owner.nonResourceURLs.some((u) => urlCovered(u, atom.nonResourceURLs[0] as string));
  const group = atom.apiGroups[0] as string;
  const resource = atom.resources[0] as string;
  if (!(owner.apiGroups.includes('*') || owner.apiGroups.includes(group))) return false;
  if (!owner.resources.some((r) => resourceCovered(r, resource))) return false;
  if (owner.resourceNames.length === 0) return true;
  return atom.resourceNames.length === 1 && owner.resourceNames.includes(atom.resourceNames[0] as string);
}

/** The pieces of `wanted` that no rule of `held` covers (empty: the holder may grant all of them). */
export function uncoveredRules(held: PolicyRule[], wanted: PolicyRule[]): PolicyRule[] {
  const canonical = wanted.map((r) => ({ ...r, apiGroups: r.apiGroups.map(canonicalGroup) }));
  return canonical.flatMap(ruleAtoms).filter((atom) => !held.some((owner) => atomCovered(owner, atom)));
}
