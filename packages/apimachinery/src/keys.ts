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
