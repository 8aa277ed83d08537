import type { ResourceDefinition, ResourceRegistry, ResourceVerb } from '@svc/apimachinery';
import { groupVersionWord, listDefinitionName, metaName, pathPrefix, tagOf } from './names';

/**
 * The operations of a kind, independent of the OpenAPI version: one path per
 * shape of SPEC section 4 (collection, single object, subresource; namespaced
 * kinds also at the cluster-wide collection), each HTTP method with its
 * action, group-version-kind, query parameters, body and responses. The v2
 * and v3 writers render the same model.
 */

export type QueryParameter =
  | 'allowWatchBookmarks'
  | 'continue'
  | 'dryRun'
  | 'fieldManager'
  | 'fieldSelector'
  | 'fieldValidation'
  | 'force'
  | 'gracePeriodSeconds'
  | 'ignoreStoreReadErrorWithClusterBreakingPotential'
  | 'labelSelector'
  | 'limit'
  | 'orphanDependents'
  | 'propagationPolicy'
  | 'resourceVersion'
  | 'resourceVersionMatch'
  | 'sendInitialEvents'
  | 'timeoutSeconds'
  | 'watch'
  | 'pretty';

export interface QueryParameterSpec {
  type: 'string' | 'boolean' | 'integer';
  description: string;
}

export const QUERY_PARAMETERS: Readonly<Record<QueryParameter, QueryParameterSpec>> = {
  allowWatchBookmarks: { type: 'boolean', description: 'Ask for BOOKMARK events in a watch. Servers may send none; ignored outside watches.' },
  continue: { type: 'string', description: 'Token from a previous chunk of a paged list; the list continues from there on the same snapshot. Expired tokens are answered 410 Gone.' },
  dryRun: { type: 'string', description: 'When `All`, the request runs every stage but nothing is persisted.' },
  fieldManager: { type: 'string', description: 'Name of the actor making the change, at most 128 printable characters; required for apply patches.' },
  fieldSelector: { type: 'string', description: 'Restricts the list to objects whose fields match. Defaults to everything.' },
  fieldValidation: {
    type: 'string',
    description: 'How unknown and duplicate fields in the request body are treated: `Ignore` drops them, `Warn` (default) drops them with a Warning header each, `Strict` fails the request.',
  },
  force: { type: 'boolean', description: 'For apply patches: take over fields owned by other managers instead of failing with a conflict. Must be unset for other patches.' },
  gracePeriodSeconds: { type: 'integer', description: 'Seconds before the object is deleted; zero deletes immediately. Defaults per kind.' },
  ignoreStoreReadErrorWithClusterBreakingPotential: {
    type: 'boolean',
    description: 'Delete an object that cannot be read from the store, skipping finalizers and preconditions. Can break the cluster; needs extra permission.',
  },
  labelSelector: { type: 'string', description: 'Restricts the list to objects whose labels match. Defaults to everything.' },
  limit: { type: 'integer', description: 'Largest number of items to return; when more exist the list metadata carries a continue token.' },
  orphanDependents: { type: 'boolean', description: 'Deprecated: use propagationPolicy.' },
  propagationPolicy: { type: 'string', description: 'Garbage collection of dependents: Orphan, Background or Foreground.' },
  resourceVersion: { type: 'string', description: 'Constraint on the version of the store a read is served from. Defaults to the most recent.' },
  resourceVersionMatch: { type: 'string', description: 'How resourceVersion applies to a list: Exact or NotOlderThan.' },
  sendInitialEvents: { type: 'boolean', description: 'Start a watch with ADDED events for the current state, followed by a BOOKMARK once they are all sent.' },
  timeoutSeconds: { type: 'integer', description: 'Time limit of the list or watch call.' },
  watch: { type: 'boolean', description: 'Stream changes to the listed objects instead of listing them.' },
  pretty: { type: 'string', description: "If 'true', the output is pretty printed." },
};

export type Action = 'get' | 'list' | 'post' | 'put' | 'patch' | 'delete' | 'deletecollection';
export type HttpMethod = 'get' | 'post' | 'put' | 'patch' | 'delete';

export interface GroupVersionKind {
  group: string;
  version: string;
  kind: string;
}

/** A request or response body: a named definition, or any object when the kind is not known. */
export type BodySchema = { definition: string } | { anyObject: true };

export interface Operation {
  method: HttpMethod;
  operationId: string;
  description: string;
  action: Action;
  gvk: GroupVersionKind;
  tag: string;
  query: QueryParameter[];
  body?: { schema: BodySchema; mediaTypes: string[] };
  responses: Array<{ code: '200' | '201' | '202'; description: string; schema: BodySchema }>;
  /** The response may be a watch stream. */
  watchable: boolean;
}

export interface PathItem {
  path: string;
  pathParameters: Array<'name' | 'namespace'>;
  operations: Operation[];
}

export const PATCH_MEDIA_TYPES = [
  'application/apply-patch+yaml',
  'application/json-patch+json',
  'application/merge-patch+json',
  'application/strategic-merge-patch+json',
];

/**
 * The patch types a kind's PATCH takes: kinds without strategic merge patch
 * (custom resources) leave it out, as the original server does, so that
 * kubectl's client-side apply sends them a merge patch instead.
 */
function patchMediaTypes(def: Pick<ResourceDefinition, 'strategicMergePatch'>): string[] {
  return def.strategicMergePatch === false ? PATCH_MEDIA_TYPES.filter((t) => t !== 'application/strategic-merge-patch+json') : [...PATCH_MEDIA_TYPES];
}

export const OBJECT_MEDIA_TYPES = ['application/json', 'application/yaml', 'application/vnd.svc.protobuf'];
export const WATCH_MEDIA_TYPES = ['application/json;stream=watch', 'application/vnd.svc.protobuf;stream=watch'];

const WRITE_QUERY: QueryParameter[] = ['dryRun', 'fieldManager', 'fieldValidation'];
const LIST_QUERY: QueryParameter[] = [
  'allowWatchBookmarks',
  'continue',
  'fieldSelector',
  'labelSelector',
  'limit',
  'resourceVersion',
  'resourceVersionMatch',
  'sendInitialEvents',
  'timeoutSeconds',
  'watch',
];
const DELETE_QUERY: QueryParameter[] = ['dryRun', 'gracePeriodSeconds', 'ignoreStoreReadErrorWithClusterBreakingPotential', 'orphanDependents', 'propagationPolicy'];
const DELETE_COLLECTION_QUERY: QueryParameter[] = [
  'continue',
  'dryRun',
  'fieldSelector',
  'gracePeriodSeconds',
  'ignoreStoreReadErrorWithClusterBreakingPotential',
  'labelSelector',
  'limit',
  'orphanDependents',
  'propagationPolicy',
  'resourceVersion',
  'resourceVersionMatch',
  'sendInitialEvents',
  'timeoutSeconds',
];

const ANY_OBJECT: BodySchema = { anyObject: true };

function definition(name: string): BodySchema {
  return { definition: name };
}

/** Operations of one kind, path by path. */
export function kindPaths(def: ResourceDefinition, registry?: ResourceRegistry): PathItem[] {
  const has = (verb: ResourceVerb) => def.verbs.includes(verb);
  const gv = groupVersionWord(def.group, def.version);
  const tag = tagOf(def.group, def.version);
  const gvk: GroupVersionKind = { group: def.group, version: def.version, kind: def.kind };
  const self = definition(def.openApiName);
  const list = definition(listDefinitionName(def));
  const status = definition(metaName('Status'));
  const scope = def.namespaced ? 'Namespaced' : '';
  const base = def.namespaced ? `${pathPrefix(def.group, def.version)}/namespaces/{namespace}/${def.plural}` : `${pathPrefix(def.group, def.version)}/${def.plural}`;
  const scopeParams: Array<'namespace'> = def.namespaced ? ['namespace'] : [];
  const deleted = def.returnDeletedObject ? self : status;

  const op = (partial: Omit<Operation, 'gvk' | 'tag' | 'watchable'> & { watchable?: boolean; gvk?: GroupVersionKind }): Operation => ({
    gvk,
    tag,
    watchable: false,
    ...partial,
  });

  const collection: Operation[] = [];
  if (has('list')) {
    collection.push(
      op({
        method: 'get',
        operationId: `list${gv}${scope}${def.kind}`,
        description: `list or watch objects of kind ${def.kind}`,
        action: 'list',
        query: [...LIST_QUERY],
        responses: [{ code: '200', description: 'OK', schema: list }],
        watchable: has('watch'),
      }),
    );
  }
  if (has('create')) {
    collection.push(
      op({
        method: 'post',
        operationId: `create${gv}${scope}${def.kind}`,
        description: `create a ${def.kind}`,
        action: 'post',
        query: [...WRITE_QUERY],
        body: { schema: self, mediaTypes: [...OBJECT_MEDIA_TYPES] },
        responses: [
          { code: '200', description: 'OK', schema: self },
          { code: '201', description: 'Created', schema: self },
          { code: '202', description: 'Accepted', schema: self },
        ],
      }),
    );
  }
  if (has('deletecollection')) {
    collection.push(
      op({
        method: 'delete',
        operationId: `delete${gv}Collection${scope}${def.kind}`,
        description: `delete collection of ${def.kind}`,
        action: 'deletecollection',
        query: [...DELETE_COLLECTION_QUERY],
        body: { schema: definition(metaName('DeleteOptions')), mediaTypes: ['application/json', 'application/yaml'] },
        responses: [{ code: '200', description: 'OK', schema: status }],
      }),
    );
  }

  const item: Operation[] = [];
  if (has('get')) {
    item.push(
      op({
        method: 'get',
        operationId: `read${gv}${scope}${def.kind}`,
        description: `read the specified ${def.kind}`,
        action: 'get',
        query: [],
        responses: [{ code: '200', description: 'OK', schema: self }],
      }),
    );
  }
  if (has('update')) {
    item.push(
      op({
        method: 'put',
        operationId: `replace${gv}${scope}${def.kind}`,
        description: `replace the specified ${def.kind}`,
        action: 'put',
        query: [...WRITE_QUERY],
        body: { schema: self, mediaTypes: [...OBJECT_MEDIA_TYPES] },
        responses: [
          { code: '200', description: 'OK', schema: self },
          { code: '201', description: 'Created', schema: self },
        ],
      }),
    );
  }
  if (has('patch')) {
    item.push(
      op({
        method: 'patch',
        operationId: `patch${gv}${scope}${def.kind}`,
        description: `partially update the specified ${def.kind}`,
        action: 'patch',
        query: [...WRITE_QUERY, 'force'],
        body: { schema: definition(metaName('Patch')), mediaTypes: patchMediaTypes(def) },
        responses: [
          { code: '200', description: 'OK', schema: self },
          { code: '201', description: 'Created', schema: self },
        ],
      }),
    );
  }
  if (has('delete')) {
    item.push(
      op({
        method: 'delete',
        operationId: `delete${gv}${scope}${def.kind}`,
        description: `delete a ${def.kind}`,
        action: 'delete',
        query: [...DELETE_QUERY],
        body: { schema: definition(metaName('DeleteOptions')), mediaTypes: ['application/json', 'application/yaml'] },
        responses: [
          { code: '200', description: 'OK', schema: deleted },
          { code: '202', description: 'Accepted', schema: deleted },
        ],
      }),
    );
  }

  const paths: PathItem[] = [];
  if (collection.length > 0) paths.push({ path: base, pathParameters: [...scopeParams], operations: collection });
  if (item.length > 0) paths.push({ path: `${base}/{name}`, pathParameters: ['name', ...scopeParams], operations: item });

  for (const sub of def.subresources) {
    const subKind = sub.kind ?? def.kind;
    const subDef = subKind === def.kind ? def : registry?.lookupKind(def.group, def.version, subKind);
    const subSchema = sub.openApiName ? definition(sub.openApiName) : subDef ? definition(subDef.openApiName) : ANY_OBJECT;
    const subGvk: GroupVersionKind = { group: sub.group ?? def.group, version: sub.version ?? def.version, kind: subKind };
    const word = `${scope}${def.kind}${sub.name[0]!.toUpperCase()}${sub.name.slice(1)}`;
    const ops: Operation[] = [];
    if (sub.verbs.includes('get')) {
      ops.push(
        op({
          method: 'get',
          operationId: `read${gv}${word}`,
          description: `read ${sub.name} of the specified ${def.kind}`,
          action: 'get',
          query: [],
          gvk: subGvk,
          responses: [{ code: '200', description: 'OK', schema: subSchema }],
        }),
      );
    }
    if (sub.verbs.includes('update')) {
      ops.push(
        op({
          method: 'put',
          operationId: `replace${gv}${word}`,
          description: `replace ${sub.name} of the specified ${def.kind}`,
          action: 'put',
          query: [...WRITE_QUERY],
          gvk: subGvk,
          body: { schema: subSchema, mediaTypes: [...OBJECT_MEDIA_TYPES] },
          responses: [
            { code: '200', description: 'OK', schema: subSchema },
            { code: '201', description: 'Created', schema: subSchema },
          ],
        }),
      );
    }
    if (sub.verbs.includes('create')) {
      ops.push(
        op({
          method: 'post',
          operationId: `create${gv}${word}`,
          description: `create ${sub.name} of a ${def.kind}`,
          action: 'post',
          query: [...WRITE_QUERY],
          gvk: subGvk,
          body: { schema: subSchema, mediaTypes: [...OBJECT_MEDIA_TYPES] },
          responses: [
            { code: '200', description: 'OK', schema: subSchema },
            { code: '201', description: 'Created', schema: subSchema },
            { code: '202', description: 'Accepted', schema: subSchema },
          ],
        }),
      );
    }
    if (sub.verbs.includes('patch')) {
      ops.push(
        op({
          method: 'patch',
          operationId: `patch${gv}${word}`,
          description: `partially update ${sub.name} of the specified ${def.kind}`,
          action: 'patch',
          query: [...WRITE_QUERY, 'force'],
          gvk: subGvk,
          body: { schema: definition(metaName('Patch')), mediaTypes: patchMediaTypes(def) },
          responses: [
            { code: '200', description: 'OK', schema: subSchema },
            { code: '201', description: 'Created', schema: subSchema },
          ],
        }),
      );
    }
    if (ops.length > 0) paths.push({ path: `${base}/{name}/${sub.name}`, pathParameters: ['name', ...scopeParams], operations: ops });
  }

  if (def.namespaced && has('list')) {
    paths.push({
      path: `${pathPrefix(def.group, def.version)}/${def.plural}`,
      pathParameters: [],
      operations: [
        op({
          method: 'get',
          operationId: `list${gv}${def.kind}ForAllNamespaces`,
          description: `list or watch objects of kind ${def.kind}`,
          action: 'list',
          query: [...LIST_QUERY],
          responses: [{ code: '200', description: 'OK', schema: list }],
          watchable: has('watch'),
        }),
      ],
    });
  }
  return paths;
}
