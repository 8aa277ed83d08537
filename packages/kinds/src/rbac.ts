import type { ApiObject, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { groupKindDefinition } from './group-definition';
import { labelSelectorErrors } from './admissionregistration-validation';
import { dnsSubdomainErrors, indexPath, invalid, notSupported, required, typeInvalid } from './field-errors';
import { asList, asRecord, asString } from './object-access';
import { LABEL_SELECTOR_SCHEMA, objectSchema } from './object-meta';
import { atomicList, str, struct } from './schema-builders';

/**
 * The access-control kinds (SPEC section 2, `rbac.authorization.svc.io/v1`):
 * Role and ClusterRole hold rules, RoleBinding and ClusterRoleBinding grant
 * a role to subjects. Names are path segments; a binding's `roleRef` cannot
 * change. What the rules allow is decided by authz; here is their shape and
 * validation.
 */
export const RBAC_GROUP = 'rbac.authorization.svc.io';
/** The upstream name of the group, accepted in `apiGroup` fields written by upstream clients. */
export const RBAC_GROUP_UPSTREAM = 'rbac.authorization.k8s.io';

const POLICY_RULE_SCHEMA: Schema = struct(
  {
    verbs: atomicList(str(), 'Verbs the rule allows (`*` for all).'),
    apiGroups: atomicList(str(), 'API groups of the resources (`""` for the core group, `*` for all).'),
    resources: atomicList(str(), 'Resources (`*` for all; `resource/subresource` for a subresource).'),
    resourceNames: atomicList(str(), 'Names the rule is limited to; empty for any.'),
    nonResourceURLs: atomicList(str(), 'Non-resource paths (a trailing `*` matches any suffix); only in cluster roles.'),
  },
  { description: 'One set of allowed actions.', required: ['verbs'] },
);

const SUBJECT_SCHEMA: Schema = struct(
  {
    kind: str('User, Group or ServiceAccount.'),
    apiGroup: str('`rbac.authorization.svc.io` for User and Group, empty for ServiceAccount.'),
    name: str('Name of the subject.'),
    namespace: str('Namespace of a ServiceAccount subject.'),
  },
  { description: 'Who a binding grants its role to.', required: ['kind', 'name'], atomic: true },
);

const ROLE_REF_SCHEMA: Schema = struct(
  {
    apiGroup: str('Group of the referenced role.'),
    kind: str('Role or ClusterRole.'),
    name: str('Name of the referenced role.'),
  },
  { description: 'The role granted; cannot be changed after creation.', required: ['apiGroup', 'kind', 'name'], atomic: true },
);

export const ROLE_SCHEMA = objectSchema('Role is a namespaced set of rules.', { rules: atomicList(POLICY_RULE_SCHEMA, 'What the role allows.') });

export const CLUSTER_ROLE_SCHEMA = objectSchema('ClusterRole is a cluster-wide set of rules, possibly aggregated from other cluster roles.', {
  rules: atomicList(POLICY_RULE_SCHEMA, 'What the role allows; filled by the aggregation controller when aggregationRule is set.'),
  aggregationRule: struct(
    { clusterRoleSelectors: atomicList(LABEL_SELECTOR_SCHEMA, 'Cluster roles whose rules are combined into this one.') },
    { description: 'How this role is composed from others.' },
  ),
});

const BINDING_FIELDS = {
  subjects: atomicList(SUBJECT_SCHEMA, 'Who the role is granted to.'),
  roleRef: ROLE_REF_SCHEMA,
};

export const ROLE_BINDING_SCHEMA = objectSchema('RoleBinding grants a Role or ClusterRole inside its namespace.', BINDING_FIELDS, ['roleRef']);
export const CLUSTER_ROLE_BINDING_SCHEMA = objectSchema('ClusterRoleBinding grants a ClusterRole cluster-wide.', BINDING_FIELDS, ['roleRef']);

function isRbacGroup(group: string): boolean {
  return group === RBAC_GROUP || group === RBAC_GROUP_UPSTREAM;
}

function stringList(obj: Record<string, unknown>, field: string, path: string, causes: StatusCause[]): string[] {
  const v = obj[field];
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v) || v.some((x) => typeof x !== 'string')) {
    causes.push(typeInvalid(`${path}.${field}`, v, 'a list of strings'));
    return [];
  }
  return v as string[];
}

/** The rules of a role, as the original server checks them. */
function validateRules(obj: ApiObject, namespaced: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const raw = obj['rules'];
  if (raw !== undefined && raw !== null && !Array.isArray(raw)) return [typeInvalid('rules', raw, 'a list')];
  asList(raw).forEach((item, i) => {
    const path = indexPath('rules', i);
    const rule = asRecord(item);
    if (!rule) return causes.push(typeInvalid(path, item, 'an object'));
    const verbs = stringList(rule, 'verbs', path, causes);
    const groups = stringList(rule, 'apiGroups', path, causes);
    const resources = stringList(rule, 'resources', path, causes);
    stringList(rule, 'resourceNames', path, causes);
    const urls = stringList(rule, 'nonResourceURLs', path, causes);
    if (verbs.length === 0) causes.push(required(`${path}.verbs`, 'verbs must contain at least one value'));
    if (urls.length > 0) {
      if (namespaced) causes.push(invalid(`${path}.nonResourceURLs`, urls, 'namespaced rules cannot apply to non-resource URLs'));
      if (groups.length > 0 || resources.length > 0) causes.push(invalid(`${path}.nonResourceURLs`, urls, 'rules cannot apply to both regular resources and non-resource URLs'));
      return;
    }
    if (groups.length === 0) causes.push(required(`${path}.apiGroups`, 'resource rules must supply at least one api group'));
    if (resources.length === 0) causes.push(required(`${path}.resources`, 'resource rules must supply at least one resource'));
    return;
  });
  return causes;
}

function validateClusterRole(obj: ApiObject): StatusCause[] {
  const causes = validateRules(obj, false);
  const agg = obj['aggregationRule'];
  if (agg !== undefined && agg !== null) {
    const rule = asRecord(agg);
    if (!rule) causes.push(typeInvalid('aggregationRule', agg, 'an object'));
    else {
      const selectors = asList(rule['clusterRoleSelectors']);
      if (selectors.length === 0) causes.push(required('aggregationRule.clusterRoleSelectors', 'at least one clusterRoleSelector required if aggregationRule is non-nil'));
      selectors.forEach((selector, i) => causes.push(...labelSelectorErrors(selector, indexPath('aggregationRule.clusterRoleSelectors', i))));
    }
  }
  return causes;
}

const SUBJECT_KINDS = ['ServiceAccount', 'User', 'Group'];

function validateBinding(obj: ApiObject, namespaced: boolean): StatusCause[] {
  const causes: StatusCause[] = [];
  const ref = asRecord(obj['roleRef']);
  if (!ref) causes.push(required('roleRef'));
  else {
    const kinds = namespaced ? ['Role', 'ClusterRole'] : ['ClusterRole'];
    const kind = asString(ref['kind']) ?? '';
    if (!kinds.includes(kind)) causes.push(notSupported('roleRef.kind', kind, kinds));
    const group = asString(ref['apiGroup']) ?? '';
    if (!isRbacGroup(group)) causes.push(notSupported('roleRef.apiGroup', group, [RBAC_GROUP]));
    if (!asString(ref['name'])) causes.push(required('roleRef.name'));
  }
  const raw = obj['subjects'];
  if (raw !== undefined && raw !== null && !Array.isArray(raw)) causes.push(typeInvalid('subjects', raw, 'a list'));
  asList(raw).forEach((item, i) => {
    const path = indexPath('subjects', i);
    const subject = asRecord(item);
    if (!subject) return causes.push(typeInvalid(path, item, 'an object'));
    const kind = asString(subject['kind']) ?? '';
    const name = asString(subject['name']) ?? '';
    const group = asString(subject['apiGroup']) ?? '';
    if (name === '') causes.push(required(`${path}.name`));
    if (!SUBJECT_KINDS.includes(kind)) return causes.push(notSupported(`${path}.kind`, kind, SUBJECT_KINDS));
    if (kind === 'ServiceAccount') {
      if (name !== '') causes.push(...dnsSubdomainErrors(`${path}.name`, name));
      if (group !== '') causes.push(notSupported(`${path}.apiGroup`, group, ['']));
      if (!namespaced && !asString(subject['namespace'])) causes.push(required(`${path}.namespace`));
    } else if (!isRbacGroup(group)) {
      causes.push(notSupported(`${path}.apiGroup`, group, [RBAC_GROUP]));
    }
    return;
  });
  return causes;
}

/**
 * Whether two roleRefs name the same role, as the original compares the
 * struct: field by field whatever the order the client wrote them in, with
 * the group's upstream name the same group as ours.
 */
function sameRoleRef(a: unknown, b: unknown): boolean {
  const x = asRecord(a);
  const y = asRecord(b);
  if (!x || !y) return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
  const group = (ref: Record<string, unknown>): unknown => (ref['apiGroup'] === RBAC_GROUP_UPSTREAM ? RBAC_GROUP : ref['apiGroup']);
  return group(x) === group(y) && x['kind'] === y['kind'] && x['name'] === y['name'];
}

function validateRoleRefUnchanged(obj: ApiObject, old: ApiObject): StatusCause[] {
  return sameRoleRef(obj['roleRef'], old['roleRef']) ? [] : [invalid('roleRef', obj['roleRef'], 'cannot change roleRef')];
}

function subjectNames(kind: string) {
  return (obj: ApiObject): string =>
    asList(obj['subjects'])
      .map(asRecord)
      .filter((s) => s?.['kind'] === kind)
      .map((s) => (kind === 'ServiceAccount' ? `${asString(s?.['namespace']) ?? ''}/${asString(s?.['name']) ?? ''}` : (asString(s?.['name']) ?? '')))
      .join(', ');
}

function definition(kind: string, plural: string, namespaced: boolean, schema: Schema, extra: Partial<ResourceDefinition>): ResourceDefinition {
  return groupKindDefinition(RBAC_GROUP, 'v1', kind, plural, namespaced, schema, { allowUnconditionalUpdate: true, nameValidation: 'path-segment', ...extra });
}

function bindingColumns(): ResourceDefinition['printerColumns'] {
  return [
    { name: 'Role', type: 'string', jsonPath: '.roleRef.name', description: 'The role granted.', compute: (obj) => `${asString(asRecord(obj['roleRef'])?.['kind']) ?? ''}/${asString(asRecord(obj['roleRef'])?.['name']) ?? ''}` },
    { name: 'Users', type: 'string', jsonPath: '.subjects', priority: 1, description: 'User subjects.', compute: subjectNames('User') },
    { name: 'Groups', type: 'string', jsonPath: '.subjects', priority: 1, description: 'Group subjects.', compute: subjectNames('Group') },
    { name: 'ServiceAccounts', type: 'string', jsonPath: '.subjects', priority: 1, description: 'Service account subjects.', compute: subjectNames('ServiceAccount') },
  ];
}

export function rbacDefinitions(): ResourceDefinition[] {
  return [
    definition('ClusterRole', 'clusterroles', false, CLUSTER_ROLE_SCHEMA, { strategy: { validate: validateClusterRole } }),
    definition('ClusterRoleBinding', 'clusterrolebindings', false, CLUSTER_ROLE_BINDING_SCHEMA, {
      strategy: { validate: (obj) => validateBinding(obj, false), validateUpdate: validateRoleRefUnchanged },
      printerColumns: bindingColumns(),
    }),
    definition('Role', 'roles', true, ROLE_SCHEMA, { strategy: { validate: (obj) => validateRules(obj, true) } }),
    definition('RoleBinding', 'rolebindings', true, ROLE_BINDING_SCHEMA, {
      strategy: { validate: (obj) => validateBinding(obj, true), validateUpdate: validateRoleRefUnchanged },
      printerColumns: bindingColumns(),
    }),
  ];
}

