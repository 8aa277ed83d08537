import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import { makeTestPki, type TestPki } from '@svc/service-kit/dist/test-pki';
import { loadWebhookConfig, tokenWebhookAuthenticator } from './token-webhook';

/** A token review webhook over loopback HTTPS, answering as `answer` says. */
describe('token authentication webhook', () => {
  let pki: TestPki;
  let server: https.Server;
  let url = '';
  const seen: Array<{ apiVersion: string; spec: { token: string; audiences?: string[] }; clientCertificate: boolean }> = [];
  let answer: (review: { spec: { token: string } }) => { status: number; body: string; delayMs?: number } = () => ({ status: 200, body: '{}' });

  const writeConfig = (name: string, server = url, withClientCert = true): string => {
    const file = path.join(pki.dir, `${name}.kubeconfig`);
    const lines = [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: webhook',
      '  cluster:',
      `    server: ${server}`,
      '    certificate-authority: ca.crt',
      'users:',
      '- name: authn',
      '  user:',
      ...(withClientCert ? ['    client-certificate: authn.crt', '    client-key: authn.key'] : []),
      'contexts:',
      '- name: webhook',
      '  context: {cluster: webhook, user: authn}',
      'current-context: webhook',
    ];
    fs.writeFileSync(file, lines.join('\n'));
    return file;
  };
  const review = (status: Record<string, unknown>) => ({ status: 200, body: JSON.stringify({ apiVersion: 'authentication.svc.io/v1', kind: 'TokenReview', status }) });
  const alice = { authenticated: true, user: { username: 'alice', uid: '42', groups: ['dev'], extra: { scopes: ['read'] } } };

  beforeAll(async () => {
    pki = makeTestPki();
    pki.tlsFor('authn');
    const tls = pki.tlsFor('webhook');
    server = https.createServer({ ...tls, requestCert: true, rejectUnauthorized: false }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { apiVersion: string; spec: { token: string; audiences?: string[] } };
        seen.push({ ...body, clientCertificate: (req.socket as import('node:tls').TLSSocket).getPeerCertificate().subject?.CN === 'authn' });
        const a = answer(body);
        setTimeout(() => res.writeHead(a.status, { 'content-type': 'application/json' }).end(a.body), a.delayMs ?? 0);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `https://127.0.0.1:${(server.address() as AddressInfo).port}/authenticate`;
  });

  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    pki.remove();
  });

  beforeEach(() => {
    seen.length = 0;
  });

  test('an accepted token: the webhook gets a TokenReview of the configured version, with this server’s client certificate', async () => {
    answer = () => review(alice);
    const auth = tokenWebhookAuthenticator({ configFile: writeConfig('ok'), cacheTtlMs: 0, version: 'v1', apiAudiences: ['api'] });
    expect(await auth.authenticateToken('opaque-token', ['api'])).toEqual({ status: 'authenticated', audiences: ['api'], user: { username: 'alice', uid: '42', groups: ['dev'], extra: { scopes: ['read'] } } });
    expect(seen).toEqual([{ apiVersion: 'authentication.svc.io/v1', kind: 'TokenReview', metadata: {}, spec: { token: 'opaque-token' }, clientCertificate: true }]);
    const beta = tokenWebhookAuthenticator({ configFile: writeConfig('beta'), cacheTtlMs: 0, version: 'v1beta1', apiAudiences: ['api'] });
    await beta.authenticateToken('opaque-token', ['vault']);
    expect(seen[1]).toMatchObject({ apiVersion: 'authentication.svc.io/v1beta1', spec: { token: 'opaque-token', audiences: ['vault'] } });
  });

  test('decisions are cached for the TTL, failures to decide are not', async () => {
    answer = () => review(alice);
    const auth = tokenWebhookAuthenticator({ configFile: writeConfig('cached'), cacheTtlMs: 60_000, version: 'v1', apiAudiences: ['api'] });
    await auth.authenticateToken('t1', ['api']);
    await auth.authenticateToken('t1', ['api']);
    expect(seen).toHaveLength(1);
    await auth.authenticateToken('t1', ['other-audience']);
    expect(seen).toHaveLength(2);
    answer = () => ({ status: 500, body: 'boom' });
    await auth.authenticateToken('t2', ['api']);
    await auth.authenticateToken('t2', ['api']);
    expect(seen).toHaveLength(4);
  });

  test.each([
    ['refused with an error', () => review({ authenticated: false, error: 'token revoked' }), /token webhook: token revoked/],
    ['refused without an error', () => review({ authenticated: false }), /did not authenticate/],
    ['authenticated without a username', () => review({ authenticated: true, user: { groups: ['x'] } }), /username is required/],
    ['groups that are not strings', () => review({ authenticated: true, user: { username: 'a', groups: [1] } }), /groups/],
    ['for other audiences', () => review({ ...alice, audiences: ['elsewhere'] }), /audiences/],
    ['HTTP 500', () => ({ status: 500, body: 'internal' }), /HTTP 500/],
    ['not JSON', () => ({ status: 200, body: '<html>' }), /not JSON/],
    ['no status', () => ({ status: 200, body: '{"kind":"TokenReview"}' }), /without a status/],
    ['too slow', () => ({ ...review(alice), delayMs: 1500 }), /did not answer within 300 ms/],
    ['too big', () => ({ status: 200, body: JSON.stringify({ status: { authenticated: true, user: { username: 'a', groups: Array.from({ length: 100000 }, (_, i) => `g${i}`) } } }) }), /larger than/],
  ])('%s: rejected, naming why and not the token', async (_name, reply, why) => {
    answer = reply;
    const auth = tokenWebhookAuthenticator({ configFile: writeConfig('bad'), cacheTtlMs: 0, version: 'v1', apiAudiences: ['api'], timeoutMs: 300, maxResponseBytes: 64 * 1024 });
    const out = await auth.authenticateToken('secret-token-value', ['api']);
    expect(out).toEqual({ status: 'rejected', error: expect.stringMatching(why) });
    expect(JSON.stringify(out)).not.toContain('secret-token-value');
  });

  test('the audiences a reply names are intersected with the requested ones', async () => {
    answer = () => review({ ...alice, audiences: ['vault', 'api'] });
    const auth = tokenWebhookAuthenticator({ configFile: writeConfig('aud'), cacheTtlMs: 0, version: 'v1', apiAudiences: ['api'] });
    expect(await auth.authenticateToken('t', ['vault', 'other'])).toMatchObject({ status: 'authenticated', audiences: ['vault'] });
  });

  test('a webhook whose certificate is not from the configured CA is never believed', async () => {
    answer = () => review(alice);
    const other = makeTestPki('other-ca');
    try {
      fs.copyFileSync(path.join(other.dir, 'ca.crt'), path.join(pki.dir, 'other-ca.crt'));
      const file = writeConfig('wrong-ca');
      fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace('certificate-authority: ca.crt', 'certificate-authority: other-ca.crt'));
      const auth = tokenWebhookAuthenticator({ configFile: file, cacheTtlMs: 0, version: 'v1', apiAudiences: ['api'] });
      expect((await auth.authenticateToken('t', ['api'])).status).toBe('rejected');
    } finally {
      other.remove();
    }
  });

  test('unusable configuration files are refused naming the file and the field', () => {
    expect(() => loadWebhookConfig(writeConfig('http', 'http://127.0.0.1:1/x'))).toThrow(/http\.kubeconfig: clusters\[\]\.cluster\.server: must be an https URL/);
    const noCa = writeConfig('no-ca');
    fs.writeFileSync(noCa, fs.readFileSync(noCa, 'utf8').replace('certificate-authority: ca.crt', 'certificate-authority: missing.crt'));
    expect(() => loadWebhookConfig(noCa)).toThrow(/no-ca\.kubeconfig: clusters\[\]\.cluster\.certificate-authority: ENOENT/);
    const garbage = path.join(pki.dir, 'garbage.kubeconfig');
    fs.writeFileSync(garbage, 'clusters: [');
    expect(() => loadWebhookConfig(garbage)).toThrow(/garbage\.kubeconfig/);
  });
});
