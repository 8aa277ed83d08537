import { X509Certificate as NodeCertificate } from 'node:crypto';
import { makeTestPki, type TestPki } from '@svc/service-kit/dist/test-pki';
import { createAuthenticator } from './authenticator';
import { requestHeaderAuthenticator } from './request-header';
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

  function union(allowedNames: string[] = []) {
    const proxy = requestHeaderAuthenticator({
      clientCas: parseCaBundle(proxyPki.tlsFor('front-proxy').ca.toString()),
      allowedNames,
      usernameHeaders: ['x-remote-user'],
      uidHeaders: ['x-remote-uid'],
      groupHeaders: ['x-remote-group'],
      extraHeaderPrefixes: ['x-remote-extra-'],
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
});
