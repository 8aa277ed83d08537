import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { randomBytes } from 'node:crypto';
import { ensureServingCertificate, freePort, startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';
import { adminRequest, tokenRequest } from './http';

/**
 * The audit log end to end, with the repository's default policy
 * (deploy/audit-policy.yaml), a log file and an audit webhook this test
 * serves: a create's event carries the response's Audit-Id, its object and
 * user; a forbidden request is logged with the decision `forbid`; a
 * Secret's value is written nowhere; the webhook receives EventList
 * batches; kubectl's requests are logged as kubectl's; a deprecated
 * version and admission policies annotate their events. A second system
 * whose webhook does not answer serves requests as usual, and a policy
 * that cannot be read refuses the gateway's start.
 */

const REPO = path.resolve(__dirname, '../../..');
const DEFAULT_POLICY = path.join(REPO, 'deploy/audit-policy.yaml');

interface AuditEvent {
  level: string;
  auditID: string;
  stage: string;
  verb: string;
  requestURI: string;
  userAgent?: string;
  user: { username?: string; groups?: string[] };
  impersonatedUser?: { username?: string };
  objectRef?: { resource?: string; namespace?: string; name?: string; apiGroup?: string; apiVersion?: string };
  responseStatus?: { code: number; reason?: string; message?: string };
  requestObject?: unknown;
  responseObject?: unknown;
  annotations?: Record<string, string>;
}

function readEvents(file: string): AuditEvent[] {
  if (!fs.existsSync(file)) return [];
  return fs
    .readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as AuditEvent);
}

/** A webhook kubeconfig pointing at `url`, trusting `caFile`. */
function webhookKubeconfig(file: string, url: string, caFile: string): void {
  const config = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{ name: 'audit', cluster: { server: url, 'certificate-authority': caFile } }],
    users: [{ name: 'gateway', user: {} }],
    contexts: [{ name: 'audit', context: { cluster: 'audit', user: 'gateway' } }],
    'current-context': 'audit',
  };
  fs.writeFileSync(file, JSON.stringify(config));
}

const deprecatedCrd = {
  apiVersion: 'apiextensions.svc.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.audit.example.com' },
  spec: {
    group: 'audit.example.com',
    scope: 'Namespaced',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
    versions: [
      { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
      { name: 'v1beta1', served: true, storage: false, deprecated: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
    ],
  },
};

describe('audit', () => {
  let env: Environment;
  let dir: string;
  let logFile: string;
  const batches: Array<{ kind: string; apiVersion: string; items: AuditEvent[] }> = [];
  let webhook: https.Server;
  const nobodyToken = randomBytes(16).toString('hex');
  const kubectl = (args: string[], input?: string) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, `--cache-dir=${path.join(env.dir, 'kubectl-cache')}`, ...args], input === undefined ? {} : { input });
  /** The events of the request with this Audit-Id, once its ResponseComplete is written. */
  const eventsOf = (auditID: string): Promise<AuditEvent[]> =>
    until(() => {
      const events = readEvents(logFile).filter((e) => e.auditID === auditID);
      return events.some((e) => e.stage === 'ResponseComplete' || e.stage === 'Panic') ? events : undefined;
    }, 10000);

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-audit-'));
    logFile = path.join(dir, 'logs', 'audit.log');
    const serving = await ensureServingCertificate(path.join(dir, 'webhook-pki'), ['127.0.0.1']);
    webhook = https.createServer({ cert: fs.readFileSync(serving.cert), key: fs.readFileSync(serving.key) }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        batches.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as (typeof batches)[number]);
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    const port = await freePort();
    await new Promise<void>((resolve) => webhook.listen(port, '127.0.0.1', resolve));
    const webhookConfig = path.join(dir, 'audit-webhook.kubeconfig');
    webhookKubeconfig(webhookConfig, `https://127.0.0.1:${port}/audit`, serving.caCert);
    const tokens = path.join(dir, 'tokens.csv');
    fs.writeFileSync(tokens, `${nobodyToken},nobody,uid-nobody,""\n`);
    const crdFile = path.join(dir, 'crd.json');
    fs.writeFileSync(crdFile, JSON.stringify(deprecatedCrd));
    env = await startEnvironment({
      dir: path.join(dir, 'env'),
      tokenAuthFile: tokens,
      crds: [crdFile],
      audit: { policyFile: DEFAULT_POLICY, logPath: logFile, webhookConfigFile: webhookConfig, args: ['--audit-webhook-batch-max-wait=500ms', '--audit-webhook-batch-max-size=50'] },
    });
  });

  afterAll(async () => {
    await env?.stop(true);
    await new Promise<void>((resolve) => (webhook ? webhook.close(() => resolve()) : resolve()));
  });

  test('a create’s ResponseComplete has the response’s Audit-Id, the object and the user; its body is not logged for a ConfigMap', async () => {
    const res = await adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'audited' }, data: { colour: 'teal-42' } }));
    expect(res.status).toBe(201);
    const auditID = res.headers['audit-id'] as string;
    expect(auditID).toMatch(/^[0-9a-f-]{36}$/);
    const events = await eventsOf(auditID);
    // The default policy leaves RequestReceived out.
    expect(events.map((e) => e.stage)).toEqual(['ResponseComplete']);
    expect(events[0]).toMatchObject({
      level: 'Metadata',
      verb: 'create',
      requestURI: '/api/v1/namespaces/default/configmaps',
      user: { username: 'svc-admin', groups: expect.arrayContaining(['system:masters']) },
      objectRef: { resource: 'configmaps', namespace: 'default', name: 'audited', apiVersion: 'v1' },
      responseStatus: { code: 201 },
      annotations: { 'authorization.svc.io/decision': 'allow' },
    });
    expect(JSON.stringify(events)).not.toContain('teal-42');
  });

  test('a forbidden request is logged with the decision forbid and its Status', async () => {
    const res = await tokenRequest(env, 'GET', '/api/v1/namespaces/default/configmaps/audited', nobodyToken);
    expect(res.status).toBe(403);
    const [event] = await eventsOf(res.headers['audit-id'] as string);
    expect(event).toMatchObject({
      stage: 'ResponseComplete',
      verb: 'get',
      user: { username: 'nobody' },
      objectRef: { resource: 'configmaps', namespace: 'default', name: 'audited' },
      responseStatus: { code: 403, reason: 'Forbidden' },
      annotations: { 'authorization.svc.io/decision': 'forbid' },
    });
  });

  test('a request refused with 401 is logged without a user', async () => {
    const res = await tokenRequest(env, 'GET', '/api/v1/namespaces/default/configmaps', 'not-a-token');
    expect(res.status).toBe(401);
    const event = await until(() => readEvents(logFile).find((e) => e.auditID === res.headers['audit-id']), 10000);
    expect(event).toMatchObject({ stage: 'ResponseStarted', user: {}, responseStatus: { code: 401, message: 'Authentication failed, attempted: bearer' } });
  });

  test('a Secret’s value appears nowhere in the log under the default policy', async () => {
    const canary = `s3cr3t-${randomBytes(12).toString('hex')}`;
    const canaryB64 = Buffer.from(canary).toString('base64');
    const base = '/api/v1/namespaces/default/secrets';
    const created = await adminRequest(env, 'POST', base, JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'db' }, data: { password: canaryB64 }, stringData: { again: canary } }));
    expect(created.status).toBe(201);
    const read = await adminRequest(env, 'GET', `${base}/db`);
    expect(read.body).toContain(canaryB64);
    const patched = await adminRequest(env, 'PATCH', `${base}/db`, JSON.stringify({ stringData: { third: canary } }), { 'content-type': 'application/merge-patch+json' });
    expect(patched.status).toBe(200);
    for (const r of [created, read, patched]) await eventsOf(r.headers['audit-id'] as string);
    const text = fs.readFileSync(logFile, 'utf8');
    expect(text).toContain('"name":"db"');
    expect(text).not.toContain(canary);
    expect(text).not.toContain(canaryB64);
  });

  test('other writes are logged with their request object (level Request); reads of events and health probes are not logged', async () => {
    const created = await adminRequest(env, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'audit-ns', labels: { team: 'blue' } } }));
    expect(created.status).toBe(201);
    const [event] = await eventsOf(created.headers['audit-id'] as string);
    expect(event).toMatchObject({ level: 'Request', requestObject: { metadata: { name: 'audit-ns', labels: { team: 'blue' } } } });
    expect(event).not.toHaveProperty('responseObject');
    const quiet = [await adminRequest(env, 'GET', '/healthz'), await adminRequest(env, 'GET', '/api/v1/namespaces/default/events'), await adminRequest(env, 'GET', '/apis')];
    // Written after these: once it is there, they would be too.
    const marker = await adminRequest(env, 'GET', '/api/v1/namespaces/default/configmaps/audited');
    await eventsOf(marker.headers['audit-id'] as string);
    const ids = new Set(readEvents(logFile).map((e) => e.auditID));
    for (const r of quiet) expect(ids.has(r.headers['audit-id'] as string)).toBe(false);
  });

  test('a watch is logged when it starts and when it ends', async () => {
    const res = await adminRequest(env, 'GET', '/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1');
    expect(res.status).toBe(200);
    const events = await eventsOf(res.headers['audit-id'] as string);
    expect(events.map((e) => [e.stage, e.verb, e.responseStatus?.code])).toEqual([
      ['ResponseStarted', 'watch', 200],
      ['ResponseComplete', 'watch', 200],
    ]);
  });

  test('kubectl’s requests are logged as kubectl’s, with the impersonated user', async () => {
    expect((await kubectl(['create', 'configmap', 'from-kubectl', '--from-literal=k=v'])).code).toBe(0);
    const event = await until(() => readEvents(logFile).find((e) => e.verb === 'create' && e.objectRef?.name === 'from-kubectl' && e.stage === 'ResponseComplete'), 10000);
    expect(event.userAgent).toMatch(/^kubectl\//);
    expect(event.user.username).toBe('svc-admin');
    expect(event.responseStatus?.code).toBe(201);
    expect((await kubectl(['get', 'configmap', 'from-kubectl', '--as=nobody'])).stderr).toMatch(/forbidden/);
    const impersonated = await until(() => readEvents(logFile).find((e) => e.verb === 'get' && e.objectRef?.name === 'from-kubectl' && e.impersonatedUser !== undefined), 10000);
    expect(impersonated).toMatchObject({ user: { username: 'svc-admin' }, impersonatedUser: { username: 'nobody' }, annotations: { 'authorization.svc.io/decision': 'forbid' } });
  });

  test('a request through a deprecated version is annotated svc.io/deprecated', async () => {
    const res = await adminRequest(env, 'GET', '/apis/audit.example.com/v1beta1/namespaces/default/gadgets');
    expect(res.status).toBe(200);
    const [event] = await eventsOf(res.headers['audit-id'] as string);
    expect(event?.annotations?.['svc.io/deprecated']).toBe('true');
    const current = await adminRequest(env, 'GET', '/apis/audit.example.com/v1/namespaces/default/gadgets');
    const [plain] = await eventsOf(current.headers['audit-id'] as string);
    expect(plain?.annotations).not.toHaveProperty('svc.io/deprecated');
  });

  test('a ValidatingAdmissionPolicy’s audit annotations and Audit-action failures reach the event', async () => {
    const group = 'admissionregistration.svc.io/v1';
    const policy = {
      apiVersion: group,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'audit-key-count' },
      spec: {
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['configmaps'] }] },
        validations: [{ expression: '!has(object.data) || object.data.size() <= 1', message: 'at most one key' }],
        auditAnnotations: [{ key: 'key-count', valueExpression: 'string(has(object.data) ? object.data.size() : 0)' }],
      },
    };
    const binding = { apiVersion: group, kind: 'ValidatingAdmissionPolicyBinding', metadata: { name: 'audit-key-count' }, spec: { policyName: 'audit-key-count', validationActions: ['Audit'] } };
    for (const doc of [policy, binding]) expect((await kubectl(['apply', '-f', '-'], JSON.stringify(doc))).code).toBe(0);
    let n = 0;
    // The admission service follows policies asynchronously: create until one is annotated.
    const event = await until(async () => {
      const res = await adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `vap-${++n}` }, data: { a: '1', b: '2' } }));
      expect(res.status).toBe(201);
      const [e] = await eventsOf(res.headers['audit-id'] as string);
      return e?.annotations?.['audit-key-count/key-count'] ? e : undefined;
    }, 20000);
    expect(event.annotations?.['audit-key-count/key-count']).toBe('2');
    const failures = JSON.parse(event.annotations?.['validation.policy.admission.svc.io/validation_failure'] ?? '[]') as Array<{ message: string; policy: string }>;
    expect(failures).toEqual([expect.objectContaining({ message: 'at most one key', policy: 'audit-key-count' })]);

    // Bound with Deny in one namespace: the refused create's event still has the policy's annotation.
    expect((await kubectl(['create', 'namespace', 'audit-deny'])).code).toBe(0);
    const denying = { ...binding, metadata: { name: 'audit-key-count-deny' }, spec: { ...binding.spec, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'svc.io/metadata.name': 'audit-deny' } } } } };
    expect((await kubectl(['apply', '-f', '-'], JSON.stringify(denying))).code).toBe(0);
    const refused = await until(async () => {
      const res = await adminRequest(env, 'POST', '/api/v1/namespaces/audit-deny/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `deny-${++n}` }, data: { a: '1', b: '2', c: '3' } }));
      return res.status >= 400 ? res : undefined;
    }, 20000);
    const [refusedEvent] = await eventsOf(refused.headers['audit-id'] as string);
    expect(refusedEvent?.responseStatus?.code).toBe(refused.status);
    expect(refusedEvent?.responseStatus?.message).toContain('at most one key');
    expect(refusedEvent?.annotations?.['audit-key-count/key-count']).toBe('3');
  });

  test('the webhook receives EventList batches of the same events', async () => {
    const res = await adminRequest(env, 'GET', '/api/v1/namespaces/default/configmaps/audited');
    const auditID = res.headers['audit-id'] as string;
    const event = await until(() => batches.flatMap((b) => b.items).find((e) => e.auditID === auditID), 10000);
    expect(event).toMatchObject({ stage: 'ResponseComplete', verb: 'get', objectRef: { name: 'audited' } });
    for (const batch of batches) {
      expect(batch.kind).toBe('EventList');
      expect(batch.apiVersion).toBe('audit.svc.io/v1');
      expect(batch.items.length).toBeGreaterThan(0);
      expect(batch.items.length).toBeLessThanOrEqual(50);
    }
    expect(batches.length).toBeGreaterThan(1);
  });
});

describe('audit with a webhook that does not answer', () => {
  let env: Environment;
  let dir: string;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-audit-down-'));
    const serving = await ensureServingCertificate(path.join(dir, 'webhook-pki'), ['127.0.0.1']);
    // A port nothing listens on.
    const port = await freePort();
    const webhookConfig = path.join(dir, 'audit-webhook.kubeconfig');
    webhookKubeconfig(webhookConfig, `https://127.0.0.1:${port}/audit`, serving.caCert);
    env = await startEnvironment({
      dir: path.join(dir, 'env'),
      audit: { policyFile: DEFAULT_POLICY, webhookConfigFile: webhookConfig, args: ['--audit-webhook-batch-max-wait=100ms', '--audit-webhook-initial-backoff=50ms'] },
    });
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test('requests are served as usual; the batches it does not take are dropped and said so', async () => {
    for (let i = 0; i < 20; i++) {
      const res = await adminRequest(env, 'POST', '/api/v1/namespaces/default/configmaps', JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `down-${i}` } }));
      expect(res.status).toBe(201);
    }
    const gatewayLog = path.join(env.dir, 'logs', 'gateway.log');
    const warning = await until(() => fs.readFileSync(gatewayLog, 'utf8').split('\n').find((l) => l.includes('audit events dropped')), 15000);
    expect(JSON.parse(warning)).toMatchObject({ level: 'warn', backend: 'webhook' });
  });
});

describe('audit policy that cannot be used', () => {
  // Files the gateway would read later: the policy is read, and refused, first.
  const REQUIRED = ['--tls-cert-file=/nonexistent', '--tls-private-key-file=/nonexistent', '--internal-ca-file=/nonexistent', '--internal-cert-file=/nonexistent', '--internal-key-file=/nonexistent'];
  const start = async (policyText: string): Promise<{ code: number | null; output: string }> => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-audit-bad-'));
    const policy = path.join(dir, 'policy.yaml');
    fs.writeFileSync(policy, policyText);
    const res = await run(process.execPath, [path.join(REPO, 'services/gateway/dist/main.js'), ...REQUIRED, `--audit-policy-file=${policy}`, `--audit-log-path=${path.join(dir, 'audit.log')}`], {
      timeoutMs: 20000,
    });
    return { code: res.code, output: `${res.stdout}${res.stderr}`.replace(new RegExp(dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'), 'g'), '<dir>') };
  };

  test('an unknown level, field or stage refuses the start, naming file, line and field', async () => {
    const bad = await start('apiVersion: audit.svc.io/v1\nkind: Policy\nrules:\n  - level: Verbose\n  - level: None\n    userz: [a]\n    omitStages: [Later]\n');
    expect(bad.code).not.toBe(0);
    expect(bad.output).toContain('audit policy <dir>/policy.yaml');
    expect(bad.output).toContain('line 4: rules[0].level: Unsupported value: \\"Verbose\\"');
    expect(bad.output).toContain('line 6: rules[1].userz: unknown field');
    expect(bad.output).toContain('line 7: rules[1].omitStages[0]: Unsupported value: \\"Later\\"');
  });

  test('a policy that does not parse refuses the start', async () => {
    const bad = await start('rules: [\n  - level: None\n');
    expect(bad.code).not.toBe(0);
    expect(bad.output).toMatch(/audit policy <dir>\/policy\.yaml: line \d+, column \d+: /);
  });

  test('--audit-log-format=legacy is refused with a clear message', async () => {
    const res = await run(process.execPath, [path.join(REPO, 'services/gateway/dist/main.js'), ...REQUIRED, '--audit-log-format=legacy'], { timeoutMs: 20000 });
    expect(res.code).not.toBe(0);
    expect(`${res.stdout}${res.stderr}`).toContain('only \\"json\\" is supported');
  });
});
