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
