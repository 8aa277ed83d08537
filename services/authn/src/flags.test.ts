import { parseFlags } from '@svc/service-kit';
import { AUTHN_FLAGS, anonymousAuthEnabled } from './flags';

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
