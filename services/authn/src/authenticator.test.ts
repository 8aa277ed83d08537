import { createAuthenticator } from './authenticator';

describe('authenticator union', () => {
  const tokens = new Map([['good', { username: 'alice', uid: '1', groups: ['dev'], extra: {} }]]);

  test('a known bearer token authenticates and adds system:authenticated', () => {
    const auth = createAuthenticator({ clientCas: [], tokens, anonymous: true });
    const res = auth({ clientCertificateChain: [], headers: { authorization: ['Bearer good'] } });
    expect(res).toEqual({ authenticated: true, method: 'token-file', user: { username: 'alice', uid: '1', groups: ['dev', 'system:authenticated'], extra: {} } });
  });

  test('an unknown bearer token is rejected, never anonymous', () => {
    const auth = createAuthenticator({ clientCas: [], tokens, anonymous: true });
    expect(auth({ clientCertificateChain: [], headers: { authorization: ['Bearer bad'] } })).toEqual({ authenticated: false, error: 'invalid bearer token' });
  });

  test('no credentials: anonymous when enabled, rejected otherwise', () => {
    expect(createAuthenticator({ clientCas: [], tokens, anonymous: true })({ clientCertificateChain: [], headers: {} })).toMatchObject({
      authenticated: true,
      user: { username: 'system:anonymous', groups: ['system:unauthenticated'] },
    });
    expect(createAuthenticator({ clientCas: [], tokens, anonymous: false })({ clientCertificateChain: [], headers: {} })).toEqual({ authenticated: false, error: '' });
  });
});
