import type { Schema } from './schema';
import type { ApiObject } from './types';
import type { StatusCause } from './errors';

/** Request verbs a resource can serve (SPEC section 5, authorization). */
export type ResourceVerb = 'get' | 'list' | 'watch' | 'create' | 'update' | 'patch' | 'delete' | 'deletecollection';

export const STANDARD_VERBS: readonly ResourceVerb[] = [
  'create',
  'delete',
  'deletecollection',
  'get',
  'list',
  'patch',
  'update',
  'watch',
];

export interface SubresourceDefinition {
  /** Path segment, for example `status`. */
  name: string;
  verbs: ResourceVerb[];
  /** Kind served at the subresource; the parent kind when unset. */
  kind?: string;
  /** Group and version of that kind when they differ from the parent's (a TokenRequest at `serviceaccounts/token`). */
  group?: string;
  version?: string;
  /** Schema and OpenAPI name of a kind that is not itself a resource of the registry. */
  schema?: Schema;
  openApiName?: string;
}

/** Where a custom resource keeps what its `/scale` subresource shows (simple JSON paths, `.spec.replicas`). */
export interface ScaleSubresourcePaths {
  specReplicasPath: string;
  statusReplicasPath: string;
  labelSelectorPath?: string;
}

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  /** Simple JSON path into the object, for example `.metadata.creationTimestamp`. */
  jsonPath: string;
  format?: string;
  description?: string;
  priority?: number;
  /** Computed cell for columns no JSON path expresses (a count of data keys, say); wins over jsonPath. */
  compute?(obj: ApiObject): string | number | boolean | null;
}

/** Per-kind hooks, called by the generic store in a fixed order. */
export interface ResourceStrategy {
  /** Clears fields a client may not set on create (status, for kinds with a status subresource). */
  prepareForCreate?(obj: ApiObject): void;
  /** Carries over fields a client may not change through the main resource. */
  prepareForUpdate?(obj: ApiObject, old: ApiObject): void;
  /** Fills defaults, after the object is decoded and before validation. */
  applyDefaults?(obj: ApiObject): void;
  /** Kind-specific validation; causes name the field path (`spec.ports[0].port`). */
  validate?(obj: ApiObject): StatusCause[];
  validateUpdate?(obj: ApiObject, old: ApiObject): StatusCause[];
  /**
   * The kind's own finalization is still pending (a namespace's
   * `spec.finalizers`): a DELETE only marks the object, like metadata
   * finalizers do, and it stays until this returns false.
   */
  finalizing?(obj: ApiObject): boolean;
  /** Sets what a terminating object shows (a namespace's `Terminating` phase) when a DELETE marks it. */
  prepareForDeletion?(obj: ApiObject): void;
  /**
   * The kind deletes gracefully (the original's CheckGracefulDelete): the
   * grace period, in seconds, a DELETE gives `obj`, from the one the client
   * asked for (undefined when it asked for none). A period above 0 only
   * marks the object (deletionTimestamp that far ahead and
   * deletionGracePeriodSeconds); 0 deletes it. Kinds without the hook are
   * deleted at once.
   */
  gracefulDeletePeriod?(obj: ApiObject, requested: number | undefined): number;
}

/**
 * One declarative entry per kind: everything discovery, OpenAPI, routing,
 * validation, storage keys and apply need to know about it.
 */
export interface ResourceDefinition {
  /** API group; empty string for the core group. */
  group: string;
  version: string;
  kind: string;
  listKind: string;
  /** Resource name in URLs (`configmaps`). */
  plural: string;
  singular: string;
  shortNames: string[];
  categories: string[];
  namespaced: boolean;
  verbs: ResourceVerb[];
  subresources: SubresourceDefinition[];
  /** Structural schema of the whole object, including apiVersion, kind and metadata. */
  schema: Schema;
  /** Extra table columns after `Name`; the default table adds `Created At`. */
  printerColumns: PrinterColumn[];
  strategy: ResourceStrategy;
  /** Name of the schema definition in OpenAPI documents (`io.svc.api.core.v1.ConfigMap`). */
  openApiName: string;
  /** DELETE answers with the deleted object instead of a success Status. */
  returnDeletedObject?: boolean;
  /** PUT may omit metadata.resourceVersion. */
  allowUnconditionalUpdate?: boolean;
  /** PUT to a missing object creates it. */
  allowCreateOnUpdate?: boolean;
  /**
   * A virtual resource: only `create`, answered by the server from the
   * request (a review), never stored, listed or watched.
   */
  virtual?: boolean;
  /** Rule for `metadata.name`: DNS subdomain (default), DNS label, or any path segment. */
  nameValidation?: 'dns-subdomain' | 'dns-label' | 'path-segment';
  /**
   * How a body is read against the schema: `typed` (default) as a typed
   * object, so a value of the wrong type is a 400 decoding error;
   * `unstructured` as custom resources are, so it is left to validation
   * (422 naming the field).
   */
  decoding?: 'typed' | 'unstructured';
  /** PATCH with a strategic merge patch is served (default true; custom resources answer 415). */
  strategicMergePatch?: boolean;
  /** Requests through this version are answered with this text in a `Warning` header (a deprecated version). */
  deprecationWarning?: string;
  /**
   * Objects are stored in another version than the one served here and
   * converted on every read and write (custom resources with several
   * versions); unset when objects are stored as served.
   */
  storageVersioning?: StorageVersioning;
  /**
   * The group and resource whose storage holds this kind's objects, when it
   * is another's (`events.svc.io` events are stored as core events, one
   * object readable through either); unset: the kind's own group and plural.
   */
  storedAs?: { group: string; resource: string };
  /** `/scale` serves an autoscaling/v1 Scale mapped onto these paths (custom resources with `subresources.scale`). */
  scale?: ScaleSubresourcePaths;
  /**
   * The field labels a field selector may name besides `metadata.name` and
   * `metadata.namespace` (the kind's selectable fields: a custom resource's
   * `selectableFields`). Unset: only those two, unless the kind is a
   * built-in one with its own list (field-labels.ts).
   */
  selectableFields?: readonly string[];
}

/**
 * How a kind served in several versions keeps one stored form: objects are
 * written in `storageVersion` and read in the version the client asked for.
 */
export interface StorageVersioning {
  /** The version objects are written in. */
  storageVersion: string;
  conversion: ConversionStrategy;
  /**
   * Fills the `default`s of the schema of the version `obj` is in (by its
   * apiVersion); objects of a version it does not know are left alone.
   */
  applyVersionDefaults(obj: ApiObject): void;
  /** The schema of a version of the kind (served or not), by apiVersion. */
  schemaOf(apiVersion: string): Schema | undefined;
}

export type ConversionStrategy =
  | { strategy: 'None' }
  | { strategy: 'Webhook'; webhook: ConversionWebhookConfig }
  /** A built-in kind served in two forms: `convert` answers `obj` in `apiVersion` (without changing `obj`). */
  | { strategy: 'Builtin'; convert(obj: ApiObject, apiVersion: string): ApiObject };

export interface ConversionWebhookConfig {
  /** The https URL called: `url`, or the one a service reference stands for. */
  url: string;
  /** PEM certificates that verify the webhook's serving certificate; the system's roots when unset. */
  caBundle?: Buffer;
  /** ConversionReview versions the webhook accepts, most preferred first. */
  conversionReviewVersions: string[];
}

/** A service that serves a webhook (`https://<name>.<namespace>.svc:<port><path>`), as admission configurations and conversions name it. */
export interface ServiceReference {
  namespace: string;
  name: string;
  path?: string;
  port?: number;
}

/** Where a webhook is reached, as stored in an admission configuration's `clientConfig`. */
export interface WebhookClientConfig {
  url?: string;
  service?: ServiceReference;
  /** Base64 of the PEM bundle the webhook's serving certificate is verified with (the system's roots when absent). */
  caBundle?: string;
}

export function groupVersion(def: Pick<ResourceDefinition, 'group' | 'version'>): string {
  return def.group ? `${def.group}/${def.version}` : def.version;
}

export interface GroupVersionKey {
  group: string;
  version: string;
}

/**
 * The set of served kinds. Built-in kinds are added at start; custom
 * resource definitions add and remove entries at run time.
 */
export class ResourceRegistry {
  private readonly byResource = new Map<string, ResourceDefinition>();
  private readonly listeners = new Set<() => void>();

  private static key(group: string, version: string, plural: string): string {
    return `${group}/${version}/${plural}`;
  }

  add(def: ResourceDefinition): void {
    this.byResource.set(ResourceRegistry.key(def.group, def.version, def.plural), def);
    this.changed();
  }

  remove(group: string, version: string, plural: string): void {
    if (this.byResource.delete(ResourceRegistry.key(group, version, plural))) this.changed();
  }

  /** Called after every change, so derived documents (discovery, OpenAPI) can be rebuilt. */
  onChange(listener: () => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  lookup(group: string, version: string, plural: string): ResourceDefinition | undefined {
    return this.byResource.get(ResourceRegistry.key(group, version, plural));
  }

  lookupKind(group: string, version: string, kind: string): ResourceDefinition | undefined {
    for (const def of this.byResource.values()) {
      if (def.group === group && def.version === version && def.kind === kind) return def;
    }
    return undefined;
  }

  all(): ResourceDefinition[] {
    return [...this.byResource.values()];
  }

  /** Served group versions, each group's versions in registration order. */
  groupVersions(): GroupVersionKey[] {
    const seen = new Set<string>();
    const out: GroupVersionKey[] = [];
    for (const def of this.byResource.values()) {
      const k = `${def.group}/${def.version}`;
      if (!seen.has(k)) {
        seen.add(k);
        out.push({ group: def.group, version: def.version });
      }
    }
    return out;
  }

  resourcesIn(group: string, version: string): ResourceDefinition[] {
    return this.all().filter((d) => d.group === group && d.version === version);
  }

  hasGroupVersion(group: string, version: string): boolean {
    return this.all().some((d) => d.group === group && d.version === version);
  }

  hasGroup(group: string): boolean {
    return this.all().some((d) => d.group === group);
  }

  private changed(): void {
    for (const l of this.listeners) l();
  }
}
