import type { ResourceDefinition } from '@svc/apimachinery';
import { reviewDefinition } from './review';
import type { Schema } from '@svc/merge';
import { objectSchema } from './object-meta';
import { atomicList, bool, mapOf, str, struct } from './schema-builders';

/**
 * The access reviews of `authorization.svc.io/v1` (SPEC section 2): the
 * server answers whether a subject (any user, one in a namespace, or the
 * requester) may do something, and never stores the review.
 */
export const AUTHORIZATION_GROUP = 'authorization.svc.io';

const RESOURCE_ATTRIBUTES = struct(
  {
    namespace: str('Namespace of the action; empty for cluster-scoped resources or all namespaces.'),
    verb: str('Verb: get, list, watch, create, update, patch, delete, deletecollection, or a special verb.'),
    group: str('API group of the resource.'),
    version: str('API version of the resource.'),
    resource: str('Resource (plural name).'),
    subresource: str('Subresource.'),
    name: str('Name of the object; empty for any.'),
  },
  { description: 'A resource request.' },
);

const NON_RESOURCE_ATTRIBUTES = struct({ path: str('URL path.'), verb: str('Lower-case HTTP method.') }, { description: 'A non-resource request.' });

const STATUS = struct(
  {
    allowed: bool('Whether the action is allowed.'),
    denied: bool('Whether the action is denied outright (no later authorizer can allow it).'),
    reason: str('Why.'),
    evaluationError: str('An error met while deciding.'),
  },
  { description: 'Filled in by the server: the decision.' },
);

function subjectSpec(description: string): Schema {
  return struct(
    {
      resourceAttributes: RESOURCE_ATTRIBUTES,
      nonResourceAttributes: NON_RESOURCE_ATTRIBUTES,
      user: str('The user asked about.'),
      groups: atomicList(str(), 'Its groups.'),
      uid: str('Its uid.'),
      extra: mapOf(atomicList(str()), 'Its extra attributes.'),
    },
    { description },
  );
}

export const SUBJECT_ACCESS_REVIEW_SCHEMA = objectSchema('SubjectAccessReview checks whether a user or group can perform an action.', {
  spec: subjectSpec('The action and the subject.'),
  status: STATUS,
});

export const LOCAL_SUBJECT_ACCESS_REVIEW_SCHEMA = objectSchema('LocalSubjectAccessReview checks whether a user or group can perform an action in a namespace.', {
  spec: subjectSpec('The action (in the review’s namespace) and the subject.'),
  status: STATUS,
});

export const SELF_SUBJECT_ACCESS_REVIEW_SCHEMA = objectSchema('SelfSubjectAccessReview checks whether the requester can perform an action.', {
  spec: struct({ resourceAttributes: RESOURCE_ATTRIBUTES, nonResourceAttributes: NON_RESOURCE_ATTRIBUTES }, { description: 'The action.' }),
  status: STATUS,
});

export const SELF_SUBJECT_RULES_REVIEW_SCHEMA = objectSchema('SelfSubjectRulesReview lists the actions the requester may perform in a namespace.', {
  spec: struct({ namespace: str('The namespace to list the rules of.') }, { description: 'The namespace.' }),
  status: struct(
    {
      resourceRules: atomicList(
        struct({ verbs: atomicList(str()), apiGroups: atomicList(str()), resources: atomicList(str()), resourceNames: atomicList(str()) }, { description: 'Allowed actions on resources.' }),
        'Allowed actions on resources.',
      ),
      nonResourceRules: atomicList(struct({ verbs: atomicList(str()), nonResourceURLs: atomicList(str()) }, { description: 'Allowed actions on paths.' }), 'Allowed actions on non-resource paths.'),
      incomplete: bool('True when some authorizer could not list its rules.'),
      evaluationError: str('An error met while listing.'),
    },
    { description: 'Filled in by the server.' },
  ),
});

export function authorizationDefinitions(): ResourceDefinition[] {
  return [
    reviewDefinition(AUTHORIZATION_GROUP, 'v1', 'SubjectAccessReview', 'subjectaccessreviews', false, SUBJECT_ACCESS_REVIEW_SCHEMA),
    reviewDefinition(AUTHORIZATION_GROUP, 'v1', 'LocalSubjectAccessReview', 'localsubjectaccessreviews', true, LOCAL_SUBJECT_ACCESS_REVIEW_SCHEMA),
    reviewDefinition(AUTHORIZATION_GROUP, 'v1', 'SelfSubjectAccessReview', 'selfsubjectaccessreviews', false, SELF_SUBJECT_ACCESS_REVIEW_SCHEMA),
    reviewDefinition(AUTHORIZATION_GROUP, 'v1', 'SelfSubjectRulesReview', 'selfsubjectrulesreviews', false, SELF_SUBJECT_RULES_REVIEW_SCHEMA),
  ];
}
