import { createAuthenticator as createUnion } from './authenticator';
import type { UserInfo } from '@svc/apimachinery';
import { tokenFileAuthenticator } from './token-file';
import { clientCertificateAuthenticator } from './x509';

function createAuthenticator(opts: { tokens: Map<string, UserInfo>; anonymous: boolean }) {
  return createUnion({ requestAuthenticators: [clientCertificateAuthenticator([])], tokenAuthenticators: [tokenFileAuthenticator(opts.tokens)], anonymous: opts.anonymous, apiAudiences: ['api'] });
}

describe('authenticator union', () => {
  const tokens = new Map([['good', { username: 'alice', uid: '1', groups: ['dev'], extra: {} }]]);
  const anonymous = { authenticated: true, method: 'anonymous', audiences: ['api'], user: { username: 'system:anonymous', uid: '', groups: ['system:unauthenticated'], extra: {} } };

  test('a known bearer token authenticates and adds system:authenticated', async () => {
    const auth = createAuthenticator({ tokens, anonymous: true });
    const res = await auth({ clientCertificateChain: [], headers: { authorization: ['Bearer good'] } });
    expect(res).toEqual({ authenticated: true, method: 'token-file', audiences: ['api'], user: { username: 'alice', uid: '1', groups: ['dev', 'system:authenticated'], extra: {} } });
  });

  test('an unknown bearer token is rejected, never anonymous', async () => {
    const auth = createAuthenticator({ tokens, anonymous: true });
    expect(await auth({ clientCertificateChain: [], headers: { authorization: ['Bearer bad'] } })).toEqual({ authenticated: false, error: 'invalid bearer token' });
  });

  test('no credentials: anonymous when enabled, rejected otherwise', async () => {
    expect(await createAuthenticator({ tokens, anonymous: true })({ clientCertificateChain: [], headers: {} })).toEqual(anonymous);
    expect(await createAuthenticator({ tokens, anonymous: false })({ clientCertificateChain: [], headers: {} })).toEqual({ authenticated: false, error: '' });
  });

  test('a certificate that does not verify is rejected, even with a good bearer token and anonymous on', async () => {
    const auth = createAuthenticator({ tokens, anonymous: true });
    const garbage = new Uint8Array(Buffer.from('not a certificate'));
    expect(await auth({ clientCertificateChain: [garbage], headers: {} })).toMatchObject({ authenticated: false });
    expect(await auth({ clientCertificateChain: [garbage], headers: { authorization: ['Bearer good'] } })).toMatchObject({ authenticated: false });
  });

  test('headers naming a user or groups do not change the identity', async () => {
    const proxyHeaders = { 'x-remote-user': ['admin'], 'x-remote-group': ['system:masters'], 'x-remote-extra-scopes': ['all'] };
    expect(await createAuthenticator({ tokens, anonymous: true })({ clientCertificateChain: [], headers: proxyHeaders })).toEqual(anonymous);
    expect(await createAuthenticator({ tokens, anonymous: false })({ clientCertificateChain: [], headers: proxyHeaders })).toEqual({ authenticated: false, error: '' });
    const withToken = await createAuthenticator({ tokens, anonymous: true })({ clientCertificateChain: [], headers: { ...proxyHeaders, authorization: ['Bearer good'] } });
    expect(withToken).toMatchObject({ authenticated: true, user: { username: 'alice', groups: ['dev', 'system:authenticated'] } });
  });
});
