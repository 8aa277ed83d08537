import { COST_BUDGET, CelCompileError, compileExpression } from './cel';

describe('CEL expressions of the authentication configuration', () => {
  test('claims are a map: strings, lists, nested objects; integers are ints and compare with ints and doubles', () => {
    const e = compileExpression('claims.sub + ":" + claims.groups.join(",") + ":" + string(claims.exp > 5 && claims.ratio < 1) + ":" + claims.org.name', 'f');
    expect(e.evaluate({ sub: 'alice', groups: ['a', 'b'], exp: 1700000000, ratio: 0.5, org: { name: 'acme' } })).toEqual({ ok: true, value: 'alice:a,b:true:acme' });
    expect(compileExpression('claims.n == 3', 'f').evaluate({ n: 3 })).toEqual({ ok: true, value: true });
  });

  test('lists from map and filter come back as arrays; has() tests presence; a missing claim is an error', () => {
    expect(compileExpression('claims.roles.filter(r, r.startsWith("k-")).map(r, r.substring(2))', 'f').evaluate({ roles: ['k-a', 'x', 'k-b'] })).toEqual({ ok: true, value: ['a', 'b'] });
    expect(compileExpression('has(claims.email) ? claims.email : "none"', 'f').evaluate({})).toEqual({ ok: true, value: 'none' });
    expect(compileExpression('claims.email', 'f').evaluate({})).toMatchObject({ ok: false });
  });

  test('the user variable for user rules; a variable that is not in scope is a compile error naming the field', () => {
    expect(compileExpression('user.username.startsWith("x") && user.groups.size() == 0', 'f', 'user').evaluate({ username: 'xy', uid: '', groups: [], extra: {} })).toEqual({ ok: true, value: true });
    expect(() => compileExpression('user.username == "a"', 'jwt[0].claimMappings.username.expression')).toThrow(
      new CelCompileError('jwt[0].claimMappings.username.expression', "Invalid value: compilation failed: undeclared reference to 'user' (only 'claims' is available here)"),
    );
    expect(() => compileExpression('claims.sub', 'jwt[0].userValidationRules[0].expression', 'user')).toThrow(/undeclared reference to 'claims'/);
    // Comprehension variables and type names are declared.
    expect(compileExpression('claims.l.all(x, type(x) == string)', 'f').evaluate({ l: ['a'] })).toEqual({ ok: true, value: true });
  });

  test('syntax errors, empty and overlong expressions are compile errors naming the field', () => {
    expect(() => compileExpression('claims.sub +', 'a.b')).toThrow(/^a\.b: Invalid value: compilation failed: /);
    expect(() => compileExpression('  ', 'a.b')).toThrow('a.b: Required value');
    expect(() => compileExpression(`"${'x'.repeat(10_001)}"`, 'a.b')).toThrow('a.b: Too long');
  });

  test('selects() finds claims.<field> the way the original does (select expressions, not index expressions)', () => {
    const e = compileExpression('claims.email_verified ? claims.email : claims["sub"]', 'f');
    expect(e.selects('email')).toBe(true);
    expect(e.selects('email_verified')).toBe(true);
    expect(e.selects('sub')).toBe(false);
    expect(compileExpression('claims.l.map(x, claims.email)', 'f').selects('email')).toBe(true);
  });

  test('regular expressions run in linear time (RE2): a pattern that backtracks exponentially in JavaScript is fast', () => {
    const e = compileExpression('claims.s.matches("^(a+)+$")', 'f');
    const started = Date.now();
    expect(e.evaluate({ s: `${'a'.repeat(5000)}b` })).toEqual({ ok: true, value: false });
    expect(Date.now() - started).toBeLessThan(2000);
  });

  describe('the cost budget', () => {
    test('the bound grows with the inputs: a comprehension costs its body once per element', () => {
      const e = compileExpression('claims.groups.exists(g, g == "admin")', 'f');
      const small = e.estimateCost({ groups: ['a', 'b'] });
      const large = e.estimateCost({ groups: Array.from({ length: 200 }, (_, i) => `g${i}`) });
      expect(small).toBeGreaterThan(0);
      expect(large).toBeGreaterThan(50 * small);
      expect(e.estimateCost({ groups: ['a', 'b'] })).toBe(small);
    });

    test('ordinary mappings of a large token stay far below the budget', () => {
      const claims = { sub: 'x'.repeat(200), groups: Array.from({ length: 1000 }, (_, i) => `group-${i}`), email: 'a@example.com' };
      for (const source of ['claims.groups.map(g, "oidc:" + g)', 'claims.groups.filter(g, g.startsWith("group-1")).size() > 0', '"corp:" + claims.sub', 'claims.email.matches("^[a-z]+@example\\\\.com$")']) {
        const e = compileExpression(source, 'f');
        expect(e.estimateCost(claims)).toBeLessThan(COST_BUDGET / 10);
        expect(e.evaluate(claims).ok).toBe(true);
      }
    });

    test('nested comprehensions over a large claim exceed the budget: the evaluation is refused, deterministically', () => {
      const e = compileExpression('claims.l.all(a, claims.l.all(b, claims.l.exists(c, a + b == c)))', 'f');
      const claims = { l: Array.from({ length: 300 }, (_, i) => `${i}`) };
      expect(e.estimateCost(claims)).toBeGreaterThan(COST_BUDGET);
      const started = Date.now();
      const out = e.evaluate(claims);
      expect(out).toEqual({ ok: false, error: expect.stringMatching(/^operation cancelled: actual cost limit exceeded/) });
      expect(Date.now() - started).toBeLessThan(500);
      expect(e.evaluate(claims)).toEqual(out);
      // The same expression over a small list runs.
      expect(e.evaluate({ l: ['1', '2'] })).toEqual({ ok: true, value: false });
    });

    test('values the expression builds are tracked: repeated replace() that multiplies a string is refused', () => {
      const e = compileExpression('claims.s.replace("", claims.s).replace("", claims.s).size() > 0', 'f');
      expect(e.evaluate({ s: 'x'.repeat(200) })).toMatchObject({ ok: false, error: expect.stringMatching(/cost limit exceeded/) });
      expect(e.evaluate({ s: 'xy' })).toEqual({ ok: true, value: true });
    });

    test('a regular expression costs pattern length times input length', () => {
      const e = compileExpression(`claims.s.matches("${'a?'.repeat(200)}")`, 'f');
      expect(e.estimateCost({ s: 'a'.repeat(100) })).toBeLessThan(e.estimateCost({ s: 'a'.repeat(10_000) }) / 50);
      expect(e.evaluate({ s: 'a'.repeat(10_000) })).toMatchObject({ ok: false });
    });
  });
});
