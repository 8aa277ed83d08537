import { parseFlags } from '@svc/service-kit';
import { GATEWAY_FLAGS, proxyHeadersFromFlags } from './flags';

const REQUIRED = ['--internal-ca-file=ca.crt', '--internal-cert-file=gateway.crt', '--internal-key-file=gateway.key', '--tls-cert-file=s.crt', '--tls-private-key-file=s.key'];

describe('authenticating proxy headers to forward', () => {
  test('none configured: none besides the built-in ones', () => {
    expect(proxyHeadersFromFlags(parseFlags(REQUIRED, GATEWAY_FLAGS))).toEqual({ names: [], prefixes: [] });
  });

  test('repeated and comma-separated, lower-cased', () => {
    const flags = parseFlags(
      [...REQUIRED, '--requestheader-username-headers=X-Proxy-User,X-Other-User', '--requestheader-username-headers=X-Third', '--requestheader-uid-headers=X-Proxy-Uid', '--requestheader-group-headers=X-Proxy-Groups', '--requestheader-extra-headers-prefix=X-Proxy-Extra-'],
      GATEWAY_FLAGS,
    );
    expect(proxyHeadersFromFlags(flags)).toEqual({ names: ['x-proxy-user', 'x-other-user', 'x-third', 'x-proxy-uid', 'x-proxy-groups'], prefixes: ['x-proxy-extra-'] });
  });
});
