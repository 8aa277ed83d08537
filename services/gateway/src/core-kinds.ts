import type { Schema } from '@svc/merge';
import { ResourceRegistry, STANDARD_VERBS, type ResourceDefinition } from '@svc/apimachinery';

/**
 * A minimal registration of the core kinds: object metadata is typed, the
 * rest of each kind is kept as sent. The full built-in kinds with their
 * schemas, defaults and validation live in their own package; this set keeps
 * the gateway usable on its own.
 */
const stringMap: Schema = { type: 'object', additionalProperties: { type: 'string' } };

export const OBJECT_META_SCHEMA: Schema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    generateName: { type: 'string' },
    namespace: { type: 'string' },
    uid: { type: 'string' },
    resourceVersion: { type: 'string' },
    generation: { type: 'integer' },
    creationTimestamp: { type: 'string', format: 'date-time' },
    deletionTimestamp: { type: 'string', format: 'date-time' },
    deletionGracePeriodSeconds: { type: 'integer' },
    labels: stringMap,
    annotations: stringMap,
    finalizers: { type: 'array', items: { type: 'string' } },
    ownerReferences: { type: 'array', items: { type: 'object', 'x-svc-preserve-unknown-fields': true } },
    managedFields: { type: 'array', items: { type: 'object', 'x-svc-preserve-unknown-fields': true } },
    selfLink: { type: 'string' },
  },
};

function objectSchema(fields: Record<string, Schema>): Schema {
  return {
    type: 'object',
    properties: { apiVersion: { type: 'string' }, kind: { type: 'string' }, metadata: OBJECT_META_SCHEMA, ...fields },
  };
}

const open: Schema = { type: 'object', 'x-svc-preserve-unknown-fields': true };

function core(kind: string, plural: string, namespaced: boolean, fields: Record<string, Schema>, extra: Partial<ResourceDefinition> = {}): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [],
    categories: [],
    namespaced,
    verbs: [...STANDARD_VERBS],
    subresources: [],
    schema: objectSchema(fields),
    printerColumns: [],
    strategy: {},
    openApiName: `io.svc.api.core.v1.${kind}`,
    allowUnconditionalUpdate: true,
    ...extra,
  };
}

export function coreKinds(): ResourceDefinition[] {
  return [
    core('Namespace', 'namespaces', false, { spec: open, status: open }, {
      shortNames: ['ns'],
      nameValidation: 'dns-label',
      subresources: [{ name: 'status', verbs: ['get', 'patch', 'update'] }],
      verbs: ['create', 'delete', 'get', 'list', 'patch', 'update', 'watch'],
      strategy: {
        prepareForCreate: (obj) => {
          obj['status'] = { phase: 'Active' };
        },
        prepareForUpdate: (obj, old) => {
          obj['status'] = old['status'];
        },
      },
    }),
    core('ConfigMap', 'configmaps', true, { data: stringMap, binaryData: stringMap, immutable: { type: 'boolean' } }, { shortNames: ['cm'] }),
    core('Secret', 'secrets', true, { data: stringMap, stringData: stringMap, type: { type: 'string' }, immutable: { type: 'boolean' } }),
    core('ServiceAccount', 'serviceaccounts', true, { secrets: { type: 'array', items: open }, imagePullSecrets: { type: 'array', items: open }, automountServiceAccountToken: { type: 'boolean' } }, { shortNames: ['sa'] }),
    core('Pod', 'pods', true, { spec: open, status: open }, { shortNames: ['po'], categories: ['all'], subresources: [{ name: 'status', verbs: ['get', 'patch', 'update'] }] }),
    core('Service', 'services', true, { spec: open, status: open }, { shortNames: ['svc'], categories: ['all'], subresources: [{ name: 'status', verbs: ['get', 'patch', 'update'] }] }),
    core('Node', 'nodes', false, { spec: open, status: open }, { shortNames: ['no'], subresources: [{ name: 'status', verbs: ['get', 'patch', 'update'] }] }),
    core('Endpoints', 'endpoints', true, { subsets: { type: 'array', items: open } }, { shortNames: ['ep'], singular: 'endpoints' }),
    core('Event', 'events', true, {
      involvedObject: open, reason: { type: 'string' }, message: { type: 'string' }, source: open, firstTimestamp: { type: 'string' }, lastTimestamp: { type: 'string' },
      count: { type: 'integer' }, type: { type: 'string' }, eventTime: { type: 'string' }, series: open, action: { type: 'string' }, related: open,
      reportingComponent: { type: 'string' }, reportingInstance: { type: 'string' },
    }, { shortNames: ['ev'] }),
    {
      ...core('Lease', 'leases', true, { spec: open }),
      group: 'coordination.svc.io',
      openApiName: 'io.svc.api.coordination.v1.Lease',
    },
  ];
}

export function coreRegistry(): ResourceRegistry {
  const registry = new ResourceRegistry();
  for (const def of coreKinds()) registry.add(def);
  return registry;
}
