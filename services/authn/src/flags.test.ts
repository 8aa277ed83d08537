import { parseFlags } from '@svc/service-kit';
import { AUTHN_FLAGS, anonymousAuthEnabled, apiAudiences, requestHeaderConfig, serviceAccountConfig, tokenWebhookConfig } from './flags';

/** The flags every authn must be given (its internal certificate), which these cases do not vary. */
const REQUIRED = ['--internal-ca-file=ca.crt', '--internal-cert-file=authn.crt', '--internal-key-file=authn.key'];

describe('--anonymous-auth default', () => {
  test.each([
    [[], true],
    [['--authorization-mode=AlwaysDeny'], true],
    [['--authorization-mode=AlwaysAllow'], false],
    [['--authorization-mode=AlwaysDeny,AlwaysAllow'], false],
    [['--authorization-mode=AlwaysAllow', '--anonymous-auth=true'], true],
    [['--authorization-mode=AlwaysAllow', '--anonymous-auth'], true],
    [['--authorization-mode=AlwaysDeny', '--anonymous-auth=false'], false],
  ])('%j → %s', (argv, expected) => {
    expect(anonymousAuthEnabled(parseFlags([...REQUIRED, ...argv], AUTHN_FLAGS))).toBe(expected);
  });

  test('a value that is not a boolean is refused', () => {
    expect(() => anonymousAuthEnabled(parseFlags([...REQUIRED, '--anonymous-auth=maybe'], AUTHN_FLAGS))).toThrow(/true or false/);
  });
});

describe('service-account flags', () => {
  test('issuers, key files, the cap and the lookup', () => {
    const flags = parseFlags(
      [...REQUIRED, '--service-account-issuer=https://a', '--service-account-issuer=https://b', '--service-account-key-file=k1.pem', '--service-account-key-file=k2.pem', '--service-account-signing-key-file=s.key', '--service-account-max-token-expiration=24h', '--service-account-lookup=false', '--api-audiences=x, y'],
      AUTHN_FLAGS,
    );
    expect(serviceAccountConfig(flags)).toEqual({ issuers: ['https://a', 'https://b'], keyFiles: ['k1.pem', 'k2.pem'], signingKeyFile: 's.key', maxTokenExpirationSeconds: 86400, lookup: false });
    expect(apiAudiences(flags)).toEqual(['x', 'y']);
  });

  test('without an issuer there are no service-account tokens; lookup defaults on', () => {
    expect(serviceAccountConfig(parseFlags(REQUIRED, AUTHN_FLAGS))).toBeUndefined();
    expect(serviceAccountConfig(parseFlags([...REQUIRED, '--service-account-issuer=https://a'], AUTHN_FLAGS))?.lookup).toBe(true);
  });

  test('a malformed duration is refused naming the flag', () => {
    expect(() => serviceAccountConfig(parseFlags([...REQUIRED, '--service-account-issuer=https://a', '--service-account-max-token-expiration=tomorrow'], AUTHN_FLAGS))).toThrow(
      '--service-account-max-token-expiration: invalid duration "tomorrow"',
    );
  });
});

describe('authenticating proxy flags', () => {
  test('header lists may be repeated and comma-separated, in order; names are lower-cased, allowed names are not', () => {
    const flags = parseFlags(
      [
        ...REQUIRED,
        '--requestheader-client-ca-file=proxy-ca.crt',
        '--requestheader-username-headers=X-Remote-User, X-Proxy-User',
        '--requestheader-username-headers=X-Third',
        '--requestheader-uid-headers=X-Remote-Uid',
        '--requestheader-group-headers=X-Remote-Group',
        '--requestheader-group-headers=X-Proxy-Groups',
        '--requestheader-extra-headers-prefix=X-Remote-Extra-,X-Proxy-Extra-',
        '--requestheader-allowed-names=Front-Proxy',
        '--requestheader-allowed-names=aggregator',
      ],
      AUTHN_FLAGS,
    );
    expect(requestHeaderConfig(flags)).toEqual({
      clientCaFile: 'proxy-ca.crt',
      allowedNames: ['Front-Proxy', 'aggregator'],
      usernameHeaders: ['x-remote-user', 'x-proxy-user', 'x-third'],
      uidHeaders: ['x-remote-uid'],
      groupHeaders: ['x-remote-group', 'x-proxy-groups'],
      extraHeaderPrefixes: ['x-remote-extra-', 'x-proxy-extra-'],
    });
  });

  test('off without the CA; the CA needs username headers', () => {
    expect(requestHeaderConfig(parseFlags([...REQUIRED, '--requestheader-username-headers=X-Remote-User'], AUTHN_FLAGS))).toBeUndefined();
    expect(() => requestHeaderConfig(parseFlags([...REQUIRED, '--requestheader-client-ca-file=ca.crt'], AUTHN_FLAGS))).toThrow('--requestheader-username-headers is required with --requestheader-client-ca-file');
  });
});

describe('token webhook flags', () => {
  test('defaults: v1beta1, cached 2 minutes', () => {
    expect(tokenWebhookConfig(parseFlags(REQUIRED, AUTHN_FLAGS))).toBeUndefined();
    expect(tokenWebhookConfig(parseFlags([...REQUIRED, '--authentication-token-webhook-config-file=w.kubeconfig'], AUTHN_FLAGS))).toEqual({ configFile: 'w.kubeconfig', cacheTtlMs: 120_000, version: 'v1beta1' });
    expect(tokenWebhookConfig(parseFlags([...REQUIRED, '--authentication-token-webhook-config-file=w', '--authentication-token-webhook-cache-ttl=30s', '--authentication-token-webhook-version=v1'], AUTHN_FLAGS))).toEqual({ configFile: 'w', cacheTtlMs: 30_000, version: 'v1' });
  });

  test('a version or a duration that is not understood is refused naming the flag', () => {
    expect(() => tokenWebhookConfig(parseFlags([...REQUIRED, '--authentication-token-webhook-config-file=w', '--authentication-token-webhook-version=v2'], AUTHN_FLAGS))).toThrow(/--authentication-token-webhook-version: "v2"/);
    expect(() => tokenWebhookConfig(parseFlags([...REQUIRED, '--authentication-token-webhook-config-file=w', '--authentication-token-webhook-cache-ttl=2'], AUTHN_FLAGS))).toThrow(/--authentication-token-webhook-cache-ttl: invalid duration/);
  });
});
