import type { ApiObject, PrinterColumn, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { STANDARD_VERBS, compareQuantities, parseQuantity, type Quantity } from '@svc/apimachinery';
import {
  configKeyErrors,
  dnsLabelErrors,
  dnsSubdomainErrors,
  duplicate,
  forbidden,
  ianaServiceNameErrors,
  indexPath,
  invalid,
  ipAddressErrors,
  isPortNumber,
  keyPath,
  notSupported,
  qualifiedNameErrors,
  required,
} from './field-errors';
import { asList, asNumber, asRecord, asString, cloneJson, deepEqual, isRecord, setDefault, type Fields } from './object-access';
import { EVICTION_SCHEMA, POLICY_GROUP } from './pod-disruption-budget';
import { POD_SCHEMA } from './pod-schema';
import { keepStatus, resetStatus } from './status';

/**
 * Pod: containers scheduled together onto one node. Defaults and validation
 * follow the original server for the fields clients most rely on; status is
 * written through the `status` subresource.
 */

export const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'] as const;
export const DNS_POLICIES = ['ClusterFirstWithHostNet', 'ClusterFirst', 'Default', 'None'] as const;
export const PROTOCOLS = ['TCP', 'UDP', 'SCTP'] as const;
const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;
const PULL_POLICIES = ['Always', 'IfNotPresent', 'Never'] as const;
const DEFAULT_FILE_MODE = 0o644;
const QUANTITY = /^[+-]?(\d+(\.\d*)?|\.\d+)(([KMGTPE]i)|[numkMGTPE]|[eE][+-]?\d+)?$/;

const CONTAINER_LISTS = ['initContainers', 'containers', 'ephemeralContainers'] as const;

function containersOf(spec: Fields, list: (typeof CONTAINER_LISTS)[number]): Fields[] {
  return asList(spec[list]).filter(isRecord);
}

// ---- defaults --------------------------------------------------------------

/** `Always` for images without a tag or tagged `latest`, `IfNotPresent` otherwise (digests included). */
export function defaultPullPolicy(image: string): 'Always' | 'IfNotPresent' {
  if (image.includes('@')) return 'IfNotPresent';
  const lastSegment = image.slice(image.lastIndexOf('/') + 1);
  const colon = lastSegment.lastIndexOf(':');
  if (colon < 0) return 'Always';
  return lastSegment.slice(colon + 1) === 'latest' ? 'Always' : 'IfNotPresent';
}

function defaultProbe(probe: unknown): void {
  if (!isRecord(probe)) return;
  setDefault(probe, 'timeoutSeconds', 1);
  setDefault(probe, 'periodSeconds', 10);
  setDefault(probe, 'successThreshold', 1);
  setDefault(probe, 'failureThreshold', 3);
  const httpGet = asRecord(probe['httpGet']);
  if (httpGet) {
    setDefault(httpGet, 'path', '/');
    setDefault(httpGet, 'scheme', 'HTTP');
  }
}

function defaultContainer(container: Fields): void {
  setDefault(container, 'terminationMessagePath', '/dev/termination-log');
  setDefault(container, 'terminationMessagePolicy', 'File');
  const image = asString(container['image']);
  if (image !== undefined) setDefault(container, 'imagePullPolicy', defaultPullPolicy(image));
  for (const port of asList(container['ports'])) if (isRecord(port)) setDefault(port, 'protocol', 'TCP');
  for (const env of asList(container['env'])) {
    const fieldRef = asRecord(asRecord(asRecord(env)?.['valueFrom'])?.['fieldRef']);
    if (fieldRef) setDefault(fieldRef, 'apiVersion', 'v1');
  }
  const resources = asRecord(container['resources']);
  const limits = asRecord(resources?.['limits']);
  if (resources && limits && Object.keys(limits).length > 0) {
    // Requests default to the limits, resource by resource.
    const requests = isRecord(resources['requests']) ? resources['requests'] : {};
    for (const [name, value] of Object.entries(limits)) if (requests[name] === undefined) requests[name] = value;
    resources['requests'] = requests;
  }
  defaultProbe(container['livenessProbe']);
  defaultProbe(container['readinessProbe']);
  defaultProbe(container['startupProbe']);
}

function defaultVolume(volume: Fields): void {
  for (const source of ['secret', 'configMap', 'downwardAPI', 'projected']) {
    const s = asRecord(volume[source]);
    if (s) setDefault(s, 'defaultMode', DEFAULT_FILE_MODE);
  }
}

/**
 * The deprecated `serviceAccount` is an alias of `serviceAccountName`, as
 * the original's conversion keeps it: the name is taken from the alias when
 * only the alias is set, and the alias always shows the name (absent when
 * there is none), so a manifest naming either one describes the same pod.
 */
export function mirrorServiceAccount(spec: Fields): void {
  const name = spec['serviceAccountName'];
  const alias = spec['serviceAccount'];
  if ((name === undefined || name === null || name === '') && typeof alias === 'string' && alias !== '') spec['serviceAccountName'] = alias;
  const effective = spec['serviceAccountName'];
  if (typeof effective === 'string' && effective !== '') spec['serviceAccount'] = effective;
  else delete spec['serviceAccount'];
}

export function applyPodDefaults(obj: ApiObject): void {
  const spec = asRecord(obj['spec']);
  if (!spec) return;
  mirrorServiceAccount(spec);
  setDefault(spec, 'restartPolicy', 'Always');
  setDefault(spec, 'dnsPolicy', 'ClusterFirst');
  setDefault(spec, 'terminationGracePeriodSeconds', 30);
  setDefault(spec, 'schedulerName', 'default-scheduler');
  setDefault(spec, 'securityContext', {});
  setDefault(spec, 'enableServiceLinks', true);
  for (const list of CONTAINER_LISTS) for (const c of containersOf(spec, list)) defaultContainer(c);
  for (const volume of asList(spec['volumes'])) if (isRecord(volume)) defaultVolume(volume);
}

// ---- quality of service ----------------------------------------------------

/** The QoS class the original server derives from requests and limits. */
export function qosClass(spec: Fields): 'Guaranteed' | 'Burstable' | 'BestEffort' {
  const containers = [...containersOf(spec, 'initContainers'), ...containersOf(spec, 'containers')];
  let anySet = false;
  let guaranteed = containers.length > 0;
  for (const c of containers) {
    const resources = asRecord(c['resources']);
    const limits = asRecord(resources?.['limits']) ?? {};
    const requests = asRecord(resources?.['requests']) ?? {};
    const relevant = (m: Fields) => Object.keys(m).filter((k) => k === 'cpu' || k === 'memory');
    if (relevant(limits).length > 0 || relevant(requests).length > 0) anySet = true;
    for (const r of ['cpu', 'memory']) {
      if (limits[r] === undefined) guaranteed = false;
      else if (requests[r] !== undefined && String(requests[r]) !== String(limits[r])) guaranteed = false;
    }
  }
  if (!anySet) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

// ---- validation ------------------------------------------------------------

function validateQuantities(path: string, value: unknown): StatusCause[] {
  const causes: StatusCause[] = [];
  for (const [name, q] of Object.entries(asRecord(value) ?? {})) {
    const field = keyPath(path, name);
    if (typeof q === 'number') {
      if (q < 0) causes.push(invalid(field, q, 'must be greater than or equal to 0'));
    } else if (typeof q !== 'string' || !QUANTITY.test(q)) {
      causes.push(invalid(field, q, "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"));
    } else if (q.startsWith('-')) {
      causes.push(invalid(field, q, 'must be greater than or equal to 0'));
    }
  }
  return causes;
}

/** The resources a container may ask for by a bare name (hugepages-<size> besides). */
const STANDARD_CONTAINER_RESOURCES = new Set(['cpu', 'memory', 'ephemeral-storage']);
/** Bare resource names the original knows at all (quota's among them): anything else needs a domain. */
const STANDARD_RESOURCES = new Set([
  ...STANDARD_CONTAINER_RESOURCES,
  ...['cpu', 'memory', 'ephemeral-storage', 'storage'].flatMap((r) => [`requests.${r}`, `limits.${r}`]),
  'storage',
  'pods',
  'services',
  'replicationcontrollers',
  'resourcequotas',
  'secrets',
  'configmaps',
  'persistentvolumeclaims',
  'services.nodeports',
  'services.loadbalancers',
]);

const isHugePages = (name: string): boolean => name.startsWith('hugepages-');
/** Native: a bare name, or one in the kubernetes.io domain. */
const isNativeResource = (name: string): boolean => !name.includes('/') || name.includes('kubernetes.io/');
/** Extended: a domain-qualified name outside kubernetes.io that is a qualified name as `requests.<name>` too. */
function isExtendedResource(name: string): boolean {
  if (isNativeResource(name) || name.startsWith('requests.')) return false;
  return qualifiedNameErrors('', `requests.${name}`).length === 0;
}
/** Requests below the limit are allowed for native resources other than hugepages; the rest must request what they limit. */
const overcommitAllowed = (name: string): boolean => isNativeResource(name) && !isHugePages(name);

function resourceNameErrors(field: string, name: string): StatusCause[] {
  const causes = qualifiedNameErrors(field, name);
  const bare = !name.includes('/');
  if (causes.length === 0 && bare && !STANDARD_RESOURCES.has(name) && !isHugePages(name)) causes.push(invalid(field, name, 'must be a standard resource type or fully qualified'));
  if (bare) {
    if (!STANDARD_CONTAINER_RESOURCES.has(name) && !isHugePages(name)) causes.push(invalid(field, name, 'must be a standard resource for containers'));
  } else if (!isNativeResource(name) && !isExtendedResource(name)) {
    causes.push(invalid(field, name, "doesn't follow extended resource name standard"));
  }
  return causes;
}

/** A container's requests and limits (the original's validateResourceRequirements): names, values, and requests within limits. */
function validateResources(path: string, resources: Fields): StatusCause[] {
  const limits = asRecord(resources['limits']) ?? {};
  const requests = asRecord(resources['requests']) ?? {};
  const causes = [...validateQuantities(`${path}.limits`, limits), ...validateQuantities(`${path}.requests`, requests)];
  const parsed = (q: unknown): Quantity | undefined => (typeof q === 'string' || typeof q === 'number' ? parseQuantity(String(q)) : undefined);
  const check = (kind: 'limits' | 'requests', list: Fields): void => {
    for (const [name, q] of Object.entries(list)) {
      const field = keyPath(`${path}.${kind}`, name);
      causes.push(...resourceNameErrors(field, name));
      const value = parsed(q);
      if (value && isExtendedResource(name) && value.exponent < 0 && value.coefficient !== 0n) causes.push(invalid(field, q, 'must be an integer'));
    }
  };
  check('limits', limits);
  check('requests', requests);
  for (const [name, q] of Object.entries(requests)) {
    const request = parsed(q);
    if (!request) continue;
    if (limits[name] === undefined) {
      if (!overcommitAllowed(name)) causes.push(required(`${path}.limits`, 'Limit must be set for non overcommitable resources'));
      continue;
    }
    const limit = parsed(limits[name]);
    if (!limit) continue;
    const order = compareQuantities(request, limit);
    if (order !== 0 && !overcommitAllowed(name)) causes.push(invalid(`${path}.requests`, String(q), `must be equal to ${name} limit of ${String(limits[name])}`));
    else if (order > 0) causes.push(invalid(`${path}.requests`, String(q), `must be less than or equal to ${name} limit of ${String(limits[name])}`));
  }
  const names = [...Object.keys(limits), ...Object.keys(requests)];
  if (names.some(isHugePages) && !names.some((n) => n === 'cpu' || n === 'memory')) causes.push(forbidden(path, 'HugePages require cpu or memory'));
  return causes;
}

function validatePorts(path: string, container: Fields, portNames: Set<string>): StatusCause[] {
  const causes: StatusCause[] = [];
  asList(container['ports']).forEach((item, i) => {
    const port = asRecord(item) ?? {};
    const p = indexPath(path, i);
    const name = asString(port['name']);
    if (name) {
      causes.push(...ianaServiceNameErrors(`${p}.name`, name));
      if (portNames.has(name)) causes.push(duplicate(`${p}.name`, name));
      portNames.add(name);
    }
    if (port['containerPort'] === undefined) causes.push(required(`${p}.containerPort`));
    else if (!isPortNumber(port['containerPort'])) causes.push(invalid(`${p}.containerPort`, port['containerPort'], 'must be between 1 and 65535, inclusive'));
    const hostPort = port['hostPort'];
    if (hostPort !== undefined && hostPort !== 0 && !isPortNumber(hostPort)) causes.push(invalid(`${p}.hostPort`, hostPort, 'must be between 1 and 65535, inclusive'));
    const protocol = port['protocol'];
    if (protocol === undefined || protocol === '') causes.push(required(`${p}.protocol`));
    else if (!(PROTOCOLS as readonly unknown[]).includes(protocol)) causes.push(notSupported(`${p}.protocol`, protocol, PROTOCOLS));
  });
  return causes;
}

/** Fields of the pod an environment variable may be read from (labels and annotations by key besides). */
const ENV_FIELD_PATHS = ['metadata.name', 'metadata.namespace', 'metadata.uid', 'spec.nodeName', 'spec.serviceAccountName', 'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs'];
/** Resources of the container an environment variable may be read from (hugepages-<size> besides). */
const ENV_RESOURCE_FIELDS = ['limits.cpu', 'limits.ephemeral-storage', 'limits.memory', 'requests.cpu', 'requests.ephemeral-storage', 'requests.memory'];
function keySelectorErrors(path: string, ref: Fields): StatusCause[] {
  const causes = dnsSubdomainErrors(`${path}.name`, asString(ref['name']) ?? '');
  const key = asString(ref['key']) ?? '';
  causes.push(...(key === '' ? [required(`${path}.key`)] : configKeyErrors(`${path}.key`, key)));
  return causes;
}

function fieldSelectorErrors(path: string, ref: Fields): StatusCause[] {
  const fieldPath = asString(ref['fieldPath']) ?? '';
  if (fieldPath === '') return [required(`${path}.fieldPath`)];
  const subscripted = /^(metadata\.(?:labels|annotations))\['(.+)'\]$/.exec(fieldPath);
  if (subscripted) {
    const [, field = '', key = ''] = subscripted;
    return qualifiedNameErrors(path, field === 'metadata.annotations' ? key.toLowerCase() : key);
  }
  return ENV_FIELD_PATHS.includes(fieldPath) ? [] : [notSupported(`${path}.fieldPath`, fieldPath, ENV_FIELD_PATHS)];
}

function resourceSelectorErrors(path: string, ref: Fields): StatusCause[] {
  const resource = asString(ref['resource']) ?? '';
  if (resource === '') return [required(`${path}.resource`)];
  if (ENV_RESOURCE_FIELDS.includes(resource) || resource.startsWith('requests.hugepages-') || resource.startsWith('limits.hugepages-')) return [];
  return [notSupported(`${path}.resource`, resource, ENV_RESOURCE_FIELDS)];
}

function validateEnv(path: string, container: Fields): StatusCause[] {
  const causes: StatusCause[] = [];
  asList(container['env']).forEach((item, i) => {
    const env = asRecord(item) ?? {};
    const p = indexPath(path, i);
    const name = asString(env['name']);
    if (!name) causes.push(required(`${p}.name`));
    else if (name.includes('=') || !/^[\x20-\x7e]+$/.test(name)) {
      causes.push(invalid(`${p}.name`, name, "a valid environment variable name must consist only of printable ASCII characters other than '='"));
    }
    const valueFrom = asRecord(env['valueFrom']);
    if (valueFrom) {
      const sources = ['fieldRef', 'resourceFieldRef', 'configMapKeyRef', 'secretKeyRef'].filter((k) => valueFrom[k] !== undefined);
      if (asString(env['value'])) causes.push(invalid(`${p}.valueFrom`, '', 'may not be specified when `value` is not empty'));
      if (sources.length === 0) causes.push(invalid(`${p}.valueFrom`, '', 'must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`'));
      else if (sources.length > 1) causes.push(invalid(`${p}.valueFrom`, '', 'may not have more than one field specified at a time'));
      for (const ref of ['configMapKeyRef', 'secretKeyRef']) {
        const r = asRecord(valueFrom[ref]);
        if (r) causes.push(...keySelectorErrors(`${p}.valueFrom.${ref}`, r));
      }
      const fieldRef = asRecord(valueFrom['fieldRef']);
      if (fieldRef) causes.push(...fieldSelectorErrors(`${p}.valueFrom.fieldRef`, fieldRef));
      const resourceFieldRef = asRecord(valueFrom['resourceFieldRef']);
      if (resourceFieldRef) causes.push(...resourceSelectorErrors(`${p}.valueFrom.resourceFieldRef`, resourceFieldRef));
    }
  });
  return causes;
}

function validateVolumeMounts(path: string, container: Fields, volumes: Set<string>): StatusCause[] {
  const causes: StatusCause[] = [];
  const paths = new Set<string>();
  asList(container['volumeMounts']).forEach((item, i) => {
    const mount = asRecord(item) ?? {};
    const p = indexPath(path, i);
    const name = asString(mount['name']);
    if (!name) causes.push(required(`${p}.name`));
    else if (!volumes.has(name)) causes.push({ reason: 'FieldValueNotFound', field: `${p}.name`, message: `Not found: ${JSON.stringify(name)}` });
    const mountPath = asString(mount['mountPath']);
    if (!mountPath) causes.push(required(`${p}.mountPath`));
    else {
      if (paths.has(mountPath)) causes.push(invalid(`${p}.mountPath`, mountPath, 'must be unique'));
      paths.add(mountPath);
    }
    const subPath = asString(mount['subPath']);
    if (subPath && (subPath.startsWith('/') || subPath.split('/').includes('..'))) {
      causes.push(invalid(`${p}.subPath`, subPath, "must be a relative path without '..'"));
    }
  });
  return causes;
}

interface ContainerRules {
  list: (typeof CONTAINER_LISTS)[number];
  names: Set<string>;
  portNames: Set<string>;
  volumes: Set<string>;
}

function validateContainer(container: Fields, path: string, rules: ContainerRules): StatusCause[] {
  const causes: StatusCause[] = [];
  const name = asString(container['name']);
  if (!name) causes.push(required(`${path}.name`));
  else {
    causes.push(...dnsLabelErrors(`${path}.name`, name));
    if (rules.names.has(name)) causes.push(duplicate(`${path}.name`, name));
    rules.names.add(name);
  }
  const image = container['image'];
  if (typeof image !== 'string' || image.length === 0) {
    // Workload controllers may fill images later; a pod itself needs one.
    causes.push(required(`${path}.image`));
  } else if (image.trim() !== image) {
    causes.push(invalid(`${path}.image`, image, 'must not have leading or trailing whitespace'));
  }
  const pullPolicy = container['imagePullPolicy'];
  if (pullPolicy !== undefined && !(PULL_POLICIES as readonly unknown[]).includes(pullPolicy)) {
    causes.push(notSupported(`${path}.imagePullPolicy`, pullPolicy, PULL_POLICIES));
  }
  const restartPolicy = container['restartPolicy'];
  if (restartPolicy !== undefined) {
    if (rules.list !== 'initContainers') causes.push(forbidden(`${path}.restartPolicy`, 'may not be set for non-init containers'));
    else if (restartPolicy !== 'Always') causes.push(notSupported(`${path}.restartPolicy`, restartPolicy, ['Always']));
  }
  causes.push(...validatePorts(`${path}.ports`, container, rules.portNames));
  causes.push(...validateEnv(`${path}.env`, container));
  causes.push(...validateVolumeMounts(`${path}.volumeMounts`, container, rules.volumes));
  const resources = asRecord(container['resources']);
  if (resources) causes.push(...validateResources(`${path}.resources`, resources));
  for (const probe of ['livenessProbe', 'readinessProbe', 'startupProbe']) {
    const p = asRecord(container[probe]);
    if (!p) continue;
    const handlers = ['exec', 'httpGet', 'tcpSocket', 'grpc'].filter((h) => p[h] !== undefined);
    if (handlers.length === 0) causes.push(required(`${path}.${probe}`, 'must specify a handler type'));
    else if (handlers.length > 1) causes.push(forbidden(`${path}.${probe}.${handlers[1]}`, 'may not specify more than 1 handler type'));
    for (const field of ['initialDelaySeconds', 'timeoutSeconds', 'periodSeconds', 'successThreshold', 'failureThreshold']) {
      const v = asNumber(p[field]);
      if (v !== undefined && v < 0) causes.push(invalid(`${path}.${probe}.${field}`, v, 'must be greater than or equal to 0'));
    }
    if (probe !== 'readinessProbe' && p['successThreshold'] !== undefined && p['successThreshold'] !== 1) {
      causes.push(invalid(`${path}.${probe}.successThreshold`, p['successThreshold'], 'must be 1'));
    }
  }
  return causes;
}

const VOLUME_SOURCE_KEYS = (() => {
  const volume = POD_SCHEMA.properties?.['spec']?.properties?.['volumes']?.items?.properties ?? {};
  return Object.keys(volume).filter((k) => k !== 'name');
})();

function validateVolumes(spec: Fields): { causes: StatusCause[]; names: Set<string> } {
  const causes: StatusCause[] = [];
  const names = new Set<string>();
  asList(spec['volumes']).forEach((item, i) => {
    const volume = asRecord(item) ?? {};
    const p = indexPath('spec.volumes', i);
    const name = asString(volume['name']);
    if (!name) causes.push(required(`${p}.name`));
    else {
      causes.push(...dnsLabelErrors(`${p}.name`, name));
      if (names.has(name)) causes.push(duplicate(`${p}.name`, name));
      names.add(name);
    }
    const sources = VOLUME_SOURCE_KEYS.filter((k) => volume[k] !== undefined && volume[k] !== null);
    if (sources.length === 0) causes.push(required(p, 'must specify a volume type'));
    else if (sources.length > 1) causes.push(forbidden(`${p}.${sources[1]}`, 'may not specify more than 1 volume type'));
    const configMap = asRecord(volume['configMap']);
    if (configMap && !asString(configMap['name'])) causes.push(required(`${p}.configMap.name`));
    const pvc = asRecord(volume['persistentVolumeClaim']);
    if (pvc && !asString(pvc['claimName'])) causes.push(required(`${p}.persistentVolumeClaim.claimName`));
    const hostPath = asRecord(volume['hostPath']);
    if (hostPath && !asString(hostPath['path'])) causes.push(required(`${p}.hostPath.path`));
  });
  return { causes, names };
}

function validateTolerations(spec: Fields): StatusCause[] {
  const causes: StatusCause[] = [];
  asList(spec['tolerations']).forEach((item, i) => {
    const t = asRecord(item) ?? {};
    const p = indexPath('spec.tolerations', i);
    const operator = t['operator'] ?? 'Equal';
    if (operator !== 'Equal' && operator !== 'Exists') causes.push(notSupported(`${p}.operator`, operator, ['Equal', 'Exists']));
    if (operator === 'Exists' && asString(t['value'])) causes.push(invalid(`${p}.operator`, t['value'], 'value must be empty when `operator` is \'Exists\''));
    if (!asString(t['key']) && operator !== 'Exists') causes.push(invalid(`${p}.operator`, operator, 'operator must be Exists when `key` is empty, which means "match all values and all keys"'));
    const effect = t['effect'];
    if (effect !== undefined && effect !== '' && !(TAINT_EFFECTS as readonly unknown[]).includes(effect)) causes.push(notSupported(`${p}.effect`, effect, TAINT_EFFECTS));
    if (t['tolerationSeconds'] !== undefined && effect !== 'NoExecute') {
      causes.push(invalid(`${p}.effect`, effect ?? '', 'effect must be \'NoExecute\' when `tolerationSeconds` is set'));
    }
  });
  return causes;
}

export function validatePod(obj: ApiObject): StatusCause[] {
  const spec = asRecord(obj['spec']);
  if (!spec) return [required('spec')];
  const { causes, names: volumes } = validateVolumes(spec);
  const containers = containersOf(spec, 'containers');
  if (containers.length === 0) causes.push(required('spec.containers'));
  const names = new Set<string>();
  const portNames = new Set<string>();
  for (const list of CONTAINER_LISTS) {
    asList(spec[list]).forEach((item, i) => {
      const path = indexPath(`spec.${list}`, i);
      if (!isRecord(item)) causes.push(invalid(path, item, 'must be an object'));
      else causes.push(...validateContainer(item, path, { list, names, portNames, volumes }));
    });
  }
  const restartPolicy = spec['restartPolicy'];
  if (!(RESTART_POLICIES as readonly unknown[]).includes(restartPolicy)) {
    causes.push(restartPolicy === undefined ? required('spec.restartPolicy') : notSupported('spec.restartPolicy', restartPolicy, RESTART_POLICIES));
  }
  const dnsPolicy = spec['dnsPolicy'];
  if (!(DNS_POLICIES as readonly unknown[]).includes(dnsPolicy)) {
    causes.push(dnsPolicy === undefined ? required('spec.dnsPolicy') : notSupported('spec.dnsPolicy', dnsPolicy, DNS_POLICIES));
  }
  if (dnsPolicy === 'None' && !isRecord(spec['dnsConfig'])) causes.push(required('spec.dnsConfig', 'must provide `dnsConfig` when `dnsPolicy` is None'));
  const grace = asNumber(spec['terminationGracePeriodSeconds']);
  if (grace !== undefined && grace < 0) causes.push(invalid('spec.terminationGracePeriodSeconds', grace, 'must be greater than or equal to 0'));
  const deadline = spec['activeDeadlineSeconds'];
  if (deadline !== undefined && !(typeof deadline === 'number' && deadline > 0)) {
    causes.push(invalid('spec.activeDeadlineSeconds', deadline, 'must be greater than 0'));
  }
  for (const key of ['hostname', 'subdomain']) {
    const v = asString(spec[key]);
    if (v) causes.push(...dnsLabelErrors(`spec.${key}`, v));
  }
  causes.push(...validateTolerations(spec));
  causes.push(...validateQuantities('spec.overhead', spec['overhead']));
  return causes;
}

/** The spec with the fields an update may change blanked out, for comparison. */
function frozenSpec(spec: unknown): unknown {
  const copy = cloneJson(asRecord(spec) ?? {});
  for (const list of CONTAINER_LISTS) {
    for (const c of asList(copy[list])) if (isRecord(c)) delete c['image'];
  }
  delete copy['activeDeadlineSeconds'];
  delete copy['tolerations'];
  delete copy['schedulingGates'];
  delete copy['terminationGracePeriodSeconds'];
  return copy;
}

/** The addresses a status write reports, each a valid IP; only what the write changes is judged. */
function statusAddressErrors(obj: ApiObject, old: ApiObject): StatusCause[] {
  const status = asRecord(obj['status']) ?? {};
  const oldStatus = asRecord(old['status']) ?? {};
  const causes: StatusCause[] = [];
  for (const single of ['podIP', 'hostIP']) {
    const ip = status[single];
    if (typeof ip === 'string' && ip !== '' && ip !== oldStatus[single]) causes.push(...ipAddressErrors(`status.${single}`, ip));
  }
  for (const list of ['podIPs', 'hostIPs']) {
    if (deepEqual(status[list], oldStatus[list])) continue;
    asList(status[list]).forEach((item, i) => {
      causes.push(...ipAddressErrors(indexPath(`status.${list}`, i), asRecord(item)?.['ip']));
    });
  }
  return causes;
}

export function validatePodUpdate(obj: ApiObject, old: ApiObject): StatusCause[] {
  const causes: StatusCause[] = statusAddressErrors(obj, old);
  const spec = asRecord(obj['spec']) ?? {};
  const oldSpec = asRecord(old['spec']) ?? {};
  if (!deepEqual(frozenSpec(spec), frozenSpec(oldSpec))) {
    causes.push(
      forbidden(
        'spec',
        'pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)',
      ),
    );
  }
  const oldDeadline = asNumber(oldSpec['activeDeadlineSeconds']);
  const deadline = asNumber(spec['activeDeadlineSeconds']);
  if (oldDeadline !== undefined && (deadline === undefined || deadline > oldDeadline)) {
    causes.push(invalid('spec.activeDeadlineSeconds', deadline ?? null, 'must be less than or equal to previous value'));
  }
  const tolerations = asList(spec['tolerations']);
  for (const previous of asList(oldSpec['tolerations'])) {
    if (!tolerations.some((t) => deepEqual(t, previous))) {
      causes.push(forbidden('spec.tolerations', 'existing toleration can not be modified except its tolerationSeconds'));
      break;
    }
  }
  const gates = asList(spec['schedulingGates']);
  const oldGates = asList(oldSpec['schedulingGates']);
  if (gates.some((g) => !oldGates.some((o) => deepEqual(o, g)))) causes.push(forbidden('spec.schedulingGates', 'only deletion is allowed, but found new scheduling gate'));
  const oldGrace = asNumber(oldSpec['terminationGracePeriodSeconds']);
  const grace = asNumber(spec['terminationGracePeriodSeconds']);
  if (grace !== oldGrace && !(oldGrace !== undefined && oldGrace < 0 && grace === 1)) {
    causes.push(forbidden('spec.terminationGracePeriodSeconds', 'may not be changed'));
  }
  return causes;
}

// ---- graceful deletion -------------------------------------------------------

/**
 * The grace period a DELETE gives a pod, as the original pod strategy
 * decides it: the one asked for, else the pod's
 * terminationGracePeriodSeconds; 0 for a pod bound to no node (nothing runs
 * it) and for a pod that has finished (Succeeded or Failed); a negative one
 * is 1.
 */
export function podGracePeriod(obj: ApiObject, requested: number | undefined): number {
  const spec = asRecord(obj['spec']) ?? {};
  let period = requested ?? asNumber(spec['terminationGracePeriodSeconds']) ?? 0;
  const phase = asString(asRecord(obj['status'])?.['phase']);
  if (!asString(spec['nodeName']) || phase === 'Succeeded' || phase === 'Failed') period = 0;
  return period < 0 ? 1 : period;
}

// ---- table -----------------------------------------------------------------

function statusOf(obj: ApiObject): Fields {
  return asRecord(obj['status']) ?? {};
}

function containerStatuses(obj: ApiObject, field: string): Fields[] {
  return asList(statusOf(obj)[field]).filter(isRecord);
}

/** The STATUS cell as kubectl shows it: a container's waiting or terminated reason, else the phase. */
export function podDisplayStatus(obj: ApiObject): string {
  const status = statusOf(obj);
  let reason = asString(status['reason']) ?? asString(status['phase']) ?? 'Pending';
  const spec = asRecord(obj['spec']) ?? {};
  const inits = containersOf(spec, 'initContainers');
  let initializing = false;
  containerStatuses(obj, 'initContainerStatuses').forEach((cs, i) => {
    if (initializing) return;
    const state = asRecord(cs['state']) ?? {};
    const terminated = asRecord(state['terminated']);
    const waiting = asRecord(state['waiting']);
    if (terminated && terminated['exitCode'] === 0) return;
    if (asRecord(state['running']) && inits[i]?.['restartPolicy'] === 'Always' && cs['started'] === true) return;
    initializing = true;
    if (terminated) reason = `Init:${asString(terminated['reason']) ?? `ExitCode:${String(terminated['exitCode'])}`}`;
    else if (waiting && asString(waiting['reason']) && waiting['reason'] !== 'PodInitializing') reason = `Init:${String(waiting['reason'])}`;
    else reason = `Init:${i}/${inits.length}`;
  });
  if (!initializing) {
    let running = false;
    for (const cs of containerStatuses(obj, 'containerStatuses').reverse()) {
      const state = asRecord(cs['state']) ?? {};
      const waiting = asRecord(state['waiting']);
      const terminated = asRecord(state['terminated']);
      if (waiting && asString(waiting['reason'])) reason = String(waiting['reason']);
      else if (terminated) reason = asString(terminated['reason']) ?? `ExitCode:${String(terminated['exitCode'])}`;
      else if (asRecord(state['running']) && cs['ready'] === true) running = true;
    }
    if (reason === 'Completed' && running) reason = 'Running';
  }
  if (obj.metadata?.deletionTimestamp) reason = status['reason'] === 'NodeLost' ? 'Unknown' : 'Terminating';
  return reason;
}

const POD_COLUMNS: PrinterColumn[] = [
  {
    name: 'Ready',
    type: 'string',
    jsonPath: '.status.containerStatuses',
    description: 'Ready containers out of all containers.',
    compute: (obj) => {
      const total = asList(asRecord(obj['spec'])?.['containers']).length;
      const ready = containerStatuses(obj, 'containerStatuses').filter((cs) => cs['ready'] === true).length;
      return `${ready}/${total}`;
    },
  },
  { name: 'Status', type: 'string', jsonPath: '.status.phase', description: 'Summary of the pod state.', compute: podDisplayStatus },
  {
    name: 'Restarts',
    type: 'integer',
    jsonPath: '.status.containerStatuses',
    description: 'Restarts of all containers.',
    compute: (obj) => containerStatuses(obj, 'containerStatuses').reduce((sum, cs) => sum + (asNumber(cs['restartCount']) ?? 0), 0),
  },
  { name: 'IP', type: 'string', jsonPath: '.status.podIP', description: 'IP address of the pod.', priority: 1 },
  { name: 'Node', type: 'string', jsonPath: '.spec.nodeName', description: 'Node the pod runs on.', priority: 1 },
  { name: 'Nominated Node', type: 'string', jsonPath: '.status.nominatedNodeName', description: 'Node nominated by preemption.', priority: 1 },
  {
    name: 'Readiness Gates',
    type: 'string',
    jsonPath: '.spec.readinessGates',
    description: 'Readiness gates that are met.',
    priority: 1,
    compute: (obj) => {
      const gates = asList(asRecord(obj['spec'])?.['readinessGates']).filter(isRecord);
      if (gates.length === 0) return null;
      const conditions = asList(statusOf(obj)['conditions']).filter(isRecord);
      const met = gates.filter((g) => conditions.some((c) => c['type'] === g['conditionType'] && c['status'] === 'True')).length;
      return `${met}/${gates.length}`;
    },
  },
];

export function podDefinition(): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind: 'Pod',
    listKind: 'PodList',
    plural: 'pods',
    singular: 'pod',
    shortNames: ['po'],
    categories: ['all'],
    namespaced: true,
    verbs: [...STANDARD_VERBS],
    subresources: [
      { name: 'status', verbs: ['get', 'patch', 'update'] },
      { name: 'eviction', verbs: ['create'], kind: 'Eviction', group: POLICY_GROUP, version: 'v1', schema: EVICTION_SCHEMA, openApiName: 'io.svc.api.policy.v1.Eviction' },
    ],
    schema: POD_SCHEMA,
    printerColumns: POD_COLUMNS,
    strategy: {
      prepareForCreate: (obj) => {
        const spec = asRecord(obj['spec']) ?? {};
        resetStatus(obj, { phase: 'Pending', qosClass: qosClass(spec) });
      },
      prepareForUpdate: keepStatus,
      applyDefaults: applyPodDefaults,
      validate: validatePod,
      validateUpdate: validatePodUpdate,
      gracefulDeletePeriod: podGracePeriod,
    },
    openApiName: 'io.svc.api.core.v1.Pod',
    allowUnconditionalUpdate: true,
  };
}
