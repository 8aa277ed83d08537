import { FieldSet } from './field-set';
import { fieldSetOf } from './field-manager';
import { MergeError } from './errors';
import { parsePathElement, pathToString, serializePathElement, PathElement } from './path';
import type { Schema } from '@svc/apimachinery';

function thrown(fn: () => unknown): MergeError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(MergeError);
    return err as MergeError;
  }
  throw new Error('expected a MergeError');
}

const podSchema: Schema = {
  type: 'object',
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: {
      type: 'object',
      properties: {
        replicas: { type: 'integer' },
        paused: { type: 'boolean' },
        selector: { type: 'object', 'x-svc-map-type': 'atomic', additionalProperties: { type: 'string' } },
        template: { type: 'object', properties: { spec: { type: 'object', properties: { hostname: { type: 'string' } } } } },
        args: { type: 'array', items: { type: 'string' } },
        tags: { type: 'array', 'x-svc-list-type': 'set', items: { type: 'string' } },
        ports: {
          type: 'array',
          'x-svc-list-type': 'map',
          'x-svc-list-map-keys': ['protocol', 'port'],
          items: { type: 'object', properties: { port: { type: 'integer' }, protocol: { type: 'string', default: 'TCP' }, name: { type: 'string' } } },
        },
        env: { type: 'object', additionalProperties: { type: 'string' } },
      },
    },
  },
};

describe('item 1: FieldsV1 path elements', () => {
  const cases: Array<[string, PathElement, string]> = [
    ['a field', { field: 'replicas' }, 'f:replicas'],
    ['a field with odd characters', { field: 'a.b/c:d' }, 'f:a.b/c:d'],
    ['a map-list item, keys sorted by name', { key: [['protocol', 'TCP'], ['port', 80]] }, 'k:{"port":80,"protocol":"TCP"}'],
    ['a set-list item', { value: 'x' }, 'v:"x"'],
    ['a numeric set-list item', { value: 3 }, 'v:3'],
    ['an index', { index: 4 }, 'i:4'],
    ['a key value escaped as Go does', { key: [['name', 'a<b>&c']] }, 'k:{"name":"a\\u003cb\\u003e\\u0026c"}'],
  ];
  test.each(cases)('item 1: serializes %s', (_, pe, text) => {
    expect(serializePathElement(pe)).toBe(text);
    expect(serializePathElement(parsePathElement(text) as PathElement)).toBe(text);
  });

  test('item 1: readable paths look like upstream conflict paths', () => {
    expect(pathToString([{ field: 'spec' }, { field: 'ports' }, { key: [['port', 80], ['protocol', 'TCP']] }, { field: 'name' }])).toBe(
      '.spec.ports[port=80,protocol="TCP"].name',
    );
    expect(pathToString([{ field: 'tags' }, { value: 'x' }])).toBe('.tags[="x"]');
    expect(pathToString([{ field: 'args' }, { index: 2 }])).toBe('.args[2]');
  });

  test('item 1: an unknown element type is dropped, a malformed one is a BadRequest', () => {
    expect(parsePathElement('z:whatever')).toBeUndefined();
    expect(() => parsePathElement('k:{not json')).toThrow(MergeError);
    expect(() => parsePathElement('x')).toThrow(MergeError);
    expect(() => parsePathElement('i:abc')).toThrow(MergeError);
  });
});

describe('item 1: FieldsV1 sets', () => {
  const encoded = {
    'f:metadata': { 'f:labels': { '.': {}, 'f:app': {} } },
    'f:spec': {
      'f:ports': {
        'k:{"port":80,"protocol":"TCP"}': { 'f:name': {}, 'f:port': {}, '.': {} },
        'k:{"port":443,"protocol":"TCP"}': { '.': {}, 'f:port': {} },
      },
      'f:replicas': {},
      'f:tags': { 'v:"a"': {}, 'v:"b"': {} },
    },
  };

  test('item 1: parse then serialize is lossless, with upstream key order and "." last', () => {
    const set = FieldSet.fromFieldsV1(encoded);
    const out = set.toFieldsV1();
    expect(JSON.stringify(out)).toBe(
      JSON.stringify({
        'f:metadata': { 'f:labels': { 'f:app': {}, '.': {} } },
        'f:spec': {
          'f:ports': {
            'k:{"port":80,"protocol":"TCP"}': { 'f:name': {}, 'f:port': {}, '.': {} },
            'k:{"port":443,"protocol":"TCP"}': { 'f:port': {}, '.': {} },
          },
          'f:replicas': {},
          'f:tags': { 'v:"a"': {}, 'v:"b"': {} },
        },
      }),
    );
    expect(JSON.stringify(FieldSet.fromFieldsV1(out).toFieldsV1())).toBe(JSON.stringify(out));
    expect(FieldSet.fromFieldsV1(out).equals(set)).toBe(true);
  });

  test('item 1: order is fields, then keys, then values, then indexes', () => {
    const set = FieldSet.fromFieldsV1({ 'i:1': {}, 'v:2': {}, 'k:{"a":1}': {}, 'f:z': {}, 'f:a': {}, 'v:"s"': {}, 'v:1': {}, 'i:0': {} });
    expect(Object.keys(set.toFieldsV1())).toEqual(['f:a', 'f:z', 'k:{"a":1}', 'v:1', 'v:2', 'v:"s"', 'i:0', 'i:1']);
  });

  test('item 1: a key element is stored in canonical form whatever order its fields came in', () => {
    const set = FieldSet.fromFieldsV1({ 'k:{"protocol":"TCP","port":80}': {} });
    expect(Object.keys(set.toFieldsV1())).toEqual(['k:{"port":80,"protocol":"TCP"}']);
  });

  test('item 1: members and paths', () => {
    const set = FieldSet.fromFieldsV1(encoded);
    expect(set.has([{ field: 'spec' }, { field: 'replicas' }])).toBe(true);
    expect(set.has([{ field: 'spec' }])).toBe(false);
    expect(set.has([{ field: 'metadata' }, { field: 'labels' }])).toBe(true);
    expect(set.has([{ field: 'spec' }, { field: 'ports' }, { key: [['port', 80], ['protocol', 'TCP']] }])).toBe(true);
    expect(set.toStrings()).toEqual([
      '.metadata.labels',
      '.metadata.labels.app',
      '.spec.ports[port=80,protocol="TCP"]',
      '.spec.ports[port=80,protocol="TCP"].name',
      '.spec.ports[port=80,protocol="TCP"].port',
      '.spec.ports[port=443,protocol="TCP"]',
      '.spec.ports[port=443,protocol="TCP"].port',
      '.spec.replicas',
      '.spec.tags[="a"]',
      '.spec.tags[="b"]',
    ]);
    expect(set.size).toBe(10);
    expect(FieldSet.fromPaths(set.paths()).equals(set)).toBe(true);
  });

  test('item 1: union, difference, intersection', () => {
    const a = FieldSet.fromFieldsV1({ 'f:x': {}, 'f:m': { 'f:a': {}, 'f:b': {} } });
    const b = FieldSet.fromFieldsV1({ 'f:y': {}, 'f:m': { 'f:b': {}, 'f:c': {} } });
    expect(a.union(b).toFieldsV1()).toEqual({ 'f:m': { 'f:a': {}, 'f:b': {}, 'f:c': {} }, 'f:x': {}, 'f:y': {} });
    expect(a.difference(b).toFieldsV1()).toEqual({ 'f:m': { 'f:a': {} }, 'f:x': {} });
    expect(a.intersection(b).toFieldsV1()).toEqual({ 'f:m': { 'f:b': {} } });
    expect(a.difference(a).isEmpty()).toBe(true);
    expect(a.intersection(FieldSet.empty()).isEmpty()).toBe(true);
  });

  test('item 1: difference removes members only; recursive difference removes whole subtrees', () => {
    const a = FieldSet.fromFieldsV1({ 'f:m': { '.': {}, 'f:a': {} } });
    const b = FieldSet.fromFieldsV1({ 'f:m': {} });
    expect(a.difference(b).toFieldsV1()).toEqual({ 'f:m': { 'f:a': {} } });
    expect(a.recursiveDifference(b).isEmpty()).toBe(true);
  });

  test('item 1: malformed FieldsV1 is a BadRequest naming the key', () => {
    expect(() => FieldSet.fromFieldsV1([])).toThrow(MergeError);
    const e = thrown(() => FieldSet.fromFieldsV1({ 'f:a': { 'f:b': 'x' } }));
    expect(e.code).toBe(400);
    expect(e.causes[0]?.field).toBe('fieldsV1["f:a"]["f:b"]');
  });
});

describe('item 1: the set of fields an object sets', () => {
  test('item 1: struct fields with children are not members; leaves, map keys and list items are', () => {
    const set = fieldSetOf(
      {
        metadata: { labels: { app: 'x' } },
        spec: {
          replicas: 2,
          selector: { app: 'x' },
          template: { spec: { hostname: 'h' } },
          args: ['a', 'b'],
          tags: ['t1'],
          ports: [{ port: 80, name: 'http' }],
          env: { A: '1' },
        },
      },
      podSchema,
    );
    expect(set.toFieldsV1()).toEqual({
      'f:metadata': { 'f:labels': { 'f:app': {} } },
      'f:spec': {
        'f:args': {},
        'f:env': { 'f:A': {} },
        'f:ports': { 'k:{"port":80,"protocol":"TCP"}': { '.': {}, 'f:name': {}, 'f:port': {} } },
        'f:replicas': {},
        'f:selector': {},
        'f:tags': { 'v:"t1"': {} },
        'f:template': { 'f:spec': { 'f:hostname': {} } },
      },
    });
  });

  test('item 1: empty maps, empty lists and nulls are members', () => {
    const set = fieldSetOf({ spec: { template: {}, replicas: null, tags: [] } }, podSchema);
    expect(set.toFieldsV1()).toEqual({ 'f:spec': { 'f:replicas': {}, 'f:tags': {}, 'f:template': {} } });
  });

  test('item 1: a value that does not fit the schema is a BadRequest naming the path', () => {
    const e = thrown(() => fieldSetOf({ spec: { replicas: 'two', template: 'x' } }, podSchema));
    expect(e.reason).toBe('BadRequest');
    expect(e.causes.map((c) => c.field)).toEqual(['.spec.replicas', '.spec.template']);
    expect(e.causes[0]?.message).toBe('expected number, got string');
  });
});
