import { STANDARD_VERBS, type ResourceDefinition } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';

/**
 * The registry entry of a kind of a named group with the standard verbs;
 * `extra` adds what the kind has of its own (strategy, columns,
 * subresources, categories, or the create-only verbs of a review).
 */
export function groupKindDefinition(group: string, version: string, kind: string, plural: string, namespaced: boolean, schema: Schema, extra: Partial<ResourceDefinition>): ResourceDefinition {
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
    verbs: [...STANDARD_VERBS],
    subresources: [],
    schema,
    printerColumns: [],
    strategy: {},
    openApiName: `io.svc.api.${group.split('.')[0] ?? group}.${version}.${kind}`,
    ...extra,
  };
}
