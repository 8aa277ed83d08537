import * as fs from 'node:fs';
import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { adminRequest, type HttpResponse } from './http';

/**
 * Hostile object bodies and subresource writes that used to crash a
 * request (500), store invalid data or do what the original refuses: nulls
 * in typed lists, metadata of the wrong type in a custom resource,
 * multi-byte annotations past the limit, a client-set generation, pod
 * resources and env references, an Eviction without a name, a token
 * lifetime of 2^32, a namespace phase, patches that deepen an object past
 * the body limit, RBAC subjects and aggregation selectors. Each gets its
 * Status (code, reason, the field), and what was stored stays as it was.
 */
describe('hostile object bodies and subresources', () => {
  let env: Environment;
  const ns = '/api/v1/namespaces/default';
  const widgets = '/apis/example.com/v1/namespaces/default/widgets';
  const rbac = '/apis/rbac.authorization.k8s.io/v1';
  const MERGE = { 'content-type': 'application/merge-patch+json' };
  const JSON_PATCH = { 'content-type': 'application/json-patch+json' };
  const stored = new Map<string, string>();
  const post = (url: string, body: unknown) => adminRequest(env, 'POST', url, JSON.stringify(body));
  const expectStatus = (res: HttpResponse, code: number, reason: string, message: RegExp, field?: string): void => {
    expect(`${res.status} ${res.body}`).toMatch(new RegExp(`^${code} `));
    expect(res.json()).toMatchObject({ kind: 'Status', status: 'Failure', code, reason });
    expect(String(res.json()['message'])).toMatch(message);
    if (field !== undefined) expect((res.json()['details'] as { causes: Array<{ field: string }> }).causes.map((c) => c.field)).toContain(field);
  };
  /** Remembers an object as stored, for the last test to compare. */
  const keep = async (url: string): Promise<void> => {
    const res = await adminRequest(env, 'GET', url);
    expect(res.status).toBe(200);
    stored.set(url, res.body);
  };

  beforeAll(async () => {
    env = await startEnvironment({ crds: [path.join(__dirname, '..', '..', 'fixtures', 'crds')] });
    expect((await post(`${ns}/configmaps`, { metadata: { name: 'keep', generation: 3 }, data: { k: 'v' } })).status).toBe(201);
    expect((await post(widgets, { apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'keep' }, spec: { size: 2, extra: {} } })).status).toBe(201);
    expect((await post(`${ns}/pods`, { metadata: { name: 'keep' }, spec: { containers: [{ name: 'c', image: 'busybox' }] } })).status).toBe(201);
    expect((await post(`${ns}/serviceaccounts`, { metadata: { name: 'keep' } })).status).toBe(201);
    expect((await post('/api/v1/namespaces', { metadata: { name: 'keep' } })).status).toBe(201);
    for (const url of [`${ns}/configmaps/keep`, `${widgets}/keep`, `${ns}/pods/keep`, '/api/v1/namespaces/keep']) await keep(url);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('a null in a typed list is its zero value, as Go decodes it: validation refuses it (422), nothing fails (500)', async () => {
    expectStatus(await post(`${ns}/configmaps`, { metadata: { name: 'nulls', finalizers: [null] } }), 422, 'Invalid', /metadata\.finalizers: Invalid value: "": name part must be non-empty/, 'metadata.finalizers');
    expectStatus(await post(`${ns}/configmaps`, { metadata: { name: 'nulls', ownerReferences: [null] } }), 422, 'Invalid', /metadata\.ownerReferences\.uid: Invalid value: "": uid must not be empty/, 'metadata.ownerReferences.uid');
    expectStatus(await adminRequest(env, 'PATCH', `${ns}/configmaps/keep`, JSON.stringify({ metadata: { finalizers: [null] } }), MERGE), 422, 'Invalid', /metadata\.finalizers/);
    // A null label value is the empty string.
    const created = await post(`${ns}/configmaps`, { metadata: { name: 'nulls', labels: { a: null } }, data: { k: null } });
    expect(created.status).toBe(201);
    expect(created.json()).toMatchObject({ metadata: { labels: { a: '' } }, data: { k: '' } });
  });

  test("a custom resource's metadata of the wrong type is 400 naming the field, not 500", async () => {
    const widget = (metadata: Record<string, unknown>) => ({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'typed', ...metadata }, spec: { size: 1 } });
    expectStatus(await post(widgets, widget({ ownerReferences: 0 })), 400, 'BadRequest', /^Widget in version "v1" cannot be handled as a Widget: json: cannot unmarshal number into Go struct field ObjectMeta\.metadata\.ownerReferences/, 'metadata.ownerReferences');
    expectStatus(await post(widgets, widget({ finalizers: {} })), 400, 'BadRequest', /metadata\.finalizers/, 'metadata.finalizers');
    expectStatus(await adminRequest(env, 'PATCH', `${widgets}/keep`, JSON.stringify({ metadata: { ownerReferences: [1] } }), MERGE), 400, 'BadRequest', /metadata\.ownerReferences/);
    expectStatus(await post(widgets, widget({ finalizers: [null] })), 422, 'Invalid', /metadata\.finalizers: Invalid value: ""/, 'metadata.finalizers');
    expect((await adminRequest(env, 'GET', `${widgets}/typed`)).status).toBe(404);
  });

  test('annotations are limited to 256 KiB counted in bytes, not characters', async () => {
    const annotations = { a: 'é'.repeat(140_000) };
    expect(Buffer.byteLength(JSON.stringify(annotations))).toBeLessThan(3 * 1024 * 1024);
    expectStatus(await post(`${ns}/configmaps`, { metadata: { name: 'wide', annotations } }), 422, 'Invalid', /metadata\.annotations: Too long: must have at most 262144 bytes/, 'metadata.annotations');
    expectStatus(await adminRequest(env, 'PATCH', `${ns}/configmaps/keep`, JSON.stringify({ metadata: { annotations } }), MERGE), 422, 'Invalid', /metadata\.annotations: Too long/);
  });

  test('garbage managedFields are not kept, and a write owning no field stores no managedFields (not an empty list)', async () => {
    const created = await post(`${ns}/configmaps`, { metadata: { name: 'unowned', managedFields: [{ manager: 'm', operation: 'Bogus', fieldsType: 'FieldsV9' }] } });
    expect(created.status).toBe(201);
    expect(created.json()['metadata']).not.toHaveProperty('managedFields');
  });

  test('a negative generation is 422; an update cannot change the generation', async () => {
    expectStatus(await post(`${ns}/configmaps`, { metadata: { name: 'negative', generation: -1 } }), 422, 'Invalid', /metadata\.generation: Invalid value: -1: must be greater than or equal to 0/, 'metadata.generation');
    const patched = await adminRequest(env, 'PATCH', `${ns}/configmaps/keep`, JSON.stringify({ metadata: { generation: -5 } }), MERGE);
    expect(patched.status).toBe(200);
    expect(patched.json()).toMatchObject({ metadata: { generation: 3 } });
  });

  test('only a DELETE marks an object for deletion: an update setting deletionTimestamp or deletionGracePeriodSeconds is 422', async () => {
    const marked = await adminRequest(env, 'PATCH', `${ns}/configmaps/keep`, JSON.stringify({ metadata: { deletionTimestamp: '2030-01-01T00:00:00Z' } }), MERGE);
    expectStatus(marked, 422, 'Invalid', /metadata\.deletionTimestamp: Invalid value: "2030-01-01T00:00:00Z": field is immutable/, 'metadata.deletionTimestamp');
    expectStatus(await adminRequest(env, 'PATCH', `${ns}/configmaps/keep`, JSON.stringify({ metadata: { deletionGracePeriodSeconds: 5 } }), MERGE), 422, 'Invalid', /metadata\.deletionGracePeriodSeconds: Invalid value: 5: field is immutable/);
  });

  test('pod resources and env references are validated as the original does', async () => {
    const pod = (container: Record<string, unknown>) => ({ metadata: { name: 'invalid' }, spec: { containers: [{ name: 'c', image: 'busybox', ...container }] } });
    expectStatus(
      await post(`${ns}/pods`, pod({ resources: { limits: { memory: '1Gi' }, requests: { memory: '2Gi' } } })),
      422,
      'Invalid',
      /spec\.containers\[0\]\.resources\.requests: Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi/,
      'spec.containers[0].resources.requests',
    );
    expectStatus(await post(`${ns}/pods`, pod({ resources: { limits: { 'bad/resource/name': '1' } } })), 422, 'Invalid', /doesn't follow extended resource name standard/, 'spec.containers[0].resources.limits[bad/resource/name]');
    expectStatus(await post(`${ns}/pods`, pod({ env: [{ name: 'A', valueFrom: { secretKeyRef: { key: 'k' } } }] })), 422, 'Invalid', /secretKeyRef\.name: Invalid value: ""/, 'spec.containers[0].env[0].valueFrom.secretKeyRef.name');
    expectStatus(await post(`${ns}/pods`, pod({ env: [{ name: 'A', valueFrom: { fieldRef: { fieldPath: 'spec.bogus' } } }] })), 422, 'Invalid', /Unsupported value: "spec\.bogus"/, 'spec.containers[0].env[0].valueFrom.fieldRef.fieldPath');
    expect((await adminRequest(env, 'GET', `${ns}/pods/invalid`)).status).toBe(404);
  });

  test('an Eviction without a name is 400 and evicts nothing', async () => {
    expectStatus(await post(`${ns}/pods/keep/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction' }), 400, 'BadRequest', /^name in URL does not match name in Eviction object$/);
    expectStatus(await post(`${ns}/pods/keep/eviction`, { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: '' } }), 400, 'BadRequest', /name in URL does not match/);
    expect((await adminRequest(env, 'GET', `${ns}/pods/keep`)).status).toBe(200);
  });

  test('a token lifetime beyond 2^32 - 1 seconds is 422, the largest is granted; a body naming another account is 422', async () => {
    const token = (expirationSeconds: number) => post(`${ns}/serviceaccounts/keep/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: { expirationSeconds } });
    expectStatus(await token(2 ** 32), 422, 'Invalid', /spec\.expirationSeconds: Invalid value: 4294967296: may not specify a duration larger than 2\^32 seconds/, 'spec.expirationSeconds');
    expect((await token(2 ** 32 - 1)).status).toBe(201);
    const named = (metadata: Record<string, string>) => post(`${ns}/serviceaccounts/keep/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', metadata, spec: {} });
    expectStatus(await named({ name: 'other' }), 422, 'Invalid', /^TokenRequest\.authentication\.svc\.io "keep" is invalid: metadata\.name: Invalid value: "other": must match the service account name if specified$/, 'metadata.name');
    expectStatus(await named({ namespace: 'elsewhere' }), 422, 'Invalid', /metadata\.namespace: Invalid value: "elsewhere": must match the service account namespace if specified/, 'metadata.namespace');
  });

  test("a namespace's phase can only be Active while it is not being deleted", async () => {
    const body = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'keep' }, status: { phase: 'Bogus' } };
    expectStatus(await adminRequest(env, 'PUT', '/api/v1/namespaces/keep/status', JSON.stringify(body)), 422, 'Invalid', /status\.Phase: Invalid value: "Bogus": may only be 'Active' if `deletionTimestamp` is empty/, 'status.Phase');
    expectStatus(await adminRequest(env, 'PATCH', '/api/v1/namespaces/keep/status', JSON.stringify({ status: { phase: 'Terminating' } }), MERGE), 422, 'Invalid', /status\.Phase/);
  });

  test('status writes report valid addresses: pod IPs, load balancer ingress', async () => {
    expectStatus(await adminRequest(env, 'PATCH', `${ns}/pods/keep/status`, JSON.stringify({ status: { podIP: 'not-an-ip' } }), MERGE), 422, 'Invalid', /status\.podIP: Invalid value: "not-an-ip": must be a valid IP address/, 'status.podIP');
    expectStatus(await adminRequest(env, 'PATCH', `${ns}/pods/keep/status`, JSON.stringify({ status: { hostIPs: [{ ip: '10.0.0.300' }] } }), MERGE), 422, 'Invalid', /status\.hostIPs\[0\]/, 'status.hostIPs[0]');
    expect((await post(`${ns}/services`, { metadata: { name: 'lb' }, spec: { type: 'LoadBalancer', ports: [{ port: 80 }] } })).status).toBe(201);
    const ingress = (entry: Record<string, string>) => JSON.stringify({ status: { loadBalancer: { ingress: [entry] } } });
    expectStatus(await adminRequest(env, 'PATCH', `${ns}/services/lb/status`, ingress({ ip: 'garbage' }), MERGE), 422, 'Invalid', /status\.loadBalancer\.ingress\[0\]\.ip: Invalid value: "garbage"/, 'status.loadBalancer.ingress[0].ip');
    expect((await adminRequest(env, 'PATCH', `${ns}/services/lb/status`, ingress({ ip: '203.0.113.7' }), MERGE)).status).toBe(200);
  });

  test('a patch whose result nests deeper than a body may is 400, though each operation is within the limit', async () => {
    let value: unknown = 1;
    for (let i = 0; i < 200; i++) value = { a: value };
    const operations = [
      { op: 'add', path: '/spec/extra/x', value },
      { op: 'add', path: `/spec/extra/x${'/a'.repeat(199)}`, value },
    ];
    expectStatus(await adminRequest(env, 'PATCH', `${widgets}/keep`, JSON.stringify(operations), JSON_PATCH), 400, 'BadRequest', /^the patched object is nested deeper than the limit of 256 levels$/);
  });

  test('RBAC: a service account subject needs a valid name, aggregation selectors valid keys', async () => {
    const roleRef = { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'r' };
    expectStatus(await post(`${rbac}/namespaces/default/rolebindings`, { metadata: { name: 'b' }, roleRef, subjects: [{ kind: 'ServiceAccount', name: 'Bad Name' }] }), 422, 'Invalid', /subjects\[0\]\.name: Invalid value: "Bad Name"/, 'subjects[0].name');
    const aggregationRule = { clusterRoleSelectors: [{ matchLabels: { 'bad key!': 'x' } }] };
    expectStatus(await post(`${rbac}/clusterroles`, { metadata: { name: 'agg' }, aggregationRule }), 422, 'Invalid', /aggregationRule\.clusterRoleSelectors\[0\]\.matchLabels/, 'aggregationRule.clusterRoleSelectors[0].matchLabels');
  });

  test('nothing stored changed but the ignored generation patch, no request failed with 500, and the gateway is ready', async () => {
    for (const [url, before] of stored) {
      const now = (await adminRequest(env, 'GET', url)).json();
      const was = JSON.parse(before) as Record<string, unknown>;
      // The configmap took one valid write (a generation patch that changed nothing but ownership).
      const strip = (o: Record<string, unknown>) => ({ ...o, metadata: { ...(o['metadata'] as object), resourceVersion: undefined, managedFields: undefined } });
      expect([url, strip(now)]).toEqual([url, strip(was)]);
    }
    expect((await adminRequest(env, 'GET', '/readyz')).status).toBe(200);
    const failures = fs.readFileSync(path.join(env.dir, 'logs', 'gateway.log'), 'utf8').split('\n').filter((line) => line.includes('"code":500'));
    expect(failures).toEqual([]);
  });
});
