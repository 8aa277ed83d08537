import type { ApiObject } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import { AdmissionPolicyStatusController, kindsToCheck, ServedKinds, typeCheckPolicy } from './admission-policy-status';
import type { WatchEvent } from './client';
import { SharedInformerFactory } from './informer';
import { FakeClock, settle } from './testing/fake-clock';

const widgets: ApiObject = {
  apiVersion: 'apiextensions.svc.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'widgets.example.com', uid: 'w1', resourceVersion: '5' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' },
    versions: [
      {
        name: 'v1',
        served: true,
        storage: true,
        schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' }, color: { type: 'string' } } } } } },
      },
    ],
  },
  status: { conditions: [{ type: 'Established', status: 'True' }, { type: 'NamesAccepted', status: 'True' }], acceptedNames: { plural: 'widgets', singular: 'widget', kind: 'Widget', listKind: 'WidgetList' } },
};

const rule = (apiGroups: string[], apiVersions: string[], resources: string[]) => ({ apiGroups, apiVersions, resources, operations: ['CREATE'] });

function policy(rules: unknown[], validations: unknown[], extra: Record<string, unknown> = {}, generation = 1, status?: Record<string, unknown>): ApiObject {
  return {
    apiVersion: 'admissionregistration.svc.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name: 'p', generation, resourceVersion: '9' },
    spec: { matchConstraints: { resourceRules: rules }, validations, ...extra },
    ...(status ? { status } : {}),
  };
}

const kinds = new ServedKinds(() => [widgets]);

describe('kinds to check', () => {
  test('named resources of rules without wildcards, served ones only, sorted', () => {
    const p = policy([rule(['example.com', ''], ['v1'], ['widgets', 'configmaps', 'widgets/status', '*', 'nothings']), rule(['*'], ['v1'], ['pods']), rule(['rbac.authorization.k8s.io'], ['v1'], ['roles'])], []);
    expect(kindsToCheck(p, kinds).map((k) => `${k.group}/${k.version}/${k.kind}`)).toEqual(['/v1/ConfigMap', 'example.com/v1/Widget', 'rbac.authorization.svc.io/v1/Role']);
  });

  test('at most ten', () => {
    const resources = ['configmaps', 'secrets', 'serviceaccounts', 'pods', 'services', 'nodes', 'endpoints', 'events', 'namespaces', 'pods', 'configmaps'];
    expect(kindsToCheck(policy([rule([''], ['v1'], resources)], []), kinds).length).toBe(9);
    const more = policy([rule([''], ['v1'], resources), rule(['example.com'], ['v1'], ['widgets']), rule(['rbac.authorization.svc.io'], ['v1'], ['roles', 'clusterroles'])], []);
    expect(kindsToCheck(more, kinds).length).toBe(10);
  });
});

describe('typeCheckPolicy', () => {
  test('fields a kind does not declare and mistyped operators are warned about, per kind', () => {
    const p = policy(
      [rule(['', 'example.com'], ['v1'], ['configmaps', 'widgets'])],
      [
        { expression: "object.metadata.name != '' && has(object.metadata.labels)" },
        { expression: "object.spec.size > 'three'", messageExpression: "'size ' + object.spec.color" },
        { expression: 'object.data.size() < 10' },
        { expression: 'oldObject == null || oldObject.spec.size <= object.spec.size', messageExpression: "'ok'" },
      ],
    );
    expect(typeCheckPolicy(p, kinds)).toEqual([
      { fieldRef: 'spec.validations[1].expression', warning: "/v1, Kind=ConfigMap: undefined field 'spec'\nexample.com/v1, Kind=Widget: found no matching overload for '_>_' applied to '(int, string)'" },
      { fieldRef: 'spec.validations[1].messageExpression', warning: "/v1, Kind=ConfigMap: undefined field 'spec'" },
      { fieldRef: 'spec.validations[2].expression', warning: "example.com/v1, Kind=Widget: undefined field 'data'" },
      { fieldRef: 'spec.validations[3].expression', warning: "/v1, Kind=ConfigMap: undefined field 'spec'" },
    ]);
  });

  test('params are typed by the paramKind, variables by their expressions; unknown kinds check nothing', () => {
    const withParams = policy([rule([''], ['v1'], ['configmaps'])], [{ expression: "size(object.data) <= params.spec.size && variables.first > 'a'" }, { expression: 'params.spec.shape == 1' }], {
      paramKind: { apiVersion: 'example.com/v1', kind: 'Widget' },
      variables: [{ name: 'first', expression: 'size(object.data)' }],
    });
    expect(typeCheckPolicy(withParams, kinds)).toEqual([
      { fieldRef: 'spec.validations[0].expression', warning: "/v1, Kind=ConfigMap: found no matching overload for '_>_' applied to '(int, string)'" },
      { fieldRef: 'spec.validations[1].expression', warning: "/v1, Kind=ConfigMap: undefined field 'shape'" },
    ]);
    expect(typeCheckPolicy(policy([rule(['apps'], ['v1'], ['deployments'])], [{ expression: 'object.anything > 1' }]), kinds)).toEqual([]);
    expect(typeCheckPolicy(policy([rule(['*'], ['*'], ['*'])], [{ expression: 'object.anything > 1' }]), kinds)).toEqual([]);
  });
});

describe('the status controller', () => {
  const quiet = createLogger('test', { write: () => undefined });

  function harness(policies: ApiObject[]) {
    const writes: Array<{ path: string; body: ApiObject }> = [];
    const client = {
      request: async <T>(method: string, path: string, body?: unknown): Promise<T> => {
        if (method === 'PUT') {
          writes.push({ path, body: body as ApiObject });
          return body as T;
        }
        const items = path.includes('validatingadmissionpolicies') ? policies : [widgets];
        return { metadata: { resourceVersion: '10' }, items } as T;
      },
      watch: (_path: string, _onEvent: (e: WatchEvent) => void, signal: AbortSignal): Promise<void> => new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true })),
    };
    const factory = new SharedInformerFactory(client, quiet, { resyncMs: 30_000, clock: new FakeClock() });
    const controller = new AdmissionPolicyStatusController(client, factory, quiet);
    return { writes, factory, controller };
  }

  test('writes typeChecking and observedGeneration for a generation not checked yet, and nothing for one already checked', async () => {
    const fresh = policy([rule([''], ['v1'], ['configmaps'])], [{ expression: 'object.spec.x == 1' }, { expression: 'true' }], {}, 3, { observedGeneration: 2, typeChecking: {} });
    const checked = { ...policy([rule([''], ['v1'], ['configmaps'])], [{ expression: 'object.spec.x == 1' }], {}, 1, { observedGeneration: 1, typeChecking: {} }), metadata: { name: 'done', generation: 1 } };
    const clean = { ...policy([rule([''], ['v1'], ['configmaps'])], [{ expression: 'true' }]), metadata: { name: 'clean', generation: 1 } };
    const { writes, factory, controller } = harness([fresh, checked, clean]);
    controller.start();
    factory.start();
    await settle();
    expect(controller.synced).toBe(true);
    await settle();
    expect(writes.map((w) => w.path).sort()).toEqual(['/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies/clean/status', '/apis/admissionregistration.svc.io/v1/validatingadmissionpolicies/p/status']);
    const p = writes.find((w) => w.path.endsWith('/p/status'))?.body;
    expect(p?.['status']).toEqual({ observedGeneration: 3, typeChecking: { expressionWarnings: [{ fieldRef: 'spec.validations[0].expression', warning: "/v1, Kind=ConfigMap: undefined field 'spec'" }] } });
    expect(p?.metadata?.resourceVersion).toBe('9');
    expect(writes.find((w) => w.path.endsWith('/clean/status'))?.body['status']).toEqual({ observedGeneration: 1, typeChecking: {} });
    await controller.stop();
    await factory.stop();
  });
});
