import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { makeTestPki, webhookKubeconfig, type TestPki } from '@svc/service-kit/testing/pki';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run, until, type RunResult } from './helpers';

/**
 * `--authorization-config` through the whole system: two webhooks served by
 * this test over HTTPS and RBAC, with match conditions that send only the
 * test's service account's requests for configmaps to webhook A (failure
 * policy Deny) and for secrets to webhook B (NoOpinion). kubectl with the
 * account's token shows A's failures refused, B's failures left to RBAC,
 * and a rewritten file taking effect without a restart. The gateway's
 * decision cache is off so every request reaches authz.
 */
describe('authorization configuration file', () => {
  const namespace = 'authz-config';
  const account = `system:serviceaccount:${namespace}:reader`;
  let env: Environment;
  let pki: TestPki;
  let webhook: https.Server;
  let configFile = '';
  let kubeconfigA = '';
  let kubeconfigB = '';
  let tokenConfig = '';
  /** How webhook A answers: allow, an unparsable body, HTTP 500, or too late. */
  let modeA: 'allow' | 'garbage' | 'error' | 'slow' = 'allow';
  const asked: Record<'a' | 'b', string[]> = { a: [], b: [] };

  const entry = (name: string, kubeconfig: string, failurePolicy: string, resource: string) => `- type: Webhook
  name: ${name}
  webhook:
    timeout: 1s
    authorizedTTL: 1ms
    unauthorizedTTL: 1ms
    subjectAccessReviewVersion: v1
    matchConditionSubjectAccessReviewVersion: v1
    failurePolicy: ${failurePolicy}
    connectionInfo: {type: KubeConfigFile, kubeConfigFile: ${kubeconfig}}
    matchConditions:
    - expression: has(request.resourceAttributes) && request.resourceAttributes.resource == '${resource}'
    - expression: request.user.startsWith('system:serviceaccount:${namespace}:')
`;
  const writeConfig = (webhooks: string): void => fs.writeFileSync(configFile, `apiVersion: apiserver.config.svc.io/v1\nkind: AuthorizationConfiguration\nauthorizers:\n${webhooks}- {type: RBAC, name: rbac}\n`);

  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);
  const asAccount = (args: string[]) => run('kubectl', ['--kubeconfig', tokenConfig, '-n', namespace, ...args]);
  const must = async (res: Promise<RunResult>): Promise<string> => {
    const r = await res;
    if (r.code !== 0) throw new Error(r.stderr);
    return r.stdout;
  };
  const forbidden = (r: RunResult) => r.code !== 0 && /Forbidden|forbidden/.test(r.stderr);

  beforeAll(async () => {
    pki = makeTestPki('authz-webhook-ca');
    webhook = https.createServer({ ...pki.tlsFor('webhook'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const review = JSON.parse(Buffer.concat(chunks).toString()) as { apiVersion: string; spec: { user: string; resourceAttributes?: { resource: string; verb: string } } };
        const which = req.url === '/a' ? 'a' : 'b';
        asked[which].push(`${review.spec.user} ${review.spec.resourceAttributes?.verb ?? ''} ${review.spec.resourceAttributes?.resource ?? ''}`);
        const allow = () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'SubjectAccessReview', status: { allowed: true, reason: `webhook ${which} allows` } }));
        if (which === 'b' || modeA === 'error') return void res.writeHead(500).end('internal error');
        if (modeA === 'garbage') return void res.writeHead(200, { 'content-type': 'application/json' }).end('<html>not a review</html>');
        if (modeA === 'slow') return void setTimeout(allow, 2500);
        allow();
      });
    });
    await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
    const base = `https://127.0.0.1:${(webhook.address() as AddressInfo).port}`;
    const authz = pki.tlsFor('authz');
    kubeconfigA = path.join(pki.dir, 'a.kubeconfig');
    kubeconfigB = path.join(pki.dir, 'b.kubeconfig');
    fs.writeFileSync(kubeconfigA, webhookKubeconfig(`${base}/a`, authz));
    fs.writeFileSync(kubeconfigB, webhookKubeconfig(`${base}/b`, authz));
    configFile = path.join(pki.dir, 'authorization.yaml');
    writeConfig(entry('configmaps.example.com', kubeconfigA, 'Deny', 'configmaps') + entry('secrets.example.com', kubeconfigB, 'NoOpinion', 'secrets'));
    env = await startEnvironment({
      serviceArgs: { authz: [`--authorization-config=${configFile}`], gateway: ['--authorization-cache-ttl-seconds=0'] },
    });
    await until(async () => ((await kubectl(['create', 'namespace', namespace])).code === 0 ? true : undefined), 30000);
    await must(kubectl(['-n', namespace, 'create', 'serviceaccount', 'reader']));
    await must(kubectl(['-n', namespace, 'create', 'role', 'reader', '--verb=get,list', '--resource=configmaps,secrets']));
    await must(kubectl(['-n', namespace, 'create', 'rolebinding', 'reader', '--role=reader', `--serviceaccount=${namespace}:reader`]));
    const token = (await must(kubectl(['-n', namespace, 'create', 'token', 'reader']))).trim();
    tokenConfig = path.join(env.dir, 'reader.kubeconfig');
    fs.writeFileSync(tokenConfig, tokenKubeconfig(env.url, env.pki.caCert, token), { mode: 0o600 });
    // RBAC has seen the binding once the account may list secrets (B fails, NoOpinion, RBAC decides).
    await until(async () => ((await asAccount(['get', 'secrets'])).code === 0 ? true : undefined), 30000);
  });

  afterAll(async () => {
    await env?.stop(true);
    webhook?.closeAllConnections();
    await new Promise((r) => webhook?.close(r));
    pki?.remove();
  });

  beforeEach(() => {
    asked.a.length = 0;
    asked.b.length = 0;
  });

  test('webhook A decides the requests its conditions match: allowed when it allows', async () => {
    modeA = 'allow';
    await must(asAccount(['get', 'configmaps']));
    expect(asked.a).toEqual([`${account} list configmaps`]);
    expect(asked.b).toEqual([]);
  });

  test.each(['garbage', 'error', 'slow'] as const)('webhook A failing (%s) under failurePolicy Deny: 403, though RBAC would allow', async (mode) => {
    modeA = mode;
    const res = await asAccount(['get', 'configmaps']);
    expect(forbidden(res)).toBe(true);
    expect(asked.a).toHaveLength(1);
  });

  test('webhook B failing under NoOpinion leaves secrets to RBAC; requests neither condition matches never reach a webhook', async () => {
    await must(asAccount(['get', 'secrets']));
    expect(asked.b).toEqual([`${account} list secrets`]);
    const pods = await asAccount(['get', 'pods']);
    expect(forbidden(pods)).toBe(true);
    expect(asked.a).toEqual([]);
    expect(asked.b).toEqual([`${account} list secrets`]);
    // Other users' requests for configmaps do not match A's condition on the user.
    await must(kubectl(['-n', namespace, 'get', 'configmaps']));
    expect(asked.a).toEqual([]);
  });

  test('a rewritten file takes effect without a restart: A now decides pods, configmaps go to RBAC, B is gone', async () => {
    modeA = 'allow';
    writeConfig(entry('pods.example.com', kubeconfigA, 'Deny', 'pods'));
    await until(async () => ((await asAccount(['get', 'pods'])).code === 0 ? true : undefined), 20000);
    expect(asked.a).toContain(`${account} list pods`);
    asked.a.length = 0;
    modeA = 'error';
    await must(asAccount(['get', 'configmaps']));
    await must(asAccount(['get', 'secrets']));
    expect(asked).toEqual({ a: [], b: [] });
    expect(forbidden(await asAccount(['get', 'pods']))).toBe(true);
    // A broken rewrite is refused and the last good file stays.
    fs.writeFileSync(configFile, 'apiVersion: apiserver.config.svc.io/v1\nkind: AuthorizationConfiguration\nauthorizers: [{type: Webhook, name: x}]\n');
    await new Promise((r) => setTimeout(r, 1000));
    await must(asAccount(['get', 'configmaps']));
    expect(forbidden(await asAccount(['get', 'pods']))).toBe(true);
  });
});
