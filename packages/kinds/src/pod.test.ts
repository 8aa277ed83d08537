import type { ApiObject, StatusCause } from '@svc/apimachinery';
import { defaultPullPolicy, podDefinition, podDisplayStatus, qosClass } from './pod';

const pod = podDefinition();
const strategy = pod.strategy;

function newPod(spec: Record<string, unknown>, extra: Record<string, unknown> = {}): ApiObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'web', namespace: 'default' }, spec, ...extra };
}

function created(spec: Record<string, unknown>): ApiObject {
  const obj = newPod(spec);
  strategy.prepareForCreate?.(obj);
  strategy.applyDefaults?.(obj);
  return obj;
}

function fields(causes: StatusCause[]): string[] {
  return causes.map((c) => c.field ?? '');
}

describe('pod defaults', () => {
  it('fills the spec defaults clients see on a new pod', () => {
    const obj = created({ containers: [{ name: 'app', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] });
    const spec = obj['spec'] as Record<string, unknown>;
    expect(spec['restartPolicy']).toBe('Always');
    expect(spec['dnsPolicy']).toBe('ClusterFirst');
    expect(spec['terminationGracePeriodSeconds']).toBe(30);
    expect(spec['schedulerName']).toBe('default-scheduler');
    const [container] = spec['containers'] as Array<Record<string, unknown>>;
    expect(container?.['terminationMessagePath']).toBe('/dev/termination-log');
    expect(container?.['terminationMessagePolicy']).toBe('File');
    expect(container?.['imagePullPolicy']).toBe('IfNotPresent');
    expect((container?.['ports'] as Array<Record<string, unknown>>)[0]?.['protocol']).toBe('TCP');
  });

  it('keeps values the client set', () => {
    const obj = created({ restartPolicy: 'Never', dnsPolicy: 'Default', containers: [{ name: 'a', image: 'x', imagePullPolicy: 'Never' }] });
    const spec = obj['spec'] as Record<string, unknown>;
    expect(spec['restartPolicy']).toBe('Never');
    expect(spec['dnsPolicy']).toBe('Default');
    expect((spec['containers'] as Array<Record<string, unknown>>)[0]?.['imagePullPolicy']).toBe('Never');
  });

  it.each([
    ['nginx', 'Always'],
    ['nginx:latest', 'Always'],
    ['nginx:1.27', 'IfNotPresent'],
    ['localhost:5000/nginx', 'Always'],
    ['localhost:5000/nginx:v2', 'IfNotPresent'],
    ['nginx@sha256:abcdef', 'IfNotPresent'],
  ])('pull policy of %s is %s', (image, policy) => {
    expect(defaultPullPolicy(image)).toBe(policy);
  });

  it('defaults requests to limits and fills probe defaults', () => {
    const obj = created({
      containers: [
        {
          name: 'a',
          image: 'x:1',
          resources: { limits: { cpu: '1', memory: '1Gi' } },
          livenessProbe: { httpGet: { port: 8080 } },
        },
      ],
    });
    const [c] = (obj['spec'] as Record<string, unknown>)['containers'] as Array<Record<string, Record<string, unknown>>>;
    expect(c?.['resources']?.['requests']).toEqual({ cpu: '1', memory: '1Gi' });
    expect(c?.['livenessProbe']).toMatchObject({ periodSeconds: 10, timeoutSeconds: 1, failureThreshold: 3, httpGet: { path: '/', scheme: 'HTTP' } });
  });
});

describe('serviceAccount, the deprecated alias of serviceAccountName', () => {
  const containers = [{ name: 'app', image: 'nginx' }];
  const specOf = (spec: Record<string, unknown>): Record<string, unknown> => created({ containers, ...spec })['spec'] as Record<string, unknown>;

  it.each([
    ['only the name', { serviceAccountName: 'builder' }, 'builder'],
    ['only the alias', { serviceAccount: 'builder' }, 'builder'],
    ['both, the name winning', { serviceAccountName: 'builder', serviceAccount: 'other' }, 'builder'],
  ])('%s: both show the account', (_what, given, account) => {
    const spec = specOf(given);
    expect([spec['serviceAccountName'], spec['serviceAccount']]).toEqual([account, account]);
  });

  it('neither set: neither appears', () => {
    const spec = specOf({ serviceAccount: '' });
    expect(['serviceAccountName' in spec, 'serviceAccount' in spec]).toEqual([false, false]);
  });

  it('a replace naming only serviceAccountName is no change to a pod that shows both', () => {
    const old = created({ containers, serviceAccountName: 'builder' });
    const { serviceAccount: _alias, ...spec } = old['spec'] as Record<string, unknown>;
    const replaced: ApiObject = { ...old, spec: { ...spec } };
    strategy.prepareForUpdate?.(replaced, old);
    strategy.applyDefaults?.(replaced);
    expect(strategy.validateUpdate?.(replaced, old)).toEqual([]);
    const renamed: ApiObject = { ...old, spec: { ...spec, serviceAccountName: 'other' } };
    strategy.applyDefaults?.(renamed);
    expect(fields(strategy.validateUpdate?.(renamed, old) ?? [])).toEqual(['spec']);
  });
});

describe('pod status handling', () => {
  it('starts Pending with a QoS class, whatever status the client sent', () => {
    const obj = newPod({ containers: [{ name: 'a', image: 'x' }] }, { status: { phase: 'Running', podIP: '10.0.0.1' } });
    strategy.prepareForCreate?.(obj);
    expect(obj['status']).toEqual({ phase: 'Pending', qosClass: 'BestEffort' });
  });

  it('keeps the stored status on update through the main resource', () => {
    const old = newPod({ containers: [{ name: 'a', image: 'x' }] }, { status: { phase: 'Running' } });
    const obj = newPod({ containers: [{ name: 'a', image: 'y' }] }, { status: { phase: 'Failed' } });
    strategy.prepareForUpdate?.(obj, old);
    expect(obj['status']).toEqual({ phase: 'Running' });
  });

  it('derives the QoS class from requests and limits', () => {
    expect(qosClass({ containers: [{ resources: { limits: { cpu: '1', memory: '1Gi' } } }] })).toBe('Guaranteed');
    expect(qosClass({ containers: [{ resources: { requests: { cpu: '100m' } } }] })).toBe('Burstable');
    expect(qosClass({ containers: [{}] })).toBe('BestEffort');
  });
});

describe('pod validation', () => {
  it('accepts a defaulted pod', () => {
    const obj = created({
      containers: [{ name: 'app', image: 'nginx', ports: [{ containerPort: 80, name: 'http' }], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', emptyDir: {} }],
    });
    expect(strategy.validate?.(obj)).toEqual([]);
  });

  it('needs at least one container', () => {
    const causes = strategy.validate?.(created({ containers: [] })) ?? [];
    expect(causes).toContainEqual(expect.objectContaining({ field: 'spec.containers', reason: 'FieldValueRequired' }));
  });

  it('names the container fields at fault', () => {
    const obj = created({
      initContainers: [{ name: 'setup', image: 'busybox' }],
      containers: [{ name: 'Bad_Name', image: 'x' }, { name: 'setup' }, { name: 'ok', image: 'x', ports: [{ containerPort: 70000 }] }],
    });
    const causes = strategy.validate?.(obj) ?? [];
    expect(causes).toContainEqual(expect.objectContaining({ field: 'spec.containers[0].name', reason: 'FieldValueInvalid' }));
    expect(causes).toContainEqual(expect.objectContaining({ field: 'spec.containers[1].name', reason: 'FieldValueDuplicate' }));
    expect(causes).toContainEqual(expect.objectContaining({ field: 'spec.containers[1].image', reason: 'FieldValueRequired' }));
    expect(causes).toContainEqual(expect.objectContaining({ field: 'spec.containers[2].ports[0].containerPort', reason: 'FieldValueInvalid' }));
  });

  it('checks volumes and their mounts', () => {
    const obj = created({
      containers: [{ name: 'a', image: 'x', volumeMounts: [{ name: 'missing', mountPath: '/m' }] }],
      volumes: [{ name: 'v', emptyDir: {}, hostPath: { path: '/tmp' } }, { name: 'v', configMap: { name: 'c' } }, { name: 'none' }],
    });
    const f = fields(strategy.validate?.(obj) ?? []);
    expect(f).toEqual(
      expect.arrayContaining([
        'spec.containers[0].volumeMounts[0].name',
        'spec.volumes[0].emptyDir',
        'spec.volumes[1].name',
        'spec.volumes[2]',
      ]),
    );
  });

  it('rejects unsupported policies and bad quantities', () => {
    const obj = created({ restartPolicy: 'Sometimes', containers: [{ name: 'a', image: 'x', resources: { limits: { cpu: 'lots' } } }] });
    const causes = strategy.validate?.(obj) ?? [];
    expect(causes).toContainEqual(expect.objectContaining({ field: 'spec.restartPolicy', reason: 'FieldValueNotSupported' }));
    expect(causes).toContainEqual(expect.objectContaining({ field: 'spec.containers[0].resources.limits[cpu]' }));
  });

  describe('resources', () => {
    const validate = (resources: Record<string, unknown>): StatusCause[] => strategy.validate?.(created({ containers: [{ name: 'a', image: 'x', resources }] })) ?? [];
    const at = 'spec.containers[0].resources';

    it('a request above its limit is 422 naming the requests', () => {
      expect(validate({ limits: { memory: '1Gi' }, requests: { memory: '2Gi' } })).toEqual([
        { reason: 'FieldValueInvalid', field: `${at}.requests`, message: 'Invalid value: "2Gi": must be less than or equal to memory limit of 1Gi' },
      ]);
      expect(fields(validate({ limits: { cpu: '1' }, requests: { cpu: 2 } }))).toEqual([`${at}.requests`]);
      expect(validate({ limits: { cpu: '1', memory: '1Gi' }, requests: { cpu: '500m', memory: '1024Mi' } })).toEqual([]);
    });

    it('resource names must be standard for containers or follow the extended resource standard', () => {
      // Requests alone: limits would be copied into requests by defaulting, and each reported twice.
      expect(validate({ requests: { 'bad/resource/name': '1' } })).toEqual([
        expect.objectContaining({ field: `${at}.requests[bad/resource/name]`, message: expect.stringContaining('a qualified name must consist of') }),
        { reason: 'FieldValueInvalid', field: `${at}.requests[bad/resource/name]`, message: 'Invalid value: "bad/resource/name": doesn\'t follow extended resource name standard' },
        { reason: 'FieldValueRequired', field: `${at}.limits`, message: 'Required value: Limit must be set for non overcommitable resources' },
      ]);
      expect(validate({ requests: { gpu: '1' } }).map((c) => c.message)).toEqual([
        'Invalid value: "gpu": must be a standard resource type or fully qualified',
        'Invalid value: "gpu": must be a standard resource for containers',
      ]);
      expect(validate({ requests: { pods: '1' } }).map((c) => c.message)).toEqual(['Invalid value: "pods": must be a standard resource for containers']);
      expect(fields(validate({ limits: { pods: '1' } }))).toEqual([`${at}.limits[pods]`, `${at}.requests[pods]`]);
      expect(validate({ limits: { 'example.com/gpu': '1' }, requests: { 'example.com/gpu': '1' } })).toEqual([]);
    });

    it('extended resources are whole numbers, requested exactly as limited', () => {
      expect(validate({ requests: { 'example.com/gpu': '1' } })).toEqual([{ reason: 'FieldValueRequired', field: `${at}.limits`, message: 'Required value: Limit must be set for non overcommitable resources' }]);
      expect(validate({ limits: { 'example.com/gpu': '2' }, requests: { 'example.com/gpu': '1' } }).map((c) => c.message)).toEqual(['Invalid value: "1": must be equal to example.com/gpu limit of 2']);
      expect(validate({ limits: { 'example.com/gpu': '500m' } })).toEqual([`${at}.limits[example.com/gpu]`, `${at}.requests[example.com/gpu]`].map((field) => ({ reason: 'FieldValueInvalid', field, message: 'Invalid value: "500m": must be an integer' })));
    });

    it('hugepages need cpu or memory beside them', () => {
      expect(validate({ limits: { 'hugepages-2Mi': '2Mi' } })).toEqual([{ reason: 'FieldValueForbidden', field: at, message: 'Forbidden: HugePages require cpu or memory' }]);
      expect(validate({ limits: { 'hugepages-2Mi': '2Mi', memory: '1Gi' } })).toEqual([]);
    });
  });

  describe('environment variables read from elsewhere', () => {
    const validate = (valueFrom: Record<string, unknown>): StatusCause[] => strategy.validate?.(created({ containers: [{ name: 'a', image: 'x', env: [{ name: 'A', valueFrom }] }] })) ?? [];
    const at = 'spec.containers[0].env[0].valueFrom';

    it('a key reference needs a valid name and key', () => {
      expect(fields(validate({ secretKeyRef: { key: 'k' } }))).toEqual([`${at}.secretKeyRef.name`]);
      expect(validate({ configMapKeyRef: { name: 'c', key: 'bad key!' } })).toEqual([expect.objectContaining({ field: `${at}.configMapKeyRef.key`, message: expect.stringContaining('a valid config key must consist of') })]);
      expect(validate({ secretKeyRef: { name: 's', key: 'k' } })).toEqual([]);
    });

    it('a field reference names a supported field, or a label or annotation by key', () => {
      expect(validate({ fieldRef: { fieldPath: 'spec.bogus' } })).toEqual([
        { reason: 'FieldValueNotSupported', field: `${at}.fieldRef.fieldPath`, message: expect.stringMatching(/^Unsupported value: "spec.bogus": supported values: "metadata.name", /) },
      ]);
      expect(validate({ fieldRef: { fieldPath: "metadata.labels['app']" } })).toEqual([]);
      expect(validate({ fieldRef: { fieldPath: 'status.podIP' } })).toEqual([]);
    });

    it('a resource reference names a supported resource', () => {
      expect(fields(validate({ resourceFieldRef: { resource: 'limits.bogus' } }))).toEqual([`${at}.resourceFieldRef.resource`]);
      expect(validate({ resourceFieldRef: { resource: 'limits.memory' } })).toEqual([]);
    });
  });

  it('a status write reports valid IP addresses', () => {
    const old = created({ containers: [{ name: 'a', image: 'x' }] });
    const withStatus = (status: Record<string, unknown>): ApiObject => ({ ...old, status: { ...(old['status'] as object), ...status } });
    const message = 'must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)';
    expect(strategy.validateUpdate?.(withStatus({ podIP: 'not-an-ip', hostIPs: [{ ip: '10.0.0.1' }, { ip: '10.0.0.300' }] }), old)).toEqual([
      { reason: 'FieldValueInvalid', field: 'status.podIP', message: `Invalid value: "not-an-ip": ${message}` },
      { reason: 'FieldValueInvalid', field: 'status.hostIPs[1]', message: `Invalid value: "10.0.0.300": ${message}` },
    ]);
    expect(strategy.validateUpdate?.(withStatus({ podIP: '10.1.2.3', podIPs: [{ ip: '10.1.2.3' }, { ip: 'fd00::1' }] }), old)).toEqual([]);
  });

  it('allows an image change but not other spec changes on update', () => {
    const old = created({ containers: [{ name: 'a', image: 'x:1' }] });
    const imageOnly = created({ containers: [{ name: 'a', image: 'x:2' }] });
    expect(strategy.validateUpdate?.(imageOnly, old)).toEqual([]);
    const renamed = created({ containers: [{ name: 'b', image: 'x:1' }] });
    expect(fields(strategy.validateUpdate?.(renamed, old) ?? [])).toEqual(['spec']);
  });

  it('allows adding tolerations but not removing them', () => {
    const toleration = { key: 'k', operator: 'Exists', effect: 'NoSchedule' };
    const old = created({ containers: [{ name: 'a', image: 'x' }], tolerations: [toleration] });
    const added = created({ containers: [{ name: 'a', image: 'x' }], tolerations: [toleration, { key: 'j', operator: 'Exists' }] });
    expect(strategy.validateUpdate?.(added, old)).toEqual([]);
    const removed = created({ containers: [{ name: 'a', image: 'x' }] });
    expect(fields(strategy.validateUpdate?.(removed, old) ?? [])).toContain('spec.tolerations');
  });
});

describe('pod table', () => {
  const columns = Object.fromEntries(pod.printerColumns.map((c) => [c.name, c]));

  it('shows readiness, status and restarts like kubectl', () => {
    const obj = newPod(
      { containers: [{ name: 'a' }, { name: 'b' }] },
      {
        status: {
          phase: 'Running',
          containerStatuses: [
            { name: 'a', ready: true, restartCount: 2, state: { running: {} } },
            { name: 'b', ready: false, restartCount: 1, state: { waiting: { reason: 'CrashLoopBackOff' } } },
          ],
        },
      },
    );
    expect(columns['Ready']?.compute?.(obj)).toBe('1/2');
    expect(columns['Status']?.compute?.(obj)).toBe('CrashLoopBackOff');
    expect(columns['Restarts']?.compute?.(obj)).toBe(3);
  });

  it('shows Terminating for a pod being deleted and init progress', () => {
    const deleting = newPod({ containers: [{ name: 'a' }] }, { status: { phase: 'Running' } });
    deleting.metadata = { ...deleting.metadata, deletionTimestamp: '2024-01-01T00:00:00Z' };
    expect(podDisplayStatus(deleting)).toBe('Terminating');
    const init = newPod(
      { initContainers: [{ name: 'i1' }, { name: 'i2' }], containers: [{ name: 'a' }] },
      { status: { phase: 'Pending', initContainerStatuses: [{ name: 'i1', state: { terminated: { exitCode: 0 } } }, { name: 'i2', state: { running: {} } }] } },
    );
    expect(podDisplayStatus(init)).toBe('Init:1/2');
  });
});
