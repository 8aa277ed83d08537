import { parseFlags } from '@svc/service-kit';
import { AUTHN_FLAGS, anonymousAuthEnabled } from './flags';

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
    expect(anonymousAuthEnabled(parseFlags(argv, AUTHN_FLAGS))).toBe(expected);
  });

  test('a value that is not a boolean is refused', () => {
    expect(() => anonymousAuthEnabled(parseFlags(['--anonymous-auth=maybe'], AUTHN_FLAGS))).toThrow(/true or false/);
  });
});
