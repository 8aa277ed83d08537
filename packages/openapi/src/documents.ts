import { createHash } from 'node:crypto';
import type { JsonObject, ResourceDefinition, ResourceRegistry } from '@svc/apimachinery';
import { definitionsOf } from './kind-definitions';
import { metaDefinitions } from './meta-definitions';
import { openApiV3Key } from './names';
import { kindPaths } from './operations';
import { renderPaths } from './render';
import { encodeOpenApiV2Protobuf } from './v2-protobuf';
import { OPENAPI_3, SWAGGER_2, type Dialect } from './schema-convert';

/**
 * The OpenAPI documents, built from the registry on demand so kinds added at
 * run time appear: `/openapi/v2` (Swagger 2.0, every group version),
 * `/openapi/v3` (an index of group versions with content hashes) and
 * `/openapi/v3/<api|apis/group>/<version>` (OpenAPI 3.0 per group version).
 */

export interface DocumentOptions {
  /** `info.title`; defaults to `svc`. */
  title?: string;
  /** `info.version`, usually the server's gitVersion; defaults to `v1.32.0`. */
  version?: string;
}

const BEARER = {
  type: 'apiKey',
  name: 'authorization',
  in: 'header',
  description: 'Bearer token authentication: `Authorization: Bearer <token>`.',
};

function info(options: DocumentOptions): JsonObject {
  return { title: options.title ?? 'svc', version: options.version ?? 'v1.32.0' };
}

function sortedKeys(record: JsonObject): JsonObject {
  const out: JsonObject = {};
  for (const key of Object.keys(record).sort()) out[key] = record[key];
  return out;
}

function buildParts(registry: ResourceRegistry, defs: ResourceDefinition[], dialect: Dialect): { paths: JsonObject; definitions: JsonObject } {
  const definitions: JsonObject = { ...metaDefinitions(dialect, registry.groupVersions()) };
  const items = [];
  for (const def of defs) {
    Object.assign(definitions, definitionsOf(def, dialect));
    for (const item of kindPaths(def, registry)) items.push({ item, kind: def.kind });
  }
  return { paths: sortedKeys(renderPaths(items, dialect)), definitions: sortedKeys(definitions) };
}

/** The Swagger 2.0 document of every served kind. */
export function openApiV2(registry: ResourceRegistry, options: DocumentOptions = {}): JsonObject {
  const { paths, definitions } = buildParts(registry, registry.all(), SWAGGER_2);
  return {
    swagger: '2.0',
    info: info(options),
    paths,
    definitions,
    securityDefinitions: { BearerToken: { ...BEARER } },
    security: [{ BearerToken: [] }],
  };
}

/** The OpenAPI 3.0 document of one group version (with no paths when the group version is not served). */
export function openApiV3GroupVersion(registry: ResourceRegistry, group: string, version: string, options: DocumentOptions = {}): JsonObject {
  const defs = registry.resourcesIn(group, version);
  const { paths, definitions } = buildParts(registry, defs, OPENAPI_3);
  return {
    openapi: '3.0.0',
    info: info(options),
    paths,
    components: { schemas: definitions, securitySchemes: { BearerToken: { ...BEARER } } },
    security: [{ BearerToken: [] }],
  };
}

/**
 * The `/openapi/v3` index: one entry per served group version with the URL
 * of its document, whose `hash` lets clients cache it.
 */
export function openApiV3Discovery(registry: ResourceRegistry, hashOf: (group: string, version: string) => string): JsonObject {
  const paths: JsonObject = {};
  for (const gv of registry.groupVersions()) {
    const key = openApiV3Key(gv.group, gv.version);
    paths[key] = { serverRelativeURL: `/openapi/v3/${key}?hash=${hashOf(gv.group, gv.version)}` };
  }
  return { paths: sortedKeys(paths) };
}

/**
 * The documents of a registry, built once and rebuilt after the registry
 * changes. What a server holds to answer OpenAPI requests cheaply.
 */
export class OpenApiDocuments {
  private v2Cache: JsonObject | undefined;
  private v2JsonCache: Buffer | undefined;
  private v2ProtobufCache: Buffer | undefined;
  private readonly v3Cache = new Map<string, { document: JsonObject; hash: string }>();
  private readonly v3Hashes = new Map<string, string>();
  /** A digest of each registry entry's content, kept while the entry is (entries are replaced, not changed). */
  private readonly entryDigests = new WeakMap<ResourceDefinition, string>();
  private groupVersionsDigest: string | undefined;
  private readonly unsubscribe: () => void;

  constructor(
    private readonly registry: ResourceRegistry,
    private readonly options: DocumentOptions = {},
  ) {
    this.unsubscribe = registry.onChange(() => this.invalidate());
  }

  v2(): JsonObject {
    this.v2Cache ??= openApiV2(this.registry, this.options);
    return this.v2Cache;
  }

  /** The v2 document as JSON bytes, serialized once per registry state (it is large with many kinds). */
  v2Json(): Buffer {
    this.v2JsonCache ??= Buffer.from(JSON.stringify(this.v2()));
    return this.v2JsonCache;
  }

  /** The v2 document as an `openapi.v2.Document` message (kubectl's client-side validation reads it). */
  v2Protobuf(): Buffer {
    this.v2ProtobufCache ??= encodeOpenApiV2Protobuf(this.v2());
    return this.v2ProtobufCache;
  }

  /** The document and hash of a group version, or undefined when it is not served. */
  v3(group: string, version: string): { document: JsonObject; hash: string } | undefined {
    if (!this.registry.hasGroupVersion(group, version)) return undefined;
    const key = openApiV3Key(group, version);
    let entry = this.v3Cache.get(key);
    if (!entry) {
      const document = openApiV3GroupVersion(this.registry, group, version, this.options);
      entry = { document, hash: this.v3Hash(group, version) };
      this.v3Cache.set(key, entry);
    }
    return entry;
  }

  /**
   * The hash of a group version's document without building it: a digest of
   * everything the document is made from (the group version's entries, the
   * served group versions the meta definitions name, the options). It is
   * the same on every replica with the same kinds, and changes whenever the
   * document does, which is all a client's cache needs; building every
   * document for the index after each change cost seconds with a thousand
   * custom resource definitions.
   */
  v3Hash(group: string, version: string): string {
    const key = openApiV3Key(group, version);
    let hash = this.v3Hashes.get(key);
    if (hash === undefined) {
      this.groupVersionsDigest ??= createHash('sha512').update(JSON.stringify([this.options, this.registry.groupVersions()])).digest('hex');
      const h = createHash('sha512').update(this.groupVersionsDigest);
      for (const def of this.registry.resourcesIn(group, version)) h.update(this.entryDigest(def));
      hash = h.digest('hex').toUpperCase();
      this.v3Hashes.set(key, hash);
    }
    return hash;
  }

  v3Discovery(): JsonObject {
    return openApiV3Discovery(this.registry, (group, version) => this.v3Hash(group, version));
  }

  private entryDigest(def: ResourceDefinition): string {
    let digest = this.entryDigests.get(def);
    if (digest === undefined) {
      digest = createHash('sha512').update(JSON.stringify(def)).digest('hex');
      this.entryDigests.set(def, digest);
    }
    return digest;
  }

  invalidate(): void {
    this.v2Cache = undefined;
    this.v2JsonCache = undefined;
    this.v2ProtobufCache = undefined;
    this.v3Cache.clear();
    this.v3Hashes.clear();
    this.groupVersionsDigest = undefined;
  }

  /** Stops following registry changes. */
  close(): void {
    this.unsubscribe();
  }
}
