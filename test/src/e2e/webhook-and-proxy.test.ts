import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { makeTestPki, webhookKubeconfig, type TestPki } from '@svc/service-kit/testing/pki';
import { startEnvironment, tokenKubeconfig, type Environment } from '@svc/testenv';
import { run, until } from './helpers';

/**
 * The token webhook and the authenticating proxy through the whole system:
 * kubectl with tokens a webhook served by this test decides on, and raw
 * requests carrying X-Remote-* and custom proxy headers, which count only
 * with the proxy's certificate. A self-subject review shows the identity a
 * request was given; under the default RBAC policy a 403 names the user.
 * The gateway's own authentication cache is off, so that what is seen of
 * caching is authn's webhook cache.
 */
describe('token webhook and authenticating proxy', () => {
  let env: Environment;
  let pki: TestPki;
  let proxyPki: TestPki;
  let webhook: https.Server;
  let reviews = 0;
  const versions = new Set<string>();
  let noCredentials = '';

  beforeAll(async () => {
    pki = makeTestPki('webhook-ca');
    proxyPki = makeTestPki('front-proxy-ca');
    webhook = https.createServer({ ...pki.tlsFor('webhook'), requestCert: true, rejectUnauthorized: true }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        reviews++;
        const review = JSON.parse(Buffer.concat(chunks).toString()) as { apiVersion: string; spec: { token: string } };
        versions.add(review.apiVersion);
        if (review.spec.token === 'webhook-broken-token') return void res.writeHead(200, { 'content-type': 'text/html' }).end('<html>oops</html>');
        const status =
          review.spec.token === 'webhook-good-token'
            ? { authenticated: true, user: { username: 'webhook-user', uid: 'w-1', groups: ['webhook-group'], extra: { 'example.com/team': ['blue'] } } }
            : { authenticated: false, error: 'unknown token' };
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
          `--requestheader-client-ca-file=${path.join(proxyPki.dir, 'ca.crt')}`,
          '--requestheader-allowed-names=front-proxy',
          '--requestheader-username-headers=X-Remote-User,X-Proxy-User',
          '--requestheader-group-headers=X-Remote-Group',
          '--requestheader-extra-headers-prefix=X-Remote-Extra-',
          '--requestheader-uid-headers=X-Proxy-Uid',
        ],
        gateway: ['--requestheader-username-headers=X-Proxy-User', '--requestheader-uid-headers', 'X-Proxy-Uid', '--authentication-cache-ttl-seconds=0'],
      },
    });
    // A kubeconfig without credentials: kubectl is given the token with --token.
    noCredentials = path.join(env.dir, 'no-credentials.kubeconfig');
    fs.writeFileSync(noCredentials, tokenKubeconfig(env.url, env.pki.caCert, 'unused').replace(/^ {4}token: unused\n/m, '').replace(/^ {2}user:$/m, '  user: {}'));
  });

  afterAll(async () => {
    await env?.stop(true);
    webhook?.closeAllConnections();
    await new Promise((r) => webhook?.close(r));
    pki?.remove();
    proxyPki?.remove();
  });

  // A discovery cache of this env's own: one left by an earlier server on the same port would let kubectl skip discovery.
  const kubectlWithToken = (token: string, args: string[]) =>
    run('kubectl', ['--kubeconfig', noCredentials, `--cache-dir=${path.join(env.dir, 'kubectl-cache')}`, `--token=${token}`, ...args]);

  test('kubectl with a token the webhook accepts is that user; one it refuses is Unauthorized', async () => {
    // The default policy, which lets every authenticated user review itself, is written by the controller manager shortly after the start.
    const who = await until(async () => {
      const res = await kubectlWithToken('webhook-good-token', ['auth', 'whoami', '-o', 'json']);
      return res.code === 0 ? res : undefined;
    }, 30000);
    expect((JSON.parse(who.stdout) as { status: { userInfo: unknown } }).status.userInfo).toEqual({ username: 'webhook-user', uid: 'w-1', groups: ['webhook-group', 'system:authenticated'], extra: { 'example.com/team': ['blue'] } });
    // The default version of the review.
    expect([...versions]).toEqual(['authentication.svc.io/v1beta1']);
    // --raw: the user may not list, and the refusal names the user; the decision was cached.
    const before = reviews;
    const forbidden = await kubectlWithToken('webhook-good-token', ['get', '--raw', '/api/v1/namespaces/default/configmaps']);
    expect(forbidden.stderr).toMatch(/configmaps is forbidden: User "webhook-user" cannot list resource "configmaps"/);
    expect(reviews).toBe(before);

    // A typed request reads the Status (Unauthorized); discovery, read raw, words a 401 itself, as against the original server.
    const refused = await kubectlWithToken('webhook-bad-token', ['auth', 'whoami']);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toMatch(/^error: You must be logged in to the server \(Unauthorized\)$/m);
    const listing = await kubectlWithToken('webhook-bad-token', ['get', 'configmaps']);
    expect(listing.stderr).toMatch(/^error: You must be logged in to the server \(the server has asked for the client to provide credentials\)$/m);
    // An answer that is not a TokenReview is a refusal too, and authn carries on.
    const broken = await kubectlWithToken('webhook-broken-token', ['auth', 'whoami']);
    expect(broken.stderr).toMatch(/^error: You must be logged in to the server \(Unauthorized\)$/m);
    expect((await kubectlWithToken('webhook-good-token', ['auth', 'whoami', '-o', 'json'])).code).toBe(0);

    const authnLog = fs.readFileSync(path.join(env.dir, 'logs', 'authn.log'), 'utf8');
    expect(authnLog).toMatch(/authentication failed.*token webhook: unknown token/);
    expect(authnLog).toMatch(/token webhook gave no decision.*not JSON/);
    for (const token of ['webhook-good-token', 'webhook-bad-token', 'webhook-broken-token']) expect(authnLog).not.toContain(token);
  });

  const request = (headers: Record<string, string | string[]>, cert?: { cert: Buffer; key: Buffer }, review = false): Promise<{ status: number; body: string }> =>
    new Promise((resolve, reject) => {
      const target = review ? '/apis/authentication.svc.io/v1/selfsubjectreviews' : '/api/v1/namespaces/default/configmaps';
      const options = { ca: fs.readFileSync(env.pki.caCert), ...(cert ?? {}), headers: { ...headers, ...(review ? { 'content-type': 'application/json' } : {}) }, agent: false, method: review ? 'POST' : 'GET' };
      const req = https.request(`${env.url}${target}`, options, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
      });
      req.on('error', reject);
      req.end(review ? JSON.stringify({ apiVersion: 'authentication.svc.io/v1', kind: 'SelfSubjectReview' }) : undefined);
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

  test('the proxy names the uid, groups and extra (percent-encoded keys) through custom and default headers', async () => {
    const proxy = proxyPki.tlsFor('front-proxy');
    const res = await until(async () => {
      const r = await request({ 'X-Proxy-User': 'erin', 'X-Proxy-Uid': 'u-7', 'X-Remote-Group': ['dev', 'ops'], 'X-Remote-Extra-Acme.com%2fProject': ['p1', 'p2'] }, { cert: proxy.cert, key: proxy.key }, true);
      return r.status === 201 ? r : undefined;
    }, 30000);
    expect((JSON.parse(res.body) as { status: { userInfo: unknown } }).status.userInfo).toEqual({ username: 'erin', uid: 'u-7', groups: ['dev', 'ops', 'system:authenticated'], extra: { 'acme.com/project': ['p1', 'p2'] } });
    // The same headers from a client that is not the proxy: anonymous.
    const anonymous = await request({ 'X-Proxy-User': 'erin', 'X-Remote-Group': 'dev' }, undefined, true);
    expect(anonymous.body).toMatch(/system:anonymous/);
  });
});
