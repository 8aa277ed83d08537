import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest, type HttpResponse } from './http';
import { run, until } from './helpers';

/**
 * CEL validation rules of custom resources end to end, with kubectl: a
 * definition with rules (written `x-kubernetes-validations`, as clients
 * write them) is applied; objects that break a rule, and an update that
 * breaks a transition rule, are refused with 422 naming the field and the
 * message; a definition whose rule does not compile is refused naming the
 * rule. After each refusal nothing stored has changed.
 */

/** A definition (JSON, which kubectl reads as it reads YAML) whose spec carries rules at three levels. */
const crd = (name: string, rule: string, tags: Record<string, unknown> = { maxItems: 10 }): string => {
  const spec = {
    type: 'object',
    'x-kubernetes-validations': [{ rule, message: 'replicas must not exceed maxReplicas', fieldPath: '.replicas' }],
    properties: {
      replicas: { type: 'integer' },
      maxReplicas: { type: 'integer' },
      volumeId: { type: 'string', maxLength: 64, 'x-kubernetes-validations': [{ rule: 'self == oldSelf', message: 'volumeId is immutable' }] },
      tags: {
        type: 'array',
        items: { type: 'string', maxLength: 20 },
        'x-kubernetes-validations': [{ rule: "self.all(t, t.matches('^[a-z]+$'))", messageExpression: "'tags must be lower case, got ' + self.join(',')" }],
        ...tags,
      },
    },
  };
  const kind = `${name[0]?.toUpperCase() ?? ''}${name.slice(1)}`;
  return JSON.stringify({
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${name}s.rules.example.org` },
    spec: {
      group: 'rules.example.org',
      scope: 'Namespaced',
      names: { plural: `${name}s`, singular: name, kind },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec } } } }],
    },
  });
};

const pool = (name: string, spec: string): string => `apiVersion: rules.example.org/v1\nkind: Pool\nmetadata:\n  name: ${name}\n  namespace: default\nspec:\n${spec}`;

describe('CEL validation rules of custom resources end to end', () => {
  let env: Environment;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});
  const http = (method: string, p: string, body?: unknown): Promise<HttpResponse> => adminRequest(env, method, p, body === undefined ? undefined : JSON.stringify(body));
  const POOLS = '/apis/rules.example.org/v1/namespaces/default/pools';

  beforeAll(async () => {
    env = await startEnvironment();
    const applied = await kubectl(['apply', '-f', '-'], crd('pool', 'self.replicas <= self.maxReplicas'));
    expect([applied.code, applied.stderr]).toEqual([0, '']);
    expect((await kubectl(['wait', '--for=condition=Established', '--timeout=20s', 'crd/pools.rules.example.org'])).code).toBe(0);
    await until(async () => ((await http('GET', POOLS)).status === 200 ? true : undefined), 10_000);
  }, 120_000);

  afterAll(async () => {
    await env?.stop(true);
  });

  test('an object breaking a rule is refused with 422 naming the field and the message; nothing is stored', async () => {
    const refused = await kubectl(['apply', '-f', '-'], pool('p1', '  replicas: 5\n  maxReplicas: 3\n'));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('The Pool "p1" is invalid: spec.replicas: Invalid value: replicas must not exceed maxReplicas');
    expect((await kubectl(['get', 'pool', 'p1'])).stderr).toContain('NotFound');
    // The same through HTTP: a 422 Status whose cause names the field.
    const response = await http('POST', POOLS, { apiVersion: 'rules.example.org/v1', kind: 'Pool', metadata: { name: 'p1' }, spec: { replicas: 1, maxReplicas: 2, tags: ['ok', 'Bad'] } });
    expect(response.status).toBe(422);
    const status = response.json() as { reason: string; details: { causes: Array<{ field: string; message: string; reason: string }> } };
    expect(status.reason).toBe('Invalid');
    expect(status.details.causes).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.tags', message: 'Invalid value: tags must be lower case, got ok,Bad' }]);
    expect((await http('GET', `${POOLS}/p1`)).status).toBe(404);
  });

  test('an object keeping the rules is created; an update breaking a transition rule is refused and the stored object stays', async () => {
    // Updates go through server-side apply: kubectl's client-side apply of a changed custom object sends a strategic merge patch, which this server refuses (415).
    const created = await kubectl(['apply', '--server-side', '-f', '-'], pool('p2', '  replicas: 1\n  maxReplicas: 3\n  volumeId: vol-a\n'));
    expect([created.code, created.stderr, created.stdout.trim()]).toEqual([0, '', 'pool.rules.example.org/p2 serverside-applied']);
    const before = (await http('GET', `${POOLS}/p2`)).json() as { metadata: { resourceVersion: string } };
    const refused = await kubectl(['apply', '--server-side', '-f', '-'], pool('p2', '  replicas: 2\n  maxReplicas: 3\n  volumeId: vol-b\n'));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('spec.volumeId: Invalid value: "vol-b": volumeId is immutable');
    const after = (await http('GET', `${POOLS}/p2`)).json() as { metadata: { resourceVersion: string }; spec: { replicas: number; volumeId: string } };
    expect([after.metadata.resourceVersion, after.spec.replicas, after.spec.volumeId]).toEqual([before.metadata.resourceVersion, 1, 'vol-a']);
    // The same field unchanged passes the transition rule.
    const updated = await kubectl(['apply', '--server-side', '-f', '-'], pool('p2', '  replicas: 2\n  maxReplicas: 3\n  volumeId: vol-a\n'));
    expect([updated.code, updated.stdout.trim()]).toEqual([0, 'pool.rules.example.org/p2 serverside-applied']);
    expect(((await http('GET', `${POOLS}/p2`)).json() as { spec: { replicas: number } }).spec.replicas).toBe(2);
  });

  test('a definition whose rule does not compile is refused by kubectl apply naming the rule; it is not stored', async () => {
    const refused = await kubectl(['apply', '-f', '-'], crd('tank', 'self.replicas <= self.maxReplica'));
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('spec.versions[0].schema.openAPIV3Schema.properties[spec].x-svc-validations[0].rule: Invalid value: "self.replicas <= self.maxReplica": compilation failed: undefined field \'maxReplica\'');
    expect((await kubectl(['get', 'crd', 'tanks.rules.example.org'])).stderr).toContain('NotFound');
  });

  test('a definition whose rule is too costly for its unbounded schema is refused, asking for maxItems', async () => {
    // Without maxItems, a rule comparing every pair of tags could cost more than a trillion.
    const costly = crd('vat', 'self.replicas <= self.maxReplicas', { 'x-kubernetes-validations': [{ rule: 'self.all(a, self.all(b, a == b || a != b))' }] });
    expect(costly).not.toContain('maxItems');
    const refused = await kubectl(['apply', '-f', '-'], costly);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[tags].x-svc-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems');
    expect((await kubectl(['get', 'crd', 'vats.rules.example.org'])).stderr).toContain('NotFound');
  });
});
