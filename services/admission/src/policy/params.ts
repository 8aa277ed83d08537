import { ApiError, canonicalGroup, type ApiObject } from '@svc/apimachinery';
import { APIEXTENSIONS_GROUP, builtinResources, crdConditionTrue, servedNames } from '@svc/kinds';
import { TtlCache } from '@svc/service-kit';
import type { StorageClient } from '@svc/storage/client';

/**
 * Where a policy's parameters come from. The original server keeps an
 * informer per `paramKind`; here they are read from storage when a request
 * needs them and remembered for a short time (`ttlMs`): a parameter changed
 * within that time may be read as it was, as an informer lags too. An
 * object not found is never remembered (the original reads again on a
 * miss), so a parameter created just before the request is seen.
 */

/** The resource that serves a `paramKind`. */
export interface ParamResource {
  group: string;
  version: string;
  resource: string;
  namespaced: boolean;
}

export interface ParamReader {
  /** The resource serving `apiVersion`/`kind`; undefined when none does. */
  resolve(apiVersion: string, kind: string): Promise<ParamResource | undefined>;
  /** One parameter object; undefined when it does not exist. */
  get(resource: ParamResource, namespace: string, name: string): Promise<ApiObject | undefined>;
  /** Every object of the resource in `namespace` ('' for a cluster-scoped kind). */
  list(resource: ParamResource, namespace: string): Promise<ApiObject[]>;
}

/** `group/version` (or `version` for the core group) split. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0 ? { group: '', version: apiVersion } : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

let builtins: Array<{ kind: string; resource: ParamResource }> | undefined;

/** The built-in kinds as parameter resources, built once. */
function builtinParamResources(): Array<{ kind: string; resource: ParamResource }> {
  builtins ??= builtinResources()
    .filter((d) => !d.virtual)
    .map((d) => ({ kind: d.kind, resource: { group: d.group, version: d.version, resource: d.plural, namespaced: d.namespaced } }));
  return builtins;
}

/** The resource of a custom resource definition serving group/version/kind, if it is established and serves that version. */
export function crdParamResource(crd: ApiObject, group: string, version: string, kind: string): ParamResource | undefined {
  const spec = crd['spec'] as { group?: string; scope?: string; versions?: Array<{ name?: string; served?: boolean }> } | undefined;
  const names = servedNames(crd);
  if (!spec || spec.group !== group || !names || names.kind !== kind || !crdConditionTrue(crd, 'Established')) return undefined;
  if (!(spec.versions ?? []).some((v) => v.name === version && v.served === true)) return undefined;
  return { group, version, resource: names.plural, namespaced: spec.scope === 'Namespaced' };
}

export interface StorageParamsOptions {
  /** How long a read parameter (and the list of definitions) is remembered; 0 reads every time. */
  ttlMs?: number;
  /** The custom resource definitions as followed already (the admission feed's); without it they are listed from storage. */
  definitions?: () => readonly ApiObject[];
}

function notFound(err: unknown): boolean {
  return err instanceof ApiError && err.code === 404;
}

/** Parameters read from storage, built-in kinds resolved from `@svc/kinds`, custom ones from their definitions. */
export function storageParams(storage: Pick<StorageClient, 'get' | 'list'>, options: StorageParamsOptions = {}): ParamReader {
  const ttl = options.ttlMs ?? 1000;
  const objects = new TtlCache<ApiObject>(ttl);
  const lists = new TtlCache<ApiObject[]>(ttl);
  const crds = new TtlCache<readonly ApiObject[]>(ttl);
  const keyOf = (r: ParamResource, namespace: string, name: string): string => `${r.group}/${r.resource}/${namespace}/${name}`;
  return {
    async resolve(apiVersion, kind) {
      const parsed = parseApiVersion(apiVersion);
      const group = canonicalGroup(parsed.group);
      const builtin = builtinParamResources().find((b) => b.kind === kind && b.resource.group === group && b.resource.version === parsed.version);
      if (builtin) return builtin.resource;
      let definitions = options.definitions?.() ?? crds.get('');
      if (!definitions) {
        definitions = (await storage.list({ group: APIEXTENSIONS_GROUP, resource: 'customresourcedefinitions', namespace: '' })).items;
        crds.set('', definitions);
      }
      for (const crd of definitions) {
        const found = crdParamResource(crd, group, parsed.version, kind);
        if (found) return found;
      }
      return undefined;
    },
    async get(resource, namespace, name) {
      const key = keyOf(resource, namespace, name);
      const cached = objects.get(key);
      if (cached) return cached;
      try {
        const found = (await storage.get({ group: resource.group, resource: resource.resource, namespace, name })).object;
        objects.set(key, found);
        return found;
      } catch (err) {
        if (notFound(err)) return undefined;
        throw err;
      }
    },
    async list(resource, namespace) {
      const key = keyOf(resource, namespace, '');
      const cached = lists.get(key);
      if (cached) return cached;
      const items = (await storage.list({ group: resource.group, resource: resource.resource, namespace })).items;
      lists.set(key, items);
      return items;
    },
  };
}
