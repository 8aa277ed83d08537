import { ApiError } from './errors';
/**
 * etcd keys of stored objects: `/registry/<group>/<resource>/<namespace>/<name>`
 * for namespaced kinds and `/registry/<group>/<resource>/<name>` for
 * cluster-scoped ones. The core group has no group segment, as in the original
 * server; group names contain dots and resource names never do, so the two
 * shapes cannot collide.
 */
export const REGISTRY_PREFIX = '/registry/';

export interface StoredKey {
  group: string;
  resource: string;
  namespace: string;
  name: string;
}

function groupResourcePrefix(group: string, resource: string): string {
  return group ? `${REGISTRY_PREFIX}${group}/${resource}/` : `${REGISTRY_PREFIX}${resource}/`;
}

/** Key of one object. */
export function objectKey(k: StoredKey): string {
  const base = groupResourcePrefix(k.group, k.resource);
  return k.namespace ? `${base}${k.namespace}/${k.name}` : `${base}${k.name}`;
}

/** Prefix of a collection: every namespace when `namespace` is empty. */
export function collectionPrefix(k: Omit<StoredKey, 'name'>): string {
  const base = groupResourcePrefix(k.group, k.resource);
  return k.namespace ? `${base}${k.namespace}/` : base;
}

/** Splits a key back into its parts; undefined for keys outside the registry. */
export function parseObjectKey(key: string): StoredKey | undefined {
  if (!key.startsWith(REGISTRY_PREFIX)) return undefined;
  const parts = key.slice(REGISTRY_PREFIX.length).split('/');
  let group = '';
  if (parts.length > 0 && (parts[0] ?? '').includes('.')) group = parts.shift() as string;
  const resource = parts.shift();
  if (!resource || parts.length === 0 || parts.length > 2) return undefined;
  if (parts.length === 1) return { group, resource, namespace: '', name: parts[0] as string };
  return { group, resource, namespace: parts[0] as string, name: parts[1] as string };
}

/** Where the next page of a list starts: the revision of the first page, and the key after the last item it held (relative to the collection's prefix). */
export interface ContinuePosition {
  rv: number;
  start: string;
}

const CONTINUE_VERSION = 'meta.svc.io/v1';

/** The opaque `continue` of a list page; storage and the gateway's cache read each other's. */
export function encodeContinue(rv: number, start: string): string {
  return Buffer.from(JSON.stringify({ v: CONTINUE_VERSION, rv, start })).toString('base64url');
}

/** Reads a `continue` value; anything that is not one is a 400 saying why. */
export function decodeContinue(raw: string): ContinuePosition {
  let token: { v?: unknown; rv?: unknown; start?: unknown };
  try {
    token = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8')) as typeof token;
  } catch {
    throw ApiError.badRequest('continue key is not valid: cannot decode the token');
  }
  const { v, rv, start } = token ?? {};
  if (v !== CONTINUE_VERSION || typeof rv !== 'number' || !Number.isInteger(rv) || rv <= 0 || typeof start !== 'string') {
    throw ApiError.badRequest(`continue key is not valid: incorrect encoded start resourceVersion (version ${CONTINUE_VERSION})`);
  }
  if (start.includes('..') || start.startsWith('/')) {
    throw ApiError.badRequest('continue key is not valid: the start key may not contain a path traversal');
  }
  return { rv, start };
}
