import { isIP } from 'node:net';
import type { ApiObject, PrinterColumn, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import {
  dnsLabelErrors,
  dnsSubdomainErrors,
  duplicate,
  forbidden,
  indexPath,
  invalid,
  ipAddressErrors,
  isPortNumber,
  notSupported,
  portNumberOrNameErrors,
  required,
} from './field-errors';
import { asList, asNumber, asRecord, asString, deepEqual, isRecord, setDefault, type Fields } from './object-access';
import { conditionList, objectSchema } from './object-meta';
import { PROTOCOLS } from './pod';
import { atomicList, bool, defaulted, int32, intOrString, mapList, oneOf, str, stringMap, struct } from './schema-builders';
import { keepStatus, resetStatus } from './status';

/**
 * Service: a stable name and virtual IP for a set of pods. Address
 * allocation belongs to the platform; the strategy defaults and validates
 * what the client writes.
 */

export const SERVICE_TYPES = ['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'] as const;
const AFFINITIES = ['None', 'ClientIP'] as const;
const TRAFFIC_POLICIES = ['Cluster', 'Local'] as const;
const IP_FAMILY_POLICIES = ['SingleStack', 'PreferDualStack', 'RequireDualStack'] as const;
const IP_FAMILIES = ['IPv4', 'IPv6'] as const;

export const SERVICE_PORT_SCHEMA = struct(
  {
    name: str('Name of the port, a DNS label; required and unique when the service has more than one port.'),
    protocol: defaulted(oneOf([...PROTOCOLS], 'IP protocol of the port; defaults to TCP.'), 'TCP'),
    appProtocol: str('Application protocol of the port, such as `http` or a prefixed name.'),
    port: int32('Port the service exposes, 1–65535.'),
    targetPort: intOrString('Port number or named container port on the pods; defaults to `port`.'),
    nodePort: int32('Port on every node for NodePort and LoadBalancer services; allocated when unset.'),
  },
  { required: ['port'], description: 'A port the service exposes.' },
);

const LOAD_BALANCER_INGRESS = struct(
  {
    ip: str('IP of the load balancer.'),
    hostname: str('Host name of the load balancer.'),
    ipMode: oneOf(['VIP', 'Proxy'], 'How traffic reaches the load balancer IP.'),
    ports: atomicList(
      struct(
        { port: int32('Port number.'), protocol: oneOf([...PROTOCOLS], 'Protocol.'), error: str('Error of the port, if any.') },
        { required: ['port', 'protocol'] },
      ),
      'Status of each port.',
    ),
  },
  { description: 'An ingress point of a load balancer.' },
);

export const SERVICE_SCHEMA = objectSchema('Service gives a set of pods a stable name and address.', {
  spec: struct(
    {
      ports: mapList(SERVICE_PORT_SCHEMA, ['port', 'protocol'], { mergeKey: 'port', description: 'Ports the service exposes.' }),
      selector: stringMap('Labels of the pods traffic is routed to; endpoints are managed by hand when empty.', true),
      clusterIP: str('Virtual IP of the service; `None` makes a headless service. Allocated when unset; cannot be changed.'),
      clusterIPs: atomicList(str(), 'Virtual IPs of the service, at most one per IP family; the first equals clusterIP.'),
      type: oneOf([...SERVICE_TYPES], 'How the service is exposed; defaults to ClusterIP.'),
      externalIPs: atomicList(str(), 'External IPs nodes accept traffic for.'),
      sessionAffinity: oneOf([...AFFINITIES], 'ClientIP keeps a client on one pod; defaults to None.'),
      loadBalancerIP: str('Deprecated: requested load balancer IP.'),
      loadBalancerSourceRanges: atomicList(str(), 'Client CIDRs allowed to reach a load balancer.'),
      externalName: str('DNS name the service aliases, for type ExternalName.'),
      externalTrafficPolicy: oneOf([...TRAFFIC_POLICIES], 'How external traffic is routed to node-local or cluster-wide endpoints.'),
      healthCheckNodePort: int32('Health check node port for load balancers with the Local traffic policy.'),
      publishNotReadyAddresses: bool('Publish addresses of pods that are not ready.'),
      sessionAffinityConfig: struct(
        { clientIP: struct({ timeoutSeconds: int32('Seconds a ClientIP affinity lasts; defaults to 10800.') }) },
        { description: 'Settings of session affinity.' },
      ),
      ipFamilies: atomicList(oneOf([...IP_FAMILIES]), 'IP families of the service, in order.'),
      ipFamilyPolicy: oneOf([...IP_FAMILY_POLICIES], 'Whether the service is single- or dual-stack.'),
      allocateLoadBalancerNodePorts: bool('Whether node ports are allocated for a LoadBalancer service; defaults to true.'),
      loadBalancerClass: str('Load balancer implementation the service belongs to.'),
      internalTrafficPolicy: oneOf([...TRAFFIC_POLICIES], 'How cluster-internal traffic is routed.'),
      trafficDistribution: str('Preference for how traffic is distributed among endpoints.'),
    },
    { description: 'Desired behaviour of the service.' },
  ),
  status: struct(
    {
      loadBalancer: struct({ ingress: atomicList(LOAD_BALANCER_INGRESS, 'Ingress points of the load balancer.') }, { description: 'Status of the load balancer, if any.' }),
      conditions: conditionList('Current observations of the service.'),
    },
    { description: 'Observed state of the service. Written through the status subresource.' },
  ),
});

function specOf(obj: ApiObject): Fields {
  return asRecord(obj['spec']) ?? {};
}

export function applyServiceDefaults(obj: ApiObject): void {
  const spec = asRecord(obj['spec']);
  if (!spec) return;
  setDefault(spec, 'type', 'ClusterIP');
  setDefault(spec, 'sessionAffinity', 'None');
  if (spec['type'] !== 'ExternalName') setDefault(spec, 'internalTrafficPolicy', 'Cluster');
  if (spec['type'] === 'NodePort' || spec['type'] === 'LoadBalancer') setDefault(spec, 'externalTrafficPolicy', 'Cluster');
  if (spec['type'] === 'LoadBalancer') setDefault(spec, 'allocateLoadBalancerNodePorts', true);
  if (spec['sessionAffinity'] === 'ClientIP') {
    const config = isRecord(spec['sessionAffinityConfig']) ? spec['sessionAffinityConfig'] : {};
    const clientIP = isRecord(config['clientIP']) ? config['clientIP'] : {};
    setDefault(clientIP, 'timeoutSeconds', 10800);
    config['clientIP'] = clientIP;
    spec['sessionAffinityConfig'] = config;
  }
  for (const port of asList(spec['ports'])) {
    if (!isRecord(port)) continue;
    setDefault(port, 'protocol', 'TCP');
    if (port['targetPort'] === undefined || port['targetPort'] === null || port['targetPort'] === 0 || port['targetPort'] === '') {
      port['targetPort'] = port['port'];
    }
  }
}

/** The original's default --service-node-port-range: node ports a client may ask for. */
const NODE_PORT_RANGE = { min: 30000, max: 32767 };

function validatePorts(spec: Fields, type: unknown): StatusCause[] {
  const causes: StatusCause[] = [];
  const ports = asList(spec['ports']);
  const headless = spec['clusterIP'] === 'None';
  if (ports.length === 0 && type !== 'ExternalName' && !headless) causes.push(required('spec.ports'));
  const names = new Set<string>();
  const keys = new Set<string>();
  const nodePorts = new Set<string>();
  ports.forEach((item, i) => {
    const port = asRecord(item) ?? {};
    const p = indexPath('spec.ports', i);
    const name = asString(port['name']) ?? '';
    if (ports.length > 1 && name === '') causes.push(required(`${p}.name`));
    if (name !== '') {
      // A DNS-1123 label, as the original checks (kubectl names ports `80-80`).
      causes.push(...dnsLabelErrors(`${p}.name`, name));
      if (names.has(name)) causes.push(duplicate(`${p}.name`, name));
      names.add(name);
    }
    const number = port['port'];
    if (number === undefined) causes.push(required(`${p}.port`));
    else if (!isPortNumber(number)) causes.push(invalid(`${p}.port`, number, 'must be between 1 and 65535, inclusive'));
    const protocol = port['protocol'];
    if (protocol === undefined || protocol === '') causes.push(required(`${p}.protocol`));
    else if (!(PROTOCOLS as readonly unknown[]).includes(protocol)) causes.push(notSupported(`${p}.protocol`, protocol, PROTOCOLS));
    const key = `${String(number)}/${String(protocol)}`;
    if (keys.has(key)) causes.push(duplicate(p, { port: number, protocol }));
    keys.add(key);
    if (port['targetPort'] !== undefined) causes.push(...portNumberOrNameErrors(`${p}.targetPort`, port['targetPort']));
    const nodePort = port['nodePort'];
    if (nodePort !== undefined && nodePort !== 0) {
      if (type !== 'NodePort' && type !== 'LoadBalancer') causes.push(forbidden(`${p}.nodePort`, 'may not be used when `type` is \'ClusterIP\''));
      else if (!isPortNumber(nodePort)) causes.push(invalid(`${p}.nodePort`, nodePort, 'must be between 1 and 65535, inclusive'));
      else if (nodePort < NODE_PORT_RANGE.min || nodePort > NODE_PORT_RANGE.max) {
        causes.push(invalid(`${p}.nodePort`, nodePort, `provided port is not in the valid range. The range of valid ports is ${NODE_PORT_RANGE.min}-${NODE_PORT_RANGE.max}`));
      }
      const nodeKey = `${String(protocol)}/${String(nodePort)}`;
      if (nodePorts.has(nodeKey)) causes.push(duplicate(`${p}.nodePort`, nodePort));
      nodePorts.add(nodeKey);
    }
  });
  return causes;
}

export function validateService(obj: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  // Service names become DNS names of the service, which must start with a letter
  // (the generic DNS-label check of metadata.name runs elsewhere).
  const name = obj.metadata?.name;
  if (name && !/^[a-z]/.test(name)) causes.push(invalid('metadata.name', name, 'a DNS-1035 label must start with an alphabetic character'));
  const spec = asRecord(obj['spec']);
  if (!spec) return [...causes, required('spec')];
  const type = spec['type'];
  if (!(SERVICE_TYPES as readonly unknown[]).includes(type)) causes.push(type === undefined ? required('spec.type') : notSupported('spec.type', type, SERVICE_TYPES));
  causes.push(...validatePorts(spec, type));
  if (type === 'ExternalName') {
    const externalName = asString(spec['externalName']);
    if (!externalName) causes.push(required('spec.externalName'));
    else causes.push(...dnsSubdomainErrors('spec.externalName', externalName.replace(/\.$/, '')));
    const clusterIP = asString(spec['clusterIP']);
    if (clusterIP) causes.push(forbidden('spec.clusterIP', 'may not be set for ExternalName services'));
  }
  const affinity = spec['sessionAffinity'];
  if (affinity !== undefined && !(AFFINITIES as readonly unknown[]).includes(affinity)) causes.push(notSupported('spec.sessionAffinity', affinity, AFFINITIES));
  for (const field of ['externalTrafficPolicy', 'internalTrafficPolicy']) {
    const v = spec[field];
    if (v !== undefined && !(TRAFFIC_POLICIES as readonly unknown[]).includes(v)) causes.push(notSupported(`spec.${field}`, v, TRAFFIC_POLICIES));
  }
  if (spec['externalTrafficPolicy'] !== undefined && type !== 'NodePort' && type !== 'LoadBalancer') {
    causes.push(invalid('spec.externalTrafficPolicy', spec['externalTrafficPolicy'], 'may only be set when `type` is \'NodePort\' or \'LoadBalancer\''));
  }
  const policy = spec['ipFamilyPolicy'];
  if (policy !== undefined && !(IP_FAMILY_POLICIES as readonly unknown[]).includes(policy)) causes.push(notSupported('spec.ipFamilyPolicy', policy, IP_FAMILY_POLICIES));
  asList(spec['ipFamilies']).forEach((f, i) => {
    if (!(IP_FAMILIES as readonly unknown[]).includes(f)) causes.push(notSupported(indexPath('spec.ipFamilies', i), f, IP_FAMILIES));
  });
  const clusterIP = asString(spec['clusterIP']);
  const clusterIPs = asList(spec['clusterIPs']);
  if (clusterIP && clusterIPs.length > 0 && clusterIPs[0] !== clusterIP) {
    causes.push(invalid('spec.clusterIPs', clusterIPs, 'first value must match `spec.clusterIP`'));
  }
  const timeout = asNumber(asRecord(asRecord(spec['sessionAffinityConfig'])?.['clientIP'])?.['timeoutSeconds']);
  if (timeout !== undefined && (timeout <= 0 || timeout > 86400)) {
    causes.push(invalid('spec.sessionAffinityConfig.clientIP.timeoutSeconds', timeout, 'must be greater than 0 and less than 86400'));
  }
  return causes;
}

function clusterIPsOf(spec: Fields): string[] {
  return asList(spec['clusterIPs']).map((ip) => String(ip));
}

/** `clusterIPs`, or for an object written without them `[clusterIP]`. */
function effectiveClusterIPs(spec: Fields): string[] {
  const ips = clusterIPsOf(spec);
  const ip = asString(spec['clusterIP']);
  return ips.length === 0 && ip ? [ip] : ips;
}

function sameClusterIPs(a: Fields, b: Fields): boolean {
  return JSON.stringify(clusterIPsOf(a)) === JSON.stringify(clusterIPsOf(b));
}

/**
 * What a client meant by the linked `clusterIP` and `clusterIPs`, as the
 * original reads them before validation: an old client that sends only
 * `clusterIP` gets `clusterIPs` to match; on update, a body without
 * `clusterIPs` keeps the stored ones, and a changed `clusterIP` with the
 * stored `clusterIPs` stands for a changed first address (which validation
 * then refuses).
 */
export function normalizeClusterIPs(obj: ApiObject, old?: ApiObject): void {
  const spec = asRecord(obj['spec']);
  if (!spec) return;
  const ip = asString(spec['clusterIP']) ?? '';
  if (!old) {
    if (ip && clusterIPsOf(spec).length === 0) spec['clusterIPs'] = [ip];
    return;
  }
  const oldSpec = specOf(old);
  const oldIP = asString(oldSpec['clusterIP']) ?? '';
  if (clusterIPsOf(oldSpec).length > 0 && clusterIPsOf(spec).length === 0 && oldIP === ip) spec['clusterIPs'] = clusterIPsOf(oldSpec);
  if (oldIP === ip || !sameClusterIPs(oldSpec, spec)) return;
  if (oldIP && !ip) delete spec['clusterIPs'];
  else spec['clusterIPs'] = [ip];
}

/**
 * The addresses are immutable once allocated (except to or from
 * ExternalName, or between headless states): a secondary address may be
 * added or released, the primary neither changed nor unset. Errors name
 * `spec.clusterIPs[i]`, as the original's.
 */
/**
 * The load balancer a status write reports (the original's
 * ValidateLoadBalancerStatus): each ingress's ip a valid IP address, its
 * hostname a DNS name that is not an address. Only a changed status is judged.
 */
function loadBalancerStatusErrors(obj: ApiObject, old: ApiObject): StatusCause[] {
  const balancer = asRecord(asRecord(obj['status'])?.['loadBalancer']);
  if (!balancer || deepEqual(balancer, asRecord(asRecord(old['status'])?.['loadBalancer']))) return [];
  return asList(balancer['ingress']).flatMap((item, i) => {
    const ingress = asRecord(item) ?? {};
    const at = indexPath('status.loadBalancer.ingress', i);
    const causes: StatusCause[] = [];
    const ip = asString(ingress['ip']) ?? '';
    if (ip !== '') causes.push(...ipAddressErrors(`${at}.ip`, ip));
    const hostname = asString(ingress['hostname']) ?? '';
    if (hostname !== '') {
      causes.push(...dnsSubdomainErrors(`${at}.hostname`, hostname));
      if (isIP(hostname) !== 0) causes.push(invalid(`${at}.hostname`, hostname, 'must be a DNS name, not an IP address'));
    }
    return causes;
  });
}

export function validateServiceUpdate(obj: ApiObject, old: ApiObject): StatusCause[] {
  return [...loadBalancerStatusErrors(obj, old), ...clusterIPUpdateErrors(obj, old)];
}

function clusterIPUpdateErrors(obj: ApiObject, old: ApiObject): StatusCause[] {
  const spec = specOf(obj);
  const oldSpec = specOf(old);
  if (spec['type'] === 'ExternalName' || oldSpec['type'] === 'ExternalName') return [];
  if (spec['clusterIP'] === 'None' && oldSpec['clusterIP'] === 'None') return [];
  const ips = effectiveClusterIPs(spec);
  const oldIPs = effectiveClusterIPs(oldSpec);
  const changed = (i: number) => invalid(indexPath('spec.clusterIPs', i), ips, 'may not change once set');
  if (oldIPs.length === ips.length) return oldIPs.flatMap((ip, i) => (ip !== ips[i] ? [changed(i)] : []));
  if (oldIPs.length > ips.length && ips.length === 0) return [invalid(indexPath('spec.clusterIPs', 0), ips, 'primary clusterIP can not be unset')];
  if (oldIPs.length > 0 && ips.length > 0 && oldIPs[0] !== ips[0]) return [changed(0)];
  return [];
}

function formatPorts(obj: ApiObject): string {
  const ports = asList(specOf(obj)['ports']).filter(isRecord);
  if (ports.length === 0) return '<none>';
  return ports
    .map((p) => {
      const protocol = asString(p['protocol']) ?? 'TCP';
      const nodePort = asNumber(p['nodePort']);
      return nodePort ? `${String(p['port'])}:${nodePort}/${protocol}` : `${String(p['port'])}/${protocol}`;
    })
    .join(',');
}

function externalIP(obj: ApiObject): string {
  const spec = specOf(obj);
  const external = asList(spec['externalIPs']).filter((ip): ip is string => typeof ip === 'string');
  switch (spec['type']) {
    case 'ExternalName':
      return asString(spec['externalName']) ?? '<none>';
    case 'LoadBalancer': {
      const ingress = asList(asRecord(asRecord(asRecord(obj['status'])?.['loadBalancer']))?.['ingress']).filter(isRecord);
      const addresses = [...ingress.map((i) => asString(i['ip']) ?? asString(i['hostname']) ?? ''), ...external].filter(Boolean);
      return addresses.length > 0 ? addresses.join(',') : '<pending>';
    }
    default:
      return external.length > 0 ? external.join(',') : '<none>';
  }
}

const SERVICE_COLUMNS: PrinterColumn[] = [
  { name: 'Type', type: 'string', jsonPath: '.spec.type', description: 'How the service is exposed.' },
  { name: 'Cluster-IP', type: 'string', jsonPath: '.spec.clusterIP', description: 'Virtual IP of the service.' },
  { name: 'External-IP', type: 'string', jsonPath: '.spec.externalIPs', description: 'Addresses reachable from outside the cluster.', compute: externalIP },
  { name: 'Port(s)', type: 'string', jsonPath: '.spec.ports', description: 'Ports the service exposes.', compute: formatPorts },
  {
    name: 'Selector',
    type: 'string',
    jsonPath: '.spec.selector',
    description: 'Labels of the pods the service routes to.',
    priority: 1,
    compute: (obj) => {
      const selector = asRecord(specOf(obj)['selector']) ?? {};
      const parts = Object.entries(selector).map(([k, v]) => `${k}=${String(v)}`);
      return parts.length > 0 ? parts.join(',') : '<none>';
    },
  },
];

export function serviceDefinition(): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind: 'Service',
    listKind: 'ServiceList',
    plural: 'services',
    singular: 'service',
    shortNames: ['svc'],
    categories: ['all'],
    namespaced: true,
    verbs: [...STANDARD_VERBS],
    subresources: [{ name: 'status', verbs: ['get', 'patch', 'update'] }],
    schema: SERVICE_SCHEMA,
    printerColumns: SERVICE_COLUMNS,
    strategy: {
      prepareForCreate: (obj) => {
        resetStatus(obj, { loadBalancer: {} });
        normalizeClusterIPs(obj);
      },
      prepareForUpdate: (obj, old) => {
        keepStatus(obj, old);
        normalizeClusterIPs(obj, old);
      },
      applyDefaults: applyServiceDefaults,
      validate: validateService,
      validateUpdate: validateServiceUpdate,
    },
    openApiName: 'io.svc.api.core.v1.Service',
    allowUnconditionalUpdate: true,
    nameValidation: 'dns-label',
  };
}
