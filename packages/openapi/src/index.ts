/**
 * OpenAPI and discovery documents built from the resource registry: Swagger
 * 2.0 (`/openapi/v2`), the OpenAPI 3.0 index and per-group-version documents
 * (`/openapi/v3`), and the discovery lists (`/api`, `/apis`, ...), legacy and
 * aggregated. Schema extensions are published under their `x-svc-*` names
 * and their upstream `x-kubernetes-*` names, so unchanged clients explain,
 * validate and merge.
 */
export { OpenApiDocuments, openApiV2, openApiV3Discovery, openApiV3GroupVersion } from './documents';
export type { DocumentOptions } from './documents';
export { apiGroup, apiGroupList, apiResourceList, apiVersions, asRequestedGroup, storageVersionHash, withUpstreamGroupNames } from './discovery';
export type { ApiGroup, ApiGroupList, ApiResource, ApiResourceList, ApiVersions, GroupVersionForDiscovery, ServerAddressByClientCidr } from './discovery';
export { AggregatedDiscovery, DISCOVERY_GROUP, DISCOVERY_KIND, apiGroupDiscoveryList, discoveryETag, discoveryGroups, discoveryResources } from './aggregated-discovery';
export type { AggregatedDiscoveryDocument, ApiGroupDiscovery, ApiGroupDiscoveryList, ApiResourceDiscovery, ApiSubresourceDiscovery, ApiVersionDiscovery, DiscoveryScope, GroupVersionKindRef } from './aggregated-discovery';
export { EXTENSION_ALIASES, convertSchema } from './schema-convert';
export type { Dialect } from './schema-convert';
export { listDefinitionName, metaName, openApiV3Key } from './names';
export { PATCH_MEDIA_TYPES, QUERY_PARAMETERS, kindPaths } from './operations';
export type { Action, GroupVersionKind, Operation, PathItem, QueryParameter } from './operations';
export { OPENAPI_V2_PROTOBUF, OPENAPI_V2_PROTOBUF_ALT, encodeOpenApiV2Protobuf } from './v2-protobuf';
