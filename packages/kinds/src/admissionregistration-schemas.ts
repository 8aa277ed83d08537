import type { Schema } from '@svc/merge';
import { conditionList, LABEL_SELECTOR_SCHEMA, objectSchema } from './object-meta';
import { atomicList, bytes, described, int32, int64, mapList, oneOf, setList, str, struct } from './schema-builders';

/**
 * The schemas of `admissionregistration.svc.io/v1`: webhook configurations
 * (which requests are sent to which webhook, and how it is reached) and
 * ValidatingAdmissionPolicies with their bindings (CEL validations run in the
 * server). List types and merge keys follow the original's markers.
 */

export const OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT', '*'];

const RULE_FIELDS: Record<string, Schema> = {
  operations: atomicList(str(), 'The operations the rule matches: CREATE, UPDATE, DELETE, CONNECT, or `*` for all of them (and any added later). Required.'),
  apiGroups: atomicList(str(), 'The API groups the resources belong to (`""` for the core group, `*` for all). Required.'),
  apiVersions: atomicList(str(), 'The API versions of the resources (`*` for all). Required.'),
  resources: atomicList(
    str(),
    'The resources the rule matches: `pods` for pods, `pods/log` for a subresource, `pods/*` for all subresources of pods, `*` for all resources (not their subresources), `*/scale` for the scale subresource of every resource, `*/*` for everything. Required.',
  ),
  scope: oneOf(['Cluster', 'Namespaced', '*'], 'Whether the rule matches cluster-scoped resources (`Cluster`), namespaced ones (`Namespaced`) or both (`*`, the default). Subresources take the scope of their resource.'),
};

export const RULE_WITH_OPERATIONS_SCHEMA: Schema = struct(RULE_FIELDS, { description: 'A request matches the rule when its operation, group, version, resource (with subresource) and scope all match.' });

export const NAMED_RULE_WITH_OPERATIONS_SCHEMA: Schema = struct(
  { resourceNames: atomicList(str(), 'The names of the objects the rule is limited to; empty for any name.'), ...RULE_FIELDS },
  { description: 'A rule, optionally limited to named objects.', atomic: true },
);

export const SERVICE_REFERENCE_SCHEMA: Schema = struct(
  {
    namespace: str('The namespace of the service. Required.'),
    name: str('The name of the service. Required.'),
    path: str('The URL path the webhook is called at (starting with `/`).'),
    port: int32('The port of the service the webhook is called at: 1 to 65535, 443 by default.'),
  },
  { description: 'A service the webhook runs behind: called at https://<name>.<namespace>.svc:<port><path>.', required: ['namespace', 'name'] },
);

export const WEBHOOK_CLIENT_CONFIG_SCHEMA: Schema = struct(
  {
    url: str(
      'The location of the webhook, as a URL `https://host:port/path`: https only, with no user information, query or fragment. Exactly one of url and service is required.',
    ),
    service: SERVICE_REFERENCE_SCHEMA,
    caBundle: bytes("PEM certificates (base64 in JSON) that verify the webhook's serving certificate; the system's roots when unset."),
  },
  { description: 'How the server reaches the webhook over TLS.' },
);

export const MATCH_CONDITION_SCHEMA: Schema = struct(
  {
    name: str('An identifier of the condition, for logging and error messages: a qualified name (`example.com/name` or `name`), unique within its list. Required.'),
    expression: str(
      'A CEL expression that must evaluate to a bool. It sees `object` (null for DELETE), `oldObject` (null for CREATE), `request` (the admission request\'s attributes) and `authorizer` (authorization checks as the requesting user). Required.',
    ),
  },
  { description: 'A condition a request must meet, beyond the rules, to be sent to the webhook.', required: ['name', 'expression'] },
);

export function matchConditionList(description: string): Schema {
  return mapList(MATCH_CONDITION_SCHEMA, ['name'], { mergeKey: 'name', description });
}

const selector = (description: string): Schema => described(LABEL_SELECTOR_SCHEMA, description);

const WEBHOOK_FIELDS: Record<string, Schema> = {
  name: str('The name of the webhook: a fully qualified name of at least three dot-separated segments (`imagepolicy.example.com`), unique within the configuration. Required.'),
  clientConfig: WEBHOOK_CLIENT_CONFIG_SCHEMA,
  rules: atomicList(RULE_WITH_OPERATIONS_SCHEMA, 'The operations on resources the webhook cares about; a request matching any rule is sent to it. Webhook configurations themselves are never sent.'),
  failurePolicy: oneOf(['Ignore', 'Fail'], 'What happens when the webhook cannot be called or answers with an error: `Fail` (the default) refuses the request, `Ignore` lets it through.'),
  matchPolicy: oneOf(
    ['Exact', 'Equivalent'],
    'How requests through other versions or groups of a matched resource are matched: `Exact` only as the rules name them, `Equivalent` (the default) also through equivalent versions, converted to a version the rules name.',
  ),
  namespaceSelector: selector("Which namespaces' objects are sent, by the namespace's labels (a namespace itself is matched by its own labels); empty matches all."),
  objectSelector: selector('Which objects are sent, by their labels (the new and the old object are both checked); empty matches all.'),
  sideEffects: oneOf(['None', 'NoneOnDryRun'], 'Whether calling the webhook changes anything elsewhere: `None`, or `NoneOnDryRun` (it does, but not when the request is a dry run). Required; dry-run requests are only sent to webhooks with one of these.'),
  timeoutSeconds: int32('How long the server waits for the webhook: 1 to 30 seconds, 10 by default. A timeout follows the failure policy.'),
  admissionReviewVersions: atomicList(str(), 'The AdmissionReview versions the webhook accepts, preferred first; the server sends the first it speaks (v1 or v1beta1). Required.'),
  matchConditions: matchConditionList('CEL conditions a matching request must all meet to be sent (at most 64). An error in one follows the failure policy.'),
};

export const VALIDATING_WEBHOOK_SCHEMA: Schema = struct(WEBHOOK_FIELDS, {
  description: 'A webhook that validates requests: it can refuse them, not change them.',
  required: ['name', 'clientConfig', 'sideEffects', 'admissionReviewVersions'],
});

export const MUTATING_WEBHOOK_SCHEMA: Schema = struct(
  {
    ...WEBHOOK_FIELDS,
    reinvocationPolicy: oneOf(
      ['Never', 'IfNeeded'],
      'Whether the webhook is called again when a later mutating webhook changed the object: `Never` (the default) or `IfNeeded` (at most once more).',
    ),
  },
  { description: 'A webhook that may change requests (with a JSONPatch) as well as refuse them.', required: ['name', 'clientConfig', 'sideEffects', 'admissionReviewVersions'] },
);

function webhooksList(items: Schema, description: string): Schema {
  return mapList(items, ['name'], { mergeKey: 'name', description });
}

export const VALIDATING_WEBHOOK_CONFIGURATION_SCHEMA: Schema = objectSchema('ValidatingWebhookConfiguration describes webhooks that accept or refuse requests without changing them.', {
  webhooks: webhooksList(VALIDATING_WEBHOOK_SCHEMA, 'The webhooks and what they are sent.'),
});

export const MUTATING_WEBHOOK_CONFIGURATION_SCHEMA: Schema = objectSchema('MutatingWebhookConfiguration describes webhooks that may change requests as well as refuse them.', {
  webhooks: webhooksList(MUTATING_WEBHOOK_SCHEMA, 'The webhooks and what they are sent.'),
});

export const MATCH_RESOURCES_SCHEMA: Schema = struct(
  {
    namespaceSelector: selector("Which namespaces' objects match, by the namespace's labels; empty matches all."),
    objectSelector: selector('Which objects match, by their labels; empty matches all.'),
    resourceRules: atomicList(NAMED_RULE_WITH_OPERATIONS_SCHEMA, 'The operations on resources that match; a request matching any rule matches.'),
    excludeResourceRules: atomicList(NAMED_RULE_WITH_OPERATIONS_SCHEMA, 'The operations on resources that never match (exclusion wins over inclusion).'),
    matchPolicy: oneOf(['Exact', 'Equivalent'], 'How requests through other versions or groups of a matched resource are matched: `Exact`, or `Equivalent` (the default).'),
  },
  { description: 'Which requests match: all of the selectors and rules must.', atomic: true },
);

const PARAM_KIND_SCHEMA: Schema = struct(
  {
    apiVersion: str('The API group and version of the parameter resource (`rules.example.com/v1`, or `v1` for the core group).'),
    kind: str('The kind of the parameter resource (`ConfigMap`).'),
  },
  { description: 'The kind of the parameter objects bindings refer to; the expressions then see one as `params`.', atomic: true },
);

const VALIDATION_SCHEMA: Schema = struct(
  {
    expression: str(
      'A CEL expression that must evaluate to true for the request to pass. It sees `object`, `oldObject`, `request`, `params` (when the policy has a paramKind), `namespaceObject`, `variables` and `authorizer`. Required.',
    ),
    message: str('The message returned when the validation fails (no line breaks); defaults to one naming the expression.'),
    reason: oneOf(['Unauthorized', 'Forbidden', 'Invalid', 'RequestEntityTooLarge'], 'The reason, and HTTP code, of the refusal when the validation is the first to fail: Invalid (422) by default.'),
    messageExpression: str('A CEL expression producing the message when the validation fails (a string); it wins over message when it evaluates to a non-empty string without line breaks. It sees what `expression` sees but `authorizer`.'),
  },
  { description: 'One CEL validation of the policy.', required: ['expression'] },
);

const VARIABLE_SCHEMA: Schema = struct(
  {
    name: str('The name of the variable, read as `variables.<name>`: a CEL identifier, unique within the policy. Required.'),
    expression: str('A CEL expression computing the value; it may read the variables before it. Evaluated at most once per request, when first read. Required.'),
  },
  { description: 'A named CEL expression the other expressions of the policy can read.', required: ['name', 'expression'], atomic: true },
);

const AUDIT_ANNOTATION_SCHEMA: Schema = struct(
  {
    key: str('The annotation key, appended to the policy\'s name (`<policy>/<key>`): a qualified name part of at most 63 characters, unique within the policy. Required.'),
    valueExpression: str('A CEL expression producing the annotation value (a string of at most 10 KiB), or null for none. Required.'),
  },
  { description: 'An annotation the policy adds to the audit event of a request it evaluates.', required: ['key', 'valueExpression'] },
);

export const VALIDATING_ADMISSION_POLICY_SPEC_SCHEMA: Schema = struct(
  {
    paramKind: PARAM_KIND_SCHEMA,
    matchConstraints: described(MATCH_RESOURCES_SCHEMA, 'The requests the policy applies to (bindings may narrow them); resourceRules are required.'),
    validations: atomicList(VALIDATION_SCHEMA, 'The CEL validations; a request passes when all evaluate to true.'),
    failurePolicy: oneOf(['Ignore', 'Fail'], 'What happens when an expression errors, its parameters are missing or the policy is misconfigured: `Fail` (the default) refuses, `Ignore` lets the request through.'),
    auditAnnotations: atomicList(AUDIT_ANNOTATION_SCHEMA, 'Annotations added to the audit event of the requests the policy evaluates (at most 20).'),
    matchConditions: matchConditionList('CEL conditions a matching request must all meet for the policy to run (at most 64); they see what validations see.'),
    variables: mapList(VARIABLE_SCHEMA, ['name'], { mergeKey: 'name', description: 'Named CEL expressions the other expressions (but match conditions) read as `variables.<name>`.' }),
  },
  { description: 'What the policy checks, and on which requests.' },
);

const EXPRESSION_WARNING_SCHEMA: Schema = struct(
  {
    fieldRef: str('The path of the field whose expression the warning is about (`spec.validations[0].expression`).'),
    warning: str('What type checking found.'),
  },
  { description: 'A type-checking warning about one expression.', required: ['fieldRef', 'warning'] },
);

export const VALIDATING_ADMISSION_POLICY_STATUS_SCHEMA: Schema = struct(
  {
    observedGeneration: int64('The generation of the policy the status was computed from.'),
    typeChecking: struct(
      { expressionWarnings: atomicList(EXPRESSION_WARNING_SCHEMA, 'The expressions that do not type-check against the matched kinds.') },
      { description: 'The results of type checking the expressions against the kinds the policy matches.' },
    ),
    conditions: conditionList('Observations of the policy.'),
  },
  { description: 'What the server found about the policy.' },
);

export const VALIDATING_ADMISSION_POLICY_SCHEMA: Schema = objectSchema('ValidatingAdmissionPolicy describes CEL validations of requests, applied through ValidatingAdmissionPolicyBindings.', {
  spec: VALIDATING_ADMISSION_POLICY_SPEC_SCHEMA,
  status: VALIDATING_ADMISSION_POLICY_STATUS_SCHEMA,
});

const PARAM_REF_SCHEMA: Schema = struct(
  {
    name: str('The name of the parameter object; exclusive with selector.'),
    namespace: str('The namespace of the parameter objects (for a namespaced paramKind); empty: the namespace of the request, or none for a cluster-scoped paramKind.'),
    selector: selector('Selects the parameter objects by label (the policy runs once with each); exclusive with name. Empty matches all.'),
    parameterNotFoundAction: oneOf(['Allow', 'Deny'], 'What happens when no parameter object is found: `Allow` lets the request through, `Deny` (the default) applies the failure policy.'),
  },
  { description: 'The parameter objects the policy is run with.', atomic: true },
);

export const VALIDATING_ADMISSION_POLICY_BINDING_SCHEMA: Schema = objectSchema('ValidatingAdmissionPolicyBinding applies a ValidatingAdmissionPolicy to requests, with parameters and enforcement actions.', {
  spec: struct(
    {
      policyName: str('The name of the ValidatingAdmissionPolicy bound. Required.'),
      paramRef: PARAM_REF_SCHEMA,
      matchResources: described(MATCH_RESOURCES_SCHEMA, "Narrows the requests the policy applies to (both the policy's constraints and these must match); empty: the policy's."),
      validationActions: setList(
        str(),
        'What a failed validation does: `Deny` refuses the request, `Warn` returns a warning, `Audit` records it in the audit event. At least one; Deny and Warn not together. Required.',
      ),
    },
    { description: 'Which policy is bound, with what.' },
  ),
});
