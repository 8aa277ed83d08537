import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { freePort, startEnvironment, type Environment } from '@svc/testenv';
import { setLabel, WebhookServer, type AdmittedObject } from './admission-server';
import { run, until } from './helpers';
import { adminRequest } from './http';

/**
 * Admission webhooks through the whole system: a mutating and a validating
 * webhook served by this test over HTTPS (the harness installs the first
 * configurations from a manifest with service references, as a kubebuilder
 * project has them, and gives the address and certificate), driven with
 * kubectl. Calls are counted per object, so selection is proven by what a
 * webhook was and was not asked.
 */

const WEBHOOK_GROUP = 'admissionregistration.svc.io/v1';
/** Consecutive failures after which a webhook is isolated, and for how long (the admission service's flags). */
const ISOLATION_THRESHOLD = 3;
const ISOLATION_BACKOFF_MS = 6000;

/** A configuration as kubebuilder writes it: the upstream group name and a service reference. */
const manifestDocument = (kind: string, name: string, hook: string, servicePath: string, operations: string, sideEffects: string) => `apiVersion: admissionregistration.k8s.io/v1
kind: ${kind}
metadata:
  name: ${name}
webhooks:
- name: ${hook}
  clientConfig:
    service: {name: webhook-service, namespace: system, path: ${servicePath}}
  rules:
  - {operations: [${operations}], apiGroups: [""], apiVersions: [v1], resources: [configmaps]}
  namespaceSelector:
    matchLabels: {svc.io/metadata.name: wh-basic}
  sideEffects: ${sideEffects}
  admissionReviewVersions: [v1]
`;
const manifest = [
  manifestDocument('MutatingWebhookConfiguration', 'e2e-basic-mutating', 'label.e2e.svc.io', '/mutate-label', 'CREATE, UPDATE', 'NoneOnDryRun'),
  manifestDocument('ValidatingWebhookConfiguration', 'e2e-basic-validating', 'deny.e2e.svc.io', '/validate-deny', 'CREATE, UPDATE, DELETE', 'None'),
].join('---\n');

describe('admission webhooks', () => {
  let env: Environment;
  let server: WebhookServer;
  let caBundle = '';
  let sentinels = 0;
  const kubectl = (args: string[], input?: string) =>
    run('kubectl', ['--kubeconfig', env.kubeconfigPath, `--cache-dir=${path.join(env.dir, 'kubectl-cache')}`, ...args], input !== undefined ? { input } : {});
  const json = (text: string): Record<string, unknown> => JSON.parse(text) as Record<string, unknown>;
  const configMap = (name: string, namespace: string, labels: Record<string, string> = {}, data: Record<string, string> = { key: 'value' }) =>
    JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace, labels }, data });
  const getConfigMap = async (name: string, namespace: string): Promise<AdmittedObject | undefined> => {
    const res = await kubectl(['get', 'configmap', name, '-n', namespace, '-o', 'json', '--ignore-not-found']);
    expect(res.code).toBe(0);
    return res.stdout.trim() ? (JSON.parse(res.stdout) as AdmittedObject) : undefined;
  };
  const configMapRule = (operations: string[] = ['CREATE', 'UPDATE']) => ({ operations, apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] });
  const inNamespace = (namespace: string) => ({ matchLabels: { 'svc.io/metadata.name': namespace } });
  const webhook = (name: string, urlPath: string, extra: Record<string, unknown> = {}) => ({
    name,
    clientConfig: { url: server.url(urlPath), caBundle },
    rules: [configMapRule()],
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 5,
    ...extra,
  });
  const configuration = (kind: 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration', name: string, webhooks: unknown[]) =>
    JSON.stringify({ apiVersion: WEBHOOK_GROUP, kind, metadata: { name }, webhooks });
  const apply = async (doc: string): Promise<void> => {
    const res = await kubectl(['apply', '-f', '-'], doc);
    expect(res.stderr).toBe('');
    expect(res.code).toBe(0);
  };
  const createNamespace = async (name: string, labels: Record<string, string> = {}): Promise<void> => {
    const res = await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels } }));
    expect(res.stderr).toBe('');
  };

  /**
   * Resolves once the admission service acts on every configuration
   * written before: a new mutating and a new validating configuration
   * that select only the sentinel namespace are written after them, and
   * dry-run creates there are repeated until both were called (each kind
   * is one ordered feed, so what was written earlier is in effect too).
   */
  const configurationsInEffect = async (): Promise<void> => {
    const n = ++sentinels;
    for (const side of ['m', 'v']) server.on(`/sentinel/${n}/${side}`, () => ({ allowed: true }));
    const hook = (side: string) => webhook(`sentinel-${n}-${side}.e2e.svc.io`, `/sentinel/${n}/${side}`, { namespaceSelector: inNamespace('wh-sentinel') });
    await apply(configuration('MutatingWebhookConfiguration', `zz-sentinel-${n}`, [hook('m')]));
    await apply(configuration('ValidatingWebhookConfiguration', `zz-sentinel-${n}`, [hook('v')]));
    let i = 0;
    await until(async () => {
      const probe = `probe-${n}-${i++}`;
      await adminRequest(env, 'POST', '/api/v1/namespaces/wh-sentinel/configmaps?dryRun=All', configMap(probe, 'wh-sentinel'));
      return server.callsTo(`/sentinel/${n}/m`).length > 0 && server.callsTo(`/sentinel/${n}/v`).length > 0 ? true : undefined;
    }, 20_000);
    await kubectl(['delete', 'mutatingwebhookconfiguration,validatingwebhookconfiguration', `zz-sentinel-${n}`, '--wait=false']);
  };

  beforeAll(async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'admission-e2e-'));
    fs.writeFileSync(path.join(dir, 'manifests.yaml'), manifest);
    env = await startEnvironment({
      crds: [path.join(__dirname, '..', '..', 'fixtures', 'crds', 'widgets.yaml')],
      webhooks: { paths: [dir], uninstallOnStop: true },
      serviceArgs: { admission: [`--webhook-isolation-failures=${ISOLATION_THRESHOLD}`, `--webhook-isolation-backoff=${ISOLATION_BACKOFF_MS / 1000}s`] },
    });
    fs.rmSync(dir, { recursive: true, force: true });
    caBundle = (env.webhooks?.localServingCaData ?? Buffer.alloc(0)).toString('base64');
    server = new WebhookServer(env.webhooks!);
    server.on('/mutate-label', (request) => ({ allowed: true, patch: setLabel(request.object, 'mutated-by', 'e2e-webhook') }));
    server.on('/validate-deny', (request) => {
      const labels = (request.operation === 'DELETE' ? request.oldObject : request.object)?.metadata?.labels ?? {};
      if (request.operation === 'DELETE' && labels['protected'] === 'true') return { allowed: false, status: { code: 403, message: 'protected configmaps stay' } };
      if (labels['forbidden'] === 'true') return { allowed: false, status: { code: 403, message: 'configmaps labelled forbidden=true are not allowed here' } };
      const data = (request.object?.['data'] ?? {}) as Record<string, string>;
      return { allowed: true, ...('deprecated' in data ? { warnings: ['the key "deprecated" goes away in the next release'] } : {}) };
    });
    await server.start();
    for (const ns of ['wh-sentinel', 'wh-basic', 'wh-reinvoke', 'wh-fail', 'wh-isolate', 'wh-dryrun', 'wh-widgets']) await createNamespace(ns);
    await createNamespace('wh-select-on', { 'hooked-ns': 'yes', 'admission-e2e': 'select' });
    await createNamespace('wh-select-off', { 'admission-e2e': 'select' });
    await configurationsInEffect();
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await env?.stop(true);
  });

  test('the harness installs the manifest: service references point at the local address, with its CA', async () => {
    const got = await kubectl(['get', 'validatingwebhookconfiguration', 'e2e-basic-validating', '-o', 'json']);
    expect(got.code).toBe(0);
    const config = json(got.stdout) as { apiVersion: string; webhooks: Array<{ clientConfig: Record<string, unknown>; failurePolicy?: string; timeoutSeconds?: number; matchPolicy?: string }> };
    expect(config.apiVersion).toBe(WEBHOOK_GROUP);
    expect(config.webhooks[0]?.clientConfig).toEqual({ url: `https://127.0.0.1:${env.webhooks?.localServingPort}/validate-deny`, caBundle });
    // The original's v1 defaults.
    expect(config.webhooks[0]).toMatchObject({ failurePolicy: 'Fail', matchPolicy: 'Equivalent', timeoutSeconds: 10 });
    expect(fs.readFileSync(path.join(env.webhooks!.localServingCertDir, 'ca.crt'))).toEqual(env.webhooks?.localServingCaData);
  });

  test('kubectl create is refused with the validating webhook’s message, and nothing is stored', async () => {
    const res = await kubectl(['create', '-f', '-'], configMap('refused', 'wh-basic', { forbidden: 'true' }));
    expect(res.code).not.toBe(0);
    expect(res.stderr).toContain('admission webhook "deny.e2e.svc.io" denied the request: configmaps labelled forbidden=true are not allowed here');
    expect(await getConfigMap('refused', 'wh-basic')).toBeUndefined();
    expect(server.callsTo('/validate-deny', 'refused')).toHaveLength(1);
    // The webhook's code and message, in a Status.
    const raw = await adminRequest(env, 'POST', '/api/v1/namespaces/wh-basic/configmaps', configMap('refused-raw', 'wh-basic', { forbidden: 'true' }));
    expect(raw.status).toBe(403);
    expect(raw.json()).toMatchObject({ kind: 'Status', status: 'Failure', code: 403, message: 'admission webhook "deny.e2e.svc.io" denied the request: configmaps labelled forbidden=true are not allowed here' });
  });

  test('the mutating webhook’s label is stored, the validating webhook sees the mutated object, and the review carries the request', async () => {
    const res = await kubectl(['create', '-f', '-'], configMap('labelled', 'wh-basic', { app: 'e2e' }));
    expect(res.stderr).toBe('');
    expect(res.stdout.trim()).toBe('configmap/labelled created');
    const stored = await getConfigMap('labelled', 'wh-basic');
    expect(stored?.metadata?.labels).toEqual({ app: 'e2e', 'mutated-by': 'e2e-webhook' });

    const [mutating] = server.callsTo('/mutate-label', 'labelled');
    const [validating] = server.callsTo('/validate-deny', 'labelled');
    expect(mutating && validating).toBeTruthy();
    // Mutating first, validating after, on the object as mutated.
    expect(mutating!.at).toBeLessThanOrEqual(validating!.at);
    expect(validating!.request.object?.metadata?.labels).toEqual({ app: 'e2e', 'mutated-by': 'e2e-webhook' });
    expect(mutating!.apiVersion).toBe('admission.svc.io/v1');
    const request = mutating!.request;
    expect(request.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(validating!.request.uid).not.toBe(request.uid);
    expect(request).toMatchObject({
      kind: { group: '', version: 'v1', kind: 'ConfigMap' },
      resource: { group: '', version: 'v1', resource: 'configmaps' },
      requestKind: { group: '', version: 'v1', kind: 'ConfigMap' },
      requestResource: { group: '', version: 'v1', resource: 'configmaps' },
      name: 'labelled',
      namespace: 'wh-basic',
      operation: 'CREATE',
      dryRun: false,
      options: expect.objectContaining({ kind: 'CreateOptions' }),
    });
    expect(request.userInfo.username).toBe('svc-admin');
    expect(request.userInfo.groups).toEqual(expect.arrayContaining(['system:masters', 'system:authenticated']));
    expect(request.object?.metadata?.labels).toEqual({ app: 'e2e' });
    expect(request.object?.['data']).toEqual({ key: 'value' });
    expect(request.oldObject ?? null).toBeNull();
  });

  test('updates and deletes are admitted too: the old object is sent, and a refusal keeps what is stored', async () => {
    expect((await kubectl(['create', '-f', '-'], configMap('updated', 'wh-basic', { protected: 'true' }))).code).toBe(0);
    const label = await kubectl(['label', 'configmap', 'updated', '-n', 'wh-basic', 'forbidden=true']);
    expect(label.code).not.toBe(0);
    expect(label.stderr).toContain('admission webhook "deny.e2e.svc.io" denied the request: configmaps labelled forbidden=true are not allowed here');
    const update = server.callsTo('/validate-deny', 'updated').find((c) => c.request.operation === 'UPDATE');
    expect(update?.request.oldObject?.metadata?.labels).toEqual({ protected: 'true', 'mutated-by': 'e2e-webhook' });
    expect(update?.request.object?.metadata?.labels).toMatchObject({ forbidden: 'true' });
    expect(update?.request.options).toEqual(expect.objectContaining({ kind: 'UpdateOptions' }));
    expect((await getConfigMap('updated', 'wh-basic'))?.metadata?.labels).not.toHaveProperty('forbidden');

    const del = await kubectl(['delete', 'configmap', 'updated', '-n', 'wh-basic']);
    expect(del.code).not.toBe(0);
    expect(del.stderr).toContain('admission webhook "deny.e2e.svc.io" denied the request: protected configmaps stay');
    const deletion = server.callsTo('/validate-deny', 'updated').find((c) => c.request.operation === 'DELETE');
    expect(deletion?.request.object ?? null).toBeNull();
    expect(deletion?.request.oldObject?.metadata?.name).toBe('updated');
    expect(deletion?.request.options).toEqual(expect.objectContaining({ kind: 'DeleteOptions' }));
    expect(await getConfigMap('updated', 'wh-basic')).toBeDefined();
  });

  test('a webhook’s warnings reach kubectl', async () => {
    const res = await kubectl(['create', '-f', '-'], configMap('warned', 'wh-basic', {}, { deprecated: 'yes' }));
    expect(res.code).toBe(0);
    expect(res.stderr).toContain('Warning: the key "deprecated" goes away in the next release');
  });

  test('dry run: webhooks that declare no side effects are called with dryRun, the mutation shows, nothing is stored', async () => {
    const res = await kubectl(['create', '--dry-run=server', '-o', 'json', '-f', '-'], configMap('dry', 'wh-basic'));
    expect(res.stderr).toBe('');
    expect((JSON.parse(res.stdout) as AdmittedObject).metadata?.labels).toEqual({ 'mutated-by': 'e2e-webhook' });
    expect(server.callsTo('/mutate-label', 'dry').map((c) => c.request.dryRun)).toEqual([true]);
    expect(server.callsTo('/validate-deny', 'dry').map((c) => [c.request.dryRun, c.request.options?.['dryRun']])).toEqual([[true, ['All']]]);
    expect(await getConfigMap('dry', 'wh-basic')).toBeUndefined();
    const refused = await kubectl(['create', '--dry-run=server', '-f', '-'], configMap('dry-refused', 'wh-basic', { forbidden: 'true' }));
    expect(refused.stderr).toContain('admission webhook "deny.e2e.svc.io" denied the request');
  });

  test('reinvocation: a webhook with reinvocationPolicy IfNeeded is called again after a later webhook changed the object', async () => {
    server.on('/reinvoke-first', (request) => ({ allowed: true, patch: setLabel(request.object, 'first', request.object?.metadata?.labels?.['second'] ? 'saw-second' : 'alone') }));
    server.on('/reinvoke-second', (request) => ({ allowed: true, patch: setLabel(request.object, 'second', 'yes') }));
    server.on('/reinvoke-never', (request) => ({ allowed: true, patch: setLabel(request.object, 'third', request.object?.metadata?.labels?.['second'] ? 'saw-second' : 'alone') }));
    const scoped = { namespaceSelector: inNamespace('wh-reinvoke') };
    await apply(
      configuration('MutatingWebhookConfiguration', 'e2e-reinvoke', [
        webhook('first.e2e.svc.io', '/reinvoke-first', { ...scoped, reinvocationPolicy: 'IfNeeded' }),
        webhook('third.e2e.svc.io', '/reinvoke-never', { ...scoped, reinvocationPolicy: 'Never' }),
        webhook('second.e2e.svc.io', '/reinvoke-second', scoped),
      ]),
    );
    await configurationsInEffect();
    const res = await kubectl(['create', '-f', '-'], configMap('reinvoked', 'wh-reinvoke'));
    expect(res.stderr).toBe('');
    expect((await getConfigMap('reinvoked', 'wh-reinvoke'))?.metadata?.labels).toEqual({ first: 'saw-second', second: 'yes', third: 'alone' });
    expect(server.callsTo('/reinvoke-first', 'reinvoked')).toHaveLength(2);
    expect(server.callsTo('/reinvoke-never', 'reinvoked')).toHaveLength(1);
    expect(server.callsTo('/reinvoke-second', 'reinvoked')).toHaveLength(1);
    // The second call sees what the later webhook did.
    expect(server.callsTo('/reinvoke-first', 'reinvoked')[1]?.request.object?.metadata?.labels).toMatchObject({ first: 'alone', second: 'yes' });
  });

  test('selection: rules, namespaceSelector, objectSelector and matchConditions, proven by counting calls', async () => {
    for (const p of ['/count-ns', '/count-obj', '/count-mc', '/count-rules']) server.on(p, () => ({ allowed: true }));
    const selectNamespaces = { matchLabels: { 'admission-e2e': 'select' } };
    await apply(
      configuration('ValidatingWebhookConfiguration', 'e2e-select', [
        webhook('by-namespace.e2e.svc.io', '/count-ns', { namespaceSelector: { matchExpressions: [{ key: 'hooked-ns', operator: 'In', values: ['yes'] }] } }),
        webhook('by-object.e2e.svc.io', '/count-obj', { namespaceSelector: selectNamespaces, objectSelector: { matchLabels: { hooked: 'yes' } } }),
        webhook('by-condition.e2e.svc.io', '/count-mc', {
          namespaceSelector: selectNamespaces,
          matchConditions: [
            { name: 'name-prefix', expression: "object.metadata.name.startsWith('mc-')" },
            { name: 'not-skipped', expression: "!has(object.metadata.labels) || !('skip' in object.metadata.labels)" },
          ],
        }),
        webhook('by-rule.e2e.svc.io', '/count-rules', { namespaceSelector: selectNamespaces, rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['secrets'] }] }),
      ]),
    );
    await configurationsInEffect();
    const create = async (kind: 'configmap' | 'secret', name: string, namespace: string, labels: Record<string, string> = {}) => {
      const doc = kind === 'configmap' ? configMap(name, namespace, labels) : JSON.stringify({ apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace, labels }, stringData: { a: 'b' } });
      const res = await kubectl(['create', '-f', '-'], doc);
      expect(res.stderr).toBe('');
    };
    await create('configmap', 'ns-a', 'wh-select-on');
    await create('configmap', 'ns-b', 'wh-select-off');
    await create('configmap', 'obj-a', 'wh-select-off', { hooked: 'yes' });
    await create('configmap', 'obj-b', 'wh-select-off', { hooked: 'no' });
    await create('configmap', 'mc-a', 'wh-select-off');
    await create('configmap', 'mc-b', 'wh-select-off', { skip: 'true' });
    await create('configmap', 'other-a', 'wh-select-off');
    await create('secret', 'rule-a', 'wh-select-off');
    expect((await kubectl(['label', 'secret', 'rule-a', '-n', 'wh-select-off', 'touched=yes'])).code).toBe(0);
    const count = (p: string, name: string) => server.callsTo(p, name).length;
    expect([count('/count-ns', 'ns-a'), count('/count-ns', 'ns-b')]).toEqual([1, 0]);
    expect([count('/count-obj', 'obj-a'), count('/count-obj', 'obj-b')]).toEqual([1, 0]);
    expect([count('/count-mc', 'mc-a'), count('/count-mc', 'mc-b'), count('/count-mc', 'other-a')]).toEqual([1, 0, 0]);
    // Only secrets match the rule: its configmaps were not sent; the secret's create and update were.
    expect(['ns-b', 'obj-a', 'mc-a', 'other-a'].map((n) => count('/count-rules', n))).toEqual([0, 0, 0, 0]);
    expect(server.callsTo('/count-rules', 'rule-a').map((c) => c.request.operation)).toEqual(['CREATE', 'UPDATE']);
    expect(server.callsTo('/count-rules', 'rule-a')[0]?.request.resource).toEqual({ group: '', version: 'v1', resource: 'secrets' });
  });

  test('failure policies: timeouts, errors, garbage and a wrong uid refuse under Fail (naming the webhook) and are let through under Ignore, with a Warning', async () => {
    server.on('/hang', () => ({ hang: true }));
    server.on('/error', () => ({ httpStatus: 500, body: 'internal trouble' }));
    server.on('/garbage', () => ({ httpStatus: 200, body: '<html>not a review</html>' }));
    server.on('/wrong-uid', () => ({ allowed: true, uid: '00000000-0000-0000-0000-000000000000' }));
    const closedPort = await freePort();
    const cases: Array<{ name: string; hook: Record<string, unknown> }> = [
      { name: 'timeout', hook: { clientConfig: { url: server.url('/hang'), caBundle }, timeoutSeconds: 1 } },
      { name: 'error', hook: { clientConfig: { url: server.url('/error'), caBundle } } },
      { name: 'garbage', hook: { clientConfig: { url: server.url('/garbage'), caBundle } } },
      { name: 'wrong-uid', hook: { clientConfig: { url: server.url('/wrong-uid'), caBundle } } },
      { name: 'refused', hook: { clientConfig: { url: `https://127.0.0.1:${closedPort}/`, caBundle } } },
      // A CA that did not sign the webhook's certificate.
      { name: 'untrusted', hook: { clientConfig: { url: server.url('/error'), caBundle: fs.readFileSync(env.pki.caCert).toString('base64') } } },
    ];
    const hooks = cases.flatMap(({ name, hook }) =>
      (['Fail', 'Ignore'] as const).map((policy) =>
        webhook(`${name}-${policy.toLowerCase()}.e2e.svc.io`, '/unused', {
          ...hook,
          failurePolicy: policy,
          namespaceSelector: inNamespace('wh-fail'),
          objectSelector: { matchLabels: { case: `${name}-${policy.toLowerCase()}` } },
        }),
      ),
    );
    await apply(configuration('ValidatingWebhookConfiguration', 'e2e-failures', hooks));
    await configurationsInEffect();
    for (const { name } of cases) {
      const failStarted = Date.now();
      const failed = await kubectl(['create', '-f', '-'], configMap(`${name}-fail`, 'wh-fail', { case: `${name}-fail` }));
      const failMs = Date.now() - failStarted;
      expect(failed.code).not.toBe(0);
      expect(failed.stderr).toContain(`failed calling webhook "${name}-fail.e2e.svc.io"`);
      expect(await getConfigMap(`${name}-fail`, 'wh-fail')).toBeUndefined();
      const ignored = await kubectl(['create', '-f', '-'], configMap(`${name}-ignore`, 'wh-fail', { case: `${name}-ignore` }));
      expect(ignored.code).toBe(0);
      expect(ignored.stderr).toMatch(new RegExp(`Warning: .*${name}-ignore\\.e2e\\.svc\\.io`));
      expect(await getConfigMap(`${name}-ignore`, 'wh-fail')).toBeDefined();
      if (name === 'timeout') {
        // The webhook's own timeout (1 s) bounds the wait, not the request's.
        expect(failMs).toBeGreaterThanOrEqual(900);
        expect(failMs).toBeLessThan(5000);
        expect(server.callsTo('/hang', 'timeout-fail')).toHaveLength(1);
      }
    }
  });

  test('bad patches: a patch that breaks the schema, one that does not apply, and another patch type are refused naming the webhook; nothing half-applied is stored', async () => {
    server.on('/patch-schema', () => ({ allowed: true, patch: [{ op: 'replace', path: '/data', value: 42 }] }));
    server.on('/patch-missing', () => ({ allowed: true, patch: [{ op: 'remove', path: '/metadata/annotations/not-there' }] }));
    server.on('/patch-type', () => ({ allowed: true, patch: [{ op: 'add', path: '/metadata/labels', value: { merged: 'yes' } }], patchType: 'MergePatch' }));
    // Runs first (the configuration's name sorts first) and labels every object: a refusal after it must not store its label.
    server.on('/patch-good', (request) => ({ allowed: true, patch: setLabel(request.object, 'good', 'yes') }));
    const scoped = (label: string) => ({ namespaceSelector: inNamespace('wh-fail'), objectSelector: { matchLabels: { patch: label } } });
    await apply(configuration('MutatingWebhookConfiguration', 'e2e-patch-0-good', [webhook('good.e2e.svc.io', '/patch-good', { namespaceSelector: inNamespace('wh-fail'), objectSelector: { matchExpressions: [{ key: 'patch', operator: 'Exists' }] } })]));
    await apply(
      configuration('MutatingWebhookConfiguration', 'e2e-patch-1-bad', [
        webhook('schema.e2e.svc.io', '/patch-schema', scoped('schema')),
        webhook('missing.e2e.svc.io', '/patch-missing', scoped('missing')),
        webhook('type.e2e.svc.io', '/patch-type', scoped('type')),
      ]),
    );
    await configurationsInEffect();
    for (const name of ['schema', 'missing', 'type']) {
      const res = await kubectl(['create', '-f', '-'], configMap(`patch-${name}`, 'wh-fail', { patch: name }));
      expect(res.code).not.toBe(0);
      expect(res.stderr).toContain(`"${name}.e2e.svc.io"`);
      expect(await getConfigMap(`patch-${name}`, 'wh-fail')).toBeUndefined();
      expect(server.callsTo('/patch-good', `patch-${name}`)).toHaveLength(1);
    }
  });

  test('custom resources and their status subresource go to webhooks that name them', async () => {
    server.on('/widgets', (request) => {
      const status = request.object?.['status'] as { ready?: boolean } | undefined;
      return request.subResource === 'status' && status?.ready === false ? { allowed: false, status: { code: 422, message: 'a widget is never unready' } } : { allowed: true };
    });
    await apply(
      configuration('ValidatingWebhookConfiguration', 'e2e-widgets', [
        webhook('widgets.e2e.svc.io', '/widgets', { namespaceSelector: inNamespace('wh-widgets'), rules: [{ operations: ['*'], apiGroups: ['example.com'], apiVersions: ['*'], resources: ['widgets', 'widgets/status'] }] }),
      ]),
    );
    await configurationsInEffect();
    const widget = JSON.stringify({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w1', namespace: 'wh-widgets' }, spec: { size: 3 } });
    expect((await kubectl(['create', '-f', '-'], widget)).stderr).toBe('');
    const ok = await kubectl(['patch', 'widget', 'w1', '-n', 'wh-widgets', '--subresource=status', '--type=merge', '-p', '{"status":{"ready":true}}']);
    expect(ok.stderr).toBe('');
    const refused = await kubectl(['patch', 'widget', 'w1', '-n', 'wh-widgets', '--subresource=status', '--type=merge', '-p', '{"status":{"ready":false}}']);
    expect(refused.stderr).toContain('admission webhook "widgets.e2e.svc.io" denied the request: a widget is never unready');
    const calls = server.callsTo('/widgets', 'w1').map((c) => ({ op: c.request.operation, sub: c.request.subResource ?? '', kind: c.request.kind }));
    expect(calls).toEqual([
      { op: 'CREATE', sub: '', kind: { group: 'example.com', version: 'v1', kind: 'Widget' } },
      { op: 'UPDATE', sub: 'status', kind: { group: 'example.com', version: 'v1', kind: 'Widget' } },
      { op: 'UPDATE', sub: 'status', kind: { group: 'example.com', version: 'v1', kind: 'Widget' } },
    ]);
  });

  test('webhook configurations themselves are never sent to webhooks, so a broken webhook cannot lock them', async () => {
    server.on('/everything', () => ({ hang: true }));
    await apply(
      configuration('ValidatingWebhookConfiguration', 'e2e-everything', [
        webhook('everything.e2e.svc.io', '/everything', { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }], objectSelector: { matchLabels: { 'lock-test': 'yes' } }, timeoutSeconds: 1 }),
      ]),
    );
    await configurationsInEffect();
    const labelled = await kubectl(['label', 'validatingwebhookconfiguration', 'e2e-everything', 'lock-test=yes']);
    expect(labelled.stderr).toBe('');
    const deleted = await kubectl(['delete', 'validatingwebhookconfiguration', 'e2e-everything']);
    expect(deleted.stderr).toBe('');
    expect(server.callsTo('/everything')).toHaveLength(0);
  });

  test('isolation: a webhook that keeps timing out is skipped (Ignore) or refused at once (Fail) for a back-off, then called again', async () => {
    let healthy = false;
    server.on('/isolate-ignore', () => (healthy ? { allowed: true } : { hang: true }));
    server.on('/isolate-fail', () => (healthy ? { allowed: true } : { hang: true }));
    const hook = (policy: 'Ignore' | 'Fail') =>
      webhook(`isolate-${policy.toLowerCase()}.e2e.svc.io`, `/isolate-${policy.toLowerCase()}`, {
        failurePolicy: policy,
        timeoutSeconds: 1,
        namespaceSelector: inNamespace('wh-isolate'),
        objectSelector: { matchLabels: { policy: policy.toLowerCase() } },
      });
    await apply(configuration('ValidatingWebhookConfiguration', 'e2e-isolate', [hook('Ignore'), hook('Fail')]));
    await configurationsInEffect();

    const N = 12;
    const timed = async (name: string, policy: string) => {
      const started = process.hrtime.bigint();
      const res = await adminRequest(env, 'POST', '/api/v1/namespaces/wh-isolate/configmaps', configMap(name, 'wh-isolate', { policy }));
      return { ms: Number(process.hrtime.bigint() - started) / 1e6, status: res.status, warning: String(res.headers['warning'] ?? ''), body: res.body };
    };
    const ignore: Array<Awaited<ReturnType<typeof timed>>> = [];
    for (let i = 0; i < N; i++) ignore.push(await timed(`ignore-${i}`, 'ignore'));
    const fail: Array<Awaited<ReturnType<typeof timed>>> = [];
    for (let i = 0; i < N; i++) fail.push(await timed(`fail-${i}`, 'fail'));
    const total = (xs: typeof ignore) => xs.reduce((s, x) => s + x.ms, 0);
    process.stdout.write(
      `isolation: ${N} creates against a hanging webhook (timeout 1 s, isolated after ${ISOLATION_THRESHOLD} failures): ` +
        `Ignore ${total(ignore).toFixed(0)} ms in all [${ignore.map((x) => x.ms.toFixed(0)).join(', ')}], ` +
        `Fail ${total(fail).toFixed(0)} ms in all [${fail.map((x) => x.ms.toFixed(0)).join(', ')}]; without isolation each would wait 1000 ms\n`,
    );
    expect(ignore.map((x) => x.status)).toEqual(Array(N).fill(201));
    // The first failures each wait for the timeout; once isolated, no request waits for it.
    for (const x of ignore.slice(0, ISOLATION_THRESHOLD)) expect(x.ms).toBeGreaterThanOrEqual(900);
    for (const x of ignore.slice(ISOLATION_THRESHOLD)) {
      expect(x.ms).toBeLessThan(500);
      expect(x.warning).toContain('isolate-ignore.e2e.svc.io');
    }
    expect(server.callsTo('/isolate-ignore').length).toBe(ISOLATION_THRESHOLD);
    expect(fail.map((x) => x.status)).toEqual(Array(N).fill(500));
    for (const x of fail.slice(ISOLATION_THRESHOLD)) {
      expect(x.ms).toBeLessThan(500);
      expect(x.body).toContain('isolate-fail.e2e.svc.io');
    }
    expect(server.callsTo('/isolate-fail').length).toBe(ISOLATION_THRESHOLD);
    expect(total(ignore)).toBeLessThan(ISOLATION_THRESHOLD * 1000 + N * 500);

    // After the back-off the webhook is asked again; answering, it is in use again.
    healthy = true;
    await new Promise((r) => setTimeout(r, ISOLATION_BACKOFF_MS + 200));
    const again = await timed('ignore-after', 'ignore');
    expect(again.status).toBe(201);
    expect(server.callsTo('/isolate-ignore', 'ignore-after')).toHaveLength(1);
    const fine = await timed('fail-after', 'fail');
    expect(fine.status).toBe(201);
    expect(server.callsTo('/isolate-fail', 'fail-after')).toHaveLength(1);
  });
});
