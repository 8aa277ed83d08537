import type { ApiObject, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import { forbidden, invalid, isTimestamp, typeInvalid } from './field-errors';
import { asRecord, asString } from './object-access';
import { objectSchema } from './object-meta';
import { int32, microTime, str, struct } from './schema-builders';

/** Lease (coordination.svc.io/v1): a lock with a holder and a renewal time, used for leader election and heartbeats. */

export const LEASE_GROUP = 'coordination.svc.io';

export const LEASE_SCHEMA = objectSchema('Lease is a lock held by one identity for a limited time.', {
  spec: struct(
    {
      holderIdentity: str('Identity of the current holder of the lease.'),
      leaseDurationSeconds: int32('Seconds candidates wait after the last renewal before they may take the lease over.'),
      acquireTime: microTime('When the current holder acquired the lease.'),
      renewTime: microTime('When the current holder last renewed the lease.'),
      leaseTransitions: int32('Number of times the lease changed holders.'),
      strategy: str('Strategy for picking the leader in coordinated leader election.'),
      preferredHolder: str('Holder the coordinated election would like to hand the lease to.'),
    },
    { description: 'Specification of the lease.' },
  ),
});

function validateLease(obj: ApiObject): StatusCause[] {
  const spec = obj['spec'];
  if (spec === undefined || spec === null) return [];
  const fields = asRecord(spec);
  if (!fields) return [typeInvalid('spec', spec, 'an object')];
  const causes: StatusCause[] = [];
  const holder = fields['holderIdentity'];
  if (holder !== undefined && holder !== null && typeof holder !== 'string') causes.push(typeInvalid('spec.holderIdentity', holder, 'a string'));
  const duration = fields['leaseDurationSeconds'];
  if (duration !== undefined && duration !== null) {
    if (typeof duration !== 'number' || !Number.isInteger(duration)) causes.push(typeInvalid('spec.leaseDurationSeconds', duration, 'an integer'));
    else if (duration <= 0) causes.push(invalid('spec.leaseDurationSeconds', duration, 'must be greater than 0'));
  }
  const transitions = fields['leaseTransitions'];
  if (transitions !== undefined && transitions !== null) {
    if (typeof transitions !== 'number' || !Number.isInteger(transitions)) causes.push(typeInvalid('spec.leaseTransitions', transitions, 'an integer'));
    else if (transitions < 0) causes.push(invalid('spec.leaseTransitions', transitions, 'must be greater than or equal to 0'));
  }
  for (const field of ['acquireTime', 'renewTime']) {
    const v = fields[field];
    if (v !== undefined && v !== null && !isTimestamp(v)) causes.push(invalid(`spec.${field}`, v, 'must be an RFC 3339 timestamp with optional microseconds'));
  }
  if (asString(fields['preferredHolder']) && !asString(fields['strategy'])) {
    causes.push(forbidden('spec.preferredHolder', 'may only be specified if `strategy` is defined'));
  }
  return causes;
}

export function leaseDefinition(): ResourceDefinition {
  return {
    group: LEASE_GROUP,
    version: 'v1',
    kind: 'Lease',
    listKind: 'LeaseList',
    plural: 'leases',
    singular: 'lease',
    shortNames: [],
    categories: [],
    namespaced: true,
    verbs: [...STANDARD_VERBS],
    subresources: [],
    schema: LEASE_SCHEMA,
    printerColumns: [{ name: 'Holder', type: 'string', jsonPath: '.spec.holderIdentity', description: 'Identity of the current holder.' }],
    strategy: { validate: validateLease },
    openApiName: 'io.svc.api.coordination.v1.Lease',
    allowUnconditionalUpdate: true,
  };
}
