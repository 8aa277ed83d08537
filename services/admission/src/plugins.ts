import { ApiError, IMMORTAL_NAMESPACES, MIRROR_POD_ANNOTATION, namespaceTerminating, namespaceTerminatingError, type ApiObject, type UserInfo } from '@svc/apimachinery';

/**
 * Admission plugins. Mutating plugins may return a changed object; validating
 * plugins only accept or throw the ApiError to answer with. Plugins run in the
 * order given, mutating ones before validating ones (as in the original
 * server).
 */
export type AdmissionOperation = 'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT';

export interface AdmissionAttributes {
  operation: AdmissionOperation;
  kind: { group: string; version: string; kind: string };
  resource: { group: string; version: string; resource: string };
  subresource: string;
  namespace: string;
  name: string;
  userInfo: UserInfo;
  object: ApiObject | undefined;
  oldObject: ApiObject | undefined;
  dryRun: boolean;
}

export interface AdmissionPlugin {
  name: string;
  /** Returns the mutated object, or undefined to leave it unchanged. */
  admit?(attrs: AdmissionAttributes): Promise<ApiObject | undefined>;
  validate?(attrs: AdmissionAttributes): Promise<void>;
}

export interface NamespaceReader {
  /** The namespace object, or undefined when it does not exist. */
  getNamespace(name: string): Promise<ApiObject | undefined>;
}


/**
 * NamespaceLifecycle: content can only be created in a namespace that exists
 * and is not terminating; the system namespaces cannot be deleted.
 */
export function namespaceLifecycle(namespaces: NamespaceReader): AdmissionPlugin {
  return {
    name: 'NamespaceLifecycle',
    async validate(attrs) {
      const isNamespace = attrs.resource.group === '' && attrs.resource.resource === 'namespaces';
      if (isNamespace) {
        if (attrs.operation === 'DELETE' && IMMORTAL_NAMESPACES.includes(attrs.name)) {
          throw ApiError.forbidden({ group: '', resource: 'namespaces' }, attrs.name, 'this namespace may not be deleted');
        }
        return;
      }
      if (attrs.operation !== 'CREATE' || attrs.namespace === '') return;
      const ns = await namespaces.getNamespace(attrs.namespace);
      if (!ns) throw ApiError.notFound({ group: '', resource: 'namespaces' }, attrs.namespace);
      if (namespaceTerminating(ns)) throw namespaceTerminatingError({ group: attrs.resource.group, resource: attrs.resource.resource }, attrs.name, attrs.namespace);
    },
  };
}

/** The account a pod runs as when it names none (SPEC section 5: "A pod is bound by its serviceAccountName"). */
export const DEFAULT_SERVICE_ACCOUNT = 'default';

/**
 * ServiceAccount (mutating): a pod created without a service account runs as
 * its namespace's `default` account; the deprecated `serviceAccount` field
 * and `serviceAccountName` are kept the same, as the original plugin does.
 * Mirror pods are left alone (a node's static pods run without an account,
 * and NodeRestriction refuses mirror pods that name one).
 */
export function serviceAccountDefaults(): AdmissionPlugin {
  return {
    name: 'ServiceAccount',
    async admit(attrs) {
      const isPod = attrs.resource.group === '' && attrs.resource.resource === 'pods' && attrs.subresource === '';
      if (!isPod || attrs.operation !== 'CREATE' || !attrs.object) return undefined;
      if (attrs.object.metadata?.annotations?.[MIRROR_POD_ANNOTATION] !== undefined) return undefined;
      const spec = (attrs.object['spec'] ?? {}) as Record<string, unknown>;
      const named = (spec['serviceAccountName'] as string | undefined) || (spec['serviceAccount'] as string | undefined) || DEFAULT_SERVICE_ACCOUNT;
      if (spec['serviceAccountName'] === named && spec['serviceAccount'] === named) return undefined;
      return { ...attrs.object, spec: { ...spec, serviceAccountName: named, serviceAccount: named } };
    },
  };
}

export interface AdmissionResult {
  object: ApiObject | undefined;
  changed: boolean;
}

/**
 * Runs the mutating plugins in order, each on the object the previous ones
 * left. The attributes are handed on as they are until a plugin changes the
 * object (the server parses the object only when a plugin reads it).
 */
export async function runMutating(plugins: AdmissionPlugin[], attrs: AdmissionAttributes): Promise<AdmissionResult> {
  let current = attrs;
  let changed = false;
  for (const p of plugins) {
    if (!p.admit) continue;
    const out = await p.admit(current);
    if (out !== undefined) {
      current = { ...current, object: out };
      changed = true;
    }
  }
  return changed ? { object: current.object, changed } : { get object() { return attrs.object; }, changed };
}

export async function runValidating(plugins: AdmissionPlugin[], attrs: AdmissionAttributes): Promise<void> {
  for (const p of plugins) if (p.validate) await p.validate(attrs);
}
