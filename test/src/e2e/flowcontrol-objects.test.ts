import { ProtobufObjectCodec } from '@svc/protobuf-codec';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest } from './http';

/**
 * The API Priority and Fairness objects (flowcontrol.svc.io/v1) against the
 * whole system: the controller-manager's flowcontrol-bootstrap puts the
 * default configuration in place and keeps it, the kinds default and
 * validate as the original's v1, and they are served in protobuf.
 */
describe('flowcontrol objects', () => {
  let env: Environment;
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args], input !== undefined ? { input } : {});
  const BASE = '/apis/flowcontrol.svc.io/v1';
  const names = async (resource: string): Promise<string[]> => (await kubectl(['get', resource, '-o', 'name'])).stdout.split('\n').filter(Boolean).sort();

  beforeAll(async () => {
    env = await startEnvironment();
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('the mandatory and suggested configuration exists after start, shown with the original columns', async () => {
    const levels = await until(async () => {
      const listed = await names('prioritylevelconfigurations');
      return listed.length >= 8 ? listed : undefined;
    });
    expect(levels).toEqual(['catch-all', 'exempt', 'global-default', 'leader-election', 'node-high', 'system', 'workload-high', 'workload-low'].map((n) => `prioritylevelconfiguration.flowcontrol.svc.io/${n}`));
    const schemas = await until(async () => {
      const listed = await names('flowschemas');
      return listed.length >= 11 ? listed : undefined;
    });
    expect(schemas).toEqual(expect.arrayContaining(['exempt', 'catch-all', 'probes', 'system-nodes', 'global-default', 'service-accounts'].map((n) => `flowschema.flowcontrol.svc.io/${n}`)));
    const table = await kubectl(['get', 'flowschemas']);
    expect(table.code).toBe(0);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+PRIORITYLEVEL\s+MATCHINGPRECEDENCE\s+DISTINGUISHERMETHOD\s+AGE\s+MISSINGPL$/);
    // MissingPL is "?" until a gateway has written the schema's Dangling condition, then False.
    expect(table.stdout).toMatch(/^exempt\s+exempt\s+1\s+<none>\s+\S+\s+(\?|False)$/m);
    expect(table.stdout).toMatch(/^catch-all\s+catch-all\s+10000\s+ByUser\s+/m);
    const levelTable = await kubectl(['get', 'prioritylevelconfigurations']);
    expect(levelTable.stdout.split('\n')[0]).toMatch(/^NAME\s+TYPE\s+NOMINALCONCURRENCYSHARES\s+QUEUES\s+HANDSIZE\s+QUEUELENGTHLIMIT\s+AGE$/);
    expect(levelTable.stdout).toMatch(/^leader-election\s+Limited\s+10\s+16\s+4\s+50\s+/m);
    expect(levelTable.stdout).toMatch(/^exempt\s+Exempt\s+<none>\s+<none>\s+<none>\s+<none>\s+/m);
    const exempt = JSON.parse((await kubectl(['get', 'prioritylevelconfiguration', 'exempt', '-o', 'json'])).stdout);
    expect(exempt.metadata.annotations['apf.svc.io/autoupdate-spec']).toBe('true');
  });

  test('a deleted suggested object comes back; a user spec annotated false is kept', async () => {
    expect((await kubectl(['delete', 'flowschema', 'service-accounts'])).code).toBe(0);
    const back = await until(async () => {
      const got = await kubectl(['get', 'flowschema', 'service-accounts', '-o', 'json']);
      return got.code === 0 ? JSON.parse(got.stdout) : undefined;
    });
    expect(back.spec.matchingPrecedence).toBe(9000);
    const patch = JSON.stringify({ metadata: { annotations: { 'apf.svc.io/autoupdate-spec': 'false' } }, spec: { matchingPrecedence: 9001 } });
    expect((await kubectl(['patch', 'flowschema', 'global-default', '--type=merge', '-p', patch])).code).toBe(0);
    // A mandatory one is put back even when annotated false.
    const mandatory = JSON.stringify({ metadata: { annotations: { 'apf.svc.io/autoupdate-spec': 'false' } } });
    expect((await kubectl(['patch', 'prioritylevelconfiguration', 'catch-all', '--type=merge', '-p', mandatory])).code).toBe(0);
    await until(async () => {
      const got = JSON.parse((await kubectl(['get', 'prioritylevelconfiguration', 'catch-all', '-o', 'json'])).stdout);
      return got.metadata.annotations['apf.svc.io/autoupdate-spec'] === 'true' ? true : undefined;
    });
    const kept = JSON.parse((await kubectl(['get', 'flowschema', 'global-default', '-o', 'json'])).stdout);
    expect([kept.spec.matchingPrecedence, kept.metadata.annotations['apf.svc.io/autoupdate-spec']]).toEqual([9001, 'false']);
  });

  test('an invalid FlowSchema is 422 naming the field; a mandatory spec cannot be changed', async () => {
    const bad = {
      apiVersion: 'flowcontrol.svc.io/v1',
      kind: 'FlowSchema',
      metadata: { name: 'bad' },
      spec: { priorityLevelConfiguration: { name: 'global-default' }, matchingPrecedence: 1, rules: [{ subjects: [{ kind: 'User', user: { name: 'u' } }], nonResourceRules: [{ verbs: ['get'], nonResourceURLs: ['healthz'] }] }] },
    };
    const res = await adminRequest(env, 'POST', `${BASE}/flowschemas`, JSON.stringify(bad));
    expect(res.status).toBe(422);
    const status = res.json() as { reason: string; details: { causes: Array<{ field: string }> } };
    expect(status.reason).toBe('Invalid');
    expect(status.details.causes.map((c) => c.field)).toEqual(['spec.matchingPrecedence', 'spec.rules[0].nonResourceRules[0].nonResourceURLs[0]']);
    const fixed = await adminRequest(env, 'PATCH', `${BASE}/prioritylevelconfigurations/catch-all`, JSON.stringify({ spec: { limited: { nominalConcurrencyShares: 50 } } }), { 'content-type': 'application/merge-patch+json' });
    expect(fixed.status).toBe(422);
    expect(fixed.body).toContain("spec of 'catch-all' must equal the fixed value");
  });

  test('nominalConcurrencyShares: an explicit 0 is kept, an unspecified one becomes 30', async () => {
    const level = (name: string, limited: Record<string, unknown>) =>
      JSON.stringify({ apiVersion: 'flowcontrol.svc.io/v1', kind: 'PriorityLevelConfiguration', metadata: { name }, spec: { type: 'Limited', limited: { limitResponse: { type: 'Queue', queuing: {} }, ...limited } } });
    const zero = await adminRequest(env, 'POST', `${BASE}/prioritylevelconfigurations`, level('zero-shares', { nominalConcurrencyShares: 0 }));
    expect(zero.status).toBe(201);
    const unset = await adminRequest(env, 'POST', `${BASE}/prioritylevelconfigurations`, level('default-shares', {}));
    expect(unset.status).toBe(201);
    const limitedOf = (body: Record<string, unknown>) => (body['spec'] as { limited: Record<string, unknown> }).limited;
    expect(limitedOf(zero.json())['nominalConcurrencyShares']).toBe(0);
    expect(limitedOf(unset.json())).toEqual({ nominalConcurrencyShares: 30, lendablePercent: 0, limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 8, queueLengthLimit: 50 } } });
    const stored = JSON.parse((await kubectl(['get', 'prioritylevelconfiguration', 'zero-shares', '-o', 'json'])).stdout);
    expect(stored.spec.limited.nominalConcurrencyShares).toBe(0);
  });

  test('protobuf get and list', async () => {
    const codec = new ProtobufObjectCodec();
    const got = await adminRequest(env, 'GET', `${BASE}/prioritylevelconfigurations/exempt`, undefined, { accept: 'application/vnd.svc.protobuf' });
    expect(got.status).toBe(200);
    expect(codec.decode(got.raw)).toMatchObject({ kind: 'PriorityLevelConfiguration', metadata: { name: 'exempt' }, spec: { type: 'Exempt', exempt: { nominalConcurrencyShares: 0, lendablePercent: 0 } } });
    const list = await adminRequest(env, 'GET', `${BASE}/flowschemas`, undefined, { accept: 'application/vnd.svc.protobuf' });
    const decoded = codec.decode(list.raw) as { kind: string; items: Array<{ metadata: { name: string }; spec: { matchingPrecedence: number } }> };
    expect(decoded.kind).toBe('FlowSchemaList');
    expect(decoded.items.find((i) => i.metadata.name === 'probes')?.spec.matchingPrecedence).toBe(2);
  });
});
