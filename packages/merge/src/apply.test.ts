import { apply, trackUpdate } from './field-manager';
import { applyUpgradingClientSide, encodeLastApplied, LAST_APPLIED_ANNOTATION, TOTAL_ANNOTATION_SIZE_LIMIT } from './last-applied';
import { MergeError } from './errors';
import { FieldSet } from './field-set';
import type { JsonObject, JsonValue } from './json';
import type { ManagedFieldsEntry } from './managed-fields';
import type { Schema } from '@svc/apimachinery';

const T0 = new Date('2024-05-01T10:00:00Z');
const T1 = new Date('2024-05-01T10:00:05Z');
const T2 = new Date('2024-05-01T10:00:09Z');

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
        paused: { type: 'boolean', default: false },
        strategy: { type: 'string', default: 'RollingUpdate' },
        image: { type: 'string' },
        tags: { type: 'array', 'x-svc-list-type': 'set', items: { type: 'string' } },
        containers: {
          type: 'array',
          'x-svc-patch-strategy': 'merge',
          'x-svc-patch-merge-key': 'name',
          items: { type: 'object', properties: { name: { type: 'string' }, image: { type: 'string' }, cpu: { type: 'string' } } },
        },
      },
    },
    status: { type: 'object', properties: { phase: { type: 'string' } } },
  },
};

function cm(fields: JsonObject): JsonObject {
  return { apiVersion: 'v1', kind: 'Thing', metadata: { name: 'x', namespace: 'ns' }, ...fields };
}

function ssa(live: JsonObject | undefined, applied: JsonObject, manager: string, extra: { force?: boolean; now?: Date; subresource?: string; ignoredFields?: FieldSet } = {}) {
  return apply({ live, applied, manager, apiVersion: 'v1', now: extra.now ?? T0, schema, force: extra.force, subresource: extra.subresource, ignoredFields: extra.ignoredFields });
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

function owners(obj: JsonObject): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const e of ((obj.metadata as JsonObject).managedFields ?? []) as unknown as ManagedFieldsEntry[]) {
    out[`${e.manager}/${e.operation}`] = FieldSet.fromFieldsV1(e.fieldsV1).toStrings();
  }
  return out;
}

function deepFreeze<T>(v: T): T {
  if (typeof v === 'object' && v !== null) {
    Object.freeze(v);
    for (const k of Object.keys(v)) deepFreeze((v as Record<string, unknown>)[k]);
  }
  return v;
}

function strip(obj: JsonObject): JsonObject {
  const meta = { ...(obj.metadata as JsonObject) };
  delete meta.managedFields;
  return { ...obj, metadata: meta };
}

describe('item 3: apply', () => {
  test('SSA rule 2: apply on a missing object creates it; the applier owns what it applied, minus server-set metadata', () => {
    const r = ssa(undefined, cm({ data: { a: '1' }, spec: { replicas: 1 } }), 'one');
    expect(r.changed).toBe(true);
    expect(strip(r.object)).toEqual(cm({ data: { a: '1' }, spec: { replicas: 1 } }));
    expect(r.managedFields).toEqual([
      {
        manager: 'one',
        operation: 'Apply',
        apiVersion: 'v1',
        time: '2024-05-01T10:00:00Z',
        fieldsType: 'FieldsV1',
        fieldsV1: { 'f:data': { 'f:a': {} }, 'f:spec': { 'f:replicas': {} } },
      },
    ]);
    expect((r.object.metadata as JsonObject).managedFields).toEqual(r.managedFields);
  });

  test('SSA rule 2: a manager owns exactly the fields of its last applied configuration; dropped fields nobody owns are removed', () => {
    const a = ssa(undefined, cm({ data: { a: '1', b: '2' } }), 'one');
    const b = ssa(a.object, cm({ data: { a: '1' } }), 'one', { now: T1 });
    expect(b.object.data).toEqual({ a: '1' });
    expect(owners(b.object)).toEqual({ 'one/Apply': ['.data.a'] });
    const c = ssa(b.object, cm({}), 'one', { now: T1 });
    expect(c.object.data).toBeUndefined();
    expect(c.managedFields).toEqual([]);
    expect((c.object.metadata as JsonObject).managedFields).toBeUndefined();
  });

  test('SSA rule 2: values set by several appliers to the same value are shared; a later change by any of them conflicts', () => {
    const a = ssa(undefined, cm({ data: { k: 'v' } }), 'one');
    const b = ssa(a.object, cm({ data: { k: 'v' } }), 'two');
    expect(b.changed).toBe(false);
    expect(owners(b.object)).toEqual({ 'one/Apply': ['.data.k'], 'two/Apply': ['.data.k'] });
    const e = thrown(() => ssa(b.object, cm({ data: { k: 'w' } }), 'one'));
    expect(e.reason).toBe('Conflict');
    expect(e.code).toBe(409);
    expect(e.message).toBe('Apply failed with 1 conflict: conflict with "two": .data.k');
    expect(e.causes).toEqual([{ field: '.data.k', message: 'conflict with "two"', reason: 'FieldManagerConflict' }]);
    expect(e.conflicts).toEqual([{ field: '.data.k', manager: 'two', operation: 'Apply', apiVersion: 'v1' }]);
  });

  test('SSA rule 3: conflicts name every path, grouped by manager and its operation', () => {
    let live = ssa(undefined, cm({ data: { a: '1', b: '2' } }), 'one').object;
    live = trackUpdate({ old: live, new: { ...live, spec: { replicas: 3 } }, manager: 'kubectl-edit', apiVersion: 'v1', now: T1, schema }).object;
    const e = thrown(() => ssa(live, cm({ data: { a: 'x', b: 'y' }, spec: { replicas: 4 } }), 'two'));
    expect(e.message).toBe(
      'Apply failed with 3 conflicts: conflicts with "kubectl-edit" using v1:\n- .spec.replicas\nconflicts with "one":\n- .data.a\n- .data.b',
    );
    expect(e.causes.map((c) => [c.field, c.message])).toEqual([
      ['.spec.replicas', 'conflict with "kubectl-edit" using v1'],
      ['.data.a', 'conflict with "one"'],
      ['.data.b', 'conflict with "one"'],
    ]);
    expect(e.conflicts.map((c) => c.operation)).toEqual(['Update', 'Apply', 'Apply']);
  });

  test('SSA rule 3: force overwrites the value and moves the field to the applier', () => {
    const a = ssa(undefined, cm({ data: { k: 'v', other: 'o' } }), 'one');
    const b = ssa(a.object, cm({ data: { k: 'w' } }), 'two', { force: true, now: T1 });
    expect(b.object.data).toEqual({ k: 'w', other: 'o' });
    expect(owners(b.object)).toEqual({ 'one/Apply': ['.data.other'], 'two/Apply': ['.data.k'] });
  });

  test('SSA rule 3: omitting a shared field keeps the value and drops the claim', () => {
    const a = ssa(undefined, cm({ data: { k: 'v' } }), 'one');
    const b = ssa(a.object, cm({ data: { k: 'v', mine: 'm' } }), 'two');
    const c = ssa(b.object, cm({ data: { mine: 'm' } }), 'two', { now: T1 });
    expect(c.object.data).toEqual({ k: 'v', mine: 'm' });
    expect(owners(c.object)).toEqual({ 'one/Apply': ['.data.k'], 'two/Apply': ['.data.mine'] });
  });

  test('SSA rule 2: a released field still owned by an updater stays', () => {
    const a = ssa(undefined, cm({ data: { k: 'v' }, spec: { image: 'i1' } }), 'one');
    const u = trackUpdate({ old: a.object, new: { ...a.object, spec: { image: 'i2' } }, manager: 'editor', apiVersion: 'v1', now: T1, schema });
    const b = ssa(u.object, cm({ data: { k: 'v' } }), 'one', { now: T2 });
    expect(b.object.spec).toEqual({ image: 'i2' });
  });

  test('SSA rule 2: a released field nobody owns is reset to its schema default', () => {
    const a = ssa(undefined, cm({ spec: { strategy: 'Recreate', paused: true, replicas: 2 } }), 'one');
    const b = ssa(a.object, cm({ spec: { replicas: 2 } }), 'one', { now: T1 });
    expect(b.object.spec).toEqual({ strategy: 'RollingUpdate', paused: false, replicas: 2 });
    expect(owners(b.object)).toEqual({ 'one/Apply': ['.spec.replicas'] });
  });

  test('SSA rule 2: released map-list items are removed unless someone owns part of them; key fields stay with the item', () => {
    const a = ssa(undefined, cm({ spec: { containers: [{ name: 'a', image: 'ia' }, { name: 'b', image: 'ib' }] } }), 'one');
    const u = trackUpdate({
      old: a.object,
      new: { ...a.object, spec: { containers: [{ name: 'a', image: 'ia' }, { name: 'b', image: 'ib', cpu: '1' }] } },
      manager: 'tuner',
      apiVersion: 'v1',
      now: T1,
      schema,
    });
    const b = ssa(u.object, cm({ spec: { containers: [] } }), 'one', { now: T2 });
    expect(b.object.spec).toEqual({ containers: [{ name: 'b', cpu: '1' }] });
  });

  test('SSA rule 2: set-list items are owned one by one', () => {
    const a = ssa(undefined, cm({ spec: { tags: ['a', 'b'] } }), 'one');
    const b = ssa(a.object, cm({ spec: { tags: ['b', 'c'] } }), 'two');
    expect((b.object.spec as JsonObject).tags).toEqual(['a', 'b', 'c']);
    const c = ssa(b.object, cm({ spec: { tags: [] } }), 'one', { now: T1 });
    expect((c.object.spec as JsonObject).tags).toEqual(['b', 'c']);
    // Applying an empty list claims the list itself, not its items.
    expect(owners(c.object)).toEqual({ 'one/Apply': ['.spec.tags'], 'two/Apply': ['.spec.tags[="b"]', '.spec.tags[="c"]'] });
  });

  test('item 3: map-list items merge by key and keep the live order of items the configuration does not name', () => {
    const a = ssa(undefined, cm({ spec: { containers: [{ name: 'a', image: '1' }, { name: 'b', image: '1' }] } }), 'one');
    const b = ssa(a.object, cm({ spec: { containers: [{ name: 'c', image: '2' }, { name: 'b', cpu: '1' }] } }), 'two');
    expect((b.object.spec as JsonObject).containers).toEqual([
      { name: 'a', image: '1' },
      { name: 'c', image: '2' },
      { name: 'b', image: '1', cpu: '1' },
    ]);
  });

  test('item 3: applying the same configuration twice changes nothing, not even the time', () => {
    const config = cm({ data: { a: '1' }, spec: { containers: [{ name: 'a', image: 'x' }], tags: ['t'] } });
    const first = ssa(undefined, config, 'one');
    const second = ssa(first.object, config, 'one', { now: T2 });
    expect(second.changed).toBe(false);
    expect(second.object).toEqual(first.object);
  });

  test('item 3: the entry time moves only when the object changes', () => {
    const first = ssa(undefined, cm({ data: { a: '1' } }), 'one');
    const same = ssa(first.object, cm({ data: { a: '1' } }), 'one', { now: T1 });
    expect(same.managedFields[0]?.time).toBe('2024-05-01T10:00:00Z');
    const changed = ssa(same.object, cm({ data: { a: '2' } }), 'one', { now: T2 });
    expect(changed.managedFields[0]?.time).toBe('2024-05-01T10:00:09Z');
  });

  test('item 3: an applier is one entry whatever API version it applied with', () => {
    const first = ssa(undefined, cm({ data: { a: '1' } }), 'one');
    const second = apply({ live: first.object, applied: cm({ data: { a: '1', b: '2' } }), manager: 'one', apiVersion: 'v2', now: T1, schema });
    expect(second.managedFields.map((e) => [e.manager, e.apiVersion])).toEqual([['one', 'v2']]);
  });

  test('item 3: the subresource is recorded and makes a separate owner', () => {
    const a = ssa(undefined, cm({ spec: { replicas: 1 } }), 'ctl');
    const b = ssa(a.object, cm({ status: { phase: 'Running' } }), 'ctl', { subresource: 'status', now: T1 });
    expect(b.managedFields.map((e) => [e.manager, e.subresource])).toEqual([
      ['ctl', undefined],
      ['ctl', 'status'],
    ]);
    const e = thrown(() => ssa(b.object, cm({ status: { phase: 'Failed' } }), 'ctl'));
    expect(e.causes[0]?.message).toBe('conflict with "ctl" with subresource "status"');
  });

  test('item 3: ignored fields (reset by the strategy) are neither owned nor in conflict', () => {
    const ignoredFields = FieldSet.fromFieldsV1({ 'f:status': {} });
    const a = ssa(undefined, cm({ spec: { replicas: 1 }, status: { phase: 'A' } }), 'one', { ignoredFields });
    expect(owners(a.object)).toEqual({ 'one/Apply': ['.spec.replicas'] });
  });

  test('item 3: managedFields in the applied body is a BadRequest', () => {
    for (const managedFields of [[], [{ manager: 'x' }]]) {
      const e = thrown(() => ssa(undefined, { metadata: { name: 'x', managedFields: managedFields as JsonValue } }, 'one'));
      expect(e.reason).toBe('BadRequest');
      expect(e.causes[0]?.field).toBe('.metadata.managedFields');
    }
  });

  test('SSA rule 8: only objects with metadata can be applied', () => {
    expect(thrown(() => ssa(undefined, { apiVersion: 'v1', kind: 'Thing' }, 'one')).causes[0]?.field).toBe('.metadata');
    expect(thrown(() => ssa(undefined, [] as unknown as JsonObject, 'one')).reason).toBe('BadRequest');
    expect(thrown(() => apply({ live: 'text', applied: cm({}), manager: 'one', apiVersion: 'v1', now: T0 })).reason).toBe('Invalid');
  });

  test('item 3: a field manager is required', () => {
    expect(thrown(() => ssa(undefined, cm({}), '')).reason).toBe('BadRequest');
  });

  test.each<[string, JsonObject, string, string]>([
    ['a value of the wrong type', cm({ spec: { replicas: 'three' } }), '.spec.replicas', 'expected number, got string'],
    ['a list where a map is expected', cm({ data: ['a'] }), '.data', 'expected map, got list'],
    ['a map-list item missing its key', cm({ spec: { containers: [{ image: 'x' }] } }), '.spec.containers[0]', 'associative list with keys has an element that omits key field "name" (and doesn\'t have default value)'],
    ['duplicate keys in a map-list', cm({ spec: { containers: [{ name: 'a' }, { name: 'a' }] } }), '.spec.containers', 'duplicate entries for key [name="a"]'],
    ['duplicate values in a set-list', cm({ spec: { tags: ['a', 'a'] } }), '.spec.tags', 'duplicate entries for value "a"'],
  ])('item 3: %s in the applied body is a BadRequest naming the path', (_, applied, field, message) => {
    const live = ssa(undefined, cm({ data: { a: '1' } }), 'one').object;
    deepFreeze(live);
    const e = thrown(() => ssa(live, applied, 'two'));
    expect(e.reason).toBe('BadRequest');
    expect(e.code).toBe(400);
    expect(e.causes[0]).toEqual(expect.objectContaining({ field, message }));
  });

  test('item 3: inputs are never modified, on success or on conflict', () => {
    const live = deepFreeze(ssa(undefined, cm({ data: { a: '1' }, spec: { containers: [{ name: 'a', image: 'x' }] } }), 'one').object);
    const snapshot = JSON.stringify(live);
    const applied = deepFreeze(cm({ data: { a: '2', b: '3' }, spec: { containers: [{ name: 'a', cpu: '1' }, { name: 'b' }] } }));
    expect(() => ssa(live, applied, 'two')).toThrow(MergeError);
    const r = ssa(live, applied, 'two', { force: true });
    expect(JSON.stringify(live)).toBe(snapshot);
    (r.object.data as JsonObject).a = 'mutated';
    expect(JSON.stringify(live)).toBe(snapshot);
  });

  test('item 3: values JSON cannot carry are a BadRequest, never another exception', () => {
    expect(thrown(() => ssa(undefined, cm({ data: { a: Number.NaN as unknown as string } }), 'one')).reason).toBe('BadRequest');
    expect(thrown(() => ssa(undefined, cm({ data: { a: (() => 1) as unknown as string } }), 'one')).reason).toBe('BadRequest');
  });

  test('item 3: stored managedFields that cannot be decoded are an Invalid error naming the entry', () => {
    const live = cm({ metadata: { name: 'x', managedFields: [{ manager: 'a', operation: 'Patch', apiVersion: 'v1', fieldsType: 'FieldsV1', fieldsV1: {} }] } });
    const e = thrown(() => ssa(live, cm({}), 'one'));
    expect(e.reason).toBe('Invalid');
    expect(e.causes[0]?.field).toBe('metadata.managedFields[0].operation');
  });
});

const CSA = 'kubectl-client-side-apply';

function config(data: Record<string, string>): JsonObject {
  return cm({ data });
}

/** What `kubectl apply` (client-side) creates: the configuration plus its annotation, written as an update by its manager. */
function clientSideCreated(data: Record<string, string>, extraAnnotations: Record<string, string> = {}, recorded: JsonObject = config(data)): JsonObject {
  const applied = config(data);
  const obj: JsonObject = { ...applied, metadata: { ...(applied.metadata as JsonObject), annotations: { ...extraAnnotations, [LAST_APPLIED_ANNOTATION]: encodeLastApplied(recorded) } } };
  return trackUpdate({ old: undefined, new: obj, manager: CSA, apiVersion: 'v1', now: T0, schema }).object;
}

function serverSide(live: JsonObject, applied: JsonObject, manager = 'kubectl', now = T1) {
  return applyUpgradingClientSide({ live, applied, manager, apiVersion: 'v1', now, schema });
}

function annotation(obj: JsonObject): unknown {
  return ((obj.metadata as JsonObject).annotations as JsonObject | undefined)?.[LAST_APPLIED_ANNOTATION];
}

describe('client-side to server-side apply', () => {
  test('kubectl takes over the fields the annotation records, changing them without a conflict', () => {
    const live = clientSideCreated({ a: '1', b: '2' });
    const applied = config({ a: '10', b: '2' });
    const r = serverSide(live, applied);
    expect(r.object.data).toEqual({ a: '10', b: '2' });
    const own = owners(r.object);
    expect(own['kubectl/Apply']).toEqual(expect.arrayContaining(['.data.a', '.data.b']));
    expect(own[`${CSA}/Update`]).not.toContain('.data.a');
    // The annotation now records what was applied, so a later client-side apply patches from it.
    expect(annotation(r.object)).toBe(encodeLastApplied(applied));
    expect(JSON.parse(annotation(r.object) as string)).toEqual(applied);
  });

  test('another manager gets the conflict, and leaves the annotation alone', () => {
    const live = clientSideCreated({ a: '1' });
    const e = thrown(() => serverSide(live, config({ a: '10' }), 'my-tool'));
    expect(e.message).toBe('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.a');
    const same = serverSide(live, config({ a: '1' }), 'my-tool');
    expect(annotation(same.object)).toBe(annotation(live));
  });

  test('a field whose live value differs from the recorded one still conflicts, and the error names only it', () => {
    // The annotation records a=1, b=2; the live b is 3 (changed by the same manager without the annotation following).
    const live = clientSideCreated({ a: '1', b: '3' }, {}, config({ a: '1', b: '2' }));
    const e = thrown(() => serverSide(live, config({ a: '10', b: '30' })));
    expect(e.code).toBe(409);
    expect(e.message).toBe('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" using v1: .data.b');
    expect(e.conflicts.map((c) => c.field)).toEqual(['.data.b']);
  });

  test('an annotation of another apiVersion, or not JSON, forgives nothing', () => {
    const other = clientSideCreated({ a: '1' }, {}, { ...config({ a: '1' }), apiVersion: 'v2' });
    expect(thrown(() => serverSide(other, config({ a: '10' }))).code).toBe(409);
    const broken = clientSideCreated({ a: '1' });
    ((broken.metadata as JsonObject).annotations as JsonObject)[LAST_APPLIED_ANNOTATION] = '{not json';
    expect(thrown(() => serverSide(broken, config({ a: '10' }))).code).toBe(409);
  });

  test('without the annotation, kubectl applies like every other manager and adds none', () => {
    const created = serverSide({}, config({ a: '1' }));
    expect(annotation(created.object)).toBeUndefined();
    const plain = trackUpdate({ old: undefined, new: config({ a: '1' }), manager: 'kubectl-create', apiVersion: 'v1', now: T0, schema }).object;
    expect(thrown(() => serverSide(plain, config({ a: '2' }))).code).toBe(409);
  });

  test('an annotation that would overflow the annotations size limit is dropped', () => {
    const big = 'x'.repeat(TOTAL_ANNOTATION_SIZE_LIMIT - 200);
    const live = clientSideCreated({ a: '1' }, { big });
    const r = serverSide(live, config({ a: 'y'.repeat(400) }));
    expect(annotation(r.object)).toBeUndefined();
    expect(((r.object.metadata as JsonObject).annotations as JsonObject)['big']).toBe(big);
  });

  test('repeating the same server-side apply changes nothing, managedFields times included', () => {
    const live = clientSideCreated({ a: '1' });
    const first = serverSide(live, config({ a: '2' }), 'kubectl', T1);
    const again = serverSide(first.object, config({ a: '2' }), 'kubectl', T2);
    expect(again.changed).toBe(false);
    expect(again.object).toEqual(first.object);
  });

  test('a second manager applying the same values becomes a co-owner', () => {
    const live = serverSide({}, config({ a: '1' }), 'one', T0).object;
    const r = serverSide(live, config({ a: '1' }), 'two', T1);
    expect(r.changed).toBe(false);
    expect(owners(r.object)).toEqual({ 'one/Apply': ['.data.a'], 'two/Apply': ['.data.a'] });
  });
});
