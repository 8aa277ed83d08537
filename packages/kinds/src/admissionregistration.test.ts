import type { ApiObject, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { admissionRegistrationDefinitions } from './admissionregistration';

const CA_PEM = `-----BEGIN CERTIFICATE-----
MIIBjDCCATGgAwIBAgIULUic/QHyxHIvO3x7P9qU8C0e8nMwCgYIKoZIzj0EAwIw
GjEYMBYGA1UEAwwPd2ViaG9vay10ZXN0LWNhMCAXDTI2MTEyNzA0NTQxMloYDzIx
MjYxMTAzMDQ1NDEyWjAaMRgwFgYDVQQDDA93ZWJob29rLXRlc3QtY2EwWTATBgcq
hkjOPQIBBggqhkjOPQMBBwNCAASQ+oKjZrxfzf8WWkNUk7+a5HrDmUy5Rn+nW9M+
lmrit0hdCorfKyIf9ofz6eg5WeCEN7oo8xQ2rQ7+nr6dN+DQo1MwUTAdBgNVHQ4E
FgQUZ+ptD0BkweBwOspZDhYsbhdfF7wwHwYDVR0jBBgwFoAUZ+ptD0BkweBwOspZ
DhYsbhdfF7wwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNJADBGAiEAhLRV
u5R89ez2bllhd7zd6/I6ry2AGJkBKjpytYEhqHACIQCvJQ/+4zNuopossHi3ql2z
OQR6PMeCmhUf7L7NCotXug==
-----END CERTIFICATE-----
`;
const CA_BUNDLE = Buffer.from(CA_PEM).toString('base64');

const defs = new Map(admissionRegistrationDefinitions().map((d) => [d.kind, d]));

function def(kind: string): ResourceDefinition {
  const d = defs.get(kind);
  if (!d) throw new Error(`no ${kind}`);
  return d;
}

/** Defaults then validation, as the store runs them. */
function admit(kind: string, obj: ApiObject): StatusCause[] {
  const d = def(kind);
  d.strategy.applyDefaults?.(obj);
  return d.strategy.validate?.(obj) ?? [];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Fixture = any;

function webhook(extra: Fixture = {}): Fixture {
  return {
    name: 'deny.policies.example.com',
    clientConfig: { url: 'https://127.0.0.1:9443/validate', caBundle: CA_BUNDLE },
    rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    ...extra,
  };
}

function configuration(kind: 'ValidatingWebhookConfiguration' | 'MutatingWebhookConfiguration', webhooks: Fixture[]): Fixture {
  return { apiVersion: 'admissionregistration.svc.io/v1', kind, metadata: { name: 'hooks' }, webhooks };
}

function policy(spec: Fixture = {}): Fixture {
  return {
    apiVersion: 'admissionregistration.svc.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'replicas.example.com' },
    spec: {
      matchConstraints: { resourceRules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] },
      validations: [{ expression: 'object.data.size() < 10' }],
      ...spec,
    },
  };
}

function binding(spec: Fixture = {}): Fixture {
  return {
    apiVersion: 'admissionregistration.svc.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name: 'replicas-binding' },
    spec: { policyName: 'replicas.example.com', validationActions: ['Deny'], ...spec },
  };
}

function fields(causes: StatusCause[]): string[] {
  return causes.map((c) => c.field ?? '');
}

describe('the admissionregistration kinds', () => {
  test('four cluster-scoped kinds in the api-extensions category, with the original\'s columns', () => {
    for (const d of defs.values()) {
      expect(d.group).toBe('admissionregistration.svc.io');
      expect(d.namespaced).toBe(false);
      expect(d.categories).toEqual(['api-extensions']);
    }
    expect(def('ValidatingAdmissionPolicy').subresources.map((s) => s.name)).toEqual(['status']);
    const hooks = configuration('ValidatingWebhookConfiguration', [webhook(), webhook({ name: 'second.policies.example.com' })]);
    const columns = def('ValidatingWebhookConfiguration').printerColumns;
    expect(columns.map((c) => c.name)).toEqual(['Webhooks']);
    expect(columns[0]?.compute?.(hooks)).toBe(2);
    const p = def('ValidatingAdmissionPolicy').printerColumns;
    expect(p.map((c) => [c.name, c.compute?.(policy())])).toEqual([
      ['Validations', 1],
      ['ParamKind', '<unset>'],
    ]);
    expect(p[1]?.compute?.(policy({ paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } }))).toBe('v1/ConfigMap');
    const b = def('ValidatingAdmissionPolicyBinding').printerColumns;
    expect(b.map((c) => c.name)).toEqual(['PolicyName', 'ParamRef']);
    const paramRef = b[1]?.compute;
    expect(paramRef?.(binding())).toBe('<unset>');
    expect(paramRef?.(binding({ paramRef: { name: 'limits', namespace: 'team-a' } }))).toBe('team-a/limits');
    expect(paramRef?.(binding({ paramRef: { name: 'limits' } }))).toBe('*/limits');
    expect(paramRef?.(binding({ paramRef: { selector: { matchLabels: { b: '2', a: '1' }, matchExpressions: [{ key: 'c', operator: 'NotIn', values: ['y', 'x'] }] } } }))).toBe('a=1,b=2,c notin (x,y)');
  });

  test('webhook configurations take the v1 defaults', () => {
    const mutating = configuration('MutatingWebhookConfiguration', [webhook({ clientConfig: { service: { name: 'hooks', namespace: 'system' } } })]);
    expect(admit('MutatingWebhookConfiguration', mutating)).toEqual([]);
    expect(mutating.webhooks[0]).toMatchObject({
      failurePolicy: 'Fail',
      matchPolicy: 'Equivalent',
      namespaceSelector: {},
      objectSelector: {},
      timeoutSeconds: 10,
      reinvocationPolicy: 'Never',
      clientConfig: { service: { name: 'hooks', namespace: 'system', port: 443 } },
      rules: [{ scope: '*' }],
    });
    const validating = configuration('ValidatingWebhookConfiguration', [webhook({ failurePolicy: 'Ignore', timeoutSeconds: 3 })]);
    expect(admit('ValidatingWebhookConfiguration', validating)).toEqual([]);
    expect(validating.webhooks[0]).toMatchObject({ failurePolicy: 'Ignore', timeoutSeconds: 3 });
    expect(validating.webhooks[0]).not.toHaveProperty('reinvocationPolicy');
  });

  test.each<[string, Fixture, string, RegExp]>([
    ['a name with fewer than three segments', { name: 'deny.example' }, 'webhooks[0].name', /at least three segments/],
    ['a name that is no DNS subdomain', { name: 'Deny_me.example.com' }, 'webhooks[0].name', /RFC 1123 subdomain/],
    ['no client config target', { clientConfig: {} }, 'webhooks[0].clientConfig', /exactly one of url or service/],
    ['both url and service', { clientConfig: { url: 'https://h.example.com/', service: { name: 's', namespace: 'n' } } }, 'webhooks[0].clientConfig', /exactly one of url or service/],
    ['an http url', { clientConfig: { url: 'http://h.example.com/validate' } }, 'webhooks[0].clientConfig.url', /'https' is the only allowed URL scheme/],
    ['a url with a user', { clientConfig: { url: 'https://user@h.example.com/validate' } }, 'webhooks[0].clientConfig.url', /user information/],
    ['a url with a query', { clientConfig: { url: 'https://h.example.com/validate?x=1' } }, 'webhooks[0].clientConfig.url', /query parameters/],
    ['a url with a fragment', { clientConfig: { url: 'https://h.example.com/validate#f' } }, 'webhooks[0].clientConfig.url', /fragments/],
    ['a url without a host', { clientConfig: { url: 'https:///validate' } }, 'webhooks[0].clientConfig.url', /host must be specified/],
    ['a relative url', { clientConfig: { url: '/validate' } }, 'webhooks[0].clientConfig.url', /host must be specified/],
    ['a service path without a slash', { clientConfig: { service: { name: 's', namespace: 'n', path: 'validate' } } }, 'webhooks[0].clientConfig.service.path', /must start with a '\/'/],
    ['a service path with an empty segment', { clientConfig: { service: { name: 's', namespace: 'n', path: '/a//b' } } }, 'webhooks[0].clientConfig.service.path', /segment\[1\] may not be empty/],
    ['a service port out of range', { clientConfig: { service: { name: 's', namespace: 'n', port: 0 } } }, 'webhooks[0].clientConfig.service.port', /between 1 and 65535/],
    ['a service without a namespace', { clientConfig: { service: { name: 's' } } }, 'webhooks[0].clientConfig.service.namespace', /Required/],
    ['a caBundle that is not PEM', { clientConfig: { url: 'https://h.example.com/', caBundle: Buffer.from('not a certificate').toString('base64') } }, 'webhooks[0].clientConfig.caBundle', /PEM/],
    ['a timeout above 30', { timeoutSeconds: 31 }, 'webhooks[0].timeoutSeconds', /between 1 and 30 seconds/],
    ['a timeout of 0', { timeoutSeconds: 0 }, 'webhooks[0].timeoutSeconds', /between 1 and 30 seconds/],
    ['no sideEffects', { sideEffects: undefined }, 'webhooks[0].sideEffects', /Required value: must specify one of None, NoneOnDryRun/],
    ['sideEffects Some (not in v1)', { sideEffects: 'Some' }, 'webhooks[0].sideEffects', /Unsupported value: "Some"/],
    ['no admissionReviewVersions', { admissionReviewVersions: [] }, 'webhooks[0].admissionReviewVersions', /must specify one of v1, v1beta1/],
    ['only unknown admissionReviewVersions', { admissionReviewVersions: ['v2'] }, 'webhooks[0].admissionReviewVersions', /must include at least one of v1, v1beta1/],
    ['an unknown failurePolicy', { failurePolicy: 'Maybe' }, 'webhooks[0].failurePolicy', /Unsupported value/],
    ['an unknown matchPolicy', { matchPolicy: 'Close' }, 'webhooks[0].matchPolicy', /Unsupported value/],
    ['an unknown operation', { rules: [{ operations: ['PATCH'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] }, 'webhooks[0].rules[0].operations[0]', /Unsupported value: "PATCH"/],
    ['a wildcard operation among others', { rules: [{ operations: ['*', 'CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] }, 'webhooks[0].rules[0].operations', /if '\*' is present/],
    ['no apiGroups', { rules: [{ operations: ['*'], apiVersions: ['v1'], resources: ['pods'] }] }, 'webhooks[0].rules[0].apiGroups', /Required/],
    ['no apiVersions', { rules: [{ operations: ['*'], apiGroups: [''], resources: ['pods'] }] }, 'webhooks[0].rules[0].apiVersions', /Required/],
    ['no resources', { rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: [] }] }, 'webhooks[0].rules[0].resources', /Required/],
    ['*/* with another resource', { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*', 'pods'] }] }, 'webhooks[0].rules[0].resources', /if '\*\/\*' is present/],
    ['* with a plain resource', { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*', 'pods'] }] }, 'webhooks[0].rules[0].resources', /without subresources/],
    ['res/* with res/sub', { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['pods/*', 'pods/status'] }] }, 'webhooks[0].rules[0].resources[1]', /if 'pods\/\*' is present/],
    ['*/sub with res/sub', { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/status', 'pods/status'] }] }, 'webhooks[0].rules[0].resources[1]', /if '\*\/status' is present/],
    ['an unknown scope', { rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Global' }] }, 'webhooks[0].rules[0].scope', /Unsupported value: "Global"/],
    ['an invalid selector operator', { namespaceSelector: { matchExpressions: [{ key: 'env', operator: 'Near', values: ['x'] }] } }, 'webhooks[0].namespaceSelector.matchExpressions[0].operator', /Unsupported value/],
    ['In without values', { objectSelector: { matchExpressions: [{ key: 'env', operator: 'In' }] } }, 'webhooks[0].objectSelector.matchExpressions[0].values', /must be specified/],
    ['Exists with values', { objectSelector: { matchExpressions: [{ key: 'env', operator: 'Exists', values: ['x'] }] } }, 'webhooks[0].objectSelector.matchExpressions[0].values', /may not be specified/],
    ['an invalid label key', { objectSelector: { matchLabels: { 'bad key': 'x' } } }, 'webhooks[0].objectSelector.matchLabels', /name part/],
    ['a match condition that does not compile', { matchConditions: [{ name: 'c', expression: 'object.metadata.name ==' }] }, 'webhooks[0].matchConditions[0].expression', /compilation failed/],
    ['a match condition that is not bool', { matchConditions: [{ name: 'c', expression: 'request.name' }] }, 'webhooks[0].matchConditions[0].expression', /must evaluate to bool/],
    ['params in a webhook match condition', { matchConditions: [{ name: 'c', expression: 'params.x == 1' }] }, 'webhooks[0].matchConditions[0].expression', /undeclared reference to 'params'/],
    ['a match condition without a name', { matchConditions: [{ expression: 'true' }] }, 'webhooks[0].matchConditions[0].name', /Required/],
    ['duplicate match condition names', { matchConditions: [{ name: 'c', expression: 'true' }, { name: 'c', expression: 'false' }] }, 'webhooks[0].matchConditions[1].name', /Duplicate value/],
    ['a match condition name that is not qualified', { matchConditions: [{ name: 'no spaces', expression: 'true' }] }, 'webhooks[0].matchConditions[0].name', /name part must consist/],
    [
      'three authorization checks in a match condition',
      { matchConditions: [{ name: 'c', expression: 'authorizer.path("/a").check("get").allowed() && authorizer.path("/b").check("get").allowed() && authorizer.path("/c").check("get").allowed()' }] },
      'webhooks[0].matchConditions[0].expression',
      /exceeds the per-call cost limit/,
    ],
  ])('a webhook with %s is refused naming the field', (_what, change, field, message) => {
    const hook = webhook(change);
    for (const key of Object.keys(change)) if (change[key] === undefined) delete hook[key];
    for (const kind of ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration'] as const) {
      const causes = admit(kind, configuration(kind, [hook]));
      const cause = causes.find((c) => c.field === field);
      expect({ field: cause?.field, causes }).toMatchObject({ field });
      expect(cause?.message).toMatch(message);
    }
  });

  test('more than 64 match conditions, duplicate webhook names and an unknown reinvocationPolicy are refused', () => {
    const many = Array.from({ length: 65 }, (_, i) => ({ name: `c${i}`, expression: 'true' }));
    expect(fields(admit('ValidatingWebhookConfiguration', configuration('ValidatingWebhookConfiguration', [webhook({ matchConditions: many })])))).toContain('webhooks[0].matchConditions');
    const dup = admit('ValidatingWebhookConfiguration', configuration('ValidatingWebhookConfiguration', [webhook(), webhook()]));
    expect(dup).toEqual([expect.objectContaining({ field: 'webhooks[1].name', reason: 'FieldValueDuplicate' })]);
    const reinvoke = admit('MutatingWebhookConfiguration', configuration('MutatingWebhookConfiguration', [webhook({ reinvocationPolicy: 'Always' })]));
    expect(fields(reinvoke)).toEqual(['webhooks[0].reinvocationPolicy']);
  });

  test('a realistic webhook with match conditions, selectors and authorizer checks is accepted', () => {
    const hook = webhook({
      rules: [
        { operations: ['*'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments', 'deployments/scale'], scope: 'Namespaced' },
        { operations: ['CONNECT'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/exec', '*/status'] },
      ],
      namespaceSelector: { matchExpressions: [{ key: 'svc.io/metadata.name', operator: 'NotIn', values: ['kube-system'] }] },
      objectSelector: { matchLabels: { 'app.example.com/managed': 'true' } },
      matchConditions: [
        { name: 'exclude-leases', expression: '!(request.resource.group == "coordination.svc.io" && request.resource.resource == "leases")' },
        { name: 'not-privileged', expression: '!authorizer.group("").resource("pods").namespace(request.namespace).check("escalate").allowed()' },
      ],
      admissionReviewVersions: ['v1beta1', 'v1'],
      sideEffects: 'NoneOnDryRun',
    });
    expect(admit('MutatingWebhookConfiguration', configuration('MutatingWebhookConfiguration', [hook]))).toEqual([]);
  });

  test('generation starts at 1 and grows when the webhooks change', () => {
    const d = def('ValidatingWebhookConfiguration');
    const created = configuration('ValidatingWebhookConfiguration', [webhook()]);
    d.strategy.prepareForCreate?.(created);
    expect(created.metadata.generation).toBe(1);
    const same = { ...created, metadata: { ...created.metadata, labels: { a: 'b' } } };
    d.strategy.prepareForUpdate?.(same, created);
    expect(same.metadata.generation).toBe(1);
    const changed = { ...created, webhooks: [webhook({ timeoutSeconds: 5 })] };
    d.strategy.prepareForUpdate?.(changed, created);
    expect(changed.metadata.generation).toBe(2);
  });
});

describe('ValidatingAdmissionPolicy', () => {
  test('defaults: failurePolicy Fail, matchConstraints Equivalent with empty selectors and rules of any scope', () => {
    const p = policy();
    expect(admit('ValidatingAdmissionPolicy', p)).toEqual([]);
    expect(p.spec).toMatchObject({ failurePolicy: 'Fail', matchConstraints: { matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {}, resourceRules: [{ scope: '*' }] } });
  });

  test('a policy with params, variables, match conditions, messages and audit annotations is accepted', () => {
    const p = policy({
      paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
      matchConditions: [{ name: 'not-system', expression: 'request.namespace != "kube-system" && params != null' }],
      variables: [
        { name: 'count', expression: 'object.data.size()' },
        { name: 'limit', expression: 'int(params.data.max)' },
        { name: 'over', expression: 'variables.count > variables.limit' },
      ],
      validations: [
        { expression: '!variables.over', messageExpression: '"too many keys: " + string(variables.count)', reason: 'Invalid' },
        { expression: 'namespaceObject == null || !has(namespaceObject.metadata.labels) || true', message: 'namespace check' },
        { expression: 'authorizer.requestResource.check("update").allowed()' },
      ],
      auditAnnotations: [{ key: 'keys', valueExpression: 'string(variables.count)' }],
    });
    expect(admit('ValidatingAdmissionPolicy', p)).toEqual([]);
  });

  test.each<[string, Fixture, string, RegExp]>([
    ['no matchConstraints', { matchConstraints: undefined }, 'spec.matchConstraints', /Required/],
    ['matchConstraints without resourceRules', { matchConstraints: { namespaceSelector: {} } }, 'spec.matchConstraints.resourceRules', /Required/],
    ['an unknown failurePolicy', { failurePolicy: 'Sometimes' }, 'spec.failurePolicy', /Unsupported value/],
    ['a paramKind without apiVersion', { paramKind: { kind: 'ConfigMap' } }, 'spec.paramKind.apiVersion', /Required/],
    ['a paramKind without kind', { paramKind: { apiVersion: 'v1' } }, 'spec.paramKind.kind', /Required/],
    ['a paramKind with a bad apiVersion', { paramKind: { apiVersion: 'a/b/c', kind: 'X' } }, 'spec.paramKind.apiVersion', /unexpected GroupVersion/],
    ['params without a paramKind', { validations: [{ expression: 'params.x == 1' }] }, 'spec.validations[0].expression', /undeclared reference to 'params'/],
    ['a validation that does not compile', { validations: [{ expression: 'object.(' }] }, 'spec.validations[0].expression', /compilation failed/],
    ['a validation that is not bool', { validations: [{ expression: 'request.name + "x"' }] }, 'spec.validations[0].expression', /must evaluate to bool/],
    ['an empty validation', { validations: [{ expression: '  ' }] }, 'spec.validations[0].expression', /expression is not specified/],
    ['a message with a line break', { validations: [{ expression: 'true', message: 'two\nlines' }] }, 'spec.validations[0].message', /must not contain line breaks/],
    ['a messageExpression that is not a string', { validations: [{ expression: 'true', messageExpression: '1 + 1' }] }, 'spec.validations[0].messageExpression', /must evaluate to string/],
    ['a messageExpression using the authorizer', { validations: [{ expression: 'true', messageExpression: 'authorizer.path("/").check("get").reason()' }] }, 'spec.validations[0].messageExpression', /undeclared reference to 'authorizer'/],
    ['an unknown reason', { validations: [{ expression: 'true', reason: 'Teapot' }] }, 'spec.validations[0].reason', /Unsupported value: "Teapot"/],
    ['no validations and no audit annotations', { validations: [] }, 'spec.validations', /validations or auditAnnotations must contain at least one item/],
    ['a variable name that is no identifier', { variables: [{ name: 'my-var', expression: '1' }] }, 'spec.variables[0].name', /not a valid CEL identifier/],
    ['a reserved variable name', { variables: [{ name: 'namespace', expression: '1' }] }, 'spec.variables[0].name', /not a valid CEL identifier/],
    ['duplicate variable names', { variables: [{ name: 'a', expression: '1' }, { name: 'a', expression: '2' }] }, 'spec.variables[1].name', /Duplicate value/],
    ['a variable reading a later one', { variables: [{ name: 'a', expression: 'variables.b' }, { name: 'b', expression: '1' }] }, 'spec.variables[0].expression', /undefined field 'b'/],
    ['a variable that does not compile', { variables: [{ name: 'a', expression: 'object.' }] }, 'spec.variables[0].expression', /compilation failed/],
    ['a validation reading an undeclared variable', { variables: [{ name: 'a', expression: '1' }], validations: [{ expression: 'variables.b == 1' }] }, 'spec.validations[0].expression', /undefined field 'b'/],
    ['an audit annotation key that is not qualified', { auditAnnotations: [{ key: 'bad key', valueExpression: '"x"' }] }, 'spec.auditAnnotations[0].key', /name part/],
    ['duplicate audit annotation keys', { auditAnnotations: [{ key: 'k', valueExpression: '"x"' }, { key: 'k', valueExpression: '"y"' }] }, 'spec.auditAnnotations[1].key', /Duplicate value/],
    ['an audit annotation value that is not a string', { auditAnnotations: [{ key: 'k', valueExpression: '1 == 1' }] }, 'spec.auditAnnotations[0].valueExpression', /must evaluate to one of \[string null_type\]/],
    ['an audit annotation value that does not compile', { auditAnnotations: [{ key: 'k', valueExpression: '"x" +' }] }, 'spec.auditAnnotations[0].valueExpression', /compilation failed/],
    ['more than 20 audit annotations', { auditAnnotations: Array.from({ length: 21 }, (_, i) => ({ key: `k${i}`, valueExpression: '"x"' })) }, 'spec.auditAnnotations', /must not have more than 20/],
    ['an invalid exclude rule', { matchConstraints: { resourceRules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }], excludeResourceRules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], resourceNames: ['a', 'a'] }] } }, 'spec.matchConstraints.excludeResourceRules[0].resourceNames[1]', /Duplicate value/],
    ['a match condition that is not bool', { matchConditions: [{ name: 'c', expression: '1' }] }, 'spec.matchConditions[0].expression', /must evaluate to bool/],
    [
      'a validation making three authorization checks',
      { validations: [{ expression: 'authorizer.path("/a").check("get").allowed() && authorizer.path("/b").check("get").allowed() && authorizer.path("/c").check("get").allowed()' }] },
      'spec.validations[0].expression',
      /exceeds the per-call cost limit/,
    ],
  ])('a policy with %s is refused naming the field', (_what, change, field, message) => {
    const p = policy(change);
    for (const key of Object.keys(change)) if (change[key] === undefined) delete p.spec[key];
    const causes = admit('ValidatingAdmissionPolicy', p);
    const cause = causes.find((c) => c.field === field);
    expect({ field: cause?.field, causes }).toMatchObject({ field });
    expect(cause?.message).toMatch(message);
  });

  test('status is kept apart from the spec: reset on create, kept on update, generation follows the spec', () => {
    const d = def('ValidatingAdmissionPolicy');
    const p = policy();
    p.status = { observedGeneration: 7 };
    d.strategy.prepareForCreate?.(p);
    expect(p.status).toBeUndefined();
    expect(p.metadata.generation).toBe(1);
    const stored = { ...p, status: { observedGeneration: 1, typeChecking: { expressionWarnings: [{ fieldRef: 'spec.validations[0].expression', warning: 'no such key' }] } } };
    const update = { ...policy({ validations: [{ expression: 'true' }] }), status: {} };
    d.strategy.prepareForUpdate?.(update, stored);
    expect(update.status).toEqual(stored.status);
    expect(update.metadata.generation).toBe(2);
    expect(admit('ValidatingAdmissionPolicy', stored)).toEqual([]);
    const bad = { ...stored, status: { typeChecking: { expressionWarnings: [{ fieldRef: '', warning: '' }] } } };
    expect(fields(admit('ValidatingAdmissionPolicy', bad))).toEqual(['status.typeChecking.expressionWarnings[0].warning', 'status.typeChecking.expressionWarnings[0].fieldRef']);
  });
});

describe('ValidatingAdmissionPolicyBinding', () => {
  test('defaults: parameterNotFoundAction Deny when paramRef is set; matchResources defaults', () => {
    const b = binding({ paramRef: { name: 'limits', namespace: 'team-a' }, matchResources: { resourceRules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] } });
    expect(admit('ValidatingAdmissionPolicyBinding', b)).toEqual([]);
    expect(b.spec.paramRef.parameterNotFoundAction).toBe('Deny');
    expect(b.spec.matchResources).toMatchObject({ matchPolicy: 'Equivalent', namespaceSelector: {}, objectSelector: {}, resourceRules: [{ scope: '*' }] });
    const plain = binding({ validationActions: ['Warn', 'Audit'] });
    expect(admit('ValidatingAdmissionPolicyBinding', plain)).toEqual([]);
    expect(plain.spec).not.toHaveProperty('paramRef');
  });

  test.each<[string, Fixture, string, RegExp]>([
    ['no policyName', { policyName: '' }, 'spec.policyName', /Required/],
    ['a policyName that is no DNS subdomain', { policyName: 'Bad_Name' }, 'spec.policyName', /RFC 1123 subdomain/],
    ['a paramRef with name and selector', { paramRef: { name: 'a', selector: {} } }, 'spec.paramRef.name', /mutually exclusive/],
    ['a paramRef with neither', { paramRef: { namespace: 'x' } }, 'spec.paramRef', /one of name or selector must be specified/],
    ['an unknown parameterNotFoundAction', { paramRef: { name: 'a', parameterNotFoundAction: 'Maybe' } }, 'spec.paramRef.parameterNotFoundAction', /Unsupported value/],
    ['a paramRef name with a slash', { paramRef: { name: 'a/b' } }, 'spec.paramRef.name', /may not contain '\/'/],
    ['no validationActions', { validationActions: [] }, 'spec.validationActions', /at least one validation action is required/],
    ['Deny and Warn together', { validationActions: ['Deny', 'Warn'] }, 'spec.validationActions', /must not contain both Deny and Warn/],
    ['a duplicate action', { validationActions: ['Audit', 'Audit'] }, 'spec.validationActions[1]', /Duplicate value/],
    ['an unknown action', { validationActions: ['Block'] }, 'spec.validationActions[0]', /Unsupported value: "Block"/],
    ['matchResources with a bad selector', { matchResources: { objectSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] } } }, 'spec.matchResources.objectSelector.matchExpressions[0].values', /must be specified/],
  ])('a binding with %s is refused naming the field', (_what, change, field, message) => {
    const causes = admit('ValidatingAdmissionPolicyBinding', binding(change));
    const cause = causes.find((c) => c.field === field);
    expect({ field: cause?.field, causes }).toMatchObject({ field });
    expect(cause?.message).toMatch(message);
  });
});
