import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { WebhookServer } from './admission-server';
import { run, until } from './helpers';
import { adminRequest } from './http';

/**
 * Request deadlines through the whole system: the `timeout` parameter
 * kubectl sends with `--request-timeout`, refused when it is not a
 * duration, and a create whose validating webhook (served by this test)
 * holds its answer past the request's deadline: the client gets the
 * original's 504 Timeout, and the object is not stored.
 */

const NAMESPACE = 'deadlines';

describe('request deadlines', () => {
  let env: Environment;
  let server: WebhookServer;
  let releaseSlow: () => void = () => undefined;
  const slowReleased = new Promise<void>((r) => (releaseSlow = r));
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, `--cache-dir=${path.join(env.dir, 'kubectl-cache')}`, ...args]);
  const configMap = (name: string) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NAMESPACE }, data: { key: 'value' } });
  const configMaps = `/api/v1/namespaces/${NAMESPACE}/configmaps`;

  beforeAll(async () => {
    env = await startEnvironment({ webhooks: {} });
    server = new WebhookServer(env.webhooks!);
    // Objects named slow-* wait for the test to release them; the rest are allowed at once.
    server.on('/validate', async (request) => {
      if ((request.object?.metadata?.name ?? '').startsWith('slow-')) await slowReleased;
      return { allowed: true };
    });
    await server.start();
    expect((await adminRequest(env, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }))).status).toBe(201);
    const hook = {
      name: 'slow.deadlines.e2e.svc.io',
      clientConfig: { url: server.url('/validate'), caBundle: (env.webhooks?.localServingCaData ?? Buffer.alloc(0)).toString('base64') },
      rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
      namespaceSelector: { matchLabels: { 'svc.io/metadata.name': NAMESPACE } },
      sideEffects: 'None',
      admissionReviewVersions: ['v1'],
      timeoutSeconds: 20,
    };
    const config = { apiVersion: 'admissionregistration.svc.io/v1', kind: 'ValidatingWebhookConfiguration', metadata: { name: 'deadlines' }, webhooks: [hook] };
    expect((await adminRequest(env, 'POST', '/apis/admissionregistration.svc.io/v1/validatingwebhookconfigurations', JSON.stringify(config))).status).toBe(201);
    // In effect once a dry-run create reaches the webhook.
    let probe = 0;
    await until(async () => {
      await adminRequest(env, 'POST', `${configMaps}?dryRun=All`, configMap(`probe-${probe++}`));
      return server.callsTo('/validate').length > 0 ? true : undefined;
    }, 20_000);
  });

  afterAll(async () => {
    releaseSlow();
    await server?.stop();
    await env?.stop(true);
  });

  test('a timeout that is not a duration is 400 naming the value', async () => {
    const res = await adminRequest(env, 'GET', `${configMaps}?timeout=abc`);
    expect(res.status).toBe(400);
    expect(res.json()).toMatchObject({ kind: 'Status', reason: 'BadRequest', code: 400, message: 'invalid timeout specified in the request URL - time: invalid duration "abc"' });
    // A watch ignores it, as the original's watches do.
    const watch = await adminRequest(env, 'GET', `${configMaps}?watch=true&timeoutSeconds=1&timeout=abc`);
    expect(watch.status).toBe(200);
  });

  test('kubectl with --request-timeout sends the timeout and is served', async () => {
    const created = await kubectl(['--request-timeout=30s', '-v=6', 'create', 'configmap', 'quick', '-n', NAMESPACE, '--from-literal=a=b']);
    expect(created.stderr).toMatch(/POST https:\/\/\S+\/api\/v1\/namespaces\/deadlines\/configmaps\?\S*timeout=30s\S* 201 Created/);
    expect(created.code).toBe(0);
    const listed = await kubectl(['--request-timeout=1m', 'get', 'configmaps', '-n', NAMESPACE, '-o', 'name']);
    expect(listed.stderr).toBe('');
    expect(listed.stdout).toContain('configmap/quick');
  });

  test('a create whose admission outlasts its timeout is 504 Timeout and stores nothing', async () => {
    const res = await adminRequest(env, 'POST', `${configMaps}?timeout=1s`, configMap('slow-1'));
    expect(res.status).toBe(504);
    const status = res.json();
    expect([status['kind'], status['reason'], status['code'], status['details']]).toEqual(['Status', 'Timeout', 504, {}]);
    expect(status['message']).toBe('Timeout: request did not complete within requested timeout - context deadline exceeded');
    expect(server.callsTo('/validate', 'slow-1')).toHaveLength(1);
    // The webhook allows it now, after the deadline: the request gave up on admission, so storage is never asked.
    releaseSlow();
    const after = await adminRequest(env, 'POST', configMaps, configMap('after-slow'));
    expect(after.status).toBe(201);
    expect((await adminRequest(env, 'GET', `${configMaps}/slow-1`)).status).toBe(404);
  });
});
