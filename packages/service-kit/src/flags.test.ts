import { listFlag, parseDuration, parseFlags } from './flags';

describe('parseDuration', () => {
  test.each([
    ['0', 0],
    ['2m0s', 120_000],
    ['1h30m', 5_400_000],
    ['90s', 90_000],
    ['500ms', 500],
    ['1.5h', 5_400_000],
    ['10us', 0.01],
  ])('%s → %d ms', (text, ms) => {
    expect(parseDuration(text, 'd')).toBe(ms);
  });

  test.each(['', '10', 'soon', '5 m', '1h-2m', '-1s', '1d'])('%j is refused naming the flag', (text) => {
    expect(() => parseDuration(text, 'cache-ttl')).toThrow(`--cache-ttl: invalid duration ${JSON.stringify(text)}`);
  });
});

describe('listFlag', () => {
  const specs = { h: { description: 'a list', repeated: true, default: '' }, single: { description: 'one value', default: 'a,b' } };

  test('repeated and comma-separated values, in order, blanks dropped', () => {
    expect(listFlag(parseFlags(['--h=X-A, X-B', '--h', 'X-C', '--h=,'], specs), 'h')).toEqual(['X-A', 'X-B', 'X-C']);
  });

  test('the default when the flag is not given; an empty default is an empty list', () => {
    expect(listFlag(parseFlags([], specs), 'h')).toEqual([]);
    expect(listFlag(parseFlags([], specs), 'single')).toEqual(['a', 'b']);
  });
});
