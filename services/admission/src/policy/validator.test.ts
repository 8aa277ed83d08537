import { ApiError, type ApiObject } from '@svc/apimachinery';
import type { AuthorizationCheck, AuthorizationDecision } from '@svc/cel';
import type { AdmissionAttributes } from '../plugins';
import { requestAttributes } from '../testing/attributes';
import type { ParamReader, ParamResource } from './params';
import { PolicyValidator, VALIDATION_FAILURE_ANNOTATION, type PolicyKind, type PolicyValidatorOptions } from './validator';

// ---- fixtures ----

class Source {
  generation = 0;
  private readonly objects: Record<PolicyKind, ApiObject[]> = { ValidatingAdmissionPolicy: [], ValidatingAdmissionPolicyBinding: [] };
  private rv = 0;

  list(kind: PolicyKind): readonly ApiObject[] {
    return this.objects[kind];
  }

  put(kind: PolicyKind, obj: ApiObject): void {
    const name = obj.metadata?.name;
    this.rv++;
    const stored = { ...obj, metadata: { uid: `uid-${name}`, ...obj.metadata, resourceVersion: String(this.rv) } };
    this.objects[kind] = [...this.objects[kind].filter((o) => o.metadata?.name !== name), stored];
    this.generation++;
  }
}

const CONFIGMAPS: ParamResource = { group: '', version: 'v1', resource: 'configmaps', namespaced: true };
const CLUSTER_PARAMS: ParamResource = { group: 'example.com', version: 'v1', resource: 'limits', namespaced: false };

class Params implements ParamReader {
  readonly objects: Array<{ resource: ParamResource; obj: ApiObject }> = [];
  reads = 0;

  /** Adds a ConfigMap parameter. */
  configMap(namespace: string, name: string, data: Record<string, string>, labels: Record<string, string> = {}): void {
    this.objects.push({ resource: CONFIGMAPS, obj: { metadata: { name, namespace, labels }, data } });
  }

  async resolve(apiVersion: string, kind: string): Promise<ParamResource | undefined> {
    if (apiVersion === 'v1' && kind === 'ConfigMap') return CONFIGMAPS;
    if (apiVersion === 'example.com/v1' && kind === 'Limit') return CLUSTER_PARAMS;
    return undefined;
  }

  async get(resource: ParamResource, namespace: string, name: string): Promise<ApiObject | undefined> {
    this.reads++;
    return this.objects.find((o) => o.resource === resource && (o.obj.metadata?.namespace ?? '') === namespace && o.obj.metadata?.name === name)?.obj;
  }

  async list(resource: ParamResource, namespace: string): Promise<ApiObject[]> {
    this.reads++;
    return this.objects.filter((o) => o.resource === resource && (namespace === '' || o.obj.metadata?.namespace === namespace)).map((o) => o.obj);
  }
}

const namespaces = new Map<string, ApiObject>([
  ['team-a', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-a', labels: { env: 'prod' }, managedFields: [{ manager: 'x' }] }, status: { phase: 'Active' } }],
  ['team-b', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'team-b', labels: { env: 'dev' } }, status: { phase: 'Active' } }],
]);

const ALL_CONFIGMAPS = { resourceRules: [{ operations: ['CREATE', 'UPDATE', 'DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] };

function policy(name: string, spec: Record<string, unknown>): ApiObject {
  return { apiVersion: 'admissionregistration.svc.io/v1', kind: 'ValidatingAdmissionPolicy', metadata: { name }, spec: { matchConstraints: ALL_CONFIGMAPS, failurePolicy: 'Fail', ...spec } };
}

function binding(name: string, policyName: string, spec: Record<string, unknown> = {}): ApiObject {
  return { apiVersion: 'admissionregistration.svc.io/v1', kind: 'ValidatingAdmissionPolicyBinding', metadata: { name }, spec: { policyName, validationActions: ['Deny'], ...spec } };
}

const configMap = (data: Record<string, string>, labels: Record<string, string> = {}): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'team-a', labels }, data });

const attrs = (over: Partial<AdmissionAttributes> = {}): AdmissionAttributes => requestAttributes({ object: configMap({ size: 'large' }), ...over });

function setup(options: Partial<PolicyValidatorOptions> = {}) {
  const source = new Source();
  const params = new Params();
  const checks: AuthorizationCheck[] = [];
  const authorize = async (check: AuthorizationCheck): Promise<AuthorizationDecision> => {
    checks.push(check);
    return check.resource === 'secrets' && check.user.groups.includes('admins') ? { decision: 'allow', reason: 'admins may' } : { decision: 'no-opinion', reason: '' };
  };
  const validator = new PolicyValidator({ source, params, authorize, namespaces: { getNamespace: async (n) => namespaces.get(n) }, ...options });
  return { source, params, checks, validator };
}

async function refusal(p: Promise<unknown>): Promise<ApiError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ApiError)) throw new Error(`expected an ApiError, got ${String(err)}`);
  return err;
}

// ---- tests ----

describe('validations and their messages', () => {
  test('a false validation refuses with the original wording, reason Invalid (422) by default', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('size-limit', { validations: [{ expression: "object.data.size != 'large'" }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('size-limit-binding', 'size-limit'));
    const err = await refusal(validator.validate(attrs()));
    expect(err.code).toBe(422);
    expect(err.reason).toBe('Invalid');
    const message = "ValidatingAdmissionPolicy 'size-limit' with binding 'size-limit-binding' denied request: failed expression: object.data.size != 'large'";
    expect(err.message).toBe(`configmaps "cm" is forbidden: ${message}`);
    expect(err.details?.causes).toEqual([{ message }]);
    await expect(validator.validate(attrs({ object: configMap({ size: 'small' }) }))).resolves.toEqual({ warnings: [], auditAnnotations: {} });
  });

  test.each([
    ['Forbidden', 403],
    ['Unauthorized', 401],
    ['RequestEntityTooLarge', 413],
    ['Invalid', 422],
  ])('reason %s answers %i', async (reason, code) => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: 'false', message: 'no', reason }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    const err = await refusal(validator.validate(attrs()));
    expect([err.code, err.reason]).toEqual([code, reason]);
    expect(err.message).toContain("denied request: no");
  });

  test('messageExpression wins over message; a message that is not usable falls back', async () => {
    const { source, validator } = setup();
    const validations = [
      { expression: 'false', message: 'static', messageExpression: "'size is ' + object.data.size" },
      { expression: 'false', message: 'static two', messageExpression: "'line\\nbreak'" },
      { expression: 'false', message: 'static three', messageExpression: 'object.data.missing' },
      { expression: '1 > 2', messageExpression: "'   '" },
      { expression: "object.data.size == 'small'", messageExpression: 'object.data.size' },
    ];
    source.put('ValidatingAdmissionPolicy', policy('p', { validations }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p', { validationActions: ['Warn'] }));
    const { warnings } = await validator.validate(attrs());
    const messages = warnings.map((w) => w.replace("Validation failed for ValidatingAdmissionPolicy 'p' with binding 'b': ", ''));
    expect(messages).toEqual(['size is large', 'static two', 'static three', 'failed expression: 1 > 2', 'large']);
  });

  test('a refusal carries the warnings of the bindings evaluated before it', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: 'false', message: 'no' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('a-warns', 'p', { validationActions: ['Warn'] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b-denies', 'p', { validationActions: ['Deny'] }));
    const err = await refusal(validator.validate(attrs()));
    expect(err.message).toMatch(/with binding 'b-denies' denied request: no$/);
    expect(err.warnings).toEqual(["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'a-warns': no"]);
  });

  test('a message longer than the limit falls back to the message', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: 'false', message: 'short', messageExpression: "object.data.size + object.data.pad" }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    const err = await refusal(validator.validate(attrs({ object: configMap({ size: 'large', pad: 'y'.repeat(6000) }) })));
    expect(err.message).toMatch(/denied request: short$/);
  });
});

describe('validationActions', () => {
  test('Warn warns, Audit records, Deny refuses; all three together', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: 'true' }, { expression: "object.data.size == 'small'", message: 'too big' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('warn-audit', 'p', { validationActions: ['Warn', 'Audit'] }));
    const out = await validator.validate(attrs());
    expect(out.warnings).toEqual(["Validation failed for ValidatingAdmissionPolicy 'p' with binding 'warn-audit': too big"]);
    expect(JSON.parse(out.auditAnnotations[VALIDATION_FAILURE_ANNOTATION] ?? '')).toEqual([{ message: 'too big', policy: 'p', binding: 'warn-audit', expressionIndex: 1, validationActions: ['Warn', 'Audit'] }]);

    source.put('ValidatingAdmissionPolicyBinding', binding('deny', 'p', { validationActions: ['Deny'] }));
    const err = await refusal(validator.validate(attrs()));
    expect(err.message).toContain("ValidatingAdmissionPolicy 'p' with binding 'deny' denied request: too big");
  });
});

describe('which policies run', () => {
  test('a policy without a binding, and a binding of a missing policy, do nothing', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('unbound', { validations: [{ expression: 'false' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('orphan', 'missing'));
    await expect(validator.validate(attrs())).resolves.toEqual({ warnings: [], auditAnnotations: {} });
  });

  test('admission configurations themselves are never evaluated', async () => {
    const { source, validator } = setup();
    const everything = { resourceRules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }] };
    source.put('ValidatingAdmissionPolicy', policy('deny-all', { matchConstraints: everything, validations: [{ expression: 'false' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'deny-all'));
    const policyWrite = attrs({ kind: { group: 'admissionregistration.svc.io', version: 'v1', kind: 'ValidatingAdmissionPolicyBinding' }, resource: { group: 'admissionregistration.svc.io', version: 'v1', resource: 'validatingadmissionpolicybindings' }, namespace: '' });
    await expect(validator.validate(policyWrite)).resolves.toEqual({ warnings: [], auditAnnotations: {} });
    expect((await refusal(validator.validate(attrs()))).code).toBe(422);
  });

  test("a binding's matchResources narrows the policy's constraints", async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: 'false', message: 'prod only' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p', { matchResources: { namespaceSelector: { matchLabels: { env: 'prod' } } } }));
    expect((await refusal(validator.validate(attrs()))).message).toContain('prod only');
    await expect(validator.validate(attrs({ namespace: 'team-b' }))).resolves.toEqual({ warnings: [], auditAnnotations: {} });
  });

  test('each policy version is compiled once', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: "object.data.size != 'huge'" }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    for (let i = 0; i < 5; i++) await validator.validate(attrs());
    expect(validator.compilationCount).toBe(1);
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: "object.data.size != 'large'" }] }));
    await expect(validator.validate(attrs())).rejects.toThrow('failed expression');
    await expect(validator.validate(attrs())).rejects.toThrow('failed expression');
    expect(validator.compilationCount).toBe(2);
  });
});

describe('matchConditions', () => {
  test('a false condition skips the policy; an error follows failurePolicy through the binding actions', async () => {
    const { source, validator } = setup();
    const matchConditions = [{ name: 'labelled', expression: "has(object.metadata.labels) && 'check' in object.metadata.labels" }];
    source.put('ValidatingAdmissionPolicy', policy('p', { matchConditions, validations: [{ expression: 'false', message: 'checked' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    await expect(validator.validate(attrs())).resolves.toEqual({ warnings: [], auditAnnotations: {} });
    expect((await refusal(validator.validate(attrs({ object: configMap({}, { check: 'yes' }) })))).message).toContain('checked');

    source.put('ValidatingAdmissionPolicy', policy('p', { matchConditions: [{ name: 'broken', expression: 'object.data.missing == "x"' }], validations: [{ expression: 'true' }] }));
    const err = await refusal(validator.validate(attrs()));
    expect(err.message).toContain(`denied request: expression 'object.data.missing == "x"' resulted in error:`);
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p', { validationActions: ['Warn'] }));
    expect((await validator.validate(attrs())).warnings[0]).toContain('resulted in error');
    source.put('ValidatingAdmissionPolicy', policy('p', { failurePolicy: 'Ignore', matchConditions: [{ name: 'broken', expression: 'object.data.missing == "x"' }], validations: [{ expression: 'false' }] }));
    await expect(validator.validate(attrs())).resolves.toEqual({ warnings: [], auditAnnotations: {} });
  });
});

describe('variables', () => {
  test('composited variables read earlier ones, and one that fails matters only where read', async () => {
    const { source, validator } = setup();
    const variables = [
      { name: 'size', expression: 'object.data.size' },
      { name: 'big', expression: "variables.size == 'large'" },
      { name: 'broken', expression: 'object.data.missing' },
    ];
    source.put('ValidatingAdmissionPolicy', policy('p', { variables, validations: [{ expression: '!variables.big', messageExpression: "'size ' + variables.size + ' is too big'" }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    expect((await refusal(validator.validate(attrs()))).message).toMatch(/denied request: size large is too big$/);
    await expect(validator.validate(attrs({ object: configMap({ size: 'small' }) }))).resolves.toEqual({ warnings: [], auditAnnotations: {} });

    source.put('ValidatingAdmissionPolicy', policy('p', { variables, validations: [{ expression: 'variables.broken == "x"' }] }));
    expect((await refusal(validator.validate(attrs()))).message).toContain("expression 'variables.broken == \"x\"' resulted in error:");
  });
});

describe('the variables of an expression', () => {
  test('request, namespaceObject and oldObject are what the request says', async () => {
    const { source, validator } = setup();
    const validations = [
      { expression: "request.operation == 'UPDATE' && request.userInfo.username == 'alice' && 'devs' in request.userInfo.groups", message: 'request' },
      { expression: "request.kind.kind == 'ConfigMap' && request.resource.resource == 'configmaps' && request.namespace == 'team-a' && request.name == 'cm'", message: 'kind' },
      { expression: "namespaceObject.metadata.name == 'team-a' && namespaceObject.metadata.labels.env == 'prod' && !has(namespaceObject.metadata.managedFields)", message: 'namespace' },
      { expression: "oldObject.data.size == 'small' && object.data.size == 'large'", message: 'old' },
    ];
    source.put('ValidatingAdmissionPolicy', policy('p', { validations }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p', { validationActions: ['Warn'] }));
    const out = await validator.validate(attrs({ operation: 'UPDATE', oldObject: configMap({ size: 'small' }) }));
    expect(out.warnings).toEqual([]);
  });

  test('the namespace is read only for policies that use namespaceObject; a missing one is NotFound', async () => {
    const reads: string[] = [];
    const { source, validator } = setup({ namespaces: { getNamespace: async (n) => (reads.push(n), namespaces.get(n)) } });
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: "object.data.size == 'large'" }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    await validator.validate(attrs({ namespace: 'gone' }));
    expect(reads).toEqual([]);
    source.put('ValidatingAdmissionPolicy', policy('p', { variables: [{ name: 'env', expression: 'namespaceObject.metadata.labels.env' }], validations: [{ expression: "variables.env == 'prod'" }] }));
    await validator.validate(attrs());
    const err = await refusal(validator.validate(attrs({ namespace: 'gone' })));
    expect([err.code, err.message]).toEqual([404, 'namespaces "gone" not found']);
    expect(reads).toEqual(['team-a', 'gone']);
  });

  test('on DELETE object is null and oldObject is the stored object', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: "object == null && oldObject.data.size == 'large'", message: 'unexpected' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    await expect(validator.validate(attrs({ operation: 'DELETE', object: undefined, oldObject: configMap({ size: 'large' }) }))).resolves.toEqual({ warnings: [], auditAnnotations: {} });
  });
});

describe('params', () => {
  const limitPolicy = (spec: Record<string, unknown> = {}) =>
    policy('limit', { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, validations: [{ expression: 'object.data.size != params.data.forbidden', messageExpression: "'size ' + object.data.size + ' is forbidden by ' + params.metadata.name" }], ...spec });

  test('paramRef.name is read in the request namespace when the param kind is namespaced', async () => {
    const { source, params, validator } = setup();
    params.configMap('team-a', 'limits', { forbidden: 'large' });
    params.configMap('team-b', 'limits', { forbidden: 'small' });
    source.put('ValidatingAdmissionPolicy', limitPolicy());
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { paramRef: { name: 'limits', parameterNotFoundAction: 'Deny' } }));
    expect((await refusal(validator.validate(attrs()))).message).toMatch(/denied request: size large is forbidden by limits$/);
    await expect(validator.validate(attrs({ namespace: 'team-b' }))).resolves.toBeDefined();
    // The param as CEL sees it has apiVersion and kind, as upstream fills them.
    source.put('ValidatingAdmissionPolicy', limitPolicy({ validations: [{ expression: "params.kind == 'ConfigMap' && params.apiVersion == 'v1'", message: 'typed' }] }));
    await expect(validator.validate(attrs())).resolves.toBeDefined();
  });

  test('paramRef.namespace names the namespace; a selector evaluates every param it selects', async () => {
    const { source, params, validator } = setup();
    params.configMap('shared', 'a', { forbidden: 'large' }, { role: 'limit' });
    params.configMap('shared', 'b', { forbidden: 'large' }, { role: 'limit' });
    params.configMap('shared', 'c', { forbidden: 'large' }, { role: 'other' });
    source.put('ValidatingAdmissionPolicy', limitPolicy());
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { validationActions: ['Warn'], paramRef: { namespace: 'shared', selector: { matchLabels: { role: 'limit' } }, parameterNotFoundAction: 'Allow' } }));
    const out = await validator.validate(attrs());
    expect(out.warnings.map((w) => w.replace(/.*: /, ''))).toEqual(['size large is forbidden by a', 'size large is forbidden by b']);
  });

  test('parameterNotFoundAction: Deny refuses, Allow evaluates nothing', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', limitPolicy());
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { paramRef: { name: 'absent', parameterNotFoundAction: 'Deny' } }));
    const err = await refusal(validator.validate(attrs()));
    expect(err.message).toContain("ValidatingAdmissionPolicy 'limit' with binding 'b' denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction");
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { paramRef: { name: 'absent', parameterNotFoundAction: 'Allow' } }));
    await expect(validator.validate(attrs())).resolves.toEqual({ warnings: [], auditAnnotations: {} });
    // Ignore lets a misconfigured binding through.
    source.put('ValidatingAdmissionPolicy', limitPolicy({ failurePolicy: 'Ignore' }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { paramRef: { name: 'absent', parameterNotFoundAction: 'Deny' } }));
    await expect(validator.validate(attrs())).resolves.toEqual({ warnings: [], auditAnnotations: {} });
  });

  test("a misconfigured binding is enforced by the binding's validationActions", async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', limitPolicy());
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { validationActions: ['Warn', 'Audit'], paramRef: { name: 'absent', parameterNotFoundAction: 'Deny' } }));
    const out = await validator.validate(attrs());
    const text = 'failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction';
    expect(out.warnings).toEqual([`Validation failed for ValidatingAdmissionPolicy 'limit' with binding 'b': ${text}`]);
    expect(JSON.parse(out.auditAnnotations['validation.policy.admission.svc.io/validation_failure'] ?? '[]')).toEqual([{ message: text, policy: 'limit', binding: 'b', expressionIndex: 0, validationActions: ['Warn', 'Audit'] }]);
  });

  test('a paramKind no resource serves is a misconfigured policy', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', limitPolicy({ paramKind: { apiVersion: 'example.com/v2', kind: 'Nope' } }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { paramRef: { name: 'x', parameterNotFoundAction: 'Allow' } }));
    const err = await refusal(validator.validate(attrs()));
    expect(err.message).toContain("ValidatingAdmissionPolicy 'limit' denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v2, Kind=Nope'");
  });

  test('a namespaced param for a cluster-scoped request needs paramRef.namespace; a cluster-scoped one may not have it', async () => {
    const { source, params, validator } = setup();
    const clusterScoped = { resourceRules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['nodes'] }] };
    const node = attrs({ kind: { group: '', version: 'v1', kind: 'Node' }, resource: { group: '', version: 'v1', resource: 'nodes' }, namespace: '', name: 'n1', object: { metadata: { name: 'n1' } } });
    source.put('ValidatingAdmissionPolicy', limitPolicy({ matchConstraints: clusterScoped, validations: [{ expression: 'true' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { paramRef: { name: 'limits', parameterNotFoundAction: 'Allow' } }));
    expect((await refusal(validator.validate(node))).message).toContain('failed to configure binding: cannot use namespaced paramRef in policy binding that matches cluster-scoped resources');

    params.objects.push({ resource: CLUSTER_PARAMS, obj: { apiVersion: 'example.com/v1', kind: 'Limit', metadata: { name: 'global' }, spec: { max: 3 } } });
    source.put('ValidatingAdmissionPolicy', limitPolicy({ paramKind: { apiVersion: 'example.com/v1', kind: 'Limit' }, validations: [{ expression: 'size(object.data) <= params.spec.max', message: 'too many keys' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { paramRef: { name: 'global', namespace: 'team-a', parameterNotFoundAction: 'Allow' } }));
    expect((await refusal(validator.validate(attrs()))).message).toContain('paramRef.namespace must not be provided for a cluster-scoped `paramKind`');
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'limit', { paramRef: { name: 'global', parameterNotFoundAction: 'Allow' } }));
    await expect(validator.validate(attrs())).resolves.toBeDefined();
    expect((await refusal(validator.validate(attrs({ object: configMap({ a: '1', b: '2', c: '3', d: '4' }) })))).message).toContain('too many keys');
  });
});

describe('failurePolicy and costs', () => {
  test('an expression that fails refuses under Fail and is ignored under Ignore', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: "object.data.missing == 'x'" }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    const err = await refusal(validator.validate(attrs()));
    expect(err.message).toContain("denied request: expression 'object.data.missing == 'x'' resulted in error:");
    expect(err.code).toBe(422);
    source.put('ValidatingAdmissionPolicy', policy('p', { failurePolicy: 'Ignore', validations: [{ expression: "object.data.missing == 'x'" }] }));
    await expect(validator.validate(attrs())).resolves.toEqual({ warnings: [], auditAnnotations: {} });
  });

  test('an expression above the per-call limit fails; validations above the runtime budget stop the evaluation', async () => {
    const { source, validator } = setup({ runtimeCostBudget: 5_000 });
    // A large list comprehension whose cost bound is far above any budget.
    const expensive = 'object.data.all(k, object.data.all(j, object.data.all(i, object.data[k] + object.data[j] + object.data[i] != "")))';
    const wide = configMap(Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, 'v'.repeat(200)])));
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: expensive }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    const err = await refusal(validator.validate(attrs({ object: wide })));
    expect(err.message).toContain('denied request: validation failed due to running out of cost budget, no further validation rules will be run');

    const cheap = Array.from({ length: 40 }, () => ({ expression: "object.data.k1.startsWith('v')" }));
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: cheap }));
    expect((await refusal(validator.validate(attrs({ object: wide })))).message).toContain('running out of cost budget');
    source.put('ValidatingAdmissionPolicy', policy('p', { failurePolicy: 'Ignore', validations: cheap }));
    await expect(validator.validate(attrs({ object: wide }))).resolves.toEqual({ warnings: [], auditAnnotations: {} });
  });

  test('an expression above the per-call limit alone is an evaluation error', async () => {
    const { source, validator } = setup();
    const expensive = 'object.data.all(k, object.data.all(j, object.data.all(i, object.data[k] + object.data[j] + object.data[i] != "")))';
    const wide = configMap(Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`k${i}`, 'v'.repeat(200)])));
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression: expensive }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    const err = await refusal(validator.validate(attrs({ object: wide })));
    expect(err.message).toContain('resulted in error: operation cancelled: actual cost limit exceeded');
  });

  test('a misconfigured policy (no matchConstraints) refuses under Fail', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('p', { matchConstraints: null, validations: [{ expression: 'true' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'p'));
    expect((await refusal(validator.validate(attrs()))).message).toContain("ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: policy contained no match constraints, a required field");
  });
});

describe('auditAnnotations', () => {
  test('values are published under <policy>/<key>; null and empty are left out; distinct values of several bindings are joined', async () => {
    const { source, params, validator } = setup();
    params.configMap('team-a', 'p1', { tier: 'gold' }, { x: '1' });
    params.configMap('team-a', 'p2', { tier: 'silver' }, { x: '1' });
    const auditAnnotations = [
      { key: 'size', valueExpression: "'size=' + object.data.size" },
      { key: 'tier', valueExpression: 'params.data.tier' },
      { key: 'nothing', valueExpression: 'null' },
      { key: 'empty', valueExpression: "'  '" },
    ];
    source.put('ValidatingAdmissionPolicy', policy('audit', { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' }, auditAnnotations }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b1', 'audit', { paramRef: { selector: { matchLabels: { x: '1' } }, parameterNotFoundAction: 'Allow' } }));
    const out = await validator.validate(attrs());
    expect(out.auditAnnotations).toEqual({ 'audit/size': 'size=large', 'audit/tier': 'gold, silver' });
  });

  test('a value of another type refuses, whatever the failurePolicy', async () => {
    const { source, validator } = setup();
    source.put('ValidatingAdmissionPolicy', policy('audit', { failurePolicy: 'Ignore', auditAnnotations: [{ key: 'n', valueExpression: 'size(object.data)' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b', 'audit'));
    const err = await refusal(validator.validate(attrs()));
    expect(err.message).toContain("denied request: valueExpression 'size(object.data)' resulted in unsupported return type: int. Return type must be either string or null.");
  });
});

describe('authorizer', () => {
  test('checks go to the authorization service, each asked once per request', async () => {
    const { source, checks, validator } = setup();
    const expression = "authorizer.group('').resource('secrets').namespace(request.namespace).check('get').allowed()";
    source.put('ValidatingAdmissionPolicy', policy('p', { validations: [{ expression, message: 'only admins' }] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b1', 'p', { validationActions: ['Warn'] }));
    source.put('ValidatingAdmissionPolicyBinding', binding('b2', 'p', { validationActions: ['Warn'] }));
    const out = await validator.validate(attrs());
    expect(out.warnings).toHaveLength(2);
    expect(checks).toHaveLength(1);
    expect(checks[0]).toMatchObject({ verb: 'get', resource: 'secrets', namespace: 'team-a', resourceRequest: true });
    const admin = await validator.validate(attrs({ userInfo: { username: 'root', uid: '', groups: ['admins'], extra: {} } }));
    expect(admin.warnings).toEqual([]);
  });
});
