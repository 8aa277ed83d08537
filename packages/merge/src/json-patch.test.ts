import { MergeError } from './errors';
import type { JsonValue } from './json';
import { jsonPatch, MAX_JSON_PATCH_OPERATIONS, mergePatch } from './json-patch';

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

function thrown(fn: () => unknown): MergeError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(MergeError);
    return err as MergeError;
  }
  throw new Error('expected a MergeError');
}

describe('item 6: JSON patch (RFC 6902)', () => {
  test.each<[string, JsonValue, JsonValue, JsonValue]>([
    ['add a field', { a: 1 }, [{ op: 'add', path: '/b', value: 2 }], { a: 1, b: 2 }],
    ['add replaces an existing field', { a: 1 }, [{ op: 'add', path: '/a', value: 2 }], { a: 2 }],
    ['add inserts into a list', { l: [1, 3] }, [{ op: 'add', path: '/l/1', value: 2 }], { l: [1, 2, 3] }],
    ['add appends with -', { l: [1] }, [{ op: 'add', path: '/l/-', value: 2 }], { l: [1, 2] }],
    ['add the whole document', { a: 1 }, [{ op: 'add', path: '', value: { b: 2 } }], { b: 2 }],
    ['remove a field', { a: 1, b: 2 }, [{ op: 'remove', path: '/a' }], { b: 2 }],
    ['remove a list item', { l: [1, 2, 3] }, [{ op: 'remove', path: '/l/1' }], { l: [1, 3] }],
    ['replace a value', { a: { b: 1 } }, [{ op: 'replace', path: '/a/b', value: 'x' }], { a: { b: 'x' } }],
    ['move a value', { a: { b: 1 }, c: {} }, [{ op: 'move', from: '/a/b', path: '/c/d' }], { a: {}, c: { d: 1 } }],
    ['copy a value', { a: [1, 2] }, [{ op: 'copy', from: '/a', path: '/b' }], { a: [1, 2], b: [1, 2] }],
    ['test then change', { a: 'x' }, [{ op: 'test', path: '/a', value: 'x' }, { op: 'replace', path: '/a', value: 'y' }], { a: 'y' }],
    ['test compares structurally', { a: { x: 1, y: [1, 2] } }, [{ op: 'test', path: '/a', value: { y: [1, 2], x: 1 } }], { a: { x: 1, y: [1, 2] } }],
    ['escape ~1 and ~0 in pointers', { 'a/b': 1, 'm~n': 2 }, [{ op: 'replace', path: '/a~1b', value: 3 }, { op: 'remove', path: '/m~0n' }], { 'a/b': 3 }],
    ['an empty key', { '': 1 }, [{ op: 'replace', path: '/', value: 2 }], { '': 2 }],
  ])('item 6: %s', (_, doc, ops, expected) => {
    expect(jsonPatch(deepFreeze(doc), deepFreeze(ops))).toEqual(expected);
  });

  test.each<[string, JsonValue, JsonValue]>([
    ['a failed test', { a: 1 }, [{ op: 'test', path: '/a', value: 2 }]],
    ['removing a missing field', { a: 1 }, [{ op: 'remove', path: '/b' }]],
    ['replacing a missing field', { a: 1 }, [{ op: 'replace', path: '/b', value: 1 }]],
    ['adding below a missing parent', { a: 1 }, [{ op: 'add', path: '/x/y', value: 1 }]],
    ['an index past the end', { l: [1] }, [{ op: 'add', path: '/l/5', value: 1 }]],
    ['an index with a leading zero', { l: [1, 2] }, [{ op: 'replace', path: '/l/01', value: 1 }]],
    ['a copy from a missing path', { a: 1 }, [{ op: 'copy', from: '/x', path: '/b' }]],
    ['removing the whole document', { a: 1 }, [{ op: 'remove', path: '' }]],
    ['a prototype key', { a: 1 }, [{ op: 'add', path: '/__proto__/polluted', value: 1 }]],
  ])('item 6: %s is Invalid (422)', (_, doc, ops) => {
    const e = thrown(() => jsonPatch(doc, ops));
    expect(e.reason).toBe('Invalid');
    expect(e.code).toBe(422);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  test.each<[string, JsonValue]>([
    ['a patch that is not a list', { op: 'add' }],
    ['an unknown operation', [{ op: 'merge', path: '/a' }]],
    ['a path without a leading slash', [{ op: 'add', path: 'a', value: 1 }]],
    ['an add without a value', [{ op: 'add', path: '/a' }]],
    ['a move without from', [{ op: 'move', path: '/a' }]],
    ['a move into its own child', [{ op: 'move', from: '/a', path: '/a/b' }]],
  ])('item 6: %s is a BadRequest (400)', (_, ops) => {
    const e = thrown(() => jsonPatch({ a: {} }, ops));
    expect(e.reason).toBe('BadRequest');
    expect(e.code).toBe(400);
  });

  test('item 6: a patch longer than the upstream limit is a BadRequest', () => {
    const ops = Array.from({ length: MAX_JSON_PATCH_OPERATIONS + 1 }, () => ({ op: 'test', path: '/a', value: 1 }));
    expect(thrown(() => jsonPatch({ a: 1 }, ops)).reason).toBe('BadRequest');
  });

  test('item 6: a failing operation leaves no partial result and no change to the input', () => {
    const doc = deepFreeze({ a: 1, l: [1] });
    expect(() => jsonPatch(doc, [{ op: 'add', path: '/b', value: 2 }, { op: 'test', path: '/a', value: 9 }])).toThrow(MergeError);
    expect(doc).toEqual({ a: 1, l: [1] });
  });

  test('item 6: values from the patch are copied, not shared', () => {
    const ops = [{ op: 'add', path: '/v', value: { deep: [1] } }];
    const out = jsonPatch({}, ops) as { v: { deep: number[] } };
    out.v.deep.push(2);
    expect(ops[0]?.value).toEqual({ deep: [1] });
  });
});

describe('item 6: JSON merge patch (RFC 7386)', () => {
  test.each<[JsonValue, JsonValue, JsonValue]>([
    [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
    [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
    [{ a: 'b' }, { a: null }, {}],
    [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
    [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
    [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
    [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
    [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
    [['a', 'b'], ['c', 'd'], ['c', 'd']],
    [{ a: 'b' }, ['c'], ['c']],
    [{ a: 'foo' }, null, null],
    [{ a: 'foo' }, 'bar', 'bar'],
    [{ e: null }, { a: 1 }, { e: null, a: 1 }],
    [[1, 2], { a: 'b', c: null }, { a: 'b' }],
    [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
  ])('item 6: merge %j with %j', (doc, patch, expected) => {
    expect(mergePatch(deepFreeze(doc), deepFreeze(patch))).toEqual(expected);
  });

  test('item 6: a merge patch never shares values with its inputs', () => {
    const patch = { a: { list: [1] } };
    const out = mergePatch({}, patch) as { a: { list: number[] } };
    out.a.list.push(2);
    expect(patch.a.list).toEqual([1]);
  });

  test('item 6: a merge patch holding non-JSON values is a BadRequest', () => {
    expect(thrown(() => mergePatch({}, { a: Number.POSITIVE_INFINITY })).reason).toBe('BadRequest');
  });
});
