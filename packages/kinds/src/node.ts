import type { ApiObject, PrinterColumn, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import { indexPath, invalid, notSupported, required } from './field-errors';
import { asList, asRecord, asString, isRecord, type Fields } from './object-access';
import { objectSchema } from './object-meta';
import { atomicList, bool, freeForm, int32, int64, mapList, oneOf, resourceList, setList, str, struct, time } from './schema-builders';
import { keepStatus } from './status';

/**
 * Node: a machine that runs pods. Unlike other kinds with a status
 * subresource, a node may be created with its status, as node agents
 * register themselves that way; updates through the main resource keep the
 * stored status.
 */

/** Label prefix of node roles, shown in the Roles column (`node-role.svc.io/control-plane`). */
export const NODE_ROLE_LABEL_PREFIX = 'node-role.svc.io/';

const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;

const TAINT = struct(
  {
    key: str('Taint key.'),
    value: str('Taint value.'),
    effect: oneOf([...TAINT_EFFECTS], 'Effect on pods that do not tolerate the taint.'),
    timeAdded: time('When a NoExecute taint was added.'),
  },
  { required: ['key', 'effect'], description: 'A taint repelling pods that do not tolerate it.' },
);

const NODE_CONDITION = struct(
  {
    type: str('Type of the condition, such as Ready or MemoryPressure.'),
    status: str('True, False or Unknown.'),
    lastHeartbeatTime: time('When the condition was last reported.'),
    lastTransitionTime: time('When the status last changed.'),
    reason: str('Programmatic reason for the last transition.'),
    message: str('Human-readable details.'),
  },
  { required: ['type', 'status'] },
);

export const NODE_SCHEMA = objectSchema('Node is a machine that runs pods.', {
  spec: struct(
    {
      podCIDR: str('Pod IP range assigned to the node.'),
      podCIDRs: setList(str(), 'Pod IP ranges assigned to the node, at most one per family.', true),
      providerID: str('ID of the node at its infrastructure provider.'),
      unschedulable: bool('Keep new pods off the node.'),
      taints: atomicList(TAINT, 'Taints of the node.'),
      configSource: freeForm('Deprecated: source of dynamic node agent configuration.'),
      externalID: str('Deprecated.'),
    },
    { description: 'Desired behaviour of the node.' },
  ),
  status: struct(
    {
      capacity: resourceList('Total resources of the node.'),
      allocatable: resourceList('Resources available for pods.'),
      phase: str('Deprecated lifecycle phase.'),
      conditions: mapList(NODE_CONDITION, ['type'], { mergeKey: 'type', description: 'Current observations of the node.' }),
      addresses: mapList(
        struct({ type: str('Hostname, InternalIP, ExternalIP, InternalDNS or ExternalDNS.'), address: str('The address.') }, { required: ['type', 'address'] }),
        ['type'],
        { mergeKey: 'type', description: 'Addresses of the node.' },
      ),
      daemonEndpoints: struct(
        { kubeletEndpoint: struct({ Port: int32('Port the node agent listens on.') }, { required: ['Port'] }) },
        { description: 'Endpoints of daemons running on the node.' },
      ),
      nodeInfo: struct(
        {
          machineID: str('Machine ID.'),
          systemUUID: str('System UUID.'),
          bootID: str('Boot ID.'),
          kernelVersion: str('Kernel version.'),
          osImage: str('Operating system image.'),
          containerRuntimeVersion: str('Container runtime and version.'),
          kubeletVersion: str('Version of the node agent.'),
          kubeProxyVersion: str('Deprecated: version of the node proxy.'),
          operatingSystem: str('Operating system.'),
          architecture: str('CPU architecture.'),
          swap: struct({ capacity: int64('Swap capacity in bytes.') }),
        },
        { description: 'General information about the node.' },
      ),
      images: atomicList(
        struct({ names: atomicList(str(), 'Names of the image.'), sizeBytes: int64('Size of the image.') }),
        'Images present on the node.',
      ),
      volumesInUse: atomicList(str(), 'Volumes in use on the node.'),
      volumesAttached: atomicList(
        struct({ name: str('Name of the volume.'), devicePath: str('Device path.') }, { required: ['name', 'devicePath'] }),
        'Volumes attached to the node.',
      ),
      config: freeForm('Status of dynamic node agent configuration.'),
      runtimeHandlers: atomicList(
        struct({ name: str('Handler name.'), features: struct({ recursiveReadOnlyMounts: bool(), userNamespaces: bool() }) }),
        'Runtime handlers available on the node.',
      ),
      features: struct({ supplementalGroupsPolicy: bool('Whether supplementalGroupsPolicy is supported.') }),
    },
    { description: 'Observed state of the node.' },
  ),
});

function validateNode(obj: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = asRecord(obj['spec']) ?? {};
  asList(spec['taints']).forEach((item, i) => {
    const taint = asRecord(item) ?? {};
    const p = indexPath('spec.taints', i);
    if (!asString(taint['key'])) causes.push(required(`${p}.key`));
    const effect = taint['effect'];
    if (effect === undefined || effect === '') causes.push(required(`${p}.effect`));
    else if (!(TAINT_EFFECTS as readonly unknown[]).includes(effect)) causes.push(notSupported(`${p}.effect`, effect, TAINT_EFFECTS));
  });
  const podCIDR = asString(spec['podCIDR']);
  const podCIDRs = asList(spec['podCIDRs']);
  if (podCIDR && podCIDRs.length > 0 && podCIDRs[0] !== podCIDR) causes.push(invalid('spec.podCIDRs', podCIDRs, 'first value must match `spec.podCIDR`'));
  return causes;
}

function validateNodeUpdate(obj: ApiObject, old: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const spec = asRecord(obj['spec']) ?? {};
  const oldSpec = asRecord(old['spec']) ?? {};
  const oldCIDR = asString(oldSpec['podCIDR']);
  if (oldCIDR && spec['podCIDR'] !== oldCIDR) causes.push(invalid('spec.podCIDR', spec['podCIDR'] ?? '', 'node updates may not change podCIDR except from "" to valid'));
  const oldProvider = asString(oldSpec['providerID']);
  if (oldProvider && spec['providerID'] !== oldProvider) causes.push(invalid('spec.providerID', spec['providerID'] ?? '', 'node updates may not change providerID except from "" to valid'));
  return causes;
}

function conditionStatus(obj: ApiObject): string {
  const status = asRecord(obj['status']) ?? {};
  const conditions = asList(status['conditions']).filter(isRecord);
  const ready = conditions.find((c) => c['type'] === 'Ready');
  const states = [ready === undefined ? 'Unknown' : ready['status'] === 'True' ? 'Ready' : ready['status'] === 'False' ? 'NotReady' : 'Unknown'];
  if ((asRecord(obj['spec']) ?? {})['unschedulable'] === true) states.push('SchedulingDisabled');
  return states.join(',');
}

function roles(obj: ApiObject): string {
  const labels = obj.metadata?.labels ?? {};
  const found = Object.keys(labels)
    .filter((k) => k.startsWith(NODE_ROLE_LABEL_PREFIX) && k.length > NODE_ROLE_LABEL_PREFIX.length)
    .map((k) => k.slice(NODE_ROLE_LABEL_PREFIX.length));
  return found.length > 0 ? found.sort().join(',') : '<none>';
}

function address(type: string): (obj: ApiObject) => string {
  return (obj) => {
    const addresses = asList(asRecord(obj['status'])?.['addresses']).filter(isRecord);
    return asString(addresses.find((a) => a['type'] === type)?.['address']) ?? '<none>';
  };
}

function nodeInfo(field: string): (obj: ApiObject) => string | null {
  return (obj) => {
    const info: Fields = asRecord(asRecord(obj['status'])?.['nodeInfo']) ?? {};
    return asString(info[field]) ?? null;
  };
}

const NODE_COLUMNS: PrinterColumn[] = [
  { name: 'Status', type: 'string', jsonPath: '.status.conditions', description: 'Readiness of the node.', compute: conditionStatus },
  { name: 'Roles', type: 'string', jsonPath: '.metadata.labels', description: 'Roles of the node, from its role labels.', compute: roles },
  { name: 'Version', type: 'string', jsonPath: '.status.nodeInfo.kubeletVersion', description: 'Version of the node agent.' },
  { name: 'Internal-IP', type: 'string', jsonPath: '.status.addresses', description: 'Internal address.', priority: 1, compute: address('InternalIP') },
  { name: 'External-IP', type: 'string', jsonPath: '.status.addresses', description: 'External address.', priority: 1, compute: address('ExternalIP') },
  { name: 'OS-Image', type: 'string', jsonPath: '.status.nodeInfo.osImage', description: 'Operating system image.', priority: 1, compute: nodeInfo('osImage') },
  { name: 'Kernel-Version', type: 'string', jsonPath: '.status.nodeInfo.kernelVersion', description: 'Kernel version.', priority: 1, compute: nodeInfo('kernelVersion') },
  {
    name: 'Container-Runtime',
    type: 'string',
    jsonPath: '.status.nodeInfo.containerRuntimeVersion',
    description: 'Container runtime.',
    priority: 1,
    compute: nodeInfo('containerRuntimeVersion'),
  },
];

export function nodeDefinition(): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind: 'Node',
    listKind: 'NodeList',
    plural: 'nodes',
    singular: 'node',
    shortNames: ['no'],
    categories: [],
    namespaced: false,
    verbs: [...STANDARD_VERBS],
    subresources: [{ name: 'status', verbs: ['get', 'patch', 'update'] }],
    schema: NODE_SCHEMA,
    printerColumns: NODE_COLUMNS,
    strategy: {
      prepareForUpdate: keepStatus,
      validate: validateNode,
      validateUpdate: validateNodeUpdate,
    },
    openApiName: 'io.svc.api.core.v1.Node',
    allowUnconditionalUpdate: true,
  };
}
