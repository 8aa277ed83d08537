import { ApiError, type ApiObject } from '@svc/apimachinery';
import { customResourceDefinitions } from './custom-resources';
import { SCALE_SUBRESOURCE, UNSET_SPEC_REPLICAS, desiredReplicas, scaleFromObject, validateScale, withSpecReplicas } from './scale';

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
