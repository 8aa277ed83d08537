import type { ResourceDefinition } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';

/** A review kind: create only, answered by the server and never stored. */
export function reviewDefinition(group: string, version: string, kind: string, plural: string, namespaced: boolean, schema: Schema): ResourceDefinition {
  return {
    group,
    version,
    kind,
    listKind: `${kind}List`,
    plural,
    singular: kind.toLowerCase(),
    shortNames: [],
    categories: [],
    namespaced,
    verbs: ['create'],
    subresources: [],
    schema,
    printerColumns: [],
    strategy: {},
    openApiName: `io.svc.api.${group.split('.')[0] ?? group}.${version}.${kind}`,
    virtual: true,
  };
}
