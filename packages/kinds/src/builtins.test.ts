import { ResourceRegistry, checkAgainstSchema } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { builtinResources, registerBuiltins } from './builtins';

const defs = builtinResources();
const byPlural = new Map(defs.map((d) => [d.plural, d]));

function at(schema: Schema | undefined, path: string): Schema | undefined {
  let cur = schema;
  for (const part of path.split('.')) {
    if (part === '[]') cur = cur?.items;
    else cur = cur?.properties?.[part];
  }
  return cur;
}

/** Every node of a structural schema says what it holds. */
function structuralProblems(schema: Schema, path: string): string[] {
  const problems: string[] = [];
  if (schema.type === 'array' && !schema.items) problems.push(`${path}: array without items`);
  if (schema['x-svc-list-type'] === 'map' && !(schema['x-svc-list-map-keys'] ?? []).length) problems.push(`${path}: map list without keys`);
  for (const key of schema['x-svc-list-map-keys'] ?? []) {
    if (!schema.items?.properties?.[key]) problems.push(`${path}: list map key ${key} is not a field`);
  }
  if (schema['x-svc-patch-merge-key'] && !schema.items?.properties?.[schema['x-svc-patch-merge-key']]) problems.push(`${path}: merge key is not a field`);
  for (const [k, v] of Object.entries(schema.properties ?? {})) problems.push(...structuralProblems(v, `${path}.${k}`));
  if (schema.items) problems.push(...structuralProblems(schema.items, `${path}[]`));
  if (typeof schema.additionalProperties === 'object') problems.push(...structuralProblems(schema.additionalProperties, `${path}{}`));
  return problems;
}

describe('builtinResources', () => {
  it('describes the built-in kinds with upstream names', () => {
    expect(defs.map((d) => `${d.group}/${d.version}/${d.plural}:${d.kind}`)).toEqual([
      '/v1/namespaces:Namespace',
      '/v1/configmaps:ConfigMap',
      '/v1/secrets:Secret',
      '/v1/serviceaccounts:ServiceAccount',
      '/v1/pods:Pod',
      '/v1/services:Service',
      '/v1/nodes:Node',
      '/v1/endpoints:Endpoints',
      '/v1/events:Event',
      'coordination.svc.io/v1/leases:Lease',
      'policy/v1/poddisruptionbudgets:PodDisruptionBudget',
      'authentication.svc.io/v1/tokenreviews:TokenReview',
      'authentication.svc.io/v1/selfsubjectreviews:SelfSubjectReview',
      'authentication.svc.io/v1beta1/tokenreviews:TokenReview',
      'authentication.svc.io/v1beta1/selfsubjectreviews:SelfSubjectReview',
      'rbac.authorization.svc.io/v1/clusterroles:ClusterRole',
      'rbac.authorization.svc.io/v1/clusterrolebindings:ClusterRoleBinding',
      'rbac.authorization.svc.io/v1/roles:Role',
      'rbac.authorization.svc.io/v1/rolebindings:RoleBinding',
      'authorization.svc.io/v1/subjectaccessreviews:SubjectAccessReview',
      'authorization.svc.io/v1/localsubjectaccessreviews:LocalSubjectAccessReview',
      'authorization.svc.io/v1/selfsubjectaccessreviews:SelfSubjectAccessReview',
      'authorization.svc.io/v1/selfsubjectrulesreviews:SelfSubjectRulesReview',
      'admissionregistration.svc.io/v1/mutatingwebhookconfigurations:MutatingWebhookConfiguration',
      'admissionregistration.svc.io/v1/validatingwebhookconfigurations:ValidatingWebhookConfiguration',
      'admissionregistration.svc.io/v1/validatingadmissionpolicies:ValidatingAdmissionPolicy',
      'admissionregistration.svc.io/v1/validatingadmissionpolicybindings:ValidatingAdmissionPolicyBinding',
      'events.svc.io/v1/events:Event',
      'flowcontrol.svc.io/v1/flowschemas:FlowSchema',
      'flowcontrol.svc.io/v1/prioritylevelconfigurations:PriorityLevelConfiguration',
      'apiextensions.svc.io/v1/customresourcedefinitions:CustomResourceDefinition',
    ]);
    expect(Object.fromEntries(defs.map((d) => [d.plural, d.shortNames]))).toEqual({
      namespaces: ['ns'],
      configmaps: ['cm'],
      secrets: [],
      selfsubjectreviews: [],
      tokenreviews: [],
      clusterroles: [],
      clusterrolebindings: [],
      roles: [],
      rolebindings: [],
      subjectaccessreviews: [],
      localsubjectaccessreviews: [],
      selfsubjectaccessreviews: [],
      selfsubjectrulesreviews: [],
      serviceaccounts: ['sa'],
      pods: ['po'],
      services: ['svc'],
      nodes: ['no'],
      endpoints: ['ep'],
      events: ['ev'],
      leases: [],
      poddisruptionbudgets: ['pdb'],
      mutatingwebhookconfigurations: [],
      validatingwebhookconfigurations: [],
      validatingadmissionpolicies: [],
      validatingadmissionpolicybindings: [],
      flowschemas: [],
      prioritylevelconfigurations: [],
      customresourcedefinitions: ['crd', 'crds'],
    });
    expect(defs.filter((d) => d.categories.includes('all')).map((d) => d.plural)).toEqual(['pods', 'services']);
    expect(defs.filter((d) => !d.namespaced && !d.virtual).map((d) => d.plural)).toEqual([
      'namespaces',
      'nodes',
      'clusterroles',
      'clusterrolebindings',
      'mutatingwebhookconfigurations',
      'validatingwebhookconfigurations',
      'validatingadmissionpolicies',
      'validatingadmissionpolicybindings',
      'flowschemas',
      'prioritylevelconfigurations',
      'customresourcedefinitions',
    ]);
    expect(defs.filter((d) => d.virtual).every((d) => d.verbs.join() === 'create')).toBe(true);
    for (const d of defs) {
      expect(d.listKind).toBe(`${d.kind}List`);
      expect(d.openApiName).toBe(`io.svc.api.${d.group ? d.group.split('.')[0] : 'core'}.${d.version}.${d.kind}`);
    }
  });

  it('gives status subresources to the kinds that have one', () => {
    const withStatus = defs.filter((d) => d.subresources.some((s) => s.name === 'status')).map((d) => d.plural);
    expect(withStatus).toEqual(['namespaces', 'pods', 'services', 'nodes', 'poddisruptionbudgets', 'validatingadmissionpolicies', 'flowschemas', 'prioritylevelconfigurations', 'customresourcedefinitions']);
  });

  it('has structural schemas with consistent merge markers', () => {
    for (const d of defs) {
      expect(structuralProblems(d.schema, d.kind)).toEqual([]);
      expect(Object.keys(d.schema.properties ?? {}).slice(0, 3)).toEqual(['apiVersion', 'kind', 'metadata']);
    }
  });

  it('declares the upstream merge markers', () => {
    const pod = byPlural.get('pods')?.schema;
    expect(at(pod, 'spec.containers')).toMatchObject({ 'x-svc-list-type': 'map', 'x-svc-list-map-keys': ['name'], 'x-svc-patch-merge-key': 'name', 'x-svc-patch-strategy': 'merge' });
    expect(at(pod, 'spec.containers.[].ports')).toMatchObject({ 'x-svc-list-map-keys': ['containerPort', 'protocol'], 'x-svc-patch-merge-key': 'containerPort' });
    expect(at(pod, 'spec.containers.[].env')).toMatchObject({ 'x-svc-list-map-keys': ['name'], 'x-svc-patch-merge-key': 'name' });
    expect(at(pod, 'spec.volumes')).toMatchObject({ 'x-svc-patch-strategy': 'merge,retainKeys', 'x-svc-patch-merge-key': 'name' });
    expect(at(pod, 'spec.tolerations')).toMatchObject({ 'x-svc-list-type': 'atomic' });
    expect(at(pod, 'spec.containers.[].command')).toMatchObject({ 'x-svc-list-type': 'atomic' });
    expect(at(pod, 'metadata.finalizers')).toMatchObject({ 'x-svc-list-type': 'set', 'x-svc-patch-strategy': 'merge' });
    expect(at(pod, 'metadata.ownerReferences')).toMatchObject({ 'x-svc-list-type': 'map', 'x-svc-list-map-keys': ['uid'], 'x-svc-patch-merge-key': 'uid' });
    expect(at(pod, 'spec.nodeSelector')).toMatchObject({ 'x-svc-map-type': 'atomic' });
    const service = byPlural.get('services')?.schema;
    expect(at(service, 'spec.ports')).toMatchObject({ 'x-svc-list-map-keys': ['port', 'protocol'], 'x-svc-patch-merge-key': 'port' });
    expect(at(service, 'spec.ports.[].targetPort')).toMatchObject({ 'x-svc-int-or-string': true });
  });

  it('types a realistic pod manifest without unknown fields', () => {
    const pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'web', labels: { app: 'web' }, ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'rs', uid: 'u1', controller: true }] },
      spec: {
        initContainers: [{ name: 'init', image: 'busybox', command: ['sh', '-c', 'true'] }],
        containers: [
          {
            name: 'app',
            image: 'nginx:1.27',
            args: ['--port', '80'],
            ports: [{ containerPort: 80, name: 'http', protocol: 'TCP' }],
            env: [
              { name: 'A', value: '1' },
              { name: 'POD', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
              { name: 'S', valueFrom: { secretKeyRef: { name: 's', key: 'k' } } },
            ],
            envFrom: [{ configMapRef: { name: 'cm' } }],
            resources: { limits: { cpu: 0.5, memory: '128Mi' }, requests: { cpu: '250m' } },
            livenessProbe: { httpGet: { path: '/healthz', port: 'http' }, initialDelaySeconds: 3 },
            readinessProbe: { tcpSocket: { port: 80 } },
            startupProbe: { exec: { command: ['true'] } },
            lifecycle: { preStop: { exec: { command: ['sleep', '5'] } } },
            securityContext: { runAsNonRoot: true, capabilities: { drop: ['ALL'] }, seccompProfile: { type: 'RuntimeDefault' } },
            volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
          },
        ],
        volumes: [
          { name: 'data', persistentVolumeClaim: { claimName: 'pvc' } },
          { name: 'cfg', configMap: { name: 'cm', items: [{ key: 'a', path: 'a.txt' }] } },
          { name: 'tok', projected: { sources: [{ serviceAccountToken: { path: 'token', expirationSeconds: 3600 } }] } },
        ],
        affinity: {
          nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }] } },
          podAntiAffinity: { preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 10, podAffinityTerm: { topologyKey: 'host', labelSelector: { matchLabels: { app: 'web' } } } }] },
        },
        tolerations: [{ key: 'k', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 30 }],
        securityContext: { fsGroup: 2000, sysctls: [{ name: 'net.core.somaxconn', value: '1024' }] },
        topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'zone', whenUnsatisfiable: 'DoNotSchedule' }],
        imagePullSecrets: [{ name: 'reg' }],
        nodeSelector: { disk: 'ssd' },
      },
      status: {
        phase: 'Running',
        conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2024-01-01T00:00:00Z' }],
        podIPs: [{ ip: '10.0.0.5' }],
        containerStatuses: [{ name: 'app', ready: true, restartCount: 0, image: 'nginx', imageID: 'x', state: { running: { startedAt: '2024-01-01T00:00:00Z' } } }],
      },
    };
    const result = checkAgainstSchema(pod, byPlural.get('pods')?.schema);
    expect(result.unknownFields).toEqual([]);
    expect(result.typeErrors).toEqual([]);
  });

  it('reports mistyped and unknown fields of a config map', () => {
    const result = checkAgainstSchema({ metadata: { name: 'c' }, data: { a: 1 }, extra: true }, byPlural.get('configmaps')?.schema);
    expect(result.unknownFields).toEqual(['extra']);
    expect(result.typeErrors.map((c) => c.field)).toEqual(['data[a]']);
  });

  it('registers every kind in a registry', () => {
    const registry = new ResourceRegistry();
    registerBuiltins(registry);
    expect(registry.all()).toHaveLength(defs.length);
    expect(registry.lookup('coordination.svc.io', 'v1', 'leases')?.kind).toBe('Lease');
    expect(registry.lookupKind('', 'v1', 'ConfigMap')?.plural).toBe('configmaps');
  });
});
