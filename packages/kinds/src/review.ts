import type { ResourceDefinition } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import { groupKindDefinition } from './group-definition';

/** A review kind: create only, answered by the server and never stored. */
export function reviewDefinition(group: string, version: string, kind: string, plural: string, namespaced: boolean, schema: Schema): ResourceDefinition {
  return groupKindDefinition(group, version, kind, plural, namespaced, schema, { verbs: ['create'], virtual: true });
}
