import { ApiError } from '@svc/apimachinery';
import { includeObjectParam } from './table';

describe('includeObjectParam', () => {
  test.each([
    [undefined, 'Metadata'],
    ['', 'Metadata'],
    ['None', 'None'],
    ['Metadata', 'Metadata'],
    ['Object', 'Object'],
  ])('%j reads as %s', (raw, want) => {
    expect(includeObjectParam(raw)).toBe(want);
  });

  test.each(['object', 'Bad', 'All'])('%j is 400 naming includeObject, never read as the default', (raw) => {
    let err: unknown;
    try {
      includeObjectParam(raw);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect([(err as ApiError).code, (err as ApiError).message]).toEqual([400, `Unable to convert to Table as requested: includeObject: Invalid value: "${raw}": must be 'Metadata', 'Object', 'None', or empty`]);
  });
});
