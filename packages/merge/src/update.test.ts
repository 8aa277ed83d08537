import { apply, trackUpdate } from './field-manager';
import { MergeError } from './errors';
import { FieldSet } from './field-set';
import type { JsonObject, JsonValue } from './json';
import type { ManagedFieldsEntry } from './managed-fields';
import type { Schema } from '@svc/apimachinery';

const schema: Schema = {
  type: 'object',
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    data: { type: 'object', additionalProperties: { type: 'string' } },
    spec: {
      type: 'object',
      properties: {
        replicas: { type: 'integer' },
        containers: {
          type: 'array',
          'x-svc-list-type': 'map',
          'x-svc-list-map-keys': ['name'],
          items: { type: 'object', properties: { name: { type: 'string' }, image: { type: 'string' } } },
        },
      },
    },
  },
};

function at(seconds: number): Date {
  return new Date(Date.UTC(2024, 4, 1, 10, 0, seconds));
}

function obj(fields: JsonObject, managedFields?: JsonValue): JsonObject {
  const metadata: JsonObject = { name: 'x', namespace: 'ns', resourceVersion: '5' };
  if (managedFields !== undefined) metadata.managedFields = managedFields;
  return { apiVersion: 'v1', kind: 'Thing', metadata, ...fields };
}

function put(old: JsonObject | undefined, next: JsonObject, manager: string, seconds = 0, extra: { apiVersion?: string; subresource?: string; max?: number } = {}) {
  return trackUpdate({
    old,
    new: next,
    manager,
    apiVersion: extra.apiVersion ?? 'v1',
    now: at(seconds),
    schema,
    subresource: extra.subresource,
    maxUpdateManagers: extra.max,
  });
}

function mf(o: JsonObject): JsonValue {
  return (o.metadata as JsonObject).managedFields as JsonValue;
}

function withFields(o: JsonObject, fields: JsonObject): JsonObject {
  return { ...o, ...fields, metadata: o.metadata as JsonObject };
}

function owners(entries: ManagedFieldsEntry[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const e of entries) out[`${e.manager}/${e.operation}/${e.apiVersion}${e.subresource ? `/${e.subresource}` : ''}`] = FieldSet.fromFieldsV1(e.fieldsV1).toStrings();
  return out;
}

describe('item 4: update tracking', () => {
  test('item 4: a create gives the writer every field it set, containers included, server metadata excluded', () => {
    const r = put(undefined, obj({ data: { a: '1' }, spec: { containers: [{ name: 'c', image: 'i' }] } }), 'creator');
    expect(r.managedFields).toEqual([
      {
        manager: 'creator',
        operation: 'Update',
        apiVersion: 'v1',
        time: '2024-05-01T10:00:00Z',
        fieldsType: 'FieldsV1',
        fieldsV1: {
          'f:data': { 'f:a': {}, '.': {} },
          'f:spec': { 'f:containers': { 'k:{"name":"c"}': { 'f:image': {}, 'f:name': {}, '.': {} }, '.': {} }, '.': {} },
        },
      },
    ]);
    expect(mf(r.object)).toEqual(r.managedFields);
  });

  test('item 4: the writer takes every field whose value changed, and the others lose it', () => {
    const a = apply({ live: undefined, applied: obj({ data: { a: '1', b: '2' } }), manager: 'applier', apiVersion: 'v1', now: at(0), schema });
    const u = put(a.object, withFields(a.object, { data: { a: '1', b: 'changed', c: 'new' } }), 'editor', 5);
    expect(owners(u.managedFields)).toEqual({
      'applier/Apply/v1': ['.data.a'],
      'editor/Update/v1': ['.data.b', '.data.c'],
    });
  });

  test('item 4: removed fields are dropped from their owners; writes never conflict', () => {
    const a = apply({ live: undefined, applied: obj({ data: { a: '1', b: '2' } }), manager: 'applier', apiVersion: 'v1', now: at(0), schema });
    const u = put(a.object, withFields(a.object, { data: { a: '1' } }), 'editor', 5);
    expect(owners(u.managedFields)).toEqual({ 'applier/Apply/v1': ['.data.a'] });
  });

  test('item 4: a write that changes nothing records nothing', () => {
    const c = put(undefined, obj({ data: { a: '1' } }), 'creator', 0);
    const u = put(c.object, { ...c.object, metadata: { ...(c.object.metadata as JsonObject), resourceVersion: '6' } }, 'other', 9);
    expect(u.managedFields).toEqual(c.managedFields);
  });

  test('SSA rule 6: a single empty entry strips managedFields, then the writer owns the fields changed in the request', () => {
    const c = put(undefined, obj({ data: { a: '1', b: '2' } }), 'creator', 0);
    const u = put(c.object, obj({ data: { a: '1', b: 'changed' } }, [{}]), 'editor', 5);
    expect(owners(u.managedFields)).toEqual({ 'editor/Update/v1': ['.data.b'] });
    const cleared = put(c.object, obj({ data: { a: '1', b: '2' } }, [{}]), 'editor', 5);
    expect(cleared.managedFields).toEqual([]);
    expect((cleared.object.metadata as JsonObject).managedFields).toBeUndefined();
  });

  test('SSA rule 6: an empty list does not strip managedFields; it keeps the stored ones', () => {
    const c = put(undefined, obj({ data: { a: '1' } }), 'creator', 0);
    const u = put(c.object, obj({ data: { a: '1' } }, []), 'editor', 5);
    expect(u.managedFields).toEqual(c.managedFields);
    const missing = put(c.object, obj({ data: { a: '1' } }), 'editor', 5);
    expect(missing.managedFields).toEqual(c.managedFields);
  });

  test('item 4: a valid non-empty managedFields list in the request replaces the stored one (except on subresources)', () => {
    const c = put(undefined, obj({ data: { a: '1' } }), 'creator', 0);
    const edited = [{ manager: 'someone', operation: 'Apply', apiVersion: 'v1', time: '2024-01-01T00:00:00Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:data': { 'f:a': {} } } }];
    const u = put(c.object, obj({ data: { a: '1' } }, edited), 'editor', 5);
    expect(u.managedFields).toEqual(edited);
    const s = put(c.object, obj({ data: { a: '1' } }, edited), 'editor', 5, { subresource: 'status' });
    expect(s.managedFields).toEqual(c.managedFields);
  });

  test('item 4: entries are merged per manager, operation, API version and subresource, carrying the latest time', () => {
    let o = put(undefined, obj({ data: { a: '1' } }), 'ctl', 0).object;
    o = put(o, withFields(o, { data: { a: '1', b: '2' } }), 'ctl', 5).object;
    o = put(o, withFields(o, { data: { a: '1', b: '2', c: '3' } }), 'ctl', 7, { apiVersion: 'v2' }).object;
    const r = put(o, withFields(o, { data: { a: '1', b: '2', c: '3' }, spec: { replicas: 1 } }), 'ctl', 9, { subresource: 'scale' });
    expect(r.managedFields.map((e) => [e.manager, e.apiVersion, e.time, e.subresource])).toEqual([
      ['ctl', 'v1', '2024-05-01T10:00:05Z', undefined],
      ['ctl', 'v2', '2024-05-01T10:00:07Z', undefined],
      ['ctl', 'v1', '2024-05-01T10:00:09Z', 'scale'],
    ]);
    expect(owners(r.managedFields)).toEqual({
      'ctl/Update/v1': ['.data', '.data.a', '.data.b'],
      'ctl/Update/v2': ['.data.c'],
      'ctl/Update/v1/scale': ['.spec', '.spec.replicas'],
    });
  });

  test('item 4: at most 10 Update managers are kept; the oldest are folded into ancient-changes', () => {
    let o = put(undefined, obj({ data: {} }), 'creator', 0).object;
    for (let i = 1; i <= 11; i++) {
      o = put(o, withFields(o, { data: { ...(o.data as JsonObject), [`k${i}`]: 'v' } }), `writer-${String(i).padStart(2, '0')}`, i).object;
    }
    const entries = mf(o) as unknown as ManagedFieldsEntry[];
    expect(entries).toHaveLength(10);
    expect(entries.map((e) => e.manager)).toEqual([
      'ancient-changes',
      'writer-03',
      'writer-04',
      'writer-05',
      'writer-06',
      'writer-07',
      'writer-08',
      'writer-09',
      'writer-10',
      'writer-11',
    ]);
    const ancient = entries[0] as ManagedFieldsEntry;
    // creator, writer-01 and writer-02 folded together; the time of the newest one folded in.
    expect(FieldSet.fromFieldsV1(ancient.fieldsV1).toStrings()).toEqual(['.data', '.data.k1', '.data.k2']);
    expect(ancient.time).toBe('2024-05-01T10:00:02Z');
  });

  test('item 4: the cap counts Update entries only and folds per API version', () => {
    let o = apply({ live: undefined, applied: obj({ data: { z: '0' } }), manager: 'applier', apiVersion: 'v1', now: at(0), schema }).object;
    for (let i = 1; i <= 4; i++) {
      o = put(o, withFields(o, { data: { ...(o.data as JsonObject), [`k${i}`]: 'v' } }, ), `w${i}`, i, { apiVersion: i % 2 ? 'v1' : 'v2', max: 2 }).object;
    }
    const entries = mf(o) as unknown as ManagedFieldsEntry[];
    expect(entries.map((e) => `${e.manager}@${e.apiVersion}`)).toEqual(['applier@v1', 'ancient-changes@v1', 'ancient-changes@v2']);
  });

  test('item 4: an update with a map-list item missing its key or duplicated is Invalid naming the path', () => {
    const c = put(undefined, obj({ spec: { containers: [{ name: 'a' }] } }), 'creator', 0);
    for (const containers of [[{ image: 'x' }], [{ name: 'a' }, { name: 'a' }]] as JsonValue[]) {
      try {
        put(c.object, withFields(c.object, { spec: { containers } }), 'editor', 1);
        throw new Error('expected an error');
      } catch (err) {
        expect(err).toBeInstanceOf(MergeError);
        expect((err as MergeError).reason).toBe('Invalid');
        expect((err as MergeError).code).toBe(422);
        expect((err as MergeError).causes[0]?.field).toMatch(/^\.spec\.containers/);
      }
    }
  });

  test('item 4: a value of the wrong type does not stop tracking (validation happens elsewhere); it is one field', () => {
    const c = put(undefined, obj({ spec: { replicas: 1 } }), 'creator', 0);
    const r = put(c.object, withFields(c.object, { spec: { replicas: { odd: true } } }), 'editor', 1);
    expect(owners(r.managedFields)).toEqual({ 'creator/Update/v1': ['.spec'], 'editor/Update/v1': ['.spec.replicas'] });
  });

  test('item 4: stored managedFields that cannot be decoded are replaced, never an error', () => {
    const broken = obj({ data: { a: '1' } }, [{ manager: 'x', operation: 'Nope' }]);
    const r = put(broken, withFields(broken, { data: { a: '2' } }), 'editor', 1);
    expect(owners(r.managedFields)).toEqual({ 'editor/Update/v1': ['.data.a'] });
  });
});
