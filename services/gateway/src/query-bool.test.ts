import { parseBoolParam } from './query-bool';

describe('boolean query parameters', () => {
  it.each([
    [undefined, false],
    [null, false],
    [[], false],
    ['false', false],
    ['FALSE', false],
    ['False', false],
    ['0', false],
    ['true', true],
    ['True', true],
    ['t', true],
    ['1', true],
    ['yes', true],
    ['', true],
    [['false', 'true'], false],
    [['1', '0'], true],
  ])('%j is %s', (raw, expected) => {
    expect(parseBoolParam(raw)).toBe(expected);
  });
});
