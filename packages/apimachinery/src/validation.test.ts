import { validateAnnotations } from './validation';

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
