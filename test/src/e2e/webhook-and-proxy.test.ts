import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { makeTestPki, webhookKubeconfig, type TestPki } from '@svc/service-kit/dist/test-pki';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run } from './helpers';

/**
 * The token webhook and the authenticating proxy through the whole system:
 * kubectl with tokens a webhook served by this test decides on, and raw
 * requests carrying X-Remote-* and custom proxy headers, which count only
 * with the proxy's certificate. Under AlwaysDeny the 403 names the user the
 * request was authenticated as.
 */
describe('token webhook and authenticating proxy', () => {
  let env: Environment;
  let pki: TestPki;
  let proxyPki: TestPki;
  let webhook: https.Server;
  let reviews = 0;

  beforeAll(async () => {
    pki = makeTestPki('webhook-ca');
    proxyPki = makeTestPki('front-proxy-ca');
    webhook = https.createServer({ ...pki.tlsFor('webhook'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        reviews++;
        const review = JSON.parse(Buffer.concat(chunks).toString()) as { apiVersion: string; spec: { token: string } };
        const status = review.spec.token === 'webhook-good-token' ? { authenticated: true, user: { username: 'webhook-user', groups: ['webhook-group'] } } : { authenticated: false, error: 'unknown token' };
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ apiVersion: review.apiVersion, kind: 'TokenReview', status }));
      });
    });
    await new Promise<void>((resolve) => webhook.listen(0, '127.0.0.1', resolve));
    const config = path.join(pki.dir, 'webhook.kubeconfig');
    const authn = pki.tlsFor('authn');
    fs.writeFileSync(config, webhookKubeconfig(`https://127.0.0.1:${(webhook.address() as AddressInfo).port}/review`, authn));
    proxyPki.tlsFor('front-proxy');
    env = await startEnvironment({
      serviceArgs: {
        authn: [
          `--authentication-token-webhook-config-file=${config}`,
          '--authentication-token-webhook-version=v1',
          `--requestheader-client-ca-file=${path.join(proxyPki.dir, 'ca.crt')}`,
          '--requestheader-allowed-names=front-proxy',
          '--requestheader-username-headers=X-Remote-User,X-Proxy-User',
          '--requestheader-group-headers=X-Remote-Group',
          '--requestheader-extra-headers-prefix=X-Remote-Extra-',
        ],
        gateway: ['--requestheader-username-headers=X-Proxy-User'],
      },
    });
  });

  afterAll(async () => {
    await env?.stop(true);
    webhook?.closeAllConnections();
    await new Promise((r) => webhook?.close(r));
    pki?.remove();
    proxyPki?.remove();
  });

  const kubectlWithToken = (token: string, args: string[]) => {
    const file = path.join(env.dir, `webhook-${reviews}-${Math.random().toString(36).slice(2)}.kubeconfig`);
    fs.writeFileSync(file, tokenKubeconfig(env.url, env.pki.caCert, token), { mode: 0o600 });
    return run('kubectl', ['--kubeconfig', file, ...args]);
  };

  test('kubectl with a token the webhook accepts is that user; one it refuses is Unauthorized', async () => {
    // --raw: under AlwaysDeny the user may not read discovery either.
    const ok = await kubectlWithToken('webhook-good-token', ['get', '--raw', '/api/v1/namespaces/default/configmaps']);
    expect(ok.stderr).toMatch(/configmaps is forbidden: User "webhook-user" cannot list resource "configmaps"/);
    const before = reviews;
    const again = await kubectlWithToken('webhook-good-token', ['get', '--raw', '/api/v1/namespaces/default/secrets']);
    expect(again.stderr).toMatch(/User "webhook-user" cannot list resource "secrets"/);
    expect(reviews).toBe(before); // cached
    const bad = await kubectlWithToken('webhook-bad-token', ['get', '--raw', '/api/v1/namespaces/default/configmaps']);
    expect(bad.stderr).toMatch(/Unauthorized/);
  });

  const request = (headers: Record<string, string | string[]>, cert?: { cert: Buffer; key: Buffer }): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const req = https.request(`${env.url}/api/v1/namespaces/default/configmaps`, { ca: fs.readFileSync(env.pki.caCert), ...(cert ?? {}), headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      });
      req.on('error', reject);
      req.end();
    });

  test('proxy headers count only with the proxy certificate', async () => {
    const proxy = proxyPki.tlsFor('front-proxy');
    const asProxy = await request({ 'X-Remote-User': 'carol', 'X-Remote-Group': ['dev', 'system:masters'] }, { cert: proxy.cert, key: proxy.key });
    // system:masters from a trusted proxy is system:masters: allowed.
    expect(asProxy.status).toBe(200);
    const asCarol = await request({ 'X-Remote-User': 'carol', 'X-Remote-Group': 'dev' }, { cert: proxy.cert, key: proxy.key });
    expect(asCarol.status).toBe(403);
    expect(asCarol.body).toMatch(/User \\"carol\\"/);
    // A custom username header the gateway was told to forward.
    const custom = await request({ 'X-Proxy-User': 'dave' }, { cert: proxy.cert, key: proxy.key });
    expect(custom.status).toBe(403);
    expect(custom.body).toMatch(/User \\"dave\\"/);
    // Without the proxy certificate the same headers are nobody's: anonymous, or the certificate's own user.
    const anonymous = await request({ 'X-Remote-User': 'carol', 'X-Remote-Group': 'system:masters' });
    expect(anonymous.status).toBe(403);
    expect(anonymous.body).toMatch(/system:anonymous/);
    const stranger = proxyPki.tlsFor('not-the-proxy');
    const wrongName = await request({ 'X-Remote-User': 'carol', 'X-Remote-Group': 'system:masters' }, { cert: stranger.cert, key: stranger.key });
    expect(wrongName.status).toBe(401);
  });
});
