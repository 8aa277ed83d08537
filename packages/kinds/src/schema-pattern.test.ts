import { compilePattern, validateValue } from './schema-values';

describe('schema patterns', () => {
  test('a pattern is searched for, as JSON schema and the original server read it', () => {
    const schema = { type: 'string' as const, pattern: '[0-9]+' };
    expect(validateValue('abc123', schema, 'spec.code')).toEqual([]);
    expect(validateValue('abc', schema, 'spec.code')).toEqual([expect.objectContaining({ field: 'spec.code', message: expect.stringContaining("should match '[0-9]+'") })]);
  });

  test('a backtracking pattern runs in linear time (RE2): a definition cannot stall the gateway', () => {
    // With a backtracking engine this input takes about 2^40 steps and the test never ends.
    const schema = { type: 'string' as const, pattern: '^(a+)+$' };
    const hostile = `${'a'.repeat(40)}!`;
    expect(validateValue(hostile, schema, 'spec.name')).toEqual([expect.objectContaining({ field: 'spec.name' })]);
    expect(validateValue('a'.repeat(40), schema, 'spec.name')).toEqual([]);
  });

  test('patterns outside RE2 (backreferences, lookahead) do not compile, so a definition using them is refused', () => {
    expect(compilePattern('(a)\\1')).toBeNull();
    expect(compilePattern('a(?=b)')).toBeNull();
    expect(compilePattern('^[a-z]{3}$')).not.toBeNull();
  });
});
