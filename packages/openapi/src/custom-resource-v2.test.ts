import type { ResourceDefinition, Schema } from '@svc/apimachinery';
import { customResourceSchemaV2 } from './custom-resource-v2';
import { kindDefinition } from './kind-definitions';
import { OPENAPI_3, SWAGGER_2 } from './schema-convert';

describe('custom resource schemas in OpenAPI v2', () => {
  test('nullable values become untyped, without items or properties, and are no longer required', () => {
    const schema: Schema = {
      type: 'object',
      required: ['a', 'b'],
      properties: {
        a: { type: 'object', nullable: true, properties: { x: { type: 'string' } } },
        b: { type: 'string' },
        c: { type: 'array', nullable: true, items: { type: 'string' } },
      },
    };
    expect(customResourceSchemaV2(schema)).toEqual({ type: 'object', required: ['b'], properties: { a: {}, b: { type: 'string' }, c: {} } });
  });

  test('values that preserve unknown fields lose items and properties, objects their type; lists left without items their type', () => {
    const schema: Schema = {
      type: 'object',
      properties: {
        open: { type: 'object', 'x-svc-preserve-unknown-fields': true, properties: { known: { type: 'integer' } } },
        list: { type: 'array', 'x-svc-preserve-unknown-fields': true, items: { type: 'string' } },
        deep: { type: 'object', properties: { inner: { type: 'object', additionalProperties: { type: 'string', nullable: true } } }, required: ['inner'] },
      },
    };
    expect(customResourceSchemaV2(schema)).toEqual({
      type: 'object',
      properties: {
        open: { 'x-svc-preserve-unknown-fields': true },
        list: { 'x-svc-preserve-unknown-fields': true },
        deep: { type: 'object', properties: { inner: { type: 'object', additionalProperties: {} } }, required: ['inner'] },
      },
    });
    // The schema validation reads is left as it was.
    expect(schema.properties?.['open']?.properties).toBeDefined();
  });

  const custom = (schema: Schema): Pick<ResourceDefinition, 'schema' | 'kind' | 'group' | 'version' | 'decoding'> => ({ schema, kind: 'Widget', group: 'example.com', version: 'v1', decoding: 'unstructured' });

  test('a custom resource that preserves unknown fields at its root is a bare object in v2, so kubectl accepts its spec; v3 keeps the full schema', () => {
    const schema: Schema = { type: 'object', 'x-svc-preserve-unknown-fields': true, properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: { type: 'object' } } };
    const v2 = kindDefinition(custom(schema), SWAGGER_2);
    expect(v2).toEqual({
      type: 'object',
      'x-svc-group-version-kind': [{ group: 'example.com', kind: 'Widget', version: 'v1' }],
      'x-kubernetes-group-version-kind': [{ group: 'example.com', kind: 'Widget', version: 'v1' }],
    });
    const v3 = kindDefinition(custom(schema), OPENAPI_3);
    expect(Object.keys(v3['properties'] as object).sort()).toEqual(['apiVersion', 'kind', 'metadata']);
  });

  test('a built-in kind keeps its schema in v2', () => {
    const schema: Schema = { type: 'object', properties: { data: { type: 'object', nullable: true, additionalProperties: { type: 'string' } } } };
    const v2 = kindDefinition({ schema, kind: 'Thing', group: '', version: 'v1' }, SWAGGER_2);
    expect((v2['properties'] as Record<string, unknown>)['data']).toEqual({ type: 'object', additionalProperties: { type: 'string' } });
  });
});
