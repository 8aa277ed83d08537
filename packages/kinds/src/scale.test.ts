import { ApiError, type ApiObject, type JsonObject, type ManagedFieldsEntry } from '@svc/apimachinery';
import { customResourceDefinitions } from './custom-resources';
import { SCALE_SUBRESOURCE, UNSET_SPEC_REPLICAS, desiredReplicas, objectManagedFields, scaleFromObject, scaleManagedFields, validateScale, withSpecReplicas } from './scale';

const paths = { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas', labelSelectorPath: '.status.selector' };

function widget(spec: Record<string, unknown>, status?: Record<string, unknown>): ApiObject {
  const obj: ApiObject = {
    apiVersion: 'example.com/v1',
    kind: 'Widget',
    metadata: { name: 'w1', namespace: 'default', uid: 'u-1', resourceVersion: '42', creationTimestamp: '2026-01-01T00:00:00Z', labels: { a: 'b' } },
    spec,
  };
  if (status) obj['status'] = status;
  return obj;
}

/** The code and message of what `fn` throws, as a client would read them. */
const failure = (fn: () => unknown): { code: number; message: string } => {
  try {
    fn();
  } catch (err) {
    return { code: err instanceof ApiError ? err.code : -1, message: (err as Error).message };
  }
  return { code: 0, message: 'nothing was thrown' };
};

describe('the scale subresource of a custom resource', () => {
  it('is served for a version that declares it, as autoscaling/v1 Scale', () => {
    const crd: ApiObject = {
      metadata: { name: 'widgets.example.com' },
      spec: {
        group: 'example.com',
        scope: 'Namespaced',
        names: { plural: 'widgets', kind: 'Widget' },
        versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object' } }, subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } } }],
      },
      status: { conditions: [{ type: 'Established', status: 'True' }] },
    };
    const [def] = customResourceDefinitions(crd);
    expect(def?.scale).toEqual({ specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' });
    expect(def?.subresources.map((s) => [s.name, s.group, s.version, s.kind])).toEqual([
      ['status', undefined, undefined, undefined],
      ['scale', 'autoscaling', 'v1', 'Scale'],
    ]);
    expect(SCALE_SUBRESOURCE.verbs).toEqual(['get', 'patch', 'update']);
  });

  it('reads spec and status replicas and the selector from their paths, with the object identity', () => {
    const view = scaleFromObject(widget({ replicas: 3 }, { replicas: 2, selector: 'app=w' }), paths);
    expect(view).toEqual({
      specReplicasFound: true,
      scale: {
        apiVersion: 'autoscaling/v1',
        kind: 'Scale',
        metadata: { name: 'w1', namespace: 'default', uid: 'u-1', resourceVersion: '42', creationTimestamp: '2026-01-01T00:00:00Z' },
        spec: { replicas: 3 },
        status: { replicas: 2, selector: 'app=w' },
      },
    });
  });

  it('reads missing values as 0 and tells that the spec replicas are missing', () => {
    const view = scaleFromObject(widget({}), { specReplicasPath: '.spec.deep.replicas', statusReplicasPath: '.status.replicas' });
    expect(view.specReplicasFound).toBe(false);
    expect([view.scale['spec'], view.scale['status']]).toEqual([{}, { replicas: 0 }]);
  });

  it('names the field when a path holds a value of another type', () => {
    expect(failure(() => scaleFromObject(widget({ replicas: 'three' }), paths))).toEqual({ code: 500, message: 'Internal error occurred: .spec.replicas accessor error: "three" is of the type string, expected an integer' });
    expect(failure(() => scaleFromObject(widget({}, { replicas: 1, selector: 7 }), paths)).message).toMatch(/\.status\.selector accessor error/);
    expect(failure(() => scaleFromObject(widget({ replicas: 1.5 }), paths)).message).toMatch(/\.spec\.replicas accessor error: 1\.5/);
  });

  it('writes only the spec replicas path, creating missing levels, and leaves the input alone', () => {
    const before = widget({ replicas: 1, other: 'x' }, { replicas: 1 });
    const after = withSpecReplicas(before, paths, 5);
    expect(after['spec']).toEqual({ replicas: 5, other: 'x' });
    expect(after['status']).toEqual({ replicas: 1 });
    expect(before['spec']).toEqual({ replicas: 1, other: 'x' });
    expect(withSpecReplicas(widget({}), { ...paths, specReplicasPath: '.spec.a.b' }, 2)['spec']).toEqual({ a: { b: 2 } });
  });

  it('refuses to write through a level that is not an object, naming the path', () => {
    expect(failure(() => withSpecReplicas(widget({ a: 'text' }), { ...paths, specReplicasPath: '.spec.a.b' }, 2)).message).toMatch(/the spec replicas field "\.spec\.a\.b" cannot be set: a is of the type string/);
  });

  it('refuses a write that leaves unset spec replicas unset (400 naming the field)', () => {
    expect(failure(() => withSpecReplicas(widget({}), paths, UNSET_SPEC_REPLICAS))).toEqual({ code: 400, message: 'the spec replicas field ".spec.replicas" cannot be empty' });
  });

  it('validates the Scale: replicas may not be negative; unset replicas are 0', () => {
    expect(validateScale({ spec: { replicas: -1 } })).toEqual([{ reason: 'FieldValueInvalid', field: 'spec.replicas', message: 'Invalid value: -1: must be greater than or equal to 0' }]);
    expect(validateScale({ spec: { replicas: 0 } })).toEqual([]);
    expect(desiredReplicas({ spec: {} })).toBe(0);
    expect(desiredReplicas({ spec: { replicas: 4 } })).toBe(4);
  });
});

describe('managed fields between an object and its Scale', () => {
  const deep = { specReplicasPath: '.spec.size.count', statusReplicasPath: '.status.count' };
  const entry = (manager: string, operation: 'Apply' | 'Update', fieldsV1: JsonObject, extra: Record<string, string> = {}): ManagedFieldsEntry => ({
    manager,
    operation,
    apiVersion: 'example.com/v1',
    time: '2026-01-01T00:00:00Z',
    fieldsType: 'FieldsV1' as const,
    fieldsV1,
    ...extra,
  });
  const owner = entry('kubectl', 'Apply', { 'f:spec': { 'f:size': { 'f:count': {} }, 'f:image': {} } });
  const labeller = entry('labeller', 'Update', { 'f:metadata': { 'f:labels': { 'f:a': {} } } });

  test('the Scale has an autoscaling/v1 entry owning spec.replicas for each owner of the spec replicas path', () => {
    expect(scaleManagedFields([owner, labeller], deep)).toEqual([{ ...owner, apiVersion: 'autoscaling/v1', fieldsV1: { 'f:spec': { 'f:replicas': {} } } }]);
    expect(scaleManagedFields(undefined, deep)).toEqual([]);
  });

  test('back on the object: a manager that lost spec.replicas loses the path, a new owner gets it in the object’s version', () => {
    const scaler: ManagedFieldsEntry = { manager: 'hpa', operation: 'Apply' as const, apiVersion: 'autoscaling/v1', time: '2026-02-02T00:00:00Z', fieldsType: 'FieldsV1' as const, fieldsV1: { 'f:spec': { 'f:replicas': {} } }, subresource: 'scale' };
    expect(objectManagedFields([owner, labeller], [scaler], deep, 'example.com/v1')).toEqual([
      { ...owner, fieldsV1: { 'f:spec': { 'f:image': {} } } },
      labeller,
      { ...scaler, apiVersion: 'example.com/v1', fieldsV1: { 'f:spec': { 'f:size': { 'f:count': {} } } } },
    ]);
  });

  test('a manager that keeps spec.replicas keeps its entry; one that owned only the path loses the entry', () => {
    const onlyCount = entry('scaler', 'Update', { 'f:spec': { 'f:size': { 'f:count': {} } } }, { subresource: 'scale' });
    const kept = scaleManagedFields([owner], deep);
    expect(objectManagedFields([owner, onlyCount], kept, deep, 'example.com/v1')).toEqual([owner]);
  });
});
