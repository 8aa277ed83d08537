import { MergeError } from './errors';
import type { JsonObject, JsonValue } from './json';
import type { Schema } from '@svc/apimachinery';
import { strategicMergePatch } from './strategic-merge-patch';

const container: Schema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    image: { type: 'string' },
    args: { type: 'array', items: { type: 'string' } },
    ports: {
      type: 'array',
      'x-svc-patch-strategy': 'merge',
      'x-svc-patch-merge-key': 'containerPort',
      items: { type: 'object', properties: { containerPort: { type: 'integer' }, name: { type: 'string' } } },
    },
  },
};

const schema: Schema = {
  type: 'object',
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: {
      type: 'object',
      properties: {
        replicas: { type: 'integer' },
        selector: { type: 'object', 'x-svc-patch-strategy': 'replace', additionalProperties: { type: 'string' } },
        containers: { type: 'array', 'x-svc-patch-strategy': 'merge', 'x-svc-patch-merge-key': 'name', items: container },
        tags: { type: 'array', 'x-svc-patch-strategy': 'merge', items: { type: 'string' } },
        plainList: { type: 'array', items: { type: 'string' } },
        grid: { type: 'array', 'x-svc-patch-strategy': 'merge', items: { type: 'array', items: { type: 'string' } } },
        volume: {
          type: 'object',
          'x-svc-patch-strategy': 'retainKeys',
          properties: { name: { type: 'string' }, hostPath: { type: 'string' }, emptyDir: { type: 'object' } },
        },
      },
    },
  },
};

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

const original = deepFreeze<JsonObject>({
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  metadata: { name: 'd', labels: { app: 'a', tier: 't' }, finalizers: ['f1', 'f2'], ownerReferences: [{ apiVersion: 'v1', kind: 'K', name: 'o', uid: 'u1' }] },
  spec: {
    replicas: 1,
    selector: { app: 'a', tier: 't' },
    containers: [
      { name: 'a', image: 'a:1', ports: [{ containerPort: 80, name: 'http' }] },
      { name: 'b', image: 'b:1' },
      { name: 'c', image: 'c:1' },
    ],
    tags: ['x', 'y'],
    plainList: ['p', 'q'],
    volume: { name: 'v', hostPath: '/data' },
  },
});

function spec(patch: JsonObject): JsonObject {
  return strategicMergePatch(original, { spec: patch }, schema).spec as JsonObject;
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

describe('item 5: strategic merge patch', () => {
  test('item 5: maps merge key by key and null deletes a field', () => {
    const out = strategicMergePatch(original, { metadata: { labels: { tier: null, new: 'n' } }, spec: { replicas: 3, volume: null } }, schema);
    expect((out.metadata as JsonObject).labels).toEqual({ app: 'a', new: 'n' });
    expect((out.spec as JsonObject).replicas).toBe(3);
    expect((out.spec as JsonObject).volume).toBeUndefined();
  });

  test('item 5: lists without a merge strategy are replaced', () => {
    expect(spec({ plainList: ['z'] }).plainList).toEqual(['z']);
  });

  test('item 5: lists of maps merge by the merge key; new items are added, patch items lead', () => {
    expect(spec({ containers: [{ name: 'd', image: 'd:1' }, { name: 'b', image: 'b:2' }] }).containers).toEqual([
      { name: 'd', image: 'd:1' },
      { name: 'a', image: 'a:1', ports: [{ containerPort: 80, name: 'http' }] },
      { name: 'b', image: 'b:2' },
      { name: 'c', image: 'c:1' },
    ]);
  });

  test('item 5: nested merge lists merge too', () => {
    const c = spec({ containers: [{ name: 'a', ports: [{ containerPort: 443, name: 'https' }] }] }).containers as JsonObject[];
    // As upstream: items named by the patch come first, server-only items follow in their order.
    expect(c[0]).toEqual({ name: 'a', image: 'a:1', ports: [{ containerPort: 443, name: 'https' }, { containerPort: 80, name: 'http' }] });
  });

  test('item 5: $patch: delete in a list deletes the item with that key', () => {
    expect(spec({ containers: [{ name: 'b', $patch: 'delete' }] }).containers).toEqual([
      { name: 'a', image: 'a:1', ports: [{ containerPort: 80, name: 'http' }] },
      { name: 'c', image: 'c:1' },
    ]);
  });

  test('item 5: $patch: replace in a list replaces the whole list', () => {
    expect(spec({ containers: [{ name: 'z', image: 'z:1' }, { $patch: 'replace' }] }).containers).toEqual([{ name: 'z', image: 'z:1' }]);
  });

  test('item 5: $patch: replace on a map replaces it, $patch: delete empties it, $patch: merge merges', () => {
    expect(spec({ volume: { $patch: 'replace', name: 'w' } }).volume).toEqual({ name: 'w' });
    expect(spec({ volume: { $patch: 'delete' } }).volume).toEqual({});
    expect(spec({ volume: { $patch: 'merge', name: 'w' } }).volume).toEqual({ name: 'w', hostPath: '/data' });
  });

  test('item 5: a replace patch strategy on a map replaces it', () => {
    expect(spec({ selector: { app: 'b' } }).selector).toEqual({ app: 'b' });
  });

  test('item 5: primitive lists with a merge strategy take the union, patch order first', () => {
    expect(spec({ tags: ['z', 'x'] }).tags).toEqual(['z', 'x', 'y']);
  });

  test('item 5: $deleteFromPrimitiveList removes values from a primitive list', () => {
    const out = strategicMergePatch(original, { metadata: { '$deleteFromPrimitiveList/finalizers': ['f1'] }, spec: { '$deleteFromPrimitiveList/tags': ['y', 'absent'] } }, schema);
    expect((out.metadata as JsonObject).finalizers).toEqual(['f2']);
    expect((out.spec as JsonObject).tags).toEqual(['x']);
  });

  test('item 5: $setElementOrder fixes the order of a merged list', () => {
    expect(
      spec({ '$setElementOrder/containers': [{ name: 'c' }, { name: 'a' }, { name: 'b' }], containers: [{ name: 'a', image: 'a:2' }] }).containers,
    ).toEqual([{ name: 'c', image: 'c:1' }, { name: 'a', image: 'a:2', ports: [{ containerPort: 80, name: 'http' }] }, { name: 'b', image: 'b:1' }]);
    expect(spec({ '$setElementOrder/tags': ['y', 'x'] }).tags).toEqual(['y', 'x']);
  });

  test('item 5: a $setElementOrder list must agree with the patch list', () => {
    expect(thrown(() => spec({ '$setElementOrder/containers': [{ name: 'a' }], containers: [{ name: 'b', image: 'x' }] })).reason).toBe('BadRequest');
  });

  test('item 5: $retainKeys drops the original keys it does not list', () => {
    expect(spec({ volume: { $retainKeys: ['name', 'emptyDir'], emptyDir: {} } }).volume).toEqual({ name: 'v', emptyDir: {} });
    const e = thrown(() => spec({ volume: { $retainKeys: ['name'], emptyDir: {} } }));
    expect(e.reason).toBe('BadRequest');
    expect(e.causes[0]?.field).toBe('.spec.volume.emptyDir');
  });

  test('item 5: metadata merges finalizers as a set and owner references by uid', () => {
    const out = strategicMergePatch(original, { metadata: { finalizers: ['f3'], ownerReferences: [{ apiVersion: 'v1', kind: 'K', name: 'p', uid: 'u2' }] } }, schema);
    expect((out.metadata as JsonObject).finalizers).toEqual(['f3', 'f1', 'f2']);
    expect(((out.metadata as JsonObject).ownerReferences as JsonValue[]).map((o) => (o as JsonObject).uid)).toEqual(['u2', 'u1']);
  });

  test('item 5: new content brought by the patch loses its nulls and directives', () => {
    expect(spec({ extra: { keep: 1, drop: null }, containers: [{ name: 'n', image: null, $patch: 'merge' }] })).toEqual(
      expect.objectContaining({ extra: { keep: 1 }, containers: expect.arrayContaining([{ name: 'n' }]) }),
    );
  });

  test.each<[string, JsonValue, 'BadRequest' | 'Invalid', string]>([
    ['a patch that is not an object', ['x'], 'BadRequest', '.'],
    ['an unknown $patch directive', { spec: { volume: { $patch: 'explode' } } }, 'BadRequest', '.spec.volume'],
    ['a list item without its merge key', { spec: { containers: [{ image: 'x' }] } }, 'BadRequest', '.spec.containers[0]'],
    ['a $patch: delete item without its merge key', { spec: { containers: [{ $patch: 'delete' }] } }, 'BadRequest', '.spec.containers[0]'],
    ['a $deleteFromPrimitiveList that is not a list', { spec: { '$deleteFromPrimitiveList/tags': 'x' } }, 'BadRequest', '.spec.$deleteFromPrimitiveList/tags'],
    ['a $retainKeys that is not a list', { spec: { volume: { $retainKeys: 'name' } } }, 'BadRequest', '.spec.volume.$retainKeys'],
    ['a list of lists to merge', { spec: { grid: [['a']] } }, 'Invalid', '.spec.grid'],
  ])('item 5: %s is an error naming the path', (_, patch, reason, field) => {
    const e = thrown(() => strategicMergePatch(original, patch, schema));
    expect(e.reason).toBe(reason);
    expect(e.causes[0]?.field).toBe(field);
  });

  test('item 5: the original and the patch are never modified', () => {
    const patch = deepFreeze({ spec: { containers: [{ name: 'a', image: 'a:9' }, { name: 'b', $patch: 'delete' }], tags: ['q'] }, metadata: { labels: { app: null } } });
    const before = JSON.stringify(original);
    const out = strategicMergePatch(original, patch, schema);
    expect(JSON.stringify(original)).toBe(before);
    ((out.spec as JsonObject).containers as JsonObject[]).push({ name: 'mutated' });
    expect(JSON.stringify(original)).toBe(before);
  });

  test('item 5: without a schema maps merge and lists are replaced', () => {
    expect(strategicMergePatch({ a: { b: 1, c: [1] } }, { a: { d: 2, c: [2] } })).toEqual({ a: { b: 1, c: [2], d: 2 } });
  });
});
