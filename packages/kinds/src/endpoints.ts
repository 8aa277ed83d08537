import type { ApiObject, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import { dnsLabelErrors, duplicate, indexPath, invalid, isPortNumber, notSupported, required } from './field-errors';
import { asList, asRecord, asString, isRecord, setDefault } from './object-access';
import { OBJECT_REFERENCE_SCHEMA, objectSchema } from './object-meta';
import { PROTOCOLS } from './pod';
import { atomicList, int32, oneOf, str, struct } from './schema-builders';

/** Endpoints: the addresses and ports behind a service, kept by the endpoints controller or by hand. */

const ENDPOINT_ADDRESS = struct(
  {
    ip: str('IP of the endpoint.'),
    hostname: str('Host name of the endpoint.'),
    nodeName: str('Node hosting the endpoint.'),
    targetRef: OBJECT_REFERENCE_SCHEMA,
  },
  { required: ['ip'], atomic: true, description: 'A single endpoint address.' },
);

const ENDPOINT_PORT = struct(
  {
    name: str('Name of the port; must match the service port name.'),
    port: int32('Port number.'),
    protocol: oneOf([...PROTOCOLS], 'IP protocol; defaults to TCP.'),
    appProtocol: str('Application protocol of the port.'),
  },
  { required: ['port'], atomic: true, description: 'A port of the endpoints.' },
);

export const ENDPOINTS_SCHEMA = objectSchema('Endpoints lists the network addresses behind a service.', {
  subsets: atomicList(
    struct(
      {
        addresses: atomicList(ENDPOINT_ADDRESS, 'Addresses ready to receive traffic.'),
        notReadyAddresses: atomicList(ENDPOINT_ADDRESS, 'Addresses not ready yet.'),
        ports: atomicList(ENDPOINT_PORT, 'Ports available on every address of the subset.'),
      },
      { description: 'Addresses that share a set of ports.' },
    ),
    'Sets of addresses and ports; the union of all subsets is the full set of endpoints.',
  ),
});

function applyEndpointsDefaults(obj: ApiObject): void {
  for (const subset of asList(obj['subsets'])) {
    for (const port of asList(asRecord(subset)?.['ports'])) if (isRecord(port)) setDefault(port, 'protocol', 'TCP');
  }
}

function validateEndpoints(obj: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  asList(obj['subsets']).forEach((item, i) => {
    const subset = asRecord(item) ?? {};
    const p = indexPath('subsets', i);
    for (const list of ['addresses', 'notReadyAddresses']) {
      asList(subset[list]).forEach((addr, j) => {
        if (!asString(asRecord(addr)?.['ip'])) causes.push(required(`${indexPath(`${p}.${list}`, j)}.ip`));
      });
    }
    const ports = asList(subset['ports']);
    const names = new Set<string>();
    ports.forEach((portItem, j) => {
      const port = asRecord(portItem) ?? {};
      const pp = indexPath(`${p}.ports`, j);
      const name = asString(port['name']) ?? '';
      if (ports.length > 1 && name === '') causes.push(required(`${pp}.name`));
      if (name !== '') {
        causes.push(...dnsLabelErrors(`${pp}.name`, name));
        if (names.has(name)) causes.push(duplicate(`${pp}.name`, name));
        names.add(name);
      }
      if (!isPortNumber(port['port'])) causes.push(invalid(`${pp}.port`, port['port'] ?? null, 'must be between 1 and 65535, inclusive'));
      const protocol = port['protocol'];
      if (protocol !== undefined && !(PROTOCOLS as readonly unknown[]).includes(protocol)) causes.push(notSupported(`${pp}.protocol`, protocol, PROTOCOLS));
    });
  });
  return causes;
}

/** `10.0.0.1:80,10.0.0.2:80 + 3 more...`, as the original table shows endpoints. */
function formatEndpoints(obj: ApiObject): string {
  const all: string[] = [];
  for (const subset of asList(obj['subsets']).filter(isRecord)) {
    const ports = asList(subset['ports']).filter(isRecord);
    for (const addr of asList(subset['addresses']).filter(isRecord)) {
      const ip = asString(addr['ip']);
      if (!ip) continue;
      if (ports.length === 0) all.push(ip);
      else for (const port of ports) all.push(`${ip}:${String(port['port'])}`);
    }
  }
  if (all.length === 0) return '<none>';
  const shown = all.slice(0, 3).join(',');
  return all.length > 3 ? `${shown} + ${all.length - 3} more...` : shown;
}

export function endpointsDefinition(): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind: 'Endpoints',
    listKind: 'EndpointsList',
    plural: 'endpoints',
    singular: 'endpoints',
    shortNames: ['ep'],
    categories: [],
    namespaced: true,
    verbs: [...STANDARD_VERBS],
    subresources: [],
    schema: ENDPOINTS_SCHEMA,
    printerColumns: [{ name: 'Endpoints', type: 'string', jsonPath: '.subsets', description: 'Addresses and ports.', compute: formatEndpoints }],
    strategy: {
      applyDefaults: applyEndpointsDefaults,
      validate: validateEndpoints,
    },
    openApiName: 'io.svc.api.core.v1.Endpoints',
    allowUnconditionalUpdate: true,
    allowCreateOnUpdate: true,
  };
}
