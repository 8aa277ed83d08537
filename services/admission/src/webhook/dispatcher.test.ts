import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import { ApiError, type ApiObject } from '@svc/apimachinery';
import type { AuthorizationCheck } from '@svc/cel';
import { createLogger } from '@svc/service-kit';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';
import { AdmissionConfigurations } from '../configurations';
import { CustomResourceEquivalents } from '../equivalents';
import { PatchedObjectDecoder } from '../patched-objects';
import { runMutating, serviceAccountDefaults, type AdmissionPlugin } from '../plugins';
import { requestAttributes } from '../testing/attributes';
import { AdmissionRecord, AdmissionWebhooks, type AdmissionWebhooksOptions, type WebhookAttributes } from './dispatcher';
import { mutateWithReinvocation, ReinvocationState } from './reinvocation';
import type { WebhookSpec } from './types';

/**
 * The dispatcher against webhooks served over loopback HTTPS by the test
 * (a CA of its own in each configuration's caBundle): what is sent, what
 * the answers do, and every way a call can fail.
 */

interface Review {
  apiVersion: string;
  kind: string;
  request: {
    uid: string;
    kind: Record<string, string>;
    resource: Record<string, string>;
    subResource?: string;
    requestKind: Record<string, string>;
    requestResource: Record<string, string>;
    name?: string;
    namespace?: string;
    operation: string;
    userInfo: { username: string; uid?: string; groups?: string[] };
    object: ApiObject | null;
    oldObject: ApiObject | null;
    dryRun: boolean;
    options: unknown;
  };
}

/** What a route answers: a review response (uid and envelope added), or a raw status and body, or nothing at all. */
type Reply = { response?: Record<string, unknown>; patch?: unknown[]; envelope?: Record<string, unknown> } | { status: number; body: string } | { hang: true };

interface Call {
  path: string;
  query: string;
  review: Review;
}

class ReviewServer {
  readonly calls: Call[] = [];
  private readonly routes = new Map<string, (review: Review) => Reply>();
  connections = 0;
  private server!: https.Server;
  port = 0;

  async start(tls: { cert: Buffer; key: Buffer }): Promise<void> {
    this.server = https.createServer(tls, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const url = new URL(req.url ?? '/', 'https://x');
        const review = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Review;
        this.calls.push({ path: url.pathname, query: url.search, review });
        const route = this.routes.get(url.pathname);
        const reply: Reply = route ? route(review) : { response: { allowed: true } };
        if ('hang' in reply) return;
        if ('status' in reply) {
          res.writeHead(reply.status, { 'content-type': 'application/json' }).end(reply.body);
          return;
        }
        const response: Record<string, unknown> = { uid: review.request.uid, allowed: true, ...reply.response };
        if (reply.patch) Object.assign(response, { patch: Buffer.from(JSON.stringify(reply.patch)).toString('base64'), patchType: 'JSONPatch' }, reply.response);
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'AdmissionReview', ...reply.envelope, response }));
      });
    });
    this.server.on('connection', () => this.connections++);
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  on(path: string, answer: (review: Review) => Reply): void {
    this.routes.set(path, answer);
  }

  url(path: string): string {
    return `https://127.0.0.1:${this.port}${path}`;
  }

  callsTo(path: string): Call[] {
    return this.calls.filter((c) => c.path === path);
  }

  close(): void {
    this.server.closeAllConnections();
    this.server.close();
  }
}

const log = createLogger('admission-test', { level: 'error' });
const namespaces = new Map<string, ApiObject>([
  ['team-a', { metadata: { name: 'team-a', labels: { env: 'prod' } }, status: { phase: 'Active' } }],
  ['team-b', { metadata: { name: 'team-b', labels: { env: 'dev' } }, status: { phase: 'Active' } }],
]);

describe('admission webhooks', () => {
  let pki: TestPki;
  let server: ReviewServer;
  let caBundle: string;
  let configurations: AdmissionConfigurations;
  let webhooks: AdmissionWebhooks;
  let revision = 0;
  const checks: AuthorizationCheck[] = [];

  beforeAll(async () => {
    pki = makeTestPki('admission-webhooks-ca');
    server = new ReviewServer();
    await server.start(pki.tlsFor('webhook'));
    caBundle = pki.tlsFor('webhook').ca.toString('base64');
  });

  afterAll(() => {
    server?.close();
    pki?.remove();
  });

  const make = (over: Partial<AdmissionWebhooksOptions> = {}): AdmissionWebhooks => {
    webhooks?.close();
    webhooks = new AdmissionWebhooks({
      configurations,
      namespaces: { getNamespace: async (name) => namespaces.get(name) },
      authorize: async (check) => {
        checks.push(check);
        return check.verb === 'approve' ? { decision: 'allow', reason: 'approvers' } : { decision: 'no-opinion', reason: '' };
      },
      log,
      ...over,
    });
    return webhooks;
  };

  beforeEach(() => {
    server.calls.length = 0;
    checks.length = 0;
    configurations = new AdmissionConfigurations();
    make();
  });

  afterEach(() => webhooks.close());

  const hook = (name: string, path: string, extra: Partial<WebhookSpec> = {}): WebhookSpec => ({
    name,
    clientConfig: { url: server.url(path), caBundle },
    rules: [{ operations: ['CREATE', 'UPDATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
    sideEffects: 'None',
    admissionReviewVersions: ['v1'],
    timeoutSeconds: 5,
    ...extra,
  });
  const configure = (kind: 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration', name: string, hooks: WebhookSpec[]): void => {
    configurations.apply(kind, { apiVersion: 'admissionregistration.svc.io/v1', kind, metadata: { name, uid: `uid-${name}`, resourceVersion: String(++revision) }, webhooks: hooks });
  };
  const attrs = (over: Partial<WebhookAttributes> = {}): WebhookAttributes => ({ ...requestAttributes(), options: { apiVersion: 'meta.svc.io/v1', kind: 'CreateOptions' }, ...over });
  const validate = async (a: WebhookAttributes = attrs()): Promise<AdmissionRecord> => {
    const record = new AdmissionRecord();
    await webhooks.validate(a, record);
    return record;
  };
  const mutate = async (a: WebhookAttributes = attrs(), plugins: AdmissionPlugin[] = []): Promise<{ object: ApiObject | undefined; changed: boolean; record: AdmissionRecord }> => {
    const record = new AdmissionRecord();
    const result = await mutateWithReinvocation(a, (x) => runMutating(plugins, x), webhooks, record);
    return { object: result.object, changed: result.changed, record };
  };
  const refusal = async (p: Promise<unknown>): Promise<ApiError> => {
    const err = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(ApiError);
    return err as ApiError;
  };

  describe('selection', () => {
    test('rules: operations, groups by either name, versions, resources with subresources, scope', async () => {
      configure('ValidatingWebhookConfiguration', 'rules', [
        hook('create-only.test', '/create-only', { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] }),
        hook('rbac-upstream.test', '/rbac', { rules: [{ operations: ['*'], apiGroups: ['rbac.authorization.k8s.io'], apiVersions: ['*'], resources: ['roles'] }] }),
        hook('status.test', '/status', { rules: [{ operations: ['UPDATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/status'] }] }),
        hook('all.test', '/all', { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], scope: 'Namespaced' }] }),
        hook('no-rules.test', '/no-rules', { rules: [] }),
      ]);
      await validate();
      await validate(attrs({ operation: 'UPDATE', oldObject: requestAttributes().object }));
      await validate(attrs({ kind: { group: 'rbac.authorization.svc.io', version: 'v1', kind: 'Role' }, resource: { group: 'rbac.authorization.svc.io', version: 'v1', resource: 'roles' } }));
      await validate(attrs({ operation: 'UPDATE', kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, subresource: 'status' }));
      // Cluster-scoped: not Namespaced.
      await validate(attrs({ namespace: '', kind: { group: '', version: 'v1', kind: 'Node' }, resource: { group: '', version: 'v1', resource: 'nodes' } }));
      const ops = (path: string) => server.callsTo(path).map((c) => `${c.review.request.operation} ${c.review.request.resource['resource']}${c.review.request.subResource ? `/${c.review.request.subResource}` : ''}`);
      expect(ops('/create-only')).toEqual(['CREATE configmaps']);
      expect(ops('/rbac')).toEqual(['CREATE roles']);
      expect(ops('/status')).toEqual(['UPDATE pods/status']);
      expect(ops('/all')).toEqual(['CREATE configmaps', 'UPDATE configmaps', 'CREATE roles', 'UPDATE pods/status']);
      expect(ops('/no-rules')).toEqual([]);
    });

    test('namespaceSelector reads the namespace (or the Namespace being written), objectSelector the new or the old object', async () => {
      configure('ValidatingWebhookConfiguration', 'selectors', [
        hook('prod.test', '/prod', { namespaceSelector: { matchLabels: { env: 'prod' } }, rules: [{ operations: ['*'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps', 'namespaces'] }] }),
        hook('labelled.test', '/labelled', { objectSelector: { matchExpressions: [{ key: 'watched', operator: 'Exists' }] } }),
      ]);
      await validate();
      await validate(attrs({ namespace: 'team-b' }));
      await validate(attrs({ kind: { group: '', version: 'v1', kind: 'Namespace' }, resource: { group: '', version: 'v1', resource: 'namespaces' }, namespace: '', name: 'new-ns', object: { metadata: { name: 'new-ns', labels: { env: 'prod' } } } }));
      const labelled = { metadata: { name: 'cm', namespace: 'team-a', labels: { watched: 'yes' } } };
      await validate(attrs({ name: 'new-labelled', object: { ...labelled, metadata: { ...labelled.metadata, name: 'new-labelled' } } }));
      await validate(attrs({ operation: 'UPDATE', name: 'unlabelled-now', object: { metadata: { name: 'unlabelled-now', namespace: 'team-a' } }, oldObject: labelled }));
      expect(server.callsTo('/prod').map((c) => `${c.review.request.resource['resource']}:${c.review.request.namespace ?? ''}/${c.review.request.name}`)).toEqual([
        'configmaps:team-a/cm',
        'namespaces:/new-ns',
        'configmaps:team-a/new-labelled',
        'configmaps:team-a/unlabelled-now',
      ]);
      expect(server.callsTo('/labelled').map((c) => c.review.request.name)).toEqual(['new-labelled', 'unlabelled-now']);
      // A namespace that does not exist: NotFound, as the original answers.
      const err = await refusal(validate(attrs({ namespace: 'gone' })));
      expect([err.code, err.message]).toEqual([404, 'namespaces "gone" not found']);
    });

    test('matchConditions: all true calls, one false skips, an error refuses under Fail (403) and skips under Ignore; the authorizer asks authz', async () => {
      configure('ValidatingWebhookConfiguration', 'conditions', [
        hook('approved.test', '/approved', {
          matchConditions: [
            { name: 'not-kube-system', expression: "request.namespace != 'kube-system'" },
            { name: 'approver', expression: "authorizer.group('').resource('configmaps').namespace(request.namespace).check('approve').allowed()" },
          ],
        }),
        hook('named-x.test', '/named-x', { matchConditions: [{ name: 'x', expression: "object.metadata.name == 'x'" }] }),
        hook('broken-fail.test', '/broken-fail', { objectSelector: { matchLabels: { broken: 'fail' } }, matchConditions: [{ name: 'missing', expression: 'object.data.missing == "1"' }] }),
        hook('broken-ignore.test', '/broken-ignore', { failurePolicy: 'Ignore', objectSelector: { matchLabels: { broken: 'ignore' } }, matchConditions: [{ name: 'missing', expression: 'object.data.missing == "1"' }] }),
      ]);
      await validate();
      expect(server.callsTo('/approved')).toHaveLength(1);
      expect(server.callsTo('/named-x')).toHaveLength(0);
      expect(checks).toEqual([expect.objectContaining({ verb: 'approve', resource: 'configmaps', namespace: 'team-a', resourceRequest: true, user: expect.objectContaining({ username: 'alice' }) })]);
      const broken = (label: string) => attrs({ object: { metadata: { name: 'cm', namespace: 'team-a', labels: { broken: label } }, data: {} } });
      const err = await refusal(validate(broken('fail')));
      expect(err.code).toBe(403);
      expect(err.message).toMatch(/^configmaps "cm" is forbidden: expression 'object.data.missing == "1"' resulted in error: /);
      await validate(broken('ignore'));
      expect([server.callsTo('/broken-fail').length, server.callsTo('/broken-ignore').length]).toEqual([0, 0]);
    });

    test("matchPolicy Equivalent offers a custom resource's other served versions (conversion None): the webhook sees and patches its version", async () => {
      const crd = (strategy: string, plural: string): ApiObject => ({
        apiVersion: 'apiextensions.svc.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: { name: `${plural}.example.com`, resourceVersion: String(++revision) },
        spec: { group: 'example.com', names: { plural, kind: 'Widget' }, scope: 'Namespaced', conversion: { strategy }, versions: [{ name: 'v1', served: true, storage: true }, { name: 'v2', served: true, storage: false }] },
        status: { acceptedNames: { plural, kind: 'Widget' }, conditions: [{ type: 'Established', status: 'True' }] },
      });
      configurations.apply('CustomResourceDefinition', crd('None', 'widgets'));
      configurations.apply('CustomResourceDefinition', crd('Webhook', 'gadgets'));
      make({ equivalents: new CustomResourceEquivalents(configurations) });
      const v1Only = (name: string, path: string, matchPolicy: 'Exact' | 'Equivalent', resource: string): WebhookSpec =>
        hook(name, path, { matchPolicy, rules: [{ operations: ['CREATE'], apiGroups: ['example.com'], apiVersions: ['v1'], resources: [resource] }] });
      configure('MutatingWebhookConfiguration', 'widgets', [v1Only('equivalent.test', '/equivalent', 'Equivalent', 'widgets'), v1Only('exact.test', '/exact', 'Exact', 'widgets'), v1Only('gadgets.test', '/gadgets', 'Equivalent', 'gadgets')]);
      server.on('/equivalent', () => ({ patch: [{ op: 'add', path: '/spec', value: { size: 1 } }] }));
      const v2 = (resource: string): WebhookAttributes =>
        attrs({ kind: { group: 'example.com', version: 'v2', kind: 'Widget' }, resource: { group: 'example.com', version: 'v2', resource }, object: { apiVersion: 'example.com/v2', kind: 'Widget', metadata: { name: 'w', namespace: 'team-a' } } });
      const out = await mutate(v2('widgets'));
      await mutate(v2('gadgets'));
      const [call] = server.callsTo('/equivalent');
      expect([call?.review.request.kind, call?.review.request.requestKind, call?.review.request.object?.apiVersion]).toEqual([
        { group: 'example.com', version: 'v1', kind: 'Widget' },
        { group: 'example.com', version: 'v2', kind: 'Widget' },
        'example.com/v1',
      ]);
      // The patched object goes back to the request's version.
      expect([out.object?.apiVersion, out.object?.['spec']]).toEqual(['example.com/v2', { size: 1 }]);
      // Exact names the version; a resource converted by a webhook offers no other version.
      expect([server.callsTo('/exact').length, server.callsTo('/gadgets').length]).toEqual([0, 0]);
    });

    test('configurations and policies themselves are never sent', async () => {
      configure('ValidatingWebhookConfiguration', 'everything', [hook('everything.test', '/everything', { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }] })]);
      configure('MutatingWebhookConfiguration', 'everything', [hook('everything-m.test', '/everything-m', { rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }] })]);
      for (const kind of ['ValidatingWebhookConfiguration', 'MutatingWebhookConfiguration', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']) {
        const a = attrs({ kind: { group: 'admissionregistration.svc.io', version: 'v1', kind }, resource: { group: 'admissionregistration.svc.io', version: 'v1', resource: `${kind.toLowerCase()}s` }, namespace: '' });
        await mutate(a);
        await validate(a);
      }
      expect(server.calls).toHaveLength(0);
      await validate();
      expect(server.callsTo('/everything')).toHaveLength(1);
    });
  });

  describe('the review', () => {
    test('carries the request as the original fills it, with a new uid for every call and the webhook told its timeout', async () => {
      configure('ValidatingWebhookConfiguration', 'review', [hook('one.test', '/one'), hook('two.test', '/two', { admissionReviewVersions: ['v1beta1'], timeoutSeconds: 3 })]);
      const old = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'cm', namespace: 'team-a' }, data: { a: '1' } };
      const now = { ...old, data: { a: '2' } };
      await validate(attrs({ operation: 'UPDATE', object: now, oldObject: old, dryRun: true, options: { apiVersion: 'meta.svc.io/v1', kind: 'UpdateOptions', dryRun: ['All'] } }));
      const [one, two] = [server.callsTo('/one')[0] as Call, server.callsTo('/two')[0] as Call];
      expect(one.review).toEqual({
        apiVersion: 'admission.svc.io/v1',
        kind: 'AdmissionReview',
        request: {
          uid: expect.stringMatching(/^[0-9a-f-]{36}$/),
          kind: { group: '', version: 'v1', kind: 'ConfigMap' },
          resource: { group: '', version: 'v1', resource: 'configmaps' },
          requestKind: { group: '', version: 'v1', kind: 'ConfigMap' },
          requestResource: { group: '', version: 'v1', resource: 'configmaps' },
          name: 'cm',
          namespace: 'team-a',
          operation: 'UPDATE',
          userInfo: { username: 'alice', uid: 'u1', groups: ['devs'] },
          object: now,
          oldObject: old,
          dryRun: true,
          options: { apiVersion: 'meta.svc.io/v1', kind: 'UpdateOptions', dryRun: ['All'] },
        },
      });
      expect(one.query).toBe('?timeout=5s');
      expect(two.review.apiVersion).toBe('admission.svc.io/v1beta1');
      expect(two.query).toBe('?timeout=3s');
      expect(two.review.request.uid).not.toBe(one.review.request.uid);
    });

    test('a refusal is the webhook’s status, its message naming the webhook, at least 400', async () => {
      server.on('/deny', () => ({ response: { allowed: false, status: { code: 403, reason: 'Forbidden', message: 'no configmaps today' } } }));
      server.on('/deny-bare', () => ({ response: { allowed: false, status: { code: 200 } } }));
      configure('ValidatingWebhookConfiguration', 'deny', [hook('deny.test', '/deny')]);
      let err = await refusal(validate());
      expect([err.code, err.reason, err.message]).toEqual([403, 'Forbidden', 'admission webhook "deny.test" denied the request: no configmaps today']);
      configure('ValidatingWebhookConfiguration', 'deny', [hook('bare.test', '/deny-bare')]);
      err = await refusal(validate());
      expect([err.code, err.message]).toEqual([400, 'admission webhook "bare.test" denied the request without explanation']);
    });

    test('warnings and audit annotations are kept, the annotations under the webhook’s name; a v1 answer may name the upstream group', async () => {
      server.on('/warn', () => ({ response: { warnings: ['mind the gap'], auditAnnotations: { checked: 'yes' } }, envelope: { apiVersion: 'admission.k8s.io/v1' } }));
      configure('ValidatingWebhookConfiguration', 'warn', [hook('warn.test', '/warn')]);
      const record = await validate();
      expect(record.warnings).toEqual(['mind the gap']);
      expect(record.auditAnnotations).toEqual({ 'warn.test/checked': 'yes' });
    });

    test('validating webhooks are called at once; the first refusal in their order is the answer', async () => {
      const answered: string[] = [];
      server.on('/slow-deny', () => ({ hang: true }));
      server.on('/fast-deny', () => {
        answered.push('fast');
        return { response: { allowed: false, status: { message: 'fast says no' } } };
      });
      configure('ValidatingWebhookConfiguration', 'parallel', [hook('slow.test', '/slow-deny', { timeoutSeconds: 1, failurePolicy: 'Ignore' }), hook('fast.test', '/fast-deny')]);
      const started = Date.now();
      const err = await refusal(validate());
      // Both were called together: the whole took one timeout, not more.
      expect(Date.now() - started).toBeLessThan(1900);
      expect(err.message).toBe('admission webhook "fast.test" denied the request: fast says no');
      expect(answered).toEqual(['fast']);
    });
  });

  describe('mutation', () => {
    test('patches apply in order, each webhook sees the object the one before left; the caller learns who changed it', async () => {
      server.on('/add-a', () => ({ patch: [{ op: 'add', path: '/metadata/labels', value: { a: '1' } }] }));
      server.on('/add-b', (review) => ({ patch: [{ op: 'add', path: '/metadata/labels/b', value: String(review.request.object?.metadata?.labels?.['a']) }] }));
      server.on('/noop', () => ({ patch: [] }));
      configure('MutatingWebhookConfiguration', 'm1', [hook('a.test', '/add-a'), hook('noop.test', '/noop')]);
      configure('MutatingWebhookConfiguration', 'm2', [hook('b.test', '/add-b')]);
      const { object, changed, record } = await mutate();
      expect(changed).toBe(true);
      expect(object?.metadata?.labels).toEqual({ a: '1', b: '1' });
      expect(record.mutatedBy).toEqual(['a.test', 'b.test']);
      expect(record.auditAnnotations).toMatchObject({
        'mutation.webhook.admission.svc.io/round_0_index_0': JSON.stringify({ configuration: 'm1', webhook: 'a.test', mutated: true }),
        'mutation.webhook.admission.svc.io/round_0_index_1': JSON.stringify({ configuration: 'm1', webhook: 'noop.test', mutated: false }),
      });
      // No webhook asked to be called again.
      expect(server.callsTo('/add-a')).toHaveLength(1);
    });

    test('reinvocation: an IfNeeded webhook is called once more after a later webhook changed the object; a Never one is not', async () => {
      server.on('/first', (review) => ({ patch: [{ op: 'add', path: '/metadata/annotations', value: { first: review.request.object?.metadata?.labels?.['second'] ?? 'alone' } }] }));
      server.on('/never', () => ({ response: { allowed: true } }));
      server.on('/second', () => ({ patch: [{ op: 'add', path: '/metadata/labels', value: { second: 'yes' } }] }));
      const pods = { rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] };
      configure('MutatingWebhookConfiguration', 'a', [hook('first.test', '/first', { ...pods, reinvocationPolicy: 'IfNeeded' }), hook('never.test', '/never', pods)]);
      configure('MutatingWebhookConfiguration', 'b', [hook('second.test', '/second', { ...pods, reinvocationPolicy: 'IfNeeded' })]);
      const pod = attrs({ kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, object: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'team-a' }, spec: {} } });
      let builtInRuns = 0;
      const counting: AdmissionPlugin = { name: 'Counting', admit: async () => void builtInRuns++ };
      const { object } = await mutate(pod, [counting, serviceAccountDefaults()]);
      expect(object?.metadata?.annotations).toEqual({ first: 'yes' });
      expect(object?.['spec']).toEqual({ serviceAccountName: 'default', serviceAccount: 'default' });
      expect(server.callsTo('/first')).toHaveLength(2);
      expect(server.callsTo('/never')).toHaveLength(1);
      // first changed the object in the second round, after second had been called: second is called again in that round (the original's rule).
      expect(server.callsTo('/second')).toHaveLength(2);
      expect(builtInRuns).toBe(2);
    });

    test('the reinvocation state follows the original: a webhook skipped in the first round is not called in the second', async () => {
      const state = new ReinvocationState();
      state.invoked('a');
      state.requireReinvokingPreviouslyInvoked();
      state.invoked('b');
      expect([state.shouldReinvokeWebhook('a'), state.shouldReinvokeWebhook('b')]).toEqual([true, false]);
      state.setLastOutput({ metadata: { name: 'x' } });
      expect(state.outputChangedSinceLastWebhook({ metadata: { name: 'x' } })).toBe(false);
      expect(state.outputChangedSinceLastWebhook({ metadata: { name: 'y' } })).toBe(true);
    });

    test('bad patches: another patch type, undecodable or unappliable patches fail the call (refused under Fail, skipped with a warning under Ignore); a patch of a delete is refused', async () => {
      server.on('/merge', () => ({ response: { patch: Buffer.from('{"metadata":{}}').toString('base64'), patchType: 'MergePatch' } }));
      server.on('/undecodable', () => ({ response: { patch: Buffer.from('not json').toString('base64'), patchType: 'JSONPatch' } }));
      server.on('/unappliable', () => ({ patch: [{ op: 'remove', path: '/metadata/annotations/absent' }] }));
      server.on('/good', () => ({ patch: [{ op: 'add', path: '/metadata/labels', value: { good: 'yes' } }] }));
      server.on('/mistyped', () => ({ patch: [{ op: 'add', path: '/data', value: 'not a map' }] }));
      const decoder = new PatchedObjectDecoder(configurations);
      make({ decodeProblem: (kind, obj) => decoder.problem(kind, obj) });
      for (const [path, text] of [
        ['/mistyped', 'the patched object could not be decoded: ConfigMap in version "v1" cannot be handled as a ConfigMap: '],
        ['/merge', 'unsupported patch type "MergePatch"'],
        ['/undecodable', 'received undecodable patch in webhook response'],
        ['/unappliable', 'the patch in the webhook response could not be applied'],
      ] as const) {
        configure('MutatingWebhookConfiguration', 'bad', [hook('good.test', '/good'), hook('bad.test', path)]);
        const err = await refusal(mutate());
        expect(err.code).toBe(500);
        expect(err.message).toContain(`failed calling webhook "bad.test": ${text}`);
        configure('MutatingWebhookConfiguration', 'bad', [hook('good.test', '/good'), hook('bad.test', path, { failurePolicy: 'Ignore' })]);
        const { object, record } = await mutate();
        expect(object?.metadata?.labels).toEqual({ good: 'yes' });
        expect(record.warnings).toEqual([expect.stringContaining(`failed calling webhook "bad.test": ${text}`)]);
        expect(record.auditAnnotations['failed-open.mutation.webhook.admission.svc.io/round_0_index_1']).toBe('bad.test');
      }
      configure('MutatingWebhookConfiguration', 'bad', [hook('good.test', '/good', { rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }] })]);
      const err = await refusal(mutate(attrs({ operation: 'DELETE', object: undefined, oldObject: requestAttributes().object })));
      expect([err.code, err.message]).toEqual([500, 'Internal error occurred: admission webhook "good.test" attempted to modify the object, which is not supported for this operation']);
    });
  });

  describe('failures', () => {
    const cases: Array<{ name: string; spec: () => Partial<WebhookSpec>; reply?: Reply; text: RegExp }> = [
      { name: 'error', spec: () => ({}), reply: { status: 500, body: '{"kind":"Status","message":"internal trouble"}' }, text: /failed to call webhook: the server responded with the status code 500: internal trouble/ },
      { name: 'garbage', spec: () => ({}), reply: { status: 200, body: '<html>' }, text: /received invalid webhook response: the answer is not a JSON AdmissionReview/ },
      { name: 'wrong-uid', spec: () => ({}), reply: { response: { uid: 'someone-else' } }, text: /received invalid webhook response: expected response.uid="[0-9a-f-]+", got "someone-else"/ },
      { name: 'wrong-kind', spec: () => ({}), reply: { envelope: { apiVersion: 'example.com/v1' } }, text: /expected webhook response of admission.svc.io\/v1, Kind=AdmissionReview, got example.com\/v1/ },
      { name: 'validating-patch', spec: () => ({}), reply: { patch: [{ op: 'add', path: '/x', value: 1 }] }, text: /validating webhook may not return response.patch/ },
      { name: 'refused', spec: () => ({ clientConfig: { url: 'https://127.0.0.1:1/', caBundle } }), text: /failed to call webhook: Post "https:\/\/127.0.0.1:1\/\?timeout=5s": connect ECONNREFUSED/ },
      { name: 'untrusted', spec: () => ({ clientConfig: { url: server.url('/untrusted') } }), text: /failed to call webhook: Post .*: (self[- ]signed|unable to verify|unable to get local issuer)/ },
      { name: 'no-version', spec: () => ({ admissionReviewVersions: ['v2'] }), text: /webhook does not accept known AdmissionReview versions/ },
    ];
    test.each(cases)('$name: refused with 500 naming the webhook under Fail, skipped with a warning under Ignore', async ({ name, spec, reply, text }) => {
      if (reply) server.on(`/${name}`, () => reply);
      configure('ValidatingWebhookConfiguration', 'failing', [hook(`${name}.test`, `/${name}`, spec())]);
      const err = await refusal(validate());
      expect([err.code, err.reason]).toEqual([500, 'InternalError']);
      expect(err.message).toMatch(new RegExp(`^Internal error occurred: failed calling webhook "${name}.test": `));
      expect(err.message).toMatch(text);
      configure('ValidatingWebhookConfiguration', 'failing', [hook(`${name}.test`, `/${name}`, { ...spec(), failurePolicy: 'Ignore' })]);
      const record = await validate();
      expect(record.warnings).toHaveLength(1);
      expect(record.warnings[0]).toMatch(new RegExp(`^failed calling webhook "${name}.test": `));
      expect(record.auditAnnotations).toEqual({ 'failed-open.validating.webhook.admission.svc.io/round_0_index_0': `${name}.test` });
    });

    test('a webhook that does not answer within timeoutSeconds fails at its timeout', async () => {
      server.on('/hang', () => ({ hang: true }));
      configure('ValidatingWebhookConfiguration', 'hang', [hook('hang.test', '/hang', { timeoutSeconds: 1 })]);
      const started = Date.now();
      const err = await refusal(validate());
      const took = Date.now() - started;
      expect(took).toBeGreaterThanOrEqual(950);
      expect(took).toBeLessThan(3000);
      expect(err.message).toContain('failed calling webhook "hang.test": failed to call webhook: Post');
      expect(err.message).toContain('did not answer within 1000 ms');
    });

    test('an answer larger than the limit is a failed call', async () => {
      make({ maxResponseBytes: 4096 });
      server.on('/big', () => ({ response: { warnings: ['x'.repeat(8192)] } }));
      configure('ValidatingWebhookConfiguration', 'big', [hook('big.test', '/big')]);
      const err = await refusal(validate());
      expect(err.message).toContain('failed calling webhook "big.test": failed to call webhook');
      expect(err.message).toContain('larger than 4096 bytes');
    });

    test('dry run: a webhook with side effects refuses the request (400) without being called; None and NoneOnDryRun are called', async () => {
      configure('ValidatingWebhookConfiguration', 'dry', [hook('none.test', '/none'), hook('dry.test', '/dry', { sideEffects: 'NoneOnDryRun' })]);
      await validate(attrs({ dryRun: true }));
      expect(server.calls.map((c) => [c.path, c.review.request.dryRun])).toEqual([
        ['/none', true],
        ['/dry', true],
      ]);
      configure('MutatingWebhookConfiguration', 'effects', [hook('effects.test', '/effects', { sideEffects: 'Some' })]);
      const err = await refusal(mutate(attrs({ dryRun: true })));
      expect([err.code, err.message]).toEqual([400, 'admission webhook "effects.test" does not support dry run']);
      expect(server.callsTo('/effects')).toHaveLength(0);
      await mutate();
      expect(server.callsTo('/effects')).toHaveLength(1);
    });

    test('connections are kept alive and reused between calls', async () => {
      configure('ValidatingWebhookConfiguration', 'reuse', [hook('reuse.test', '/reuse')]);
      const before = server.connections;
      for (let i = 0; i < 5; i++) await validate();
      expect(server.callsTo('/reuse')).toHaveLength(5);
      expect(server.connections - before).toBe(1);
    });
  });

  describe('isolation', () => {
    test('after N consecutive failures a webhook is not called for the back-off: Ignore goes on at once with a warning, Fail refuses at once; a trial call lets it back', async () => {
      let healthy = false;
      server.on('/flaky-ignore', () => (healthy ? { response: { allowed: true } } : { hang: true }));
      server.on('/flaky-fail', () => (healthy ? { response: { allowed: true } } : { status: 503, body: 'down' }));
      make({ isolation: { failures: 2, backoffMs: 1500, maxBackoffMs: 6000 } });
      configure('ValidatingWebhookConfiguration', 'flaky', [
        hook('flaky-ignore.test', '/flaky-ignore', { failurePolicy: 'Ignore', timeoutSeconds: 1, objectSelector: { matchLabels: { p: 'ignore' } } }),
        hook('flaky-fail.test', '/flaky-fail', { objectSelector: { matchLabels: { p: 'fail' } } }),
      ]);
      const labelled = (p: string) => attrs({ object: { metadata: { name: 'cm', namespace: 'team-a', labels: { p } } } });
      const timed = async (p: string): Promise<{ ms: number; record?: AdmissionRecord; err?: ApiError }> => {
        const started = Date.now();
        try {
          const record = await validate(labelled(p));
          return { ms: Date.now() - started, record };
        } catch (err) {
          return { ms: Date.now() - started, err: err as ApiError };
        }
      };
      const ignore = [await timed('ignore'), await timed('ignore'), await timed('ignore'), await timed('ignore')];
      expect(ignore.slice(0, 2).every((x) => x.ms >= 950)).toBe(true);
      for (const x of ignore.slice(2)) {
        expect(x.ms).toBeLessThan(300);
        expect(x.record?.warnings[0]).toMatch(/^failed calling webhook "flaky-ignore.test": the webhook is isolated after 2 consecutive failed calls; not called for another [12]s/);
      }
      expect(server.callsTo('/flaky-ignore')).toHaveLength(2);
      const fail = [await timed('fail'), await timed('fail'), await timed('fail')];
      expect(fail.map((x) => x.err?.code)).toEqual([500, 500, 500]);
      expect(fail[2]?.err?.message).toContain('failed calling webhook "flaky-fail.test": the webhook is isolated after 2 consecutive failed calls');
      expect(server.callsTo('/flaky-fail')).toHaveLength(2);
      expect(webhooks.isolation.stats()).toEqual(
        expect.arrayContaining([
          { configuration: 'flaky', webhook: 'flaky-ignore.test', isolated: true, consecutiveFailures: 2, isolations: 1, skipped: 2 },
          { configuration: 'flaky', webhook: 'flaky-fail.test', isolated: true, consecutiveFailures: 2, isolations: 1, skipped: 1 },
        ]),
      );
      healthy = true;
      await new Promise((r) => setTimeout(r, 1600));
      expect((await timed('ignore')).record?.warnings).toEqual([]);
      expect((await timed('fail')).err).toBeUndefined();
      expect([server.callsTo('/flaky-ignore').length, server.callsTo('/flaky-fail').length]).toEqual([3, 3]);
      expect(webhooks.isolation.stats().every((s) => !s.isolated && s.consecutiveFailures === 0)).toBe(true);
    });

    test('a changed address is another webhook: its isolation does not carry over', async () => {
      server.on('/down', () => ({ status: 503, body: 'down' }));
      make({ isolation: { failures: 1, backoffMs: 60_000, maxBackoffMs: 60_000 } });
      configure('ValidatingWebhookConfiguration', 'moving', [hook('moving.test', '/down', { failurePolicy: 'Ignore' })]);
      await validate();
      await validate();
      expect(server.callsTo('/down')).toHaveLength(1);
      configure('ValidatingWebhookConfiguration', 'moving', [hook('moving.test', '/up', { failurePolicy: 'Ignore' })]);
      expect((await validate()).warnings).toEqual([]);
      expect(server.callsTo('/up')).toHaveLength(1);
      expect(webhooks.isolation.stats().map((s) => s.isolated)).toEqual([]);
    });
  });
});
