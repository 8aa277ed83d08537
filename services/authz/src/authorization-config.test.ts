import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAuthorizationConfig, readAuthorizationConfig, reloadProblem, type AuthorizationConfig } from './authorization-config';

describe('the authorization configuration file', () => {
  let dir = '';
  let kubeconfig = '';
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'authz-config-'));
    kubeconfig = path.join(dir, 'webhook.kubeconfig');
    fs.writeFileSync(kubeconfig, 'apiVersion: v1\nkind: Config\n');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const webhook = (overrides: Record<string, unknown> = {}): Record<string, unknown> => ({
    timeout: '3s',
    subjectAccessReviewVersion: 'v1',
    matchConditionSubjectAccessReviewVersion: 'v1',
    failurePolicy: 'Deny',
    connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: kubeconfig },
    ...overrides,
  });
  const doc = (authorizers: unknown[], extra: Record<string, unknown> = {}): string => JSON.stringify({ apiVersion: 'apiserver.config.svc.io/v1', kind: 'AuthorizationConfiguration', authorizers, ...extra });
  const parse = (text: string): AuthorizationConfig => parseAuthorizationConfig(text, '/etc/authz.yaml');
  const problem = (authorizers: unknown[], extra?: Record<string, unknown>): string => {
    try {
      parse(doc(authorizers, extra));
    } catch (err) {
      return (err as Error).message;
    }
    throw new Error('the configuration was accepted');
  };
  const webhookProblem = (overrides: Record<string, unknown>) => problem([{ type: 'Webhook', name: 'w', webhook: webhook(overrides) }]);

  test('a YAML document with its defaults: TTLs 5m and 30s; every version of the group is accepted', () => {
    for (const version of ['v1', 'v1beta1', 'v1alpha1']) {
      const config = parse(`apiVersion: apiserver.config.svc.io/${version}
kind: AuthorizationConfiguration
authorizers:
- type: Webhook
  name: policy.example.com
  webhook:
    timeout: 3s
    subjectAccessReviewVersion: v1beta1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: NoOpinion
    connectionInfo: {type: KubeConfigFile, kubeConfigFile: ${kubeconfig}}
    matchConditions:
    - expression: has(request.resourceAttributes)
- {type: RBAC, name: rbac}
- {type: Node, name: node}
- {type: AlwaysDeny, name: deny}
`);
      expect(config.authorizers.map((a) => [a.type, a.name])).toEqual([['Webhook', 'policy.example.com'], ['RBAC', 'rbac'], ['Node', 'node'], ['AlwaysDeny', 'deny']]);
      expect(config.authorizers[0]?.webhook).toMatchObject({ authorizedTtlMs: 300_000, unauthorizedTtlMs: 30_000, timeoutMs: 3000, subjectAccessReviewVersion: 'v1beta1', failurePolicy: 'NoOpinion', connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: kubeconfig } });
    }
    expect(parse(doc([{ type: 'Webhook', name: 'w', webhook: webhook({ authorizedTTL: '1m', unauthorizedTTL: '10s' }) }])).authorizers[0]?.webhook).toMatchObject({ authorizedTtlMs: 60_000, unauthorizedTtlMs: 10_000 });
  });

  test.each<[string, () => string, string]>([
    ['apiVersion', () => problem([{ type: 'RBAC', name: 'r' }], { apiVersion: 'apiserver.config.svc.io/v2' }), 'apiVersion: Unsupported value: "apiserver.config.svc.io/v2"'],
    ['kind', () => problem([{ type: 'RBAC', name: 'r' }], { kind: 'AuthenticationConfiguration' }), 'kind: Unsupported value: "AuthenticationConfiguration"'],
    ['an unknown top-level field', () => problem([{ type: 'RBAC', name: 'r' }], { authorisers: [] }), 'authorisers: unknown field'],
    ['no authorizers', () => problem([]), 'authorizers: Required value: at least one authorization mode must be defined'],
    ['type required', () => problem([{ name: 'r' }]), 'authorizers[0].type: Required value'],
    ['type unsupported', () => problem([{ type: 'ABAC', name: 'r' }]), 'authorizers[0].type: Unsupported value: "ABAC": supported values: "Webhook", "Node", "RBAC", "AlwaysAllow", "AlwaysDeny"'],
    ['a repeated non-webhook type', () => problem([{ type: 'RBAC', name: 'a' }, { type: 'RBAC', name: 'b' }]), 'authorizers[1].type: Duplicate value: "RBAC"'],
    ['name required', () => problem([{ type: 'RBAC' }]), 'authorizers[0].name: Required value'],
    ['name a DNS-1123 subdomain', () => problem([{ type: 'RBAC', name: 'My_RBAC' }]), 'authorizers[0].name: Invalid value: "My_RBAC": a lowercase RFC 1123 subdomain'],
    ['names unique', () => problem([{ type: 'Webhook', name: 'x', webhook: webhook() }, { type: 'Webhook', name: 'x', webhook: webhook() }]), 'authorizers[1].name: Duplicate value: "x"'],
    ['an unknown authorizer field', () => problem([{ type: 'RBAC', name: 'r', mode: 'x' }]), 'authorizers[0].mode: unknown field'],
    ['webhook only with type Webhook', () => problem([{ type: 'RBAC', name: 'r', webhook: webhook() }]), 'authorizers[0].webhook: Invalid value: "non-null": may only be specified when type=Webhook'],
    ['webhook required with type Webhook', () => problem([{ type: 'Webhook', name: 'w' }]), 'authorizers[0].webhook: Required value: required when type=Webhook'],
    ['an unknown webhook field', () => webhookProblem({ cacheSize: 3 }), 'authorizers[0].webhook.cacheSize: unknown field'],
    ['timeout required', () => webhookProblem({ timeout: undefined }), 'authorizers[0].webhook.timeout: Required value'],
    ['timeout at most 30s', () => problem([{ type: 'RBAC', name: 'r' }, { type: 'Webhook', name: 'w', webhook: webhook({ timeout: '45s' }) }]), 'authorizers[1].webhook.timeout: Invalid value: "45s": must be no more than 30s'],
    ['timeout a duration', () => webhookProblem({ timeout: 'soon' }), 'authorizers[0].webhook.timeout: Invalid value: "soon": not a duration'],
    ['authorizedTTL a duration', () => webhookProblem({ authorizedTTL: '5 minutes' }), 'authorizers[0].webhook.authorizedTTL: Invalid value: "5 minutes"'],
    ['unauthorizedTTL a duration', () => webhookProblem({ unauthorizedTTL: 30 }), 'authorizers[0].webhook.unauthorizedTTL: Invalid value: must be a string'],
    ['subjectAccessReviewVersion required', () => webhookProblem({ subjectAccessReviewVersion: undefined }), 'authorizers[0].webhook.subjectAccessReviewVersion: Required value'],
    ['subjectAccessReviewVersion v1 or v1beta1', () => webhookProblem({ subjectAccessReviewVersion: 'v2' }), 'authorizers[0].webhook.subjectAccessReviewVersion: Unsupported value: "v2": supported values: "v1", "v1beta1"'],
    ['matchConditionSubjectAccessReviewVersion required', () => webhookProblem({ matchConditionSubjectAccessReviewVersion: '' }), 'authorizers[0].webhook.matchConditionSubjectAccessReviewVersion: Required value'],
    ['matchConditionSubjectAccessReviewVersion v1', () => webhookProblem({ matchConditionSubjectAccessReviewVersion: 'v1beta1' }), 'authorizers[0].webhook.matchConditionSubjectAccessReviewVersion: Unsupported value: "v1beta1": supported values: "v1"'],
    ['failurePolicy required', () => webhookProblem({ failurePolicy: undefined }), 'authorizers[0].webhook.failurePolicy: Required value'],
    ['failurePolicy NoOpinion or Deny', () => webhookProblem({ failurePolicy: 'Allow' }), 'authorizers[0].webhook.failurePolicy: Unsupported value: "Allow": supported values: "NoOpinion", "Deny"'],
    ['connectionInfo required', () => webhookProblem({ connectionInfo: undefined }), 'authorizers[0].webhook.connectionInfo: Required value'],
    ['connectionInfo.type supported', () => webhookProblem({ connectionInfo: { type: 'URL' } }), 'authorizers[0].webhook.connectionInfo.type: Unsupported value: "URL"'],
    ['KubeConfigFile needs its path', () => webhookProblem({ connectionInfo: { type: 'KubeConfigFile' } }), 'authorizers[0].webhook.connectionInfo.kubeConfigFile: Required value'],
    ['the path absolute', () => webhookProblem({ connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: 'webhook.kubeconfig' } }), 'authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: "webhook.kubeconfig": must be an absolute path'],
    ['the file present', () => webhookProblem({ connectionInfo: { type: 'KubeConfigFile', kubeConfigFile: '/nonexistent/k' } }), 'authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: "/nonexistent/k": error loading file'],
    ['InClusterConfig has no path', () => webhookProblem({ connectionInfo: { type: 'InClusterConfig', kubeConfigFile: kubeconfig } }), 'authorizers[0].webhook.connectionInfo.kubeConfigFile: Invalid value: '],
    ['at most 64 match conditions', () => webhookProblem({ matchConditions: Array.from({ length: 65 }, (_, i) => ({ expression: `request.user == "u${i}"` })) }), 'authorizers[0].webhook.matchConditions: Too many: 65: must have at most 64 items'],
    ['a match condition expression required', () => webhookProblem({ matchConditions: [{ expression: '' }] }), 'authorizers[0].webhook.matchConditions[0].expression: Required value'],
    ['match condition expressions unique', () => webhookProblem({ matchConditions: [{ expression: 'has(request.uid)' }, { expression: 'has(request.uid)' }] }), 'authorizers[0].webhook.matchConditions[1].expression: Duplicate value: "has(request.uid)"'],
    ['a match condition that does not compile', () => webhookProblem({ matchConditions: [{ expression: 'request.user ==' }] }), 'authorizers[0].webhook.matchConditions[0].expression: Invalid value: compilation failed'],
    ['a match condition over an unknown variable', () => webhookProblem({ matchConditions: [{ expression: 'user == "x"' }] }), "authorizers[0].webhook.matchConditions[0].expression: Invalid value: compilation failed: undeclared reference to 'user'"],
    ['a match condition over an unknown field', () => webhookProblem({ matchConditions: [{ expression: 'request.username == "x"' }] }), "authorizers[0].webhook.matchConditions[0].expression: Invalid value: compilation failed: undefined field 'username'"],
    ['a match condition that is not a bool', () => webhookProblem({ matchConditions: [{ expression: 'request.user' }] }), 'authorizers[0].webhook.matchConditions[0].expression: Invalid value: must evaluate to bool'],
  ])('%s', (_name, run, message) => {
    const text = run();
    expect(text.startsWith('/etc/authz.yaml: ')).toBe(true);
    expect(text).toContain(message);
  });

  test('syntax errors and missing files name the file', () => {
    expect(() => parse('authorizers: [')).toThrow(/^\/etc\/authz\.yaml: /);
    expect(() => readAuthorizationConfig(path.join(dir, 'missing.yaml'))).toThrow(/missing\.yaml: ENOENT/);
  });

  test('a reload may reorder but not add or remove Node and RBAC entries; webhooks may change', () => {
    const of = (...entries: unknown[]) => parse(doc(entries));
    const w = (name: string) => ({ type: 'Webhook', name, webhook: webhook() });
    const base = of(w('a'), { type: 'RBAC', name: 'rbac' }, { type: 'Node', name: 'node' });
    expect(reloadProblem(base, of({ type: 'Node', name: 'node' }, w('b'), w('c'), { type: 'RBAC', name: 'rbac' }))).toBeUndefined();
    expect(reloadProblem(base, of(w('a'), { type: 'RBAC', name: 'rbac' }))).toMatch(/^authorizers: Forbidden: .*removed Node/);
    expect(reloadProblem(of(w('a'), { type: 'RBAC', name: 'rbac' }), base)).toMatch(/added Node/);
    expect(reloadProblem(base, of(w('a'), { type: 'Node', name: 'node' }))).toMatch(/removed RBAC/);
  });
});
