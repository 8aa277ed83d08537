import { parseCsvLine, parseTokenFile, TokenFileError } from './token-file';

describe('static token file', () => {
  test('parses users, uids and quoted group lists', () => {
    const tokens = parseTokenFile('t1,alice,u1\n# comment\n\nt2,bob,u2,"dev,ops"\nt3,carol,u3,qa\n');
    expect(tokens.get('t1')).toEqual({ username: 'alice', uid: 'u1', groups: [], extra: {} });
    expect(tokens.get('t2')?.groups).toEqual(['dev', 'ops']);
    expect(tokens.get('t3')?.groups).toEqual(['qa']);
  });

  test('rejects short lines, empty users and duplicate tokens with the line number', () => {
    expect(() => parseTokenFile('t1,alice')).toThrow(/line 1/);
    expect(() => parseTokenFile('t1,,u1')).toThrow(TokenFileError);
    expect(() => parseTokenFile('t1,a,u\nt1,b,u')).toThrow(/line 2: duplicate/);
  });

  test('csv quoting keeps commas and escaped quotes', () => {
    expect(parseCsvLine('a,"b,c","d""e"')).toEqual(['a', 'b,c', 'd"e']);
    expect(() => parseCsvLine('a,"b')).toThrow(/unterminated/);
  });
});
