import {
  AdmissionActivation,
  admissionMinimumCost,
  AUTHORIZATION_CHECK_COST,
  CelCompileError,
  compileAdmissionExpression,
  compileAdmissionVariables,
  COST_BUDGET,
  evaluateAdmission,
  evaluateWithAuthorizer,
  type AdmissionRequestInput,
  type AdmissionVariable,
  type AuthorizationCheck,
  type AuthorizationDecision,
  type CompiledExpression,
} from './index';

const request: AdmissionRequestInput = {
  kind: { group: 'apps', version: 'v1', kind: 'Deployment' },
  resource: { group: 'apps', version: 'v1', resource: 'deployments' },
  name: 'web',
  namespace: 'team-a',
  operation: 'CREATE',
  userInfo: { username: 'alice', groups: ['dev', 'system:authenticated'] },
  options: { kind: 'CreateOptions', apiVersion: 'meta.svc.io/v1', fieldManager: 'kubectl' },
};

const object = { metadata: { name: 'web', labels: { app: 'web' } }, spec: { replicas: 3, ratio: 0.5 } };

function value(program: CompiledExpression, activation: AdmissionActivation): unknown {
  const { outcome } = evaluateAdmission(program, activation);
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

describe('the admission CEL environment', () => {
  test('object, oldObject (null when absent) and request with every field', () => {
    const a = new AdmissionActivation({ object, request });
    const env = {};
    expect(value(compileAdmissionExpression('object.spec.replicas > 2 && oldObject == null', env), a)).toBe(true);
    expect(value(compileAdmissionExpression('request.requestKind.kind + "/" + request.resource.resource + "/" + request.subResource', env), a)).toBe('Deployment/deployments/');
    expect(value(compileAdmissionExpression('request.userInfo.groups.exists(g, g == "dev") && request.userInfo.extra.size() == 0 && request.userInfo.uid == ""', env), a)).toBe(true);
    expect(value(compileAdmissionExpression('request.operation == "CREATE" && !request.dryRun && request.options.fieldManager == "kubectl"', env), a)).toBe(true);
    expect(value(compileAdmissionExpression('request.name + "@" + request.namespace', env), a)).toBe('web@team-a');
  });

  test('only the declared variables exist; fields of request are checked; result types are enforced', () => {
    expect(() => compileAdmissionExpression('params.x == 1', {}, { field: 'spec.matchConditions[0].expression' })).toThrow(CelCompileError);
    expect(() => compileAdmissionExpression('params.x == 1', {}, { field: 'spec.matchConditions[0].expression' })).toThrow(/^spec\.matchConditions\[0\]\.expression: Invalid value: compilation failed: undeclared reference to 'params'/);
    expect(() => compileAdmissionExpression('namespaceObject.metadata.name == "x"', { params: true })).toThrow(/undeclared reference to 'namespaceObject'/);
    expect(() => compileAdmissionExpression('authorizer.path("/x").check("get").allowed()', {})).toThrow(/undeclared reference to 'authorizer'/);
    expect(() => compileAdmissionExpression('request.uid == "x"', {})).toThrow(/undefined field 'uid'/);
    expect(() => compileAdmissionExpression('request.userInfo.name == "x"', {})).toThrow(/undefined field 'name'/);
    expect(() => compileAdmissionExpression('variables.b', { variables: ['a'] })).toThrow(/undefined field 'b'/);
    expect(() => compileAdmissionExpression('request.name', {}, { resultType: 'bool' })).toThrow(/must evaluate to bool/);
    expect(() => compileAdmissionExpression('authorizer.path("/x").check("get").allowed()', { authorizer: true }, { resultType: 'string' })).toThrow(/must evaluate to string/);
    expect(() => compileAdmissionExpression('x'.repeat(10_001), {})).toThrow(/Too long/);
    const all = compileAdmissionExpression('params.a == namespaceObject.metadata.name && variables.v', { params: true, namespaceObject: true, variables: ['v'] }, { resultType: 'bool' });
    expect(all.resultType).toBe('bool');
  });

  test('params and namespaceObject are null when absent', () => {
    const p = compileAdmissionExpression('params == null && namespaceObject == null', { params: true, namespaceObject: true });
    expect(value(p, new AdmissionActivation({ object, request }))).toBe(true);
    const q = compileAdmissionExpression('params.data.max', { params: true });
    expect(value(q, new AdmissionActivation({ object, request, params: { data: { max: '5' } } }))).toBe('5');
  });

  test('variables are evaluated lazily, at most once per activation, and may read earlier ones', () => {
    const { variables, errors, env } = compileAdmissionVariables(
      [
        { name: 'replicas', expression: 'object.spec.replicas' },
        { name: 'doubled', expression: 'variables.replicas * 2' },
        { name: 'ratio', expression: 'object.spec.ratio' },
        { name: 'broken', expression: 'object.spec.missing' },
      ],
      {},
    );
    expect(errors).toEqual([]);
    expect(env.variables).toEqual(['replicas', 'doubled', 'ratio', 'broken']);
    const counts = new Map<string, number>();
    const counted: AdmissionVariable[] = variables.map((v) => ({
      name: v.name,
      program: {
        ...v.program,
        references: v.program.references,
        selects: v.program.selects,
        evaluateToCel(values, options) {
          counts.set(v.name, (counts.get(v.name) ?? 0) + 1);
          return v.program.evaluateToCel(values, options);
        },
      },
    }));
    const a = new AdmissionActivation({ object, request, variables: counted });
    expect(value(compileAdmissionExpression('variables.doubled == 6', env), a)).toBe(true);
    expect(value(compileAdmissionExpression('variables.doubled + variables.replicas', env), a)).toBe(9);
    expect(counts.get('replicas')).toBe(1);
    expect(counts.get('doubled')).toBe(1);
    expect(counts.get('ratio')).toBeUndefined();
    // A double stays a double when another expression reads it.
    expect(value(compileAdmissionExpression('variables.ratio + 0.25', env), a)).toBe(0.75);
    // A failing variable fails the expression that needs it, naming the variable; one that does not need it succeeds.
    const failed = evaluateAdmission(compileAdmissionExpression('variables.broken == 1', env), a).outcome;
    expect(!failed.ok && failed.error.message).toMatch(/composited variable "broken" failed/);
    expect(value(compileAdmissionExpression('variables.replicas == 3 || variables.broken == 1', env), a)).toBe(true);
    expect(counts.get('broken')).toBe(1);
  });

  test('a variable that does not compile is reported with its field; later variables still see its name', () => {
    const { variables, errors } = compileAdmissionVariables(
      [
        { name: 'a', expression: 'object.' },
        { name: 'b', expression: 'variables.a' },
        { name: 'c', expression: 'variables.d' },
      ],
      {},
      'spec.variables',
    );
    expect(errors.map((e) => e.field)).toEqual(['spec.variables[0].expression', 'spec.variables[2].expression']);
    expect(variables.map((v) => v.name)).toEqual(['b']);
  });
});

describe('the authorizer library', () => {
  const decisions: Record<string, AuthorizationDecision> = {
    'get /healthz': { decision: 'allow', reason: 'public' },
    'create deployments': { decision: 'deny', reason: 'not in team' },
    'update deployments/scale': { decision: 'allow', reason: '' },
  };
  function key(c: AuthorizationCheck): string {
    return `${c.verb} ${c.resourceRequest ? c.resource + (c.subresource ? `/${c.subresource}` : '') : c.path}`;
  }

  test('checks are asked asynchronously, once each, with the attributes the original builds', async () => {
    const asked: AuthorizationCheck[] = [];
    const ask = async (c: AuthorizationCheck): Promise<AuthorizationDecision> => {
      asked.push(c);
      return decisions[key(c)] ?? { decision: 'no-opinion', reason: '' };
    };
    const env = { authorizer: true };
    const a = new AdmissionActivation({ object, request });
    const p = compileAdmissionExpression('authorizer.group("apps").resource("deployments").subresource("scale").namespace("team-a").name("web").check("update").allowed()', env, { resultType: 'bool' });
    const r = await evaluateWithAuthorizer(p, a, ask);
    expect(r.outcome).toEqual({ ok: true, value: true });
    expect(asked).toEqual([
      { user: { username: 'alice', uid: '', groups: ['dev', 'system:authenticated'], extra: {} }, resourceRequest: true, verb: 'update', path: '', apiGroup: 'apps', apiVersion: '*', resource: 'deployments', subresource: 'scale', namespace: 'team-a', name: 'web' },
    ]);
    expect(r.cost).toBeGreaterThanOrEqual(AUTHORIZATION_CHECK_COST);
    // The same check again: answered from the activation, not asked.
    await evaluateWithAuthorizer(p, a, ask);
    expect(asked).toHaveLength(1);
    const reason = compileAdmissionExpression('authorizer.requestResource.check("create").reason()', env);
    expect((await evaluateWithAuthorizer(reason, a, ask)).outcome).toEqual({ ok: true, value: 'not in team' });
    expect(asked[1]).toMatchObject({ verb: 'create', apiGroup: 'apps', resource: 'deployments', namespace: 'team-a', name: 'web', subresource: '' });
    const path = compileAdmissionExpression('authorizer.path("/healthz").check("get").allowed() && !authorizer.path("/healthz").check("get").errored()', env);
    expect((await evaluateWithAuthorizer(path, a, ask)).outcome).toEqual({ ok: true, value: true });
    expect(asked[2]).toMatchObject({ resourceRequest: false, path: '/healthz', verb: 'get' });
    expect(asked).toHaveLength(3);
  });

  test('a check that depends on another decision takes a further round', async () => {
    const asked: string[] = [];
    const ask = async (c: AuthorizationCheck): Promise<AuthorizationDecision> => {
      asked.push(key(c));
      return decisions[key(c)] ?? { decision: 'no-opinion', reason: '' };
    };
    const p = compileAdmissionExpression('authorizer.path("/healthz").check("get").allowed() ? authorizer.group("apps").resource("deployments").check("create").reason() : "none"', { authorizer: true });
    const r = await evaluateWithAuthorizer(p, new AdmissionActivation({ object, request }), ask);
    expect(r.outcome).toEqual({ ok: true, value: 'not in team' });
    expect(asked).toEqual(['get /healthz', 'create deployments']);
  });

  test('two variables waiting for the same decision are both evaluated again once it is known', async () => {
    const { variables, env } = compileAdmissionVariables(
      [
        { name: 'healthz', expression: 'authorizer.path("/healthz").check("get").allowed()' },
        { name: 'again', expression: 'authorizer.path("/healthz").check("get").reason() == ""' },
      ],
      { authorizer: true },
    );
    const a = new AdmissionActivation({ object, request, variables });
    const p = compileAdmissionExpression('variables.healthz && variables.again', env);
    let asked = 0;
    const r = await evaluateWithAuthorizer(p, a, async () => {
      asked++;
      return { decision: 'allow', reason: '' };
    });
    expect(r.outcome).toEqual({ ok: true, value: true });
    expect(asked).toBe(1);
  });

  test('serviceAccount checks as the service account; invalid names are errors', async () => {
    const asked: AuthorizationCheck[] = [];
    const ask = async (c: AuthorizationCheck): Promise<AuthorizationDecision> => {
      asked.push(c);
      return { decision: 'allow', reason: '' };
    };
    const a = new AdmissionActivation({ object, request });
    const p = compileAdmissionExpression('authorizer.serviceAccount("kube-system", "builder").group("").resource("pods").check("list").allowed()', { authorizer: true });
    expect((await evaluateWithAuthorizer(p, a, ask)).outcome).toEqual({ ok: true, value: true });
    expect(asked[0]?.user).toEqual({ username: 'system:serviceaccount:kube-system:builder', uid: '', groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system'], extra: {} });
    const bad = compileAdmissionExpression('authorizer.serviceAccount("Not_Valid", "x").path("/").check("get").allowed()', { authorizer: true });
    const r = (await evaluateWithAuthorizer(bad, a, ask)).outcome;
    expect(!r.ok && r.error.message).toMatch(/Invalid service account namespace/);
    const empty = compileAdmissionExpression('authorizer.group("").resource(" ").check("get").allowed()', { authorizer: true });
    const e = (await evaluateWithAuthorizer(empty, a, ask)).outcome;
    expect(!e.ok && e.error.message).toMatch(/resource must not be empty/);
  });

  test('selectors are included when they parse and dropped when they do not', async () => {
    const asked: AuthorizationCheck[] = [];
    const ask = async (c: AuthorizationCheck): Promise<AuthorizationDecision> => {
      asked.push(c);
      return { decision: 'allow', reason: '' };
    };
    const p = compileAdmissionExpression('authorizer.group("").resource("pods").fieldSelector("spec.nodeName=n1").labelSelector("a in (").check("list").allowed()', { authorizer: true });
    await evaluateWithAuthorizer(p, new AdmissionActivation({ object, request }), ask);
    expect(asked[0]?.fieldSelector).toBe('spec.nodeName=n1');
    expect(asked[0]).not.toHaveProperty('labelSelector');
  });

  test('a question that fails is an errored decision; a synchronous authorizer needs no question', async () => {
    const p = compileAdmissionExpression('authorizer.path("/x").check("get").errored() && authorizer.path("/x").check("get").error() == "unreachable"', { authorizer: true });
    const r = await evaluateWithAuthorizer(p, new AdmissionActivation({ object, request }), async () => {
      throw new Error('unreachable');
    });
    expect(r.outcome).toEqual({ ok: true, value: true });
    const allowed = compileAdmissionExpression('authorizer.path("/x").check("get").allowed()', { authorizer: true });
    expect((await evaluateWithAuthorizer(allowed, new AdmissionActivation({ object, request }), () => Promise.reject(new Error('down')))).outcome).toEqual({ ok: true, value: false });
    const known = new AdmissionActivation({ object, request, authorizer: { check: (c) => decisions[key(c)] } });
    const sync = compileAdmissionExpression('authorizer.path("/healthz").check("get").reason()', { authorizer: true });
    expect(evaluateAdmission(sync, known).outcome).toEqual({ ok: true, value: 'public' });
    // Without an answer, the synchronous evaluation is an error and the check is pending.
    const unknown = compileAdmissionExpression('authorizer.path("/other").check("get").allowed()', { authorizer: true });
    const u = evaluateAdmission(unknown, known);
    expect(!u.outcome.ok && u.outcome.error.message).toMatch(/decision for get \/other is not available/);
    expect(known.pendingChecks()).toHaveLength(1);
  });

  test('a result that does not depend on a decision asks nothing', async () => {
    let asked = 0;
    const p = compileAdmissionExpression('object.spec.replicas == 3 || authorizer.path("/x").check("get").allowed()', { authorizer: true });
    const r = await evaluateWithAuthorizer(p, new AdmissionActivation({ object, request }), async () => {
      asked++;
      return { decision: 'allow', reason: '' };
    });
    expect(r.outcome).toEqual({ ok: true, value: true });
    expect(asked).toBe(0);
  });

  test('each check costs 350000: three in one expression exceed the per-call limit, whatever the input', async () => {
    const three = compileAdmissionExpression('authorizer.path("/a").check("get").allowed() && authorizer.path("/b").check("get").allowed() && authorizer.path("/c").check("get").allowed()', { authorizer: true });
    expect(admissionMinimumCost(three)).toBeGreaterThan(COST_BUDGET);
    const two = compileAdmissionExpression('authorizer.path("/a").check("get").allowed() && authorizer.path("/b").check("get").allowed()', { authorizer: true });
    expect(admissionMinimumCost(two)).toBeLessThanOrEqual(COST_BUDGET);
    let asked = 0;
    const r = await evaluateWithAuthorizer(three, new AdmissionActivation({ object, request }), async () => {
      asked++;
      return { decision: 'allow', reason: '' };
    });
    expect(!r.outcome.ok && r.outcome.error.reason).toBe('CostExceeded');
    expect(asked).toBe(0);
  });
});
