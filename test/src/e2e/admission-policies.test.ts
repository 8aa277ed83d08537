import * as path from 'node:path';
import { AdmissionClient } from '@svc/admission/client';
import type { ApiObject } from '@svc/apimachinery';
import { loadInternalTls } from '@svc/service-kit';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest } from './http';

/**
 * ValidatingAdmissionPolicy through the whole system, driven with kubectl:
 * one policy whose limits come from a ConfigMap parameter, bound three
 * times with the actions Deny, Warn and Audit, each binding selecting its
 * own namespace; parameters by name and by selector, a missing parameter,
 * the policy's type checking status, and what is refused at write time.
 */

const GROUP = 'admissionregistration.svc.io/v1';
const POLICY = 'e2e-max-keys';

const policy = {
  apiVersion: GROUP,
  kind: 'ValidatingAdmissionPolicy',
  metadata: { name: POLICY },
  spec: {
    failurePolicy: 'Fail',
    paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
    matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }] },
    matchConditions: [{ name: 'not-exempt', expression: "!has(object.metadata.labels) || !('exempt' in object.metadata.labels)" }],
    variables: [{ name: 'keys', expression: 'has(object.data) ? object.data.size() : 0' }],
    validations: [
      {
        expression: 'variables.keys <= int(params.data.maxKeys)',
        messageExpression: "'a configmap may hold at most ' + params.data.maxKeys + ' keys, this one holds ' + string(variables.keys)",
      },
      { expression: '!has(object.data) || !object.data.exists(k, object.data[k] == params.data.forbiddenValue)', message: 'no value may be the forbidden one', reason: 'Forbidden' },
    ],
    auditAnnotations: [{ key: 'key-count', valueExpression: 'string(variables.keys)' }],
  },
};

type Rule = { apiGroups: string[]; apiVersions: string[]; operations: string[]; resources: string[] };
const CONFIGMAP_CREATES: Rule = { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] };
/** A policy without parameters: its rules and validations. */
const simplePolicy = (name: string, rule: Rule, validations: unknown[]) => ({ apiVersion: GROUP, kind: 'ValidatingAdmissionPolicy', metadata: { name }, spec: { matchConstraints: { resourceRules: [rule] }, validations } });

const binding = (name: string, actions: string[], namespace: string, paramRef: Record<string, unknown> = { name: 'limits', namespace: 'vap-params', parameterNotFoundAction: 'Deny' }) => ({
  apiVersion: GROUP,
  kind: 'ValidatingAdmissionPolicyBinding',
  metadata: { name },
  spec: { policyName: POLICY, validationActions: actions, paramRef, matchResources: { namespaceSelector: { matchLabels: { 'svc.io/metadata.name': namespace } } } },
});

describe('validating admission policies', () => {
  let env: Environment;
  let sentinels = 0;
  const kubectl = (args: string[], input?: string) =>
    run('kubectl', ['--kubeconfig', env.kubeconfigPath, `--cache-dir=${path.join(env.dir, 'kubectl-cache')}`, ...args], input !== undefined ? { input } : {});
  const configMap = (name: string, namespace: string, data: Record<string, string>, labels: Record<string, string> = {}) =>
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data });
  const keys = (n: number): Record<string, string> => Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}`, `v${i}`]));
  const apply = async (doc: unknown): Promise<void> => {
    const res = await kubectl(['apply', '-f', '-'], JSON.stringify(doc));
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
  };
  const exists = async (name: string, namespace: string): Promise<boolean> => (await kubectl(['get', 'configmap', name, '-n', namespace, '-o', 'name', '--ignore-not-found'])).stdout.trim() !== '';

  /**
   * Resolves once the admission service acts on every policy and binding
   * written before: a sentinel policy and binding written after them that
   * refuse dry-run creates of one name in the sentinel namespace, asked
   * until they refuse (the admission service follows them in order).
   */
  const policiesInEffect = async (): Promise<void> => {
    const n = ++sentinels;
    const name = `zz-sentinel-${n}`;
    await apply(simplePolicy(name, CONFIGMAP_CREATES, [{ expression: `object.metadata.name != 'probe-${n}'`, message: `sentinel ${n}` }]));
    await apply({
      apiVersion: GROUP,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name },
      spec: { policyName: name, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'svc.io/metadata.name': 'vap-sentinel' } } } },
    });
    await until(async () => {
      const res = await adminRequest(env, 'POST', '/api/v1/namespaces/vap-sentinel/configmaps?dryRun=All', configMap(`probe-${n}`, 'vap-sentinel', {}));
      return res.status === 422 && res.body.includes(`sentinel ${n}`) ? true : undefined;
    }, 20_000);
    await kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', name, '--wait=false']);
  };

  beforeAll(async () => {
    env = await startEnvironment();
    for (const ns of ['vap-sentinel', 'vap-params', 'vap-deny', 'vap-warn', 'vap-audit', 'vap-missing', 'vap-selector']) {
      expect((await kubectl(['create', 'namespace', ns])).code).toBe(0);
    }
    expect((await kubectl(['create', '-f', '-'], configMap('limits', 'vap-params', { maxKeys: '2', forbiddenValue: 'hunter2' }))).code).toBe(0);
    expect((await kubectl(['create', '-f', '-'], configMap('gold-a', 'vap-params', { maxKeys: '3', forbiddenValue: 'x' }, { tier: 'gold' }))).code).toBe(0);
    expect((await kubectl(['create', '-f', '-'], configMap('gold-b', 'vap-params', { maxKeys: '1', forbiddenValue: 'y' }, { tier: 'gold' }))).code).toBe(0);
    await apply(policy);
    await apply(binding(`${POLICY}-deny`, ['Deny'], 'vap-deny'));
    await apply(binding(`${POLICY}-warn`, ['Warn'], 'vap-warn'));
    await apply(binding(`${POLICY}-audit`, ['Audit'], 'vap-audit'));
    await apply(binding(`${POLICY}-missing`, ['Deny'], 'vap-missing', { name: 'absent', namespace: 'vap-params', parameterNotFoundAction: 'Deny' }));
    await apply(binding(`${POLICY}-selector`, ['Deny'], 'vap-selector', { namespace: 'vap-params', selector: { matchLabels: { tier: 'gold' } }, parameterNotFoundAction: 'Deny' }));
    await policiesInEffect();
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('Deny: kubectl create is refused with the message (from messageExpression and the parameter), 422 Invalid; within the limit it is stored', async () => {
    const refused = await kubectl(['create', '-f', '-'], configMap('too-many', 'vap-deny', keys(3)));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain(`ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}-deny' denied request: a configmap may hold at most 2 keys, this one holds 3`);
    expect(await exists('too-many', 'vap-deny')).toBe(false);
    const raw = await adminRequest(env, 'POST', '/api/v1/namespaces/vap-deny/configmaps', configMap('too-many', 'vap-deny', keys(3)));
    expect(raw.status).toBe(422);
    expect(raw.json()).toMatchObject({
      kind: 'Status',
      reason: 'Invalid',
      code: 422,
      message: `configmaps "too-many" is forbidden: ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}-deny' denied request: a configmap may hold at most 2 keys, this one holds 3`,
    });
    // A validation's own reason gives the code.
    const forbidden = await adminRequest(env, 'POST', '/api/v1/namespaces/vap-deny/configmaps', configMap('secretive', 'vap-deny', { password: 'hunter2' }));
    expect(forbidden.status).toBe(403);
    expect(forbidden.json()).toMatchObject({ reason: 'Forbidden', message: expect.stringContaining('denied request: no value may be the forbidden one') });
    const ok = await kubectl(['create', '-f', '-'], configMap('fits', 'vap-deny', keys(2)));
    expect(ok.stderr).toBe('');
    expect(await exists('fits', 'vap-deny')).toBe(true);
    // What the match condition leaves out is not checked.
    const exempt = await kubectl(['create', '-f', '-'], configMap('exempt', 'vap-deny', keys(3), { exempt: 'yes' }));
    expect(exempt.stderr).toBe('');
    // Updates are checked too.
    const grown = await kubectl(['patch', 'configmap', 'fits', '-n', 'vap-deny', '--type=merge', '-p', '{"data":{"k9":"v9"}}']);
    expect(grown.stderr).toContain('a configmap may hold at most 2 keys, this one holds 3');
  });

  test('Warn: the create goes through and kubectl prints the failure as a Warning', async () => {
    const res = await kubectl(['create', '-f', '-'], configMap('warned', 'vap-warn', keys(3)));
    expect(res.code).toBe(0);
    expect(res.stderr).toContain(`Warning: Validation failed for ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}-warn': a configmap may hold at most 2 keys, this one holds 3`);
    expect(await exists('warned', 'vap-warn')).toBe(true);
    const quiet = await kubectl(['create', '-f', '-'], configMap('quiet', 'vap-warn', keys(1)));
    expect(quiet.stderr).toBe('');
  });

  test('Audit: the create goes through without a warning; the admission service hands the failure and the policy’s annotations over for the audit event', async () => {
    const res = await adminRequest(env, 'POST', '/api/v1/namespaces/vap-audit/configmaps', configMap('audited', 'vap-audit', keys(3)));
    expect(res.status).toBe(201);
    expect(res.headers['warning']).toBeUndefined();
    expect(await exists('audited', 'vap-audit')).toBe(true);
    // The gateway writes no audit log yet: what it is handed for the request's audit event is read from the admission service, as the gateway asks it.
    const identity = env.internalPki.identities.gateway;
    const configMaps = { kind: { group: '', version: 'v1', kind: 'ConfigMap' }, resource: { group: '', version: 'v1', resource: 'configmaps' }, subresource: '' };
    const client = new AdmissionClient(env.addresses['admission'] as string, loadInternalTls({ caFile: env.internalPki.caCert, certFile: identity.cert, keyFile: identity.key }));
    try {
      const out = await client.admit({
        phase: 'validating',
        operation: 'CREATE',
        ...configMaps,
        namespace: 'vap-audit',
        name: 'audited-again',
        userInfo: { username: 'svc-admin', uid: '', groups: ['system:masters', 'system:authenticated'], extra: {} },
        object: JSON.parse(configMap('audited-again', 'vap-audit', keys(3))) as ApiObject,
        options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
        dryRun: false,
      });
      expect(out.warnings).toEqual([]);
      expect(out.validated).toBe(true);
      expect(JSON.parse(out.auditAnnotations['validation.policy.admission.svc.io/validation_failure'] ?? 'null')).toEqual([
        { message: 'a configmap may hold at most 2 keys, this one holds 3', policy: POLICY, binding: `${POLICY}-audit`, expressionIndex: 0, validationActions: ['Audit'] },
      ]);
      expect(out.auditAnnotations[`${POLICY}/key-count`]).toBe('3');
    } finally {
      client.close();
    }
  });

  test('a parameter that is not there refuses under parameterNotFoundAction Deny', async () => {
    const res = await kubectl(['create', '-f', '-'], configMap('any', 'vap-missing', keys(1)));
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain(`ValidatingAdmissionPolicy '${POLICY}' with binding '${POLICY}-missing' denied request`);
    expect(res.stderr).toContain('no params found for policy binding with `Deny` parameterNotFoundAction');
  });

  test('a parameter selector: the object must pass with every parameter it selects', async () => {
    // gold-a allows 3 keys, gold-b only 1.
    const two = await kubectl(['create', '-f', '-'], configMap('two', 'vap-selector', keys(2)));
    expect(two.stderr).toContain('a configmap may hold at most 1 keys, this one holds 2');
    const one = await kubectl(['create', '-f', '-'], configMap('one', 'vap-selector', keys(1)));
    expect(one.stderr).toBe('');
  });

  test('policies and bindings are never evaluated by policies, so a policy cannot lock them', async () => {
    const everything = { apiGroups: ['*'], apiVersions: ['*'], operations: ['*'], resources: ['*'] };
    await apply(simplePolicy('e2e-deny-labelled', everything, [{ expression: "!has(object.metadata.labels) || !('locked' in object.metadata.labels)", message: 'locked' }]));
    await apply({ apiVersion: GROUP, kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'e2e-deny-labelled' }, spec: { policyName: 'e2e-deny-labelled', validationActions: ['Deny'] } });
    await policiesInEffect();
    const cm = await kubectl(['create', '-f', '-'], configMap('locked', 'vap-sentinel', {}, { locked: 'yes' }));
    expect(cm.stderr).toContain("ValidatingAdmissionPolicy 'e2e-deny-labelled' with binding 'e2e-deny-labelled' denied request: locked");
    for (const kind of ['validatingadmissionpolicy', 'validatingadmissionpolicybinding']) {
      const res = await kubectl(['label', kind, 'e2e-deny-labelled', 'locked=yes']);
      expect(res.stderr).toBe('');
    }
    expect((await kubectl(['delete', 'validatingadmissionpolicybinding,validatingadmissionpolicy', 'e2e-deny-labelled'])).code).toBe(0);
  });

  test('status.typeChecking reports an expression that does not type-check against the matched kind', async () => {
    const pods = { apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] };
    await apply(simplePolicy('e2e-mistyped', pods, [{ expression: 'object.spec.priority > 1' }, { expression: "object.spec.priority > 'three'" }, { expression: 'object.spec.noSuchField == 1' }]));
    type Checked = { metadata: { generation: number }; status?: { observedGeneration?: number; typeChecking?: { expressionWarnings?: Array<{ fieldRef: string; warning: string }> } } };
    const checked = await until(async () => {
      const policy = JSON.parse((await kubectl(['get', 'validatingadmissionpolicy', 'e2e-mistyped', '-o', 'json'])).stdout) as Checked;
      return policy.status?.observedGeneration === policy.metadata.generation ? policy : undefined;
    }, 30_000);
    expect(checked.status?.typeChecking?.expressionWarnings).toEqual([
      { fieldRef: 'spec.validations[1].expression', warning: "/v1, Kind=Pod: found no matching overload for '_>_' applied to '(int, string)'" },
      { fieldRef: 'spec.validations[2].expression', warning: "/v1, Kind=Pod: undefined field 'noSuchField'" },
    ]);
  });

  test('bad input is a 422 naming the field: an expression that does not compile, one too costly for any input, an unknown action', async () => {
    const bad = (validations: unknown[]) =>
      adminRequest(
        env,
        'POST',
        '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies',
        JSON.stringify(simplePolicy('e2e-bad', CONFIGMAP_CREATES, validations)),
      );
    const syntax = await bad([{ expression: 'object.metadata.name ==' }]);
    expect(syntax.status).toBe(422);
    expect(JSON.stringify(syntax.json())).toContain('spec.validations[0].expression');
    // Three authorization checks (350,000 each) exceed the per-call limit whatever the input.
    const costly = await bad([{ expression: "authorizer.path('/a').check('get').allowed() && authorizer.path('/b').check('get').allowed() && authorizer.path('/c').check('get').allowed()" }]);
    expect(costly.status).toBe(422);
    expect(JSON.stringify(costly.json())).toMatch(/spec\.validations\[0\]\.expression.*exceeds the per-call cost limit/);
    const action = await adminRequest(
      env,
      'POST',
      '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicybindings',
      JSON.stringify({ apiVersion: GROUP, kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'e2e-bad' }, spec: { policyName: POLICY, validationActions: ['Shout'] } }),
    );
    expect(action.status).toBe(422);
    expect(JSON.stringify(action.json())).toContain('spec.validationActions[0]');
  });

  test('a changed parameter takes effect', async () => {
    const patched = await kubectl(['patch', 'configmap', 'limits', '-n', 'vap-params', '--type=merge', '-p', '{"data":{"maxKeys":"4"}}']);
    expect(patched.stderr).toBe('');
    await until(async () => {
      const res = await adminRequest(env, 'POST', '/api/v1/namespaces/vap-deny/configmaps?dryRun=All', configMap('four', 'vap-deny', keys(4)));
      return res.status === 201 ? true : undefined;
    }, 20_000);
    const five = await kubectl(['create', '-f', '-'], configMap('five', 'vap-deny', keys(5)));
    expect(five.stderr).toContain('a configmap may hold at most 4 keys, this one holds 5');
  });
});
