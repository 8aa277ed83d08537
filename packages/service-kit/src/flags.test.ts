import { parseDuration } from './flags';

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
