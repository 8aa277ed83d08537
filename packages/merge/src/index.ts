/**
 * Merge engines: field sets, server-side apply with managed fields, and the
 * patch formats (strategic merge, JSON patch, merge patch). Pure logic driven
 * by structural schemas; no I/O. Every failure is a MergeError carrying a
 * Status reason, an HTTP code and causes that name the field.
 */
export type { Schema, SchemaType } from '@svc/apimachinery';
export type { JsonObject, JsonPrimitive, JsonValue } from './json';
export { jsonEqual } from './json';
export { MergeError } from './errors';
export type { FieldConflict, MergeErrorCause, MergeErrorReason } from './errors';
export type { FieldPath, PathElement } from './path';
export { parsePathElement, pathToString, serializePathElement } from './path';
export { FieldSet } from './field-set';
export type { ManagedFieldsEntry } from './managed-fields';
export { ANCIENT_CHANGES_MANAGER, DEFAULT_MAX_UPDATE_MANAGERS } from './managed-fields';
export { OBJECT_META_SCHEMA } from './object-meta';
export { apply, fieldSetOf, trackUpdate } from './field-manager';
export type { ApplyOptions, ApplyResult, TrackUpdateOptions, TrackUpdateResult } from './field-manager';
export { applyUpgradingClientSide, CLIENT_SIDE_UPGRADE_MANAGER, encodeLastApplied, LAST_APPLIED_ANNOTATION, lastAppliedFields } from './last-applied';
export { strategicMergePatch } from './strategic-merge-patch';
export { jsonPatch, mergePatch, MAX_JSON_PATCH_OPERATIONS } from './json-patch';
export type { JsonPatchOperation } from './json-patch';
