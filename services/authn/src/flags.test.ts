import { parseFlags } from '@svc/service-kit';
import { AUTHN_FLAGS, anonymousAuthEnabled, apiAudiences, serviceAccountConfig } from './flags';

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
