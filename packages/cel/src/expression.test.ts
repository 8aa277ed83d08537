import { CelCompileError, CelEvaluationError, compile, type CelDeclaredType } from './index';

const request: CelDeclaredType = { object: { user: 'string', groups: { list: 'string' }, extra: { map: { list: 'string' } }, attrs: { object: { verb: 'string' } } } };

describe('the shared CEL layer', () => {
  test('several declared variables are bound at evaluation', () => {
    const e = compile('a.user == "x" && b > 2', { field: 'f', variables: { a: request, b: 'int' }, resultType: 'bool' });
    expect(e.evaluate({ a: { user: 'x' }, b: 3 })).toMatchObject({ ok: true, value: true });
    expect(e.resultType).toBe('bool');
  });

  test('a field a declared object does not have is a compile error naming the field', () => {
    expect(() => compile('a.usr == "x"', { field: 'rules[0].expression', variables: { a: request } })).toThrow(new CelCompileError('rules[0].expression', "Invalid value: compilation failed: undefined field 'usr'"));
    expect(() => compile('a.attrs.verbs == "x"', { field: 'f', variables: { a: request } })).toThrow(/undefined field 'verbs'/);
    // Maps and dyn have any key.
    expect(compile('a.extra.anything.size() > 0', { field: 'f', variables: { a: request } }).resultType).toBe('bool');
  });

  test('a result of another type than the one asked for is a compile error; dyn is accepted', () => {
    expect(() => compile('a.user', { field: 'm[1].expression', variables: { a: request }, resultType: 'bool' })).toThrow(new CelCompileError('m[1].expression', 'Invalid value: must evaluate to bool (the expression\'s type is string)'));
    expect(() => compile('a.groups.map(g, g + "!")', { field: 'f', variables: { a: request }, resultType: 'bool' })).toThrow(/must evaluate to bool/);
    expect(() => compile('size(a.groups)', { field: 'f', variables: { a: request }, resultType: 'bool' })).toThrow(/type is int/);
    for (const ok of ['a.groups.exists(g, g == "x")', 'has(a.attrs)', 'a.extra["k"][0] == "v" || a.groups.all(g, g.startsWith("s"))', 'b.anything', '"x" in a.groups']) {
      expect(compile(ok, { field: 'f', variables: { a: request, b: 'dyn' }, resultType: 'bool' }).source).toBe(ok);
    }
  });

  test('evaluation failures are typed: a runtime error, or a cost above the budget', () => {
    const missing = compile('a.attrs.verb == "get"', { field: 'f', variables: { a: request } }).evaluate({ a: { user: 'x' } });
    expect(missing.ok).toBe(false);
    expect(!missing.ok && missing.error).toBeInstanceOf(CelEvaluationError);
    expect(!missing.ok && missing.error.reason).toBe('Runtime');
    const costly = compile('a.groups.all(g, a.groups.all(h, g == h))', { field: 'f', variables: { a: request }, costBudget: 100 }).evaluate({ a: { groups: Array.from({ length: 20 }, (_, i) => `g${i}`) } });
    expect(!costly.ok && costly.error.reason).toBe('CostExceeded');
  });

  test('an operator applied to operands of types it has no overload for is a compile error; numbers compare across types', () => {
    const vars = { s: { object: { n: 'int', d: 'double', name: 'string', on: 'bool' } } as CelDeclaredType, x: 'dyn' as CelDeclaredType };
    const refused: Array<[string, string]> = [
      ["s.n > 'three'", "found no matching overload for '_>_' applied to '(int, string)'"],
      ['s.name < 1', "found no matching overload for '_<_' applied to '(string, int)'"],
      ["s.name + 1 == 'a1'", "found no matching overload for '_+_' applied to '(string, int)'"],
      ['s.n + s.d > 0.0', "found no matching overload for '_+_' applied to '(int, double)'"],
      ['s.d % 2.0 == 0.0', "found no matching overload for '_%_' applied to '(double, double)'"],
      ['s.on < true || s.name - s.name == ""', "found no matching overload for '_-_' applied to '(string, string)'"],
    ];
    for (const [source, message] of refused) expect(() => compile(source, { field: 'f', variables: vars })).toThrow(new CelCompileError('f', `Invalid value: compilation failed: ${message}`));
    for (const ok of ['s.n > 1.5', 's.n + 2 > s.d', "s.name + '!' == 'a!'", 's.n % 2 == 0', "x > 'a' && x + 1 > 2", 's.on < true', "s.name < 'b'"]) {
      expect(compile(ok, { field: 'f', variables: vars }).source).toBe(ok);
    }
  });
});
