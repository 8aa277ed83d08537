import { checkAgainstSchema, type ApiObject, type ResourceDefinition } from '@svc/apimachinery';
import { conversionStrategy, conversionWebhookUrl, customResourceDefinitions } from './custom-resources';
import { normalizeExtensions, schemaFromStructural } from './structural-schema';

const openAPIV3Schema = {
  type: 'object',
  properties: {
    metadata: { type: 'object', properties: { name: { type: 'string', maxLength: 10 } } },
    spec: {
      type: 'object',
      required: ['size'],
      properties: {
        size: { type: 'integer', format: 'int32', minimum: 1, maximum: 10 },
        ratio: { type: 'number', exclusiveMinimum: true, minimum: 0 },
        color: { type: 'string', enum: ['red', 'blue'], default: 'red' },
        code: { type: 'string', pattern: '^[A-Z]{3}$', minLength: 3, maxLength: 3 },
        when: { type: 'string', format: 'date-time' },
        note: { type: 'string', nullable: true },
        tags: { type: 'array', maxItems: 2, minItems: 1, 'x-kubernetes-list-type': 'set', items: { type: 'string' } },
        port: { 'x-kubernetes-int-or-string': true },
        labels: { type: 'object', additionalProperties: { type: 'string' }, 'x-kubernetes-map-type': 'atomic' },
        extra: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true },
        rules: {
          type: 'array',
          'x-kubernetes-list-type': 'map',
          'x-kubernetes-list-map-keys': ['name'],
          items: { type: 'object', required: ['name'], properties: { name: { type: 'string' }, weight: { type: 'integer', default: 1 } } },
        },
        template: { type: 'object', 'x-kubernetes-embedded-resource': true, properties: { spec: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } },
      },
    },
    status: { type: 'object', properties: { ready: { type: 'boolean' } } },
  },
};

function crd(established = true, extra: Record<string, unknown> = {}): ApiObject {
  return {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: 'gadgets.example.com' },
    spec: {
      group: 'example.com',
      scope: 'Namespaced',
      names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList', shortNames: ['gd'] },
      versions: [
        { name: 'v1', served: true, storage: true, schema: { openAPIV3Schema }, subresources: { status: {} }, additionalPrinterColumns: [{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }, { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' }] },
        { name: 'v1beta1', served: false, storage: false, schema: { openAPIV3Schema } },
      ],
      ...extra,
    },
    status: {
      acceptedNames: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget', listKind: 'GadgetList', shortNames: ['gd'] },
      conditions: established ? [{ type: 'Established', status: 'True' }] : [],
    },
  };
}

function gadgetDef(): ResourceDefinition {
  const [def] = customResourceDefinitions(crd());
  if (!def) throw new Error('no definition');
  return def;
}

function gadget(spec: Record<string, unknown>): ApiObject {
  return { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g1', namespace: 'default' }, spec };
}

describe('schema conversion', () => {
  it('implies apiVersion, kind and metadata at the root and reads x-kubernetes-* extensions as x-svc-*', () => {
    const schema = schemaFromStructural(normalizeExtensions(openAPIV3Schema) as Record<string, unknown>);
    expect(Object.keys(schema.properties ?? {})).toEqual(['apiVersion', 'kind', 'metadata', 'spec', 'status']);
    expect(schema.properties?.['metadata']?.properties?.['labels']).toBeDefined();
    expect(schema.properties?.['metadata']?.properties?.['name']).toEqual({ type: 'string', maxLength: 10 });
    const spec = schema.properties?.['spec'];
    expect(spec?.properties?.['tags']?.['x-svc-list-type']).toBe('set');
    expect(spec?.properties?.['rules']).toEqual(expect.objectContaining({ 'x-svc-list-type': 'map', 'x-svc-list-map-keys': ['name'] }));
    expect(spec?.properties?.['labels']?.['x-svc-map-type']).toBe('atomic');
    expect(spec?.properties?.['port']?.['x-svc-int-or-string']).toBe(true);
    expect(spec?.properties?.['extra']?.['x-svc-preserve-unknown-fields']).toBe(true);
    expect(Object.keys(spec?.properties?.['template']?.properties ?? {})).toEqual(['apiVersion', 'kind', 'metadata', 'spec']);
    expect(spec?.properties?.['ratio']).toEqual({ type: 'number', minimum: 0, exclusiveMinimum: true });
  });

  it('makes one registry entry per served version of an Established definition, under its accepted names', () => {
    expect(customResourceDefinitions(crd(false))).toEqual([]);
    const defs = customResourceDefinitions(crd());
    expect(defs.map((d) => `${d.group}/${d.version}/${d.plural}:${d.kind}`)).toEqual(['example.com/v1/gadgets:Gadget']);
    const def = defs[0] as ResourceDefinition;
    expect([def.namespaced, def.listKind, def.singular, def.shortNames, def.openApiName]).toEqual([true, 'GadgetList', 'gadget', ['gd'], 'com.example.v1.Gadget']);
    expect(def.subresources).toEqual([{ name: 'status', verbs: ['get', 'patch', 'update'] }]);
    // The table adds the age itself.
    expect(def.printerColumns).toEqual([{ name: 'Size', type: 'integer', jsonPath: '.spec.size' }]);
    expect([def.decoding, def.strategicMergePatch]).toEqual(['unstructured', false]);
    expect(def.verbs).toContain('create');
  });

  it('serves no creates while the definition terminates', () => {
    const terminating = crd();
    terminating.metadata = { ...terminating.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' };
    const [def] = customResourceDefinitions(terminating);
    expect(def?.verbs).toEqual(['delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']);
  });
});

describe('custom objects', () => {
  const def = gadgetDef();
  const validate = (obj: ApiObject) => def.strategy.validate?.(obj) ?? [];

  it('accepts a valid object', () => {
    expect(validate(gadget({ size: 3, ratio: 0.5, color: 'blue', code: 'ABC', when: '2026-01-01T00:00:00Z', note: null, tags: ['a'], port: 'http', labels: { a: 'b' }, rules: [{ name: 'r' }] }))).toEqual([]);
  });

  const cases: Array<[string, Record<string, unknown>, string, RegExp]> = [
    ['types', { size: 'three' }, 'spec.size', /spec.size in body must be of type integer: "string"/],
    ['int32 range', { size: 2 ** 40 }, 'spec.size', /must be of type int32/],
    ['required', {}, 'spec.size', /Required value/],
    ['maximum', { size: 11 }, 'spec.size', /should be less than or equal to 10/],
    ['minimum', { size: 0 }, 'spec.size', /should be greater than or equal to 1/],
    ['exclusiveMinimum', { size: 1, ratio: 0 }, 'spec.ratio', /should be greater than 0/],
    ['enum', { size: 1, color: 'green' }, 'spec.color', /Unsupported value: "green": supported values: "red", "blue"/],
    ['pattern', { size: 1, code: 'abc' }, 'spec.code', /should match '\^\[A-Z\]\{3\}\$'/],
    ['maxLength', { size: 1, code: 'ABCD' }, 'spec.code', /Too long: may not be longer than 3/],
    ['minLength', { size: 1, code: 'AB' }, 'spec.code', /at least 3 chars long/],
    ['format', { size: 1, when: 'yesterday' }, 'spec.when', /must be of type date-time/],
    ['nullable', { size: 1, color: null }, 'spec.color', /must be of type string: "null"/],
    ['maxItems', { size: 1, tags: ['a', 'b', 'c'] }, 'spec.tags', /Too many: 3: must have at most 2 items/],
    ['minItems', { size: 1, tags: [] }, 'spec.tags', /should have at least 1 items/],
    ['int-or-string', { size: 1, port: 1.5 }, 'spec.port', /must be of type integer or string/],
    ['additionalProperties values', { size: 1, labels: { a: 1 } }, 'spec.labels.a', /must be of type string/],
  ];
  it.each(cases)('refuses by %s, naming the field', (_rule, spec, field, message) => {
    const causes = validate(gadget(spec));
    expect(causes.map((c) => c.field)).toContain(field);
    expect(causes.find((c) => c.field === field)?.message).toMatch(message);
  });

  it('applies name restrictions of the root metadata schema', () => {
    const obj = gadget({ size: 1 });
    obj.metadata = { name: 'much-too-long-name', namespace: 'default' };
    expect(validate(obj).map((c) => c.field)).toEqual(['metadata.name']);
  });

  it('fills defaults, also inside list items, and not where a value is set', () => {
    const obj = gadget({ size: 1, rules: [{ name: 'a' }, { name: 'b', weight: 5 }] });
    def.strategy.applyDefaults?.(obj);
    expect(obj['spec']).toEqual({ size: 1, color: 'red', rules: [{ name: 'a', weight: 1 }, { name: 'b', weight: 5 }] });
  });

  it('prunes unknown fields and reports them, keeping preserved and embedded content', () => {
    const obj = gadget({ size: 1, bogus: true, extra: { anything: { goes: 1 } }, template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { x: 1 }, junk: 1 } });
    obj['topLevel'] = 1;
    const result = checkAgainstSchema(obj, def.schema);
    expect(result.unknownFields.sort()).toEqual(['spec.bogus', 'spec.template.junk', 'topLevel']);
    expect((result.pruned as ApiObject)['spec']).toEqual({ size: 1, extra: { anything: { goes: 1 } }, template: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p' }, spec: { x: 1 } } });
  });

  describe('nulls, read as the original server reads a custom resource', () => {
    /** Decoding, defaulting and validation in the order a write runs them. */
    const write = (spec: Record<string, unknown>): { spec: unknown; causes: string[] } => {
      const decoded = checkAgainstSchema(gadget(spec), def.schema, { unstructured: true }).pruned as ApiObject;
      def.strategy.applyDefaults?.(decoded);
      return { spec: decoded['spec'], causes: validate(decoded).map((c) => `${c.field}: ${c.message}`) };
    };

    it('drops a null in a field that is not nullable and has no default', () => {
      expect(write({ size: 1, code: null, labels: { a: null } })).toEqual({ spec: { size: 1, color: 'red', labels: {} }, causes: [] });
    });

    it('defaults a null in a field with a default, and keeps it in a nullable field', () => {
      expect(write({ size: 1, color: null, note: null })).toEqual({ spec: { size: 1, color: 'red', note: null }, causes: [] });
    });

    it('refuses a null list item with 422 causes naming the item', () => {
      expect(write({ size: 1, tags: ['a', null] }).causes).toEqual(['spec.tags[1]: Invalid value: "null": spec.tags[1] in body must be of type string: "null"']);
    });

    it('reports a required field whose null was dropped as missing', () => {
      expect(write({ size: null }).causes).toEqual(['spec.size: Required value']);
    });

    it('leaves typed decoding (built-in kinds) reading a null field as unset and a null list item as its zero value, as Go does', () => {
      const typed = checkAgainstSchema(gadget({ size: 1, color: null, tags: [null] }), def.schema).pruned as ApiObject;
      expect(typed['spec']).toEqual({ size: 1, tags: [''] });
    });
  });

  it('bumps metadata.generation on spec changes only; the main resource keeps the stored status', () => {
    const created = gadget({ size: 1 });
    created['status'] = { ready: true };
    def.strategy.prepareForCreate?.(created);
    expect([created.metadata?.generation, created['status']]).toEqual([1, undefined]);
    const stored = { ...created, status: { ready: true } };
    const labeled: ApiObject = { ...gadget({ size: 1 }), metadata: { ...created.metadata, labels: { a: 'b' } }, status: { ready: false } };
    def.strategy.prepareForUpdate?.(labeled, stored);
    expect([labeled.metadata?.generation, labeled['status']]).toEqual([1, { ready: true }]);
    const resized: ApiObject = { ...gadget({ size: 2 }), metadata: { ...created.metadata } };
    def.strategy.prepareForUpdate?.(resized, stored);
    expect(resized.metadata?.generation).toBe(2);
  });
});

describe('versions of a definition', () => {
  const versions = (extra: Record<string, unknown>[]) => crd(true, { versions: extra.map((v) => ({ served: true, storage: false, schema: { openAPIV3Schema }, ...v })) });

  it('every served version knows the storage version, even an unserved one, and the conversion', () => {
    const defs = customResourceDefinitions(versions([{ name: 'v1' }, { name: 'v0', served: false, storage: true }]));
    expect(defs.map((d) => [d.version, d.storageVersioning?.storageVersion, d.storageVersioning?.conversion.strategy])).toEqual([['v1', 'v0', 'None']]);
    expect(defs[0]?.storageVersioning?.schemaOf('example.com/v0')).toBeDefined();
    expect(defs[0]?.storageVersioning?.schemaOf('example.com/v9')).toBeUndefined();
  });

  it('fills the defaults of the version an object is in, and leaves other versions alone', () => {
    const [def] = customResourceDefinitions(versions([{ name: 'v1', storage: true }]));
    const stored = gadget({ size: 1 });
    def?.storageVersioning?.applyVersionDefaults(stored);
    expect(stored['spec']).toEqual({ size: 1, color: 'red' });
    const foreign: ApiObject = { ...gadget({ size: 1 }), apiVersion: 'example.com/v7' };
    def?.storageVersioning?.applyVersionDefaults(foreign);
    expect(foreign['spec']).toEqual({ size: 1 });
  });

  it('warns about deprecated versions with their own text or the default one', () => {
    const defs = customResourceDefinitions(versions([{ name: 'v1', storage: true }, { name: 'v1beta1', deprecated: true }, { name: 'v1alpha1', deprecated: true, deprecationWarning: 'use v1' }]));
    expect(defs.map((d) => [d.version, d.deprecationWarning])).toEqual([
      ['v1', undefined],
      ['v1beta1', 'example.com/v1beta1 Gadget is deprecated'],
      ['v1alpha1', 'use v1'],
    ]);
  });

  it('reads a conversion webhook: its url, or the address a service reference stands for, and the caBundle', () => {
    const webhook = (clientConfig: Record<string, unknown>) => ({ group: 'example.com', conversion: { strategy: 'Webhook', webhook: { clientConfig, conversionReviewVersions: ['v1', 'v1beta1'] } } });
    expect(conversionStrategy(webhook({ url: 'https://h:8443/convert', caBundle: Buffer.from('PEM').toString('base64') }))).toEqual({
      strategy: 'Webhook',
      webhook: { url: 'https://h:8443/convert', caBundle: Buffer.from('PEM'), conversionReviewVersions: ['v1', 'v1beta1'] },
    });
    expect(conversionWebhookUrl({ service: { name: 'conv', namespace: 'ops', path: '/convert', port: 9443 } })).toBe('https://conv.ops.svc:9443/convert');
    expect(conversionWebhookUrl({ service: { name: 'conv', namespace: 'ops' } })).toBe('https://conv.ops.svc:443');
    expect(conversionStrategy({ conversion: { strategy: 'None' } })).toEqual({ strategy: 'None' });
  });
});
