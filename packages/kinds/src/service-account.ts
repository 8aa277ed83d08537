import type { ApiObject, ResourceDefinition, StatusCause } from '@svc/apimachinery';
import { STANDARD_VERBS } from '@svc/apimachinery';
import { AUTHENTICATION_GROUP, TOKEN_REQUEST_SCHEMA } from './authentication';
import { duplicate, indexPath } from './field-errors';
import { asList, asRecord, asString } from './object-access';
import { OBJECT_REFERENCE_SCHEMA, localObjectReference, objectSchema } from './object-meta';
import { atomicList, bool, mapList } from './schema-builders';

/** ServiceAccount: an identity for processes, with the secrets it may use. */

export const SERVICE_ACCOUNT_SCHEMA = objectSchema('ServiceAccount is an identity for processes that run in pods.', {
  secrets: mapList(OBJECT_REFERENCE_SCHEMA, ['name'], {
    mergeKey: 'name',
    description: 'Secrets in the same namespace that pods running as this account may use.',
  }),
  imagePullSecrets: atomicList(localObjectReference(), 'Secrets in the same namespace used to pull images of pods running as this account.'),
  automountServiceAccountToken: bool('Whether pods running as this account get an API token mounted; a pod can override it.'),
});

/** `secrets` merges as a map keyed by name, so names must be unique. */
function validateSecretReferences(obj: ApiObject): StatusCause[] {
  const causes: StatusCause[] = [];
  const seen = new Set<string>();
  asList(obj['secrets']).forEach((item, i) => {
    const name = asString(asRecord(item)?.['name']) ?? '';
    if (seen.has(name)) causes.push(duplicate(`${indexPath('secrets', i)}.name`, name));
    seen.add(name);
  });
  return causes;
}

export function serviceAccountDefinition(): ResourceDefinition {
  return {
    group: '',
    version: 'v1',
    kind: 'ServiceAccount',
    listKind: 'ServiceAccountList',
    plural: 'serviceaccounts',
    singular: 'serviceaccount',
    shortNames: ['sa'],
    categories: [],
    namespaced: true,
    verbs: [...STANDARD_VERBS],
    subresources: [
      {
        name: 'token',
        verbs: ['create'],
        kind: 'TokenRequest',
        group: AUTHENTICATION_GROUP,
        version: 'v1',
        schema: TOKEN_REQUEST_SCHEMA,
        openApiName: 'io.svc.api.authentication.v1.TokenRequest',
      },
    ],
    schema: SERVICE_ACCOUNT_SCHEMA,
    printerColumns: [
      {
        name: 'Secrets',
        type: 'integer',
        jsonPath: '.secrets',
        description: 'Number of secrets the account references.',
        compute: (obj) => asList(obj['secrets']).length,
      },
    ],
    strategy: {
      validate: validateSecretReferences,
    },
    openApiName: 'io.svc.api.core.v1.ServiceAccount',
    allowUnconditionalUpdate: true,
  };
}
