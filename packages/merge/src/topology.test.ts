import { apply, fieldSetOf } from './field-manager';
import { MergeError } from './errors';
import type { JsonObject } from './json';
import type { Schema } from '@svc/apimachinery';

const NOW = new Date('2024-05-01T10:00:00Z');

function objectSchema(spec: Schema): Schema {
  return { type: 'object', properties: { metadata: { type: 'object' }, spec } };
}

function applyAs(schema: Schema | undefined, live: JsonObject | undefined, spec: JsonObject, manager: string, force = false): JsonObject {
  return apply({ live, applied: { metadata: { name: 'x' }, spec }, manager, force, apiVersion: 'v1', now: NOW, schema }).object;
}

function conflictPaths(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(MergeError);
    expect((err as MergeError).reason).toBe('Conflict');
    return (err as MergeError).causes.map((c) => c.field);
  }
  return [];
}

const item: Schema = { type: 'object', properties: { name: { type: 'string' }, port: { type: 'integer' }, value: { type: 'string' } } };

describe('item 2 / SSA rule 4: list types', () => {
  const schema = objectSchema({
    type: 'object',
    properties: {
      atomicList: { type: 'array', 'x-svc-list-type': 'atomic', items: { type: 'string' } },
      setList: { type: 'array', 'x-svc-list-type': 'set', items: { type: 'string' } },
      mapList: { type: 'array', 'x-svc-list-type': 'map', 'x-svc-list-map-keys': ['name', 'port'], items: item },
    },
  });

  test('SSA rule 4: an atomic list is one field, replaced whole, owned whole', () => {
    const a = applyAs(schema, undefined, { atomicList: ['a', 'b'] }, 'one');
    expect(fieldSetOf({ spec: a.spec }, schema).toStrings()).toContain('.spec.atomicList');
    expect(conflictPaths(() => applyAs(schema, a, { atomicList: ['a', 'b', 'c'] }, 'two'))).toEqual(['.spec.atomicList']);
    const b = applyAs(schema, a, { atomicList: ['c'] }, 'two', true);
    expect((b.spec as JsonObject).atomicList).toEqual(['c']);
  });

  test('SSA rule 4: a set list merges by value; each applier owns its values', () => {
    const a = applyAs(schema, undefined, { setList: ['a', 'b'] }, 'one');
    const b = applyAs(schema, a, { setList: ['c'] }, 'two');
    expect((b.spec as JsonObject).setList).toEqual(['a', 'b', 'c']);
    expect(conflictPaths(() => applyAs(schema, b, { setList: ['c'] }, 'three'))).toEqual([]);
  });

  test('SSA rule 4: a map list identifies items by several keys', () => {
    const a = applyAs(schema, undefined, { mapList: [{ name: 'a', port: 1, value: 'x' }, { name: 'a', port: 2, value: 'y' }] }, 'one');
    const b = applyAs(schema, a, { mapList: [{ name: 'a', port: 2, value: 'y' }, { name: 'b', port: 1, value: 'z' }] }, 'two');
    expect((b.spec as JsonObject).mapList).toEqual([
      { name: 'a', port: 1, value: 'x' },
      { name: 'a', port: 2, value: 'y' },
      { name: 'b', port: 1, value: 'z' },
    ]);
    expect(conflictPaths(() => applyAs(schema, b, { mapList: [{ name: 'a', port: 2, value: 'w' }] }, 'three'))).toEqual([
      '.spec.mapList[name="a",port=2].value',
      '.spec.mapList[name="a",port=2].value',
    ]);
  });
});

describe('item 2 / SSA rule 4: map and struct types', () => {
  const schema = objectSchema({
    type: 'object',
    properties: {
      granular: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } } },
      atomic: { type: 'object', 'x-svc-map-type': 'atomic', properties: { a: { type: 'string' }, b: { type: 'string' } } },
      atomicMap: { type: 'object', 'x-svc-map-type': 'atomic', additionalProperties: { type: 'string' } },
    },
  });

  test('SSA rule 4: a granular struct merges field by field', () => {
    const a = applyAs(schema, undefined, { granular: { a: '1' } }, 'one');
    const b = applyAs(schema, a, { granular: { b: '2' } }, 'two');
    expect((b.spec as JsonObject).granular).toEqual({ a: '1', b: '2' });
  });

  test('SSA rule 4: an atomic struct or map is replaced whole and conflicts whole', () => {
    const a = applyAs(schema, undefined, { atomic: { a: '1' }, atomicMap: { k: 'v' } }, 'one');
    expect(conflictPaths(() => applyAs(schema, a, { atomic: { b: '2' } }, 'two'))).toEqual(['.spec.atomic']);
    expect(conflictPaths(() => applyAs(schema, a, { atomicMap: { j: 'w' } }, 'two'))).toEqual(['.spec.atomicMap']);
    const b = applyAs(schema, a, { atomic: { b: '2' } }, 'two', true);
    expect((b.spec as JsonObject).atomic).toEqual({ b: '2' });
    expect(fieldSetOf({ spec: b.spec }, schema).toStrings()).toEqual(['.spec.atomic', '.spec.atomicMap']);
  });
});

describe('item 2 / SSA rule 4: defaults when no list type is given', () => {
  const schema = objectSchema({
    type: 'object',
    properties: {
      byMergeKey: { type: 'array', 'x-svc-patch-strategy': 'merge', 'x-svc-patch-merge-key': 'name', items: item },
      byMergeKeyRetain: { type: 'array', 'x-svc-patch-strategy': 'merge,retainKeys', 'x-svc-patch-merge-key': 'name', items: item },
      scalarsMerged: { type: 'array', 'x-svc-patch-strategy': 'merge', items: { type: 'string' } },
      plain: { type: 'array', items: item },
      explicitAtomic: { type: 'array', 'x-svc-list-type': 'atomic', 'x-svc-patch-strategy': 'merge', 'x-svc-patch-merge-key': 'name', items: item },
    },
  });

  test('SSA rule 4: a merge patch strategy with a merge key is a map list keyed by the merge key', () => {
    const a = applyAs(schema, undefined, { byMergeKey: [{ name: 'a', value: '1' }], byMergeKeyRetain: [{ name: 'a' }] }, 'one');
    const b = applyAs(schema, a, { byMergeKey: [{ name: 'b', value: '2' }], byMergeKeyRetain: [{ name: 'b' }] }, 'two');
    expect((b.spec as JsonObject).byMergeKey).toEqual([{ name: 'a', value: '1' }, { name: 'b', value: '2' }]);
    expect((b.spec as JsonObject).byMergeKeyRetain).toEqual([{ name: 'a' }, { name: 'b' }]);
    expect(fieldSetOf(b, schema).toStrings()).toContain('.spec.byMergeKey[name="a"].value');
  });

  test('SSA rule 4: a merge patch strategy on a list of scalars without a key is a set', () => {
    const a = applyAs(schema, undefined, { scalarsMerged: ['a'] }, 'one');
    const b = applyAs(schema, a, { scalarsMerged: ['b'] }, 'two');
    expect((b.spec as JsonObject).scalarsMerged).toEqual(['a', 'b']);
  });

  test('SSA rule 4: no list type and no marker is atomic', () => {
    const a = applyAs(schema, undefined, { plain: [{ name: 'a' }] }, 'one');
    expect(conflictPaths(() => applyAs(schema, a, { plain: [{ name: 'b' }] }, 'two'))).toEqual(['.spec.plain']);
  });

  test('SSA rule 4: an explicit list type wins over the patch strategy', () => {
    const a = applyAs(schema, undefined, { explicitAtomic: [{ name: 'a' }] }, 'one');
    expect(conflictPaths(() => applyAs(schema, a, { explicitAtomic: [{ name: 'b' }] }, 'two'))).toEqual(['.spec.explicitAtomic']);
  });
});

describe('item 2 / SSA rule 4: unstructured objects', () => {
  test('SSA rule 4: without a schema, keys are fields and lists are atomic', () => {
    const a = applyAs(undefined, undefined, { m: { a: 1 }, l: [1, 2] }, 'one');
    expect(fieldSetOf({ spec: a.spec }).toFieldsV1()).toEqual({
      'f:spec': { 'f:l': {}, 'f:m': { 'f:a': {}, '.': {} }, '.': {} },
    });
    const b = applyAs(undefined, a, { m: { b: 2 } }, 'two');
    expect(b.spec).toEqual({ m: { a: 1, b: 2 }, l: [1, 2] });
    expect(conflictPaths(() => applyAs(undefined, b, { l: [1] }, 'two'))).toEqual(['.spec.l']);
  });

  test('SSA rule 4: x-svc-preserve-unknown-fields keeps undeclared fields, unstructured', () => {
    const schema = objectSchema({ type: 'object', 'x-svc-preserve-unknown-fields': true, properties: { known: { type: 'string' } } });
    const a = applyAs(schema, undefined, { known: 'k', extra: { deep: [1] } }, 'one');
    expect(fieldSetOf({ spec: a.spec }, schema).toStrings()).toEqual(['.spec.extra', '.spec.extra.deep', '.spec.known']);
  });
});

describe('item 2 / SSA rule 4: changing atomic and granular types', () => {
  const granular = objectSchema({ type: 'object', properties: { s: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'string' } } } } });
  const atomic = objectSchema({
    type: 'object',
    properties: { s: { type: 'object', 'x-svc-map-type': 'atomic', properties: { a: { type: 'string' }, b: { type: 'string' } } } },
  });
  const atomicList = objectSchema({ type: 'object', properties: { l: { type: 'array', items: item } } });
  const mapList = objectSchema({ type: 'object', properties: { l: { type: 'array', 'x-svc-list-type': 'map', 'x-svc-list-map-keys': ['name'], items: item } } });

  test('SSA rule 4: granular to atomic makes the owners of elements own the whole', () => {
    const a = applyAs(granular, undefined, { s: { a: '1' } }, 'one');
    expect(conflictPaths(() => applyAs(atomic, a, { s: { a: '1', b: '2' } }, 'two'))).toEqual(['.spec.s']);
    const b = apply({ live: a, applied: { metadata: { name: 'x' }, spec: { s: { b: '2' } } }, manager: 'two', force: true, apiVersion: 'v1', now: NOW, schema: atomic });
    expect(b.managedFields.map((e) => e.manager)).toEqual(['two']);
  });

  test('SSA rule 4: a granular list becoming atomic collapses item ownership to the list', () => {
    const a = applyAs(mapList, undefined, { l: [{ name: 'a', value: '1' }] }, 'one');
    expect(conflictPaths(() => applyAs(atomicList, a, { l: [{ name: 'b' }] }, 'two'))).toEqual(['.spec.l']);
  });

  test('SSA rule 4: atomic to granular gives no conflicts afterwards', () => {
    const a = applyAs(atomic, undefined, { s: { a: '1', b: '1' } }, 'one');
    const b = applyAs(granular, a, { s: { b: '2' } }, 'two');
    expect(b.spec).toEqual({ s: { a: '1', b: '2' } });
    const l = applyAs(atomicList, undefined, { l: [{ name: 'a', value: '1' }] }, 'one');
    const m = applyAs(mapList, l, { l: [{ name: 'a', value: '2' }, { name: 'b' }] }, 'two');
    expect(m.spec).toEqual({ l: [{ name: 'a', value: '2' }, { name: 'b' }] });
  });
});
