import { compile, type CelDeclaredType } from './index';

function run(source: string, self: unknown = null, type: CelDeclaredType = 'dyn'): unknown {
  const outcome = compile(source, { field: 'f', variables: { self: type } }).evaluate({ self });
  if (!outcome.ok) throw outcome.error;
  return outcome.value;
}

describe('the Kubernetes library functions', () => {
  test('lists: isSorted, sum, min, max, indexOf, lastIndexOf', () => {
    expect(run('[1, 2, 2, 5].isSorted()')).toBe(true);
    expect(run('["b", "a"].isSorted()')).toBe(false);
    expect(run('self.sum()', [1, 2, 3], { list: 'int' })).toBe(6);
    expect(run('self.sum()', [0.5, 1.25], { list: 'double' })).toBe(1.75);
    expect(run('[].sum()')).toBe(0);
    expect(run('self.min()', [3, -1, 7], { list: 'int' })).toBe(-1);
    expect(run('self.max()', ['a', 'c', 'b'], { list: 'string' })).toBe('c');
    expect(run('[1, 2, 1].indexOf(1)')).toBe(0);
    expect(run('[1, 2, 1].lastIndexOf(1)')).toBe(2);
    expect(run('[[1], [2]].indexOf([2])')).toBe(1);
    expect(run('[1, 2].indexOf(9)')).toBe(-1);
    expect(() => run('[].max()')).toThrow(/must not be empty/);
  });

  test('regular expressions: find and findAll', () => {
    expect(run('"abc 123 def 456".find("[0-9]+")')).toBe('123');
    expect(run('"abc".find("[0-9]+")')).toBe('');
    expect(run('"abc 123 def 456".findAll("[0-9]+")')).toEqual(['123', '456']);
    expect(run('"a1b2c3".findAll("[0-9]", 2)')).toEqual(['1', '2']);
    expect(run('"xyz".findAll("[0-9]")')).toEqual([]);
    expect(() => run('"x".find("(")')).toThrow(/invalid regex pattern/);
    // A pattern with nested quantifiers on input it does not match answers at once (RE2 is asked first).
    const started = Date.now();
    expect(run(`"${'a'.repeat(40)}".find("(a+)+b")`)).toBe('');
    expect(Date.now() - started).toBeLessThan(1000);
  });

  test('URLs: url, isURL and their parts', () => {
    expect(run('isURL("https://example.com:8443/a%20b?x=1&x=2&y=3")')).toBe(true);
    expect(run('isURL("/absolute/path")')).toBe(true);
    expect(run('isURL("not a url")')).toBe(false);
    expect(run('isURL("relative/path")')).toBe(false);
    const u = 'url("https://user@example.com:8443/a%20b?x=1&x=2&y=3")';
    expect(run(`${u}.getScheme()`)).toBe('https');
    expect(run(`${u}.getHost()`)).toBe('example.com:8443');
    expect(run(`${u}.getHostname()`)).toBe('example.com');
    expect(run(`${u}.getPort()`)).toBe('8443');
    expect(run(`${u}.getEscapedPath()`)).toBe('/a%20b');
    expect(run(`${u}.getQuery()`)).toEqual({ x: ['1', '2'], y: ['3'] });
    expect(run('url("https://[::1]:80").getHostname()')).toBe('::1');
    expect(() => run('url("::")')).toThrow(/URL parse error/);
  });

  test('the string extension is there: lowerAscii, upperAscii, replace, split, join, trim, substring, indexOf', () => {
    expect(run('"AbC".lowerAscii() + "x".upperAscii()')).toBe('abcX');
    expect(run('"a-b-c".replace("-", "+")')).toBe('a+b+c');
    expect(run('"a,b".split(",")')).toEqual(['a', 'b']);
    expect(run('["a", "b"].join("/")')).toBe('a/b');
    expect(run('"  x ".trim()')).toBe('x');
    expect(run('"hello".substring(1, 3)')).toBe('el');
    expect(run('"hello".indexOf("l")')).toBe(2);
  });

  test('result types of library functions are known at compile time', () => {
    expect(compile('self.isSorted()', { field: 'f', variables: { self: { list: 'int' } } }).resultType).toBe('bool');
    expect(compile('self.max()', { field: 'f', variables: { self: { list: 'int' } } }).resultType).toBe('int');
    expect(compile('"x".findAll("y")', { field: 'f', variables: {} }).resultType).toEqual({ list: 'string' });
    expect(() => compile('"x".find("y")', { field: 'm', variables: {}, resultType: 'bool' })).toThrow(/must evaluate to bool/);
  });

  test('values follow the declared type: a double field with an integral value is a double', () => {
    expect(run('self.ratio + 0.5', { ratio: 1 }, { object: { ratio: 'double' } })).toBe(1.5);
    // Undeclared fields of a declared object are not given to CEL.
    expect(run('has(self.other)', { ratio: 1, other: 2 }, { object: { ratio: 'double', other: 'dyn' } })).toBe(true);
    expect(run('self.size()', { ratio: 1, other: 2 }, { object: { ratio: 'double' } })).toBe(1);
  });

  test('a successful evaluation reports its cost, and a smaller budget can be given per call', () => {
    const e = compile('self.all(x, x > 0)', { field: 'f', variables: { self: { list: 'int' } } });
    const ok = e.evaluateWithCost({ self: [1, 2, 3] });
    expect(ok.outcome).toEqual({ ok: true, value: true });
    expect(ok.cost).toBeGreaterThan(0);
    const refused = e.evaluate({ self: [1, 2, 3] }, { costBudget: 1 });
    expect(!refused.ok && refused.error.reason).toBe('CostExceeded');
  });
});
