import * as fs from 'node:fs';
import * as https from 'node:https';
import type { AddressInfo } from 'node:net';
import * as path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { createLogger } from '@svc/service-kit';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';
import { interpretReply, loadWebhookConfig, tokenWebhookAuthenticator, type TokenWebhookOptions } from './token-webhook';

interface Answer {
  status: number;
  body: string;
  /** Wait this long before answering. */
  delayMs?: number;
  /** Send the body one byte at a time, this far apart. */
  trickleMs?: number;
}

/** A token review webhook over loopback HTTPS, answering as `answer` says. */
describe('token authentication webhook', () => {
  let pki: TestPki;
  let server: https.Server;
  let url = '';
  const seen: Array<{ apiVersion: string; spec: { token: string; audiences?: string[] }; clientCertificate: boolean }> = [];
  let answer: (review: { spec: { token: string; audiences?: string[] } }, n: number) => Answer = () => ({ status: 200, body: '{}' });

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
  const edited = (name: string, from: string, to: string): string => {
    const file = writeConfig(name);
    fs.writeFileSync(file, fs.readFileSync(file, 'utf8').replace(from, to));
    return file;
  };
  const review = (status: Record<string, unknown>): Answer => ({ status: 200, body: JSON.stringify({ apiVersion: 'authentication.svc.io/v1', kind: 'TokenReview', status }) });
  const alice = { authenticated: true, user: { username: 'alice', uid: '42', groups: ['dev'], extra: { scopes: ['read'] } } };
  const authenticator = (name: string, more: Partial<TokenWebhookOptions> = {}) =>
    tokenWebhookAuthenticator({ configFile: writeConfig(name), cacheTtlMs: 0, version: 'v1', apiAudiences: ['api'], retryBackoffMs: 1, ...more });

  beforeAll(async () => {
    pki = makeTestPki();
    pki.tlsFor('authn');
    const tls = pki.tlsFor('webhook');
    server = https.createServer({ ...tls, requestCert: true, rejectUnauthorized: false }, (req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as { apiVersion: string; spec: { token: string; audiences?: string[] } };
        seen.push({ ...body, clientCertificate: (req.socket as TLSSocket).getPeerCertificate().subject?.CN === 'authn' });
        const a = answer(body, seen.length);
        setTimeout(() => {
          res.writeHead(a.status, { 'content-type': 'application/json' });
          if (a.trickleMs === undefined) return void res.end(a.body);
          let i = 0;
          const drip = setInterval(() => {
            if (res.destroyed || i >= a.body.length) {
              clearInterval(drip);
              res.end();
              return;
            }
            res.write(a.body[i++]);
          }, a.trickleMs);
        }, a.delayMs ?? 0);
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

  test('an accepted token: the webhook gets a TokenReview of the configured version, with the audiences and this server’s client certificate', async () => {
    answer = () => review(alice);
    const auth = authenticator('ok');
    expect(await auth.authenticateToken('opaque-token', ['api'])).toEqual({ status: 'authenticated', audiences: ['api'], user: { username: 'alice', uid: '42', groups: ['dev'], extra: { scopes: ['read'] } } });
    expect(seen).toEqual([{ apiVersion: 'authentication.svc.io/v1', kind: 'TokenReview', metadata: {}, spec: { token: 'opaque-token', audiences: ['api'] }, clientCertificate: true }]);
    const beta = authenticator('beta', { version: 'v1beta1' });
    await beta.authenticateToken('opaque-token', ['vault']);
    expect(seen[1]).toMatchObject({ apiVersion: 'authentication.svc.io/v1beta1', spec: { token: 'opaque-token', audiences: ['vault'] } });
  });

  test('a request that is not audience-limited sends no audiences and checks none', async () => {
    answer = () => review({ ...alice, audiences: ['elsewhere'] });
    const auth = authenticator('no-audiences', { apiAudiences: [] });
    expect(await auth.authenticateToken('t', [])).toMatchObject({ status: 'authenticated', audiences: [], user: { username: 'alice' } });
    expect(seen[0]?.spec).toEqual({ token: 't' });
  });

  test('decisions are cached for the TTL by token and audiences; refusals with an error and failures to decide are not', async () => {
    const auth = authenticator('cached', { cacheTtlMs: 60_000 });
    answer = () => review(alice);
    await auth.authenticateToken('t1', ['api']);
    expect(await auth.authenticateToken('t1', ['api'])).toMatchObject({ status: 'authenticated' });
    expect(seen).toHaveLength(1);
    await auth.authenticateToken('t1', ['other-audience']);
    expect(seen).toHaveLength(2);

    answer = () => review({ authenticated: false });
    await auth.authenticateToken('refused', ['api']);
    expect(await auth.authenticateToken('refused', ['api'])).toMatchObject({ status: 'rejected' });
    expect(seen).toHaveLength(3);

    answer = () => review({ authenticated: false, error: 'token revoked' });
    await auth.authenticateToken('errored', ['api']);
    await auth.authenticateToken('errored', ['api']);
    expect(seen).toHaveLength(5);

    answer = () => ({ status: 400, body: 'bad request' });
    await auth.authenticateToken('t2', ['api']);
    await auth.authenticateToken('t2', ['api']);
    expect(seen).toHaveLength(7);
  });

  test('an expired entry is asked again', async () => {
    let clock = 0;
    const realNow = Date.now;
    answer = () => review(alice);
    Date.now = () => realNow() + clock;
    try {
      const auth = authenticator('expiry', { cacheTtlMs: 1000 });
      await auth.authenticateToken('t', ['api']);
      clock = 500;
      await auth.authenticateToken('t', ['api']);
      expect(seen).toHaveLength(1);
      clock = 1500;
      await auth.authenticateToken('t', ['api']);
      expect(seen).toHaveLength(2);
    } finally {
      Date.now = realNow;
    }
  });

  test('the same token asked for many times at once is reviewed once', async () => {
    answer = () => ({ ...review(alice), delayMs: 100 });
    const auth = authenticator('inflight', { cacheTtlMs: 60_000 });
    const outcomes = await Promise.all(Array.from({ length: 20 }, () => auth.authenticateToken('t', ['api'])));
    expect(outcomes.every((o) => o.status === 'authenticated')).toBe(true);
    expect(seen).toHaveLength(1);
  });

  test.each([
    ['refused with an error', () => review({ authenticated: false, error: 'token revoked' }), /token webhook: token revoked/],
    ['refused without an error', () => review({ authenticated: false }), /not authenticated/],
    ['authenticated without a username', () => review({ authenticated: true, user: { groups: ['x'] } }), /username is required/],
    ['authenticated without a user', () => review({ authenticated: true }), /status\.user is missing/],
    ['groups that are not strings', () => review({ authenticated: true, user: { username: 'a', groups: [1] } }), /groups/],
    ['extra that is not string lists', () => review({ authenticated: true, user: { username: 'a', extra: { k: 'v' } } }), /extra/],
    ['for other audiences', () => review({ ...alice, audiences: ['elsewhere'] }), /audiences/],
    ['HTTP 500', () => ({ status: 500, body: 'internal' }), /HTTP 500/],
    ['HTTP 401', () => ({ status: 401, body: '' }), /HTTP 401/],
    ['not JSON', () => ({ status: 200, body: '<html>' }), /not JSON/],
    ['no status', () => ({ status: 200, body: '{"kind":"TokenReview"}' }), /without a status/],
    ['too slow', () => ({ ...review(alice), delayMs: 1500 }), /did not answer within/],
    ['an answer trickled past the deadline', () => ({ ...review(alice), trickleMs: 100 }), /did not answer within/],
    ['too big', () => ({ status: 200, body: JSON.stringify({ status: { authenticated: true, user: { username: 'a', groups: Array.from({ length: 100000 }, (_, i) => `g${i}`) } } }) }), /larger than/],
  ])('%s: rejected, naming why and not the token', async (_name, reply, why) => {
    answer = reply;
    const lines: string[] = [];
    const auth = authenticator('bad', { timeoutMs: 500, maxResponseBytes: 64 * 1024, logger: createLogger('authn', { write: (l) => lines.push(l) }) });
    const out = await auth.authenticateToken('secret-token-value', ['api']);
    expect(out).toEqual({ status: 'rejected', error: expect.stringMatching(why) });
    expect(JSON.stringify(out)).not.toContain('secret-token-value');
    expect(lines.join('\n')).not.toContain('secret-token-value');
  });

  test('a webhook that echoes the token in its error does not get it into the outcome', async () => {
    answer = (r) => review({ authenticated: false, error: `token ${r.spec.token} is unknown` });
    const out = await authenticator('echo').authenticateToken('secret-token-value', ['api']);
    expect(out).toEqual({ status: 'rejected', error: 'token webhook: token [token] is unknown' });
  });

  test('failures to get a decision are logged as warnings, refusals are not', async () => {
    const lines: string[] = [];
    const auth = authenticator('logged', { logger: createLogger('authn', { write: (l) => lines.push(l) }) });
    answer = () => review({ authenticated: false, error: 'token revoked' });
    await auth.authenticateToken('t', ['api']);
    expect(lines).toEqual([]);
    answer = () => ({ status: 403, body: '' });
    await auth.authenticateToken('t', ['api']);
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0] as string)).toMatchObject({ level: 'warn', msg: 'token webhook gave no decision', error: 'token webhook: answered HTTP 403' });
  });

  test('answers that say "try again" are retried, others are not', async () => {
    answer = (_r, n) => (n < 3 ? { status: n === 1 ? 500 : 429, body: '' } : review(alice));
    expect(await authenticator('retry').authenticateToken('t', ['api'])).toMatchObject({ status: 'authenticated' });
    expect(seen).toHaveLength(3);
    seen.length = 0;
    answer = () => ({ status: 500, body: '' });
    expect(await authenticator('retry-bounded').authenticateToken('t', ['api'])).toMatchObject({ status: 'rejected' });
    expect(seen).toHaveLength(5);
    seen.length = 0;
    answer = () => ({ status: 403, body: '' });
    await authenticator('no-retry').authenticateToken('t', ['api']);
    expect(seen).toHaveLength(1);
  });

  test('a webhook that cannot be reached is retried within the timeout, then rejected', async () => {
    const closed = https.createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const auth = tokenWebhookAuthenticator({ configFile: writeConfig('refused', `https://127.0.0.1:${port}/`), cacheTtlMs: 0, version: 'v1', apiAudiences: ['api'], retryBackoffMs: 20, timeoutMs: 2000 });
    const started = Date.now();
    expect(await auth.authenticateToken('t', ['api'])).toEqual({ status: 'rejected', error: expect.stringMatching(/ECONNREFUSED/) });
    // Five attempts with pauses of about 20, 30, 45 and 68 ms.
    expect(Date.now() - started).toBeGreaterThanOrEqual(160);
    expect(Date.now() - started).toBeLessThan(2000);
  });

  test('the audiences a reply names are intersected with the requested ones', async () => {
    answer = () => review({ ...alice, audiences: ['vault', 'api'] });
    expect(await authenticator('aud').authenticateToken('t', ['vault', 'other'])).toMatchObject({ status: 'authenticated', audiences: ['vault'] });
    // Without audiences in the reply the token is valid for this server's own.
    answer = () => review(alice);
    expect(await authenticator('aud-own').authenticateToken('t', ['vault', 'api'])).toMatchObject({ status: 'authenticated', audiences: ['api'] });
    expect(await authenticator('aud-own').authenticateToken('t', ['vault'])).toMatchObject({ status: 'rejected' });
  });

  test('a webhook whose certificate is not from the configured CA is never believed', async () => {
    answer = () => review(alice);
    const other = makeTestPki('other-ca');
    try {
      fs.copyFileSync(path.join(other.dir, 'ca.crt'), path.join(pki.dir, 'other-ca.crt'));
      const auth = tokenWebhookAuthenticator({ configFile: edited('wrong-ca', 'certificate-authority: ca.crt', 'certificate-authority: other-ca.crt'), cacheTtlMs: 0, version: 'v1', apiAudiences: ['api'] });
      expect((await auth.authenticateToken('t', ['api'])).status).toBe('rejected');
      expect(seen).toHaveLength(0);
    } finally {
      other.remove();
    }
  });

  test('unusable configuration files are refused naming the file and the field', () => {
    expect(() => loadWebhookConfig(writeConfig('http', 'http://127.0.0.1:1/x'))).toThrow(/http\.kubeconfig: clusters\[\]\.cluster\.server: must be an https URL/);
    expect(() => loadWebhookConfig(writeConfig('not-url', 'not a url'))).toThrow(/not-url\.kubeconfig: clusters\[\]\.cluster\.server: "not a url" is not a URL/);
    expect(() => loadWebhookConfig(edited('no-server', `server: ${url}`, 'insecure-skip-tls-verify: false'))).toThrow(/no-server\.kubeconfig: clusters\[\]\.cluster\.server/);
    expect(() => loadWebhookConfig(edited('no-ca', 'certificate-authority: ca.crt', 'certificate-authority: missing.crt'))).toThrow(/no-ca\.kubeconfig: clusters\[\]\.cluster\.certificate-authority: ENOENT/);
    fs.writeFileSync(path.join(pki.dir, 'not-a-ca.crt'), 'hello');
    expect(() => loadWebhookConfig(edited('bad-ca', 'certificate-authority: ca.crt', 'certificate-authority: not-a-ca.crt'))).toThrow(/bad-ca\.kubeconfig: clusters\[\]\.cluster\.certificate-authority: no PEM certificate/);
    expect(() => loadWebhookConfig(edited('mismatch', 'client-key: authn.key', 'client-key: webhook.key'))).toThrow(/mismatch\.kubeconfig: users\[\]\.user\.client-certificate and client-key/);
    expect(() => loadWebhookConfig(edited('half', '    client-key: authn.key\n', ''))).toThrow(/half\.kubeconfig: users\[\]\.user: client-certificate and client-key go together/);
    const garbage = path.join(pki.dir, 'garbage.kubeconfig');
    fs.writeFileSync(garbage, 'clusters: [');
    expect(() => loadWebhookConfig(garbage)).toThrow(/garbage\.kubeconfig/);
  });
});

describe('reading a TokenReview answer', () => {
  const ok = (status: unknown) => ({ status: 200, body: JSON.stringify({ status }) });

  test('the audiences are checked before the verdict, as the original does', () => {
    expect(interpretReply(ok({ authenticated: false, audiences: ['x'] }), ['api'], ['api'])).toEqual({ outcome: { status: 'rejected', error: expect.stringMatching(/audiences/) }, cacheable: true, failed: false });
  });

  test('a refusal with an error is not cached; one without is', () => {
    expect(interpretReply(ok({ authenticated: false, error: 'nope' }), ['api'], ['api'])).toMatchObject({ cacheable: false, failed: false });
    expect(interpretReply(ok({ authenticated: false }), ['api'], ['api'])).toMatchObject({ cacheable: true, failed: false });
  });

  test('uid, groups and extra default to empty', () => {
    expect(interpretReply(ok({ authenticated: true, user: { username: 'u', groups: null } }), ['api'], ['api']).outcome).toEqual({ status: 'authenticated', audiences: ['api'], user: { username: 'u', uid: '', groups: [], extra: {} } });
  });
});
