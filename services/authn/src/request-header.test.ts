import { execFileSync } from 'node:child_process';
import { X509Certificate as NodeCertificate } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { makeTestPki, type TestPki } from '@svc/service-kit/testing/pki';
import { createAuthenticator } from './authenticator';
import { loadRequestHeaderCas, requestHeaderAuthenticator, type RequestHeaderOptions } from './request-header';
import { clientCertificateAuthenticator, parseCaBundle } from './x509';

describe('authenticating proxy (request headers)', () => {
  let proxyPki: TestPki;
  let clientPki: TestPki;
  const der = (pem: Buffer) => new Uint8Array(new NodeCertificate(pem).raw);
  const headers = { 'x-remote-user': ['alice'], 'x-remote-group': ['dev', 'ops'], 'x-remote-extra-scopes': ['read', 'write'], 'x-remote-extra-acme.com%2fproject': ['p1'] };

  beforeAll(() => {
    proxyPki = makeTestPki('front-proxy-ca');
    clientPki = makeTestPki('client-ca');
  });
  afterAll(() => {
    proxyPki.remove();
    clientPki.remove();
  });

  function union(allowedNames: string[] = [], more: Partial<RequestHeaderOptions> = {}) {
    const proxy = requestHeaderAuthenticator({
      clientCas: parseCaBundle(proxyPki.tlsFor('front-proxy').ca.toString()),
      allowedNames,
      usernameHeaders: ['x-remote-user'],
      uidHeaders: ['x-remote-uid'],
      groupHeaders: ['x-remote-group'],
      extraHeaderPrefixes: ['x-remote-extra-'],
      ...more,
    });
    return createAuthenticator({ requestAuthenticators: [proxy, clientCertificateAuthenticator(parseCaBundle(clientPki.tlsFor('bob').ca.toString()))], tokenAuthenticators: [], anonymous: true, apiAudiences: ['api'] });
  }

  test('with the proxy certificate, the headers name the user, groups and extra (keys percent-decoded, lower-cased)', async () => {
    const out = await union()({ clientCertificateChain: [der(proxyPki.tlsFor('front-proxy').cert)], headers });
    expect(out).toEqual({
      authenticated: true,
      method: 'requestheader',
      audiences: ['api'],
      user: { username: 'alice', uid: '', groups: ['dev', 'ops', 'system:authenticated'], extra: { scopes: ['read', 'write'], 'acme.com/project': ['p1'] } },
    });
  });

  test('the same headers with a user certificate of the client CA are ignored: the certificate decides', async () => {
    expect(await union()({ clientCertificateChain: [der(clientPki.tlsFor('bob').cert)], headers })).toMatchObject({ authenticated: true, method: 'x509', user: { username: 'bob' } });
  });

  test('the same headers without any certificate are ignored: anonymous', async () => {
    expect(await union()({ clientCertificateChain: [], headers })).toMatchObject({ authenticated: true, method: 'anonymous' });
  });

  test('a proxy certificate whose name is not allowed does not make the headers count', async () => {
    const out = await union(['aggregator'])({ clientCertificateChain: [der(proxyPki.tlsFor('front-proxy').cert)], headers });
    // Not a proxy then, and not a user of the client CA either: refused.
    expect(out).toMatchObject({ authenticated: false });
    expect(await union(['front-proxy'])({ clientCertificateChain: [der(proxyPki.tlsFor('front-proxy').cert)], headers })).toMatchObject({ authenticated: true, user: { username: 'alice' } });
  });

  test('a proxy without a username header is not authenticated by the headers', async () => {
    const out = await union()({ clientCertificateChain: [der(proxyPki.tlsFor('front-proxy').cert)], headers: { 'x-remote-group': ['system:masters'] } });
    expect(out).toMatchObject({ authenticated: false });
  });

  test('headers are tried in order; uid, repeated groups, several extra prefixes; extra keys lower-cased before they are decoded', async () => {
    const out = await union([], { usernameHeaders: ['x-first-user', 'x-remote-user'], uidHeaders: ['x-remote-uid'], groupHeaders: ['x-remote-group', 'x-more-groups'], extraHeaderPrefixes: ['x-remote-extra-', 'x-other-extra-'] })({
      clientCertificateChain: [der(proxyPki.tlsFor('front-proxy').cert)],
      headers: { 'x-first-user': [''], 'x-remote-user': ['erin'], 'x-remote-uid': ['u-1'], 'x-remote-group': ['a', ''], 'x-more-groups': ['b'], 'x-remote-extra-key%41': ['v1'], 'x-other-extra-key%41': ['v2'], 'x-remote-extra-bad%zz': ['v3'] },
    });
    expect(out).toMatchObject({ authenticated: true, user: { username: 'erin', uid: 'u-1', groups: ['a', 'b', 'system:authenticated'], extra: { keyA: ['v1', 'v2'], 'bad%zz': ['v3'] } } });
  });

  test('a certificate of the request-header CA without client-auth usage is no proxy', async () => {
    const dir = proxyPki.dir;
    fs.writeFileSync(path.join(dir, 'server-only.ext'), 'basicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n');
    const openssl = (args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
    openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'server-only.key', '-subj', '/CN=front-proxy', '-out', 'server-only.csr']);
    openssl(['x509', '-req', '-in', 'server-only.csr', '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '1', '-extfile', 'server-only.ext', '-out', 'server-only.crt']);
    const out = await union()({ clientCertificateChain: [der(fs.readFileSync(path.join(dir, 'server-only.crt')))], headers });
    expect(out).toMatchObject({ authenticated: false });
  });

  test('a verification is remembered for the chain, and not past the certificate’s expiry', async () => {
    let now = new Date();
    const auth = union([], { now: () => now });
    const proxy = [der(proxyPki.tlsFor('front-proxy').cert)];
    expect(await auth({ clientCertificateChain: proxy, headers })).toMatchObject({ authenticated: true, user: { username: 'alice' } });
    // The same chain with other headers is the proxy still, and other users.
    expect(await auth({ clientCertificateChain: proxy, headers: { 'x-remote-user': ['zoe'] } })).toMatchObject({ authenticated: true, user: { username: 'zoe' } });
    now = new Date(Date.now() + 3 * 24 * 3600 * 1000);
    expect(await auth({ clientCertificateChain: proxy, headers })).toMatchObject({ authenticated: false });
  });

  test('the request-header CA file must hold certificates', () => {
    const empty = path.join(proxyPki.dir, 'empty.pem');
    fs.writeFileSync(empty, 'nothing here');
    expect(() => loadRequestHeaderCas(empty)).toThrow(/--requestheader-client-ca-file: .*empty\.pem: no PEM certificate found/);
    expect(() => loadRequestHeaderCas(path.join(proxyPki.dir, 'missing.pem'))).toThrow(/--requestheader-client-ca-file: .*missing\.pem: ENOENT/);
    expect(loadRequestHeaderCas(path.join(proxyPki.dir, 'ca.crt'))).toHaveLength(1);
  });
});
