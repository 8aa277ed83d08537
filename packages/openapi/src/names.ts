import type { ResourceDefinition } from '@svc/apimachinery';

/** Names of definitions, operations and tags in the published documents. */

export const META_PREFIX = 'io.svc.apimachinery.pkg.apis.meta.v1.';

export function metaName(type: string): string {
  return `${META_PREFIX}${type}`;
}

/** Definition name of a kind's list (`io.svc.api.core.v1.ConfigMapList`). */
export function listDefinitionName(def: Pick<ResourceDefinition, 'openApiName' | 'kind' | 'listKind'>): string {
  return def.openApiName.endsWith(def.kind) ? `${def.openApiName.slice(0, -def.kind.length)}${def.listKind}` : `${def.openApiName}List`;
}

function capitalize(word: string): string {
  return word.length === 0 ? word : word[0]!.toUpperCase() + word.slice(1);
}

/**
 * The group as it appears in operation IDs: `Core` for the core group, the
 * group without the `svc.io` domain in CamelCase (`Coordination`,
 * `RbacAuthorization`), other groups in full (`ExampleCom`).
 */
export function groupWord(group: string): string {
  if (group === '') return 'Core';
  const trimmed = group.endsWith('.svc.io') ? group.slice(0, -'.svc.io'.length) : group;
  return trimmed
    .split(/[.-]/)
    .filter(Boolean)
    .map(capitalize)
    .join('');
}

/** Tag grouping a group version's operations (`core_v1`, `coordination_v1`). */
export function tagOf(group: string, version: string): string {
  const word = groupWord(group);
  return `${word[0]!.toLowerCase()}${word.slice(1)}_${version}`;
}

export function groupVersionWord(group: string, version: string): string {
  return `${groupWord(group)}${capitalize(version)}`;
}

/** URL prefix of a group version (`/api/v1`, `/apis/coordination.svc.io/v1`). */
export function pathPrefix(group: string, version: string): string {
  return group ? `/apis/${group}/${version}` : `/api/${version}`;
}

/** Key of a group version in the `/openapi/v3` document (`api/v1`, `apis/coordination.svc.io/v1`). */
export function openApiV3Key(group: string, version: string): string {
  return pathPrefix(group, version).slice(1);
}

export { capitalize };
