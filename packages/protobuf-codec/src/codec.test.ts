import { ApiError, type ApiObject } from '@svc/apimachinery';
import { ProtobufObjectCodec, PROTOBUF_PREFIX } from './codec';

/**
 * A minimal protobuf writer, independent of the descriptors under test, so
 * the tests check the field numbers against the upstream wire format rather
 * than against themselves.
 */
function varint(n: number): number[] {
  const out: number[] = [];
  let v = n;
  while (v > 0x7f) {
    out.push((v & 0x7f) | 0x80);
    v = Math.floor(v / 128);
  }
  out.push(v);
  return out;
}
const str = (num: number, s: string): number[] => bytes(num, [...Buffer.from(s, 'utf8')]);
const bytes = (num: number, b: number[]): number[] => [...varint((num << 3) | 2), ...varint(b.length), ...b];
const int = (num: number, n: number): number[] => [...varint(num << 3), ...varint(n)];
const entry = (num: number, k: string, v: string): number[] => bytes(num, [...str(1, k), ...str(2, v)]);

function envelope(apiVersion: string, kind: string, raw: number[]): Buffer {
  const typeMeta = bytes(1, [...str(1, apiVersion), ...str(2, kind)]);
  return Buffer.concat([PROTOBUF_PREFIX, Buffer.from([...typeMeta, ...bytes(2, raw)])]);
}

function apiError(fn: () => unknown): ApiError {
  try {
    fn();
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected an ApiError');
}

const codec = new ProtobufObjectCodec();

describe('decoding bodies as the upstream encoder writes them', () => {
  it('reads a ConfigMap: metadata (1) with name (1) and namespace (3), data (2), binaryData (3), immutable (4)', () => {
    // Upstream writes every non-pointer string, empty ones included.
    const meta = [...str(1, 'game'), ...str(2, ''), ...str(3, 'default'), ...int(7, 0)];
    const raw = [...bytes(1, meta), ...entry(2, 'lives', '3'), ...bytes(3, [...str(1, 'bin'), ...bytes(2, [0, 1, 2])]), ...int(4, 1)];
    const obj = codec.decode(envelope('v1', 'ConfigMap', raw));
    expect(obj).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'game', namespace: 'default' },
      data: { lives: '3' },
      binaryData: { bin: 'AAEC' },
      immutable: true,
    });
  });

  it('reads a Secret with bytes data (2) and type (3), and a zero creationTimestamp (8) as absent', () => {
    const meta = [...str(1, 's'), ...bytes(8, [])];
    const raw = [...bytes(1, meta), ...bytes(2, [...str(1, 'password'), ...bytes(2, [...Buffer.from('hunter2')])]), ...str(3, 'Opaque')];
    expect(codec.decode(envelope('v1', 'Secret', raw))).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 's' },
      data: { password: Buffer.from('hunter2').toString('base64') },
      type: 'Opaque',
    });
  });

  it('reads labels (11), annotations (12) and a creationTimestamp (8) of seconds (1)', () => {
    const meta = [...str(1, 'ns1'), ...entry(11, 'team', 'a'), ...entry(12, 'note', 'x'), ...bytes(8, int(1, 1_700_000_000))];
    const obj = codec.decode(envelope('v1', 'Namespace', [...bytes(1, meta), ...bytes(2, []), ...bytes(3, [])]));
    expect(obj).toEqual({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'ns1', labels: { team: 'a' }, annotations: { note: 'x' }, creationTimestamp: '2023-11-14T22:13:20Z' },
      spec: {},
      status: {},
    });
  });

  it('reads a Lease of coordination.svc.io/v1: holderIdentity (1), leaseDurationSeconds (2), renewTime (4, MicroTime)', () => {
    const spec = [...str(1, 'node-a'), ...int(2, 40), ...bytes(4, [...int(1, 1_700_000_000), ...int(2, 123_456_000)])];
    const obj = codec.decode(envelope('coordination.svc.io/v1', 'Lease', [...bytes(1, str(1, 'l')), ...bytes(2, spec)]));
    expect(obj['spec']).toEqual({ holderIdentity: 'node-a', leaseDurationSeconds: 40, renewTime: '2023-11-14T22:13:20.123456Z' });
  });

  it('reads a ServiceAccount with secrets (2, ObjectReference name 3) and automountServiceAccountToken (4) false', () => {
    const obj = codec.decode(envelope('v1', 'ServiceAccount', [...bytes(1, str(1, 'robot')), ...bytes(2, str(3, 'robot-token')), ...int(4, 0)]));
    expect(obj).toEqual({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'robot' }, secrets: [{ name: 'robot-token' }], automountServiceAccountToken: false });
  });
});

describe('admissionregistration.svc.io/v1 as the upstream encoder writes it', () => {
  it('reads a ValidatingWebhookConfiguration: webhooks (2) with name (1), clientConfig (2: url 3, caBundle 2), rules (3: operations 1, the embedded rule 2), objectSelector (10), matchConditions (11)', () => {
    const rule = [...str(1, 'CREATE'), ...bytes(2, [...str(1, ''), ...str(2, 'v1'), ...str(3, 'pods'), ...str(4, 'Namespaced')])];
    const hook = [
      ...str(1, 'deny.example.com'),
      ...bytes(2, [...str(3, 'https://127.0.0.1:9443/validate'), ...bytes(2, [1, 2, 3])]),
      ...bytes(3, rule),
      ...str(4, 'Ignore'),
      ...int(7, 5),
      ...str(8, 'v1'),
      ...bytes(10, [entry(1, 'team', 'a')].flat()),
      ...bytes(11, [...str(1, 'not-leases'), ...str(2, 'true')]),
    ];
    const obj = codec.decode(envelope('admissionregistration.svc.io/v1', 'ValidatingWebhookConfiguration', [...bytes(1, str(1, 'hooks')), ...bytes(2, hook)]));
    expect(obj).toEqual({
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'hooks' },
      webhooks: [
        {
          name: 'deny.example.com',
          clientConfig: { url: 'https://127.0.0.1:9443/validate', caBundle: 'AQID' },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], scope: 'Namespaced' }],
          failurePolicy: 'Ignore',
          timeoutSeconds: 5,
          admissionReviewVersions: ['v1'],
          objectSelector: { matchLabels: { team: 'a' } },
          matchConditions: [{ name: 'not-leases', expression: 'true' }],
        },
      ],
    });
  });
});

describe('round trips through the protobuf form', () => {
  it('keeps every field of a Pod, including quantities, int-or-string, empty messages and managed fields', () => {
    const pod: ApiObject = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'web',
        namespace: 'default',
        uid: '8f7c8c52-0000-4000-8000-000000000001',
        resourceVersion: '42',
        generation: 1,
        creationTimestamp: '2024-05-06T07:08:09Z',
        labels: { app: 'web' },
        ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-1', uid: 'u1', controller: true }],
        managedFields: [{ manager: 'kubectl', operation: 'Apply', apiVersion: 'v1', time: '2024-05-06T07:08:09Z', fieldsType: 'FieldsV1', fieldsV1: { 'f:metadata': { 'f:labels': { 'f:app': {} } } } }],
      },
      spec: {
        containers: [
          {
            name: 'nginx',
            image: 'nginx:1.27',
            ports: [{ containerPort: 80, protocol: 'TCP' }],
            resources: { limits: { cpu: '500m', memory: '128Mi' }, requests: { cpu: '250m' } },
            readinessProbe: { httpGet: { path: '/', port: 'http' }, periodSeconds: 5 },
            livenessProbe: { tcpSocket: { port: 80 } },
            securityContext: { runAsUser: 0, privileged: false },
            volumeMounts: [{ name: 'cache', mountPath: '/cache' }],
          },
        ],
        volumes: [{ name: 'cache', emptyDir: {} }],
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 30,
      },
      status: { phase: 'Pending', conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: '2024-05-06T07:08:10Z' }] },
    };
    expect(codec.decode(codec.encode(pod))).toEqual(pod);
  });

  it('keeps every field of a ValidatingAdmissionPolicy, its binding and a MutatingWebhookConfiguration', () => {
    const selector = { matchLabels: { env: 'prod' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['a', 'b'] }] };
    const rules = [{ resourceNames: ['one'], operations: ['CREATE', 'UPDATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments', 'deployments/scale'], scope: '*' }];
    const policy: ApiObject = {
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'replicas', generation: 2 },
      spec: {
        paramKind: { apiVersion: 'v1', kind: 'ConfigMap' },
        matchConstraints: { namespaceSelector: selector, objectSelector: {}, resourceRules: rules, excludeResourceRules: rules, matchPolicy: 'Equivalent' },
        validations: [{ expression: 'object.spec.replicas < 5', message: 'too many', reason: 'Invalid', messageExpression: '"x"' }],
        failurePolicy: 'Fail',
        auditAnnotations: [{ key: 'replicas', valueExpression: 'string(object.spec.replicas)' }],
        matchConditions: [{ name: 'c', expression: 'true' }],
        variables: [{ name: 'v', expression: '1' }],
      },
      status: {
        observedGeneration: 2,
        typeChecking: { expressionWarnings: [{ fieldRef: 'spec.validations[0].expression', warning: 'no such key' }] },
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2024-05-06T07:08:09Z', reason: 'Checked', message: 'type checked' }],
      },
    };
    expect(codec.decode(codec.encode(policy))).toEqual(policy);
    const binding: ApiObject = {
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'replicas' },
      spec: {
        policyName: 'replicas',
        paramRef: { namespace: 'default', selector, parameterNotFoundAction: 'Deny' },
        matchResources: { namespaceSelector: {}, objectSelector: selector, resourceRules: rules, matchPolicy: 'Exact' },
        validationActions: ['Warn', 'Audit'],
      },
    };
    expect(codec.decode(codec.encode(binding))).toEqual(binding);
    const mutating: ApiObject = {
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'inject' },
      webhooks: [
        {
          name: 'inject.example.com',
          clientConfig: { service: { namespace: 'system', name: 'inject', path: '/mutate', port: 8443 }, caBundle: 'AQID' },
          rules: [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'], scope: '*' }],
          failurePolicy: 'Fail',
          matchPolicy: 'Equivalent',
          namespaceSelector: selector,
          objectSelector: {},
          sideEffects: 'NoneOnDryRun',
          timeoutSeconds: 10,
          admissionReviewVersions: ['v1', 'v1beta1'],
          reinvocationPolicy: 'IfNeeded',
          matchConditions: [{ name: 'c', expression: 'request.dryRun == false' }],
        },
      ],
    };
    expect(codec.decode(codec.encode(mutating))).toEqual(mutating);
  });

  it('keeps a PodDisruptionBudget (int-or-string bounds, selector, disrupted pods, conditions) and an Eviction, v1beta1 too', () => {
    const budget: ApiObject = {
      apiVersion: 'policy/v1',
      kind: 'PodDisruptionBudget',
      metadata: { name: 'web', namespace: 'shop', generation: 2 },
      spec: { maxUnavailable: '25%', selector: { matchLabels: { app: 'web' } }, unhealthyPodEvictionPolicy: 'AlwaysAllow' },
      status: {
        observedGeneration: 2,
        disruptedPods: { 'web-1': '2024-05-01T10:00:00Z' },
        disruptionsAllowed: 1,
        currentHealthy: 3,
        desiredHealthy: 2,
        expectedPods: 4,
        conditions: [{ type: 'DisruptionAllowed', status: 'True', observedGeneration: 2, lastTransitionTime: '2024-05-01T10:00:00Z', reason: 'SufficientPods', message: 'allowed' }],
      },
    };
    expect(codec.decode(codec.encode(budget))).toEqual(budget);
    const count = { ...budget, spec: { minAvailable: 2, selector: {} } };
    expect(codec.decode(codec.encode(count))).toEqual(count);
    for (const apiVersion of ['policy/v1', 'policy/v1beta1']) {
      const eviction: ApiObject = { apiVersion, kind: 'Eviction', metadata: { name: 'web-1', namespace: 'shop' }, deleteOptions: { gracePeriodSeconds: 0, preconditions: { uid: 'u1' }, dryRun: ['All'] } };
      expect(codec.decode(codec.encode(eviction))).toEqual(eviction);
    }
  });

  it('writes the prefix, then the envelope with typeMeta (1) and raw (2)', () => {
    const out = Buffer.from(codec.encode({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } }));
    expect(out.subarray(0, 4)).toEqual(PROTOBUF_PREFIX);
    const typeMeta = bytes(1, [...str(1, 'v1'), ...str(2, 'ConfigMap')]);
    expect([...out.subarray(4)]).toEqual([...typeMeta, ...bytes(2, bytes(1, str(1, 'x')))]);
  });

  it('encodes a Status for errors answered in protobuf', () => {
    const status = { apiVersion: 'v1', kind: 'Status', status: 'Failure', message: 'no', reason: 'NotFound', code: 404, details: { name: 'x', kind: 'configmaps' } };
    expect(codec.decode(codec.encode(status))).toEqual(status);
  });
});

describe('watch frames', () => {
  it('frames each event with a 4-byte length and embeds the enveloped object in WatchEvent.object (2)', () => {
    const object = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', resourceVersion: '7' } };
    const frame = Buffer.from(codec.encodeWatchEvent('ADDED', object));
    expect(frame.readUInt32BE(0)).toBe(frame.length - 4);
    const expected = [...str(1, 'ADDED'), ...bytes(2, bytes(1, [...codec.encode(object)]))];
    expect([...frame.subarray(4)]).toEqual(expected);
  });
});

describe('bad input', () => {
  it('rejects a body without the prefix with 400', () => {
    expect(apiError(() => codec.decode(Buffer.from('{"kind":"ConfigMap"}'))).code).toBe(400);
  });

  it('rejects an envelope that is not protobuf with 400', () => {
    expect(apiError(() => codec.decode(Buffer.concat([PROTOBUF_PREFIX, Buffer.from([0xff, 0xff, 0xff])]))).code).toBe(400);
  });

  it('rejects a kind with no protobuf form with 400 naming it', () => {
    const err = apiError(() => codec.decode(envelope('v1', 'Widget', [])));
    expect(err.code).toBe(400);
    expect(err.message).toContain('Widget');
  });

  it('rejects an envelope without typeMeta with 400', () => {
    expect(apiError(() => codec.decode(Buffer.concat([PROTOBUF_PREFIX, Buffer.from(bytes(2, []))]))).code).toBe(400);
  });

  it('rejects embedded field sets that are not JSON with 400', () => {
    const managed = bytes(17, bytes(7, bytes(1, [...Buffer.from('{not json')])));
    expect(apiError(() => codec.decode(envelope('v1', 'ConfigMap', bytes(1, managed)))).code).toBe(400);
  });

  it('answers 406 when an object holds a field with no protobuf form, naming the field', () => {
    const err = apiError(() => codec.encode({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' }, spec: { a: 1 } }));
    expect(err.code).toBe(406);
    expect(err.message).toContain('spec');
  });

  it('supports only the kinds with a message', () => {
    expect(codec.supports('v1', 'ConfigMap')).toBe(true);
    expect(codec.supports('v1', 'PodList')).toBe(true);
    expect(codec.supports('coordination.svc.io/v1', 'Lease')).toBe(true);
    expect(codec.supports('example.svc.io/v1', 'Widget')).toBe(false);
  });
});
