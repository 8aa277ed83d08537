import type { Schema } from './schema';
import { checkAgainstSchema } from './schema-check';

describe('checkAgainstSchema: null list items and map values', () => {
  const schema: Schema = {
    type: 'object',
    properties: {
      finalizers: { type: 'array', items: { type: 'string' } },
      owners: { type: 'array', items: { type: 'object', properties: { uid: { type: 'string' } } } },
      counts: { type: 'array', items: { type: 'integer', format: 'int32' } },
      flags: { type: 'array', items: { type: 'boolean' } },
      labels: { type: 'object', additionalProperties: { type: 'string' } },
      limits: { type: 'object', additionalProperties: { format: 'quantity' } },
      raw: { type: 'array', items: {} },
    },
  };

  it('typed decoding reads them as the zero value of their type, as Go does', () => {
    const result = checkAgainstSchema(
      { finalizers: ['a', null], owners: [null], counts: [null], flags: [null], labels: { x: null }, limits: { cpu: null }, raw: [null] },
      schema,
      { formats: true },
    );
    expect(result.typeErrors).toEqual([]);
    expect(result.pruned).toEqual({ finalizers: ['a', ''], owners: [{}], counts: [0], flags: [false], labels: { x: '' }, limits: { cpu: '0' }, raw: [null] });
    // Nothing is left undefined in a list (which JSON cannot carry).
    expect(JSON.stringify(result.pruned)).not.toContain('undefined');
  });

  it('unstructured decoding keeps a null list item for validation to refuse (a null map value is pruned)', () => {
    const result = checkAgainstSchema({ finalizers: [null], labels: { x: null } }, schema, { unstructured: true });
    expect(result.pruned).toEqual({ finalizers: [null], labels: {} });
  });
});

describe("checkAgainstSchema: a custom resource's metadata is typed", () => {
  const schema: Schema = {
    type: 'object',
    properties: {
      metadata: {
        type: 'object',
        properties: {
          finalizers: { type: 'array', items: { type: 'string' } },
          ownerReferences: { type: 'array', items: { type: 'object', properties: { uid: { type: 'string' } } } },
          labels: { type: 'object', additionalProperties: { type: 'string' } },
        },
      },
      spec: { type: 'object', properties: { tags: { type: 'array', items: { type: 'string' } }, size: { type: 'integer' } } },
    },
  };
  const check = (value: unknown) => checkAgainstSchema(value, schema, { unstructured: true, formats: 'metadata' });

  it('a value of the wrong type in metadata cannot be decoded (a format error, refused before validation reads it)', () => {
    const result = check({ metadata: { ownerReferences: 0, finalizers: {} }, spec: { size: 'big' } });
    expect(result.formatErrors.map((c) => c.field)).toEqual(['metadata.ownerReferences', 'metadata.finalizers']);
    // Outside metadata a wrong type is the schema validation's to report.
    expect(result.typeErrors.map((c) => c.field)).toEqual(['metadata.ownerReferences', 'metadata.finalizers', 'spec.size']);
  });

  it('nulls in metadata are read as typed decoding reads them; elsewhere they are kept', () => {
    const result = check({ metadata: { finalizers: [null], ownerReferences: [null], labels: { x: null } }, spec: { tags: [null] } });
    expect(result.formatErrors).toEqual([]);
    expect(result.pruned).toEqual({ metadata: { finalizers: [''], ownerReferences: [{}], labels: { x: '' } }, spec: { tags: [null] } });
  });
});
