import { compileSearcher, findAllMatches } from './regex-search';

/** What a backtracking engine reports for a pattern both engines read alike: the reference. */
function reference(pattern: string, input: string): string[] {
  const out: string[] = [];
  const re = new RegExp(pattern, 'gu');
  let previousEnd = -1;
  for (let m = re.exec(input); m !== null; m = re.exec(input)) {
    const start = m.index;
    const end = start + m[0].length;
    if (end === start) {
      re.lastIndex = end + ((input.codePointAt(end) ?? 0) > 0xffff ? 2 : 1);
      if (start === previousEnd) continue;
    }
    previousEnd = end;
    out.push(m[0]);
  }
  return out;
}

describe('locating matches without backtracking', () => {
  const cases: Array<[string, string]> = [
    ['[0-9]+', 'abc 123 def 456'],
    ['a|ab', 'ab ab'],
    ['ab|a', 'ab ab'],
    ['a*', 'baaac'],
    ['a*?b', 'aaab aab'],
    ['(a+)(b+)?', 'aaabbb a ab'],
    ['\\bfoo\\b', 'foo food foo_ foo.'],
    ['^a', 'aaa'],
    ['a$', 'aaa'],
    ['x*', ''],
    ['[a-z]+@[a-z]+\\.com', 'mail: bob@example.com, eve@evil.com'],
    ['.', 'a😀b'],
    ['😀+', 'x😀😀y😀'],
    ['\\d{2,3}', '1 12 1234 12345'],
    ['', 'abc'],
  ];
  test.each(cases)('%j in %j as the reference engine reports it', (pattern, input) => {
    expect(findAllMatches(compileSearcher(pattern), input, -1)).toEqual(reference(pattern, input));
  });

  test('a search starting after the beginning keeps the context of what comes before', () => {
    const s = compileSearcher('\\bab');
    expect(s.search('xab ab', 1)).toEqual([4, 6]);
    expect(compileSearcher('^a').search('aa', 1)).toBeUndefined();
  });

  test('flags written in the pattern (RE2 syntax, which JavaScript does not read)', () => {
    expect(findAllMatches(compileSearcher('(?m)^x'), 'x\nx\nyx', -1)).toEqual(['x', 'x']);
    expect(findAllMatches(compileSearcher('(?i)hello'), 'HeLLo hello', -1)).toEqual(['HeLLo', 'hello']);
    expect(findAllMatches(compileSearcher('(?s)a.b'), 'a\nb', -1)).toEqual(['a\nb']);
    expect(findAllMatches(compileSearcher('a.b'), 'a\nb', -1)).toEqual([]);
  });

  test('a limit stops the search', () => {
    expect(findAllMatches(compileSearcher('[0-9]'), 'a1b2c3', 2)).toEqual(['1', '2']);
  });

  test('patterns that make a backtracking engine take exponential time are located in linear time', () => {
    // A backtracking engine fails at each early start position after about 2^n steps before
    // reaching the match at the end; these finish at once (the test would not end otherwise).
    const hostile = `${'a'.repeat(5000)}!aab`;
    expect(findAllMatches(compileSearcher('(a+)+b'), hostile, -1)).toEqual(['aab']);
    expect(findAllMatches(compileSearcher('(a|a)*c'), `${'a'.repeat(5000)}!c`, -1)).toEqual(['c']);
  });
});
