import { validateAnnotations, validateLabelValue, validatePathSegmentName, validateQualifiedName } from './validation';

describe('validateAnnotations', () => {
  const limit = 256 * 1024;

  it('counts the total size in bytes of UTF-8, as the original does', () => {
    // 140,000 two-byte characters: 140,001 characters, 280,001 bytes.
    const causes = validateAnnotations({ a: 'é'.repeat(140_000) }, 'metadata.annotations');
    expect(causes).toEqual([{ reason: 'FieldValueTooLong', field: 'metadata.annotations', message: `Too long: must have at most ${limit} bytes` }]);
    expect(validateAnnotations({ a: '😀'.repeat(70_000) }, 'metadata.annotations')).toHaveLength(1);
  });

  it('accepts annotations of exactly the limit', () => {
    expect(validateAnnotations({ a: 'x'.repeat(limit - 1) }, 'metadata.annotations')).toEqual([]);
    expect(validateAnnotations({ a: 'é'.repeat((limit - 2) / 2), b: '' }, 'metadata.annotations')).toEqual([]);
    expect(validateAnnotations({ a: 'x'.repeat(limit) }, 'metadata.annotations')).toHaveLength(1);
  });
});

describe('names, label keys and values: every problem named in the original words', () => {
  it('a path segment name names each character it may not contain', () => {
    expect(validatePathSegmentName('a:b/c%d', 'metadata.name').map((c) => c.message)).toEqual(['Invalid value: "a:b/c%d": may not contain \'/\'', 'Invalid value: "a:b/c%d": may not contain \'%\'']);
    expect(validatePathSegmentName('..', 'metadata.name').map((c) => c.message)).toEqual(['Invalid value: "..": may not be \'..\'']);
    expect(validatePathSegmentName('a:b', 'metadata.name')).toEqual([]);
  });

  it('a label key gives the example and the regular expression, and both a length and a form problem', () => {
    expect(validateQualifiedName('x y', 'metadata.labels').map((c) => c.message)).toEqual([
      "Invalid value: \"x y\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
    ]);
    expect(validateQualifiedName(`${'-'.repeat(64)}`, 'metadata.labels').map((c) => (c.message ?? '').replace(/^Invalid value: "-+": /, ''))).toEqual([
      'name part must be no more than 63 characters',
      expect.stringMatching(/^name part must consist of/),
    ]);
    expect(validateQualifiedName('a/b/c', 'metadata.labels')[0]?.message).toMatch(/with an optional DNS subdomain prefix and '\/' \(e\.g\. 'example\.com\/MyName'\)$/);
    expect(validateQualifiedName('Bad_Prefix/x', 'metadata.labels')[0]?.message).toMatch(/^Invalid value: "Bad_Prefix\/x": prefix part a lowercase RFC 1123 subdomain must consist of/);
  });

  it('a label value gives the example and the regular expression', () => {
    expect(validateLabelValue('bad value', 'metadata.labels').map((c) => c.message)).toEqual([
      "Invalid value: \"bad value\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
    ]);
    expect(validateLabelValue(`${'x'.repeat(63)}-`, 'metadata.labels')).toHaveLength(2);
  });
});
