import { ApiError, type ApiObject, type ManagedFieldsEntry, type PrinterColumn, type ScaleSubresourcePaths, type StatusCause, type SubresourceDefinition } from '@svc/apimachinery';
import { FieldSet, type FieldPath, type Schema } from '@svc/merge';
import { cloneJson, isRecord, type Fields } from './object-access';
import { objectSchema } from './object-meta';
import { int32, str, struct } from './schema-builders';

/**
 * The scale subresource of a custom resource: `<plural>/<name>/scale` serves
 * an `autoscaling/v1` Scale whose `spec.replicas` is read from and written to
 * the definition's `specReplicasPath`, and whose status comes from
 * `statusReplicasPath` and `labelSelectorPath`, as the original server maps
 * them. A write through it changes only the spec replicas path.
 */

export const AUTOSCALING_GROUP = 'autoscaling';

export const SCALE_SCHEMA: Schema = objectSchema('Scale represents a scaling request for a resource.', {
  spec: struct({ replicas: int32('replicas is the desired number of instances for the scaled object.') }, { description: 'spec defines the behavior of the scale.' }),
  status: struct(
    {
      replicas: int32('replicas is the actual number of observed instances of the scaled object.'),
      selector: str('selector is the label query over pods that should match the replicas count, in the string form of a label selector.'),
    },
    { description: 'status is the current status of the scale. Read-only.', required: ['replicas'] },
  ),
});

/** The discovery and OpenAPI face of `/scale`: kind Scale of autoscaling/v1, get, patch and update. */
export const SCALE_SUBRESOURCE: SubresourceDefinition = {
  name: 'scale',
  verbs: ['get', 'patch', 'update'],
  kind: 'Scale',
  group: AUTOSCALING_GROUP,
  version: 'v1',
  schema: SCALE_SCHEMA,
  openApiName: 'io.svc.api.autoscaling.v1.Scale',
};

/** The table columns of a Scale after `Name` (then `Age`), as the original prints a custom resource's Scale. */
export const SCALE_PRINTER_COLUMNS: PrinterColumn[] = [
  { name: 'Desired', type: 'integer', jsonPath: '.spec.replicas', description: 'Number of desired replicas' },
  { name: 'Available', type: 'integer', jsonPath: '.status.replicas', description: 'Number of actual replicas' },
];

/** Marks a Scale whose object has no spec replicas yet, so a patch that sets none is refused. */
export const UNSET_SPEC_REPLICAS = -2147483648;

function segments(path: string): string[] {
  return path.replace(/^\./, '').split('.');
}

function typeName(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

/** The integer at `path`, undefined when a level is missing; a value of another type is an error naming the field. */
function readInteger(obj: Fields, path: string): number | undefined {
  let cur: unknown = obj;
  for (const part of segments(path)) {
    if (cur === undefined || cur === null) return undefined;
    if (!isRecord(cur)) throw ApiError.internal(`${path} accessor error: ${JSON.stringify(cur)} is of the type ${typeName(cur)}, expected an object`);
    cur = cur[part];
  }
  if (cur === undefined || cur === null) return undefined;
  if (typeof cur !== 'number' || !Number.isInteger(cur)) throw ApiError.internal(`${path} accessor error: ${JSON.stringify(cur)} is of the type ${typeName(cur)}, expected an integer`);
  return cur;
}

function readString(obj: Fields, path: string): string {
  let cur: unknown = obj;
  for (const part of segments(path)) {
    if (!isRecord(cur)) return '';
    cur = cur[part];
  }
  if (cur === undefined || cur === null) return '';
  if (typeof cur !== 'string') throw ApiError.internal(`${path} accessor error: ${JSON.stringify(cur)} is of the type ${typeName(cur)}, expected a string`);
  return cur;
}

export interface ScaleView {
  scale: ApiObject;
  /** Whether the object has a value at the spec replicas path. */
  specReplicasFound: boolean;
}

/** The Scale an object stands for (spec replicas 0 when the path holds nothing). */
export function scaleFromObject(obj: ApiObject, paths: ScaleSubresourcePaths): ScaleView {
  const specReplicas = readInteger(obj, paths.specReplicasPath);
  const statusReplicas = readInteger(obj, paths.statusReplicasPath) ?? 0;
  const selector = paths.labelSelectorPath ? readString(obj, paths.labelSelectorPath) : '';
  const meta = obj.metadata ?? {};
  const metadata: NonNullable<ApiObject['metadata']> = {};
  for (const key of ['name', 'namespace', 'uid', 'resourceVersion', 'creationTimestamp'] as const) {
    if (meta[key] !== undefined && meta[key] !== '') metadata[key] = meta[key];
  }
  const spec: Fields = {};
  if (specReplicas) spec['replicas'] = specReplicas;
  const status: Fields = { replicas: statusReplicas };
  if (selector) status['selector'] = selector;
  return { scale: { apiVersion: `${AUTOSCALING_GROUP}/v1`, kind: 'Scale', metadata, spec, status }, specReplicasFound: specReplicas !== undefined };
}

/** What a Scale sent by a client may not be (the original server's Scale validation). */
export function validateScale(scale: ApiObject): StatusCause[] {
  const replicas = isRecord(scale['spec']) ? scale['spec']['replicas'] : undefined;
  if (typeof replicas === 'number' && replicas < 0) {
    return [{ reason: 'FieldValueInvalid', field: 'spec.replicas', message: `Invalid value: ${replicas}: must be greater than or equal to 0` }];
  }
  return [];
}

/** The Scale's desired replicas: 0 when unset, as a missing integer decodes. */
export function desiredReplicas(scale: ApiObject): number {
  const replicas = isRecord(scale['spec']) ? scale['spec']['replicas'] : undefined;
  return typeof replicas === 'number' ? replicas : 0;
}

/**
 * The object with `replicas` at the spec replicas path (levels created as
 * needed); a level that is not an object is an error naming the path.
 */
export function withSpecReplicas(obj: ApiObject, paths: ScaleSubresourcePaths, replicas: number): ApiObject {
  if (replicas === UNSET_SPEC_REPLICAS) throw ApiError.badRequest(`the spec replicas field ${JSON.stringify(paths.specReplicasPath)} cannot be empty`);
  const out = cloneJson(obj);
  const parts = segments(paths.specReplicasPath);
  let cur: Fields = out;
  for (const part of parts.slice(0, -1)) {
    const next = cur[part];
    if (next === undefined || next === null) cur[part] = {};
    else if (!isRecord(next)) throw ApiError.internal(`the spec replicas field ${JSON.stringify(paths.specReplicasPath)} cannot be set: ${part} is of the type ${typeName(next)}, not an object`);
    cur = cur[part] as Fields;
  }
  cur[parts[parts.length - 1] as string] = replicas;
  return out;
}

const SCALE_API_VERSION = `${AUTOSCALING_GROUP}/v1`;
const SCALE_REPLICAS: FieldPath = [{ field: 'spec' }, { field: 'replicas' }];

function specReplicasFieldPath(paths: ScaleSubresourcePaths): FieldPath {
  return segments(paths.specReplicasPath).map((field) => ({ field }));
}

function fieldsOf(entry: ManagedFieldsEntry): FieldSet {
  return FieldSet.fromFieldsV1(entry.fieldsV1 ?? {});
}

/** Managers are matched across the object and its Scale by name, operation and subresource (the version differs by design). */
function managerKey(entry: ManagedFieldsEntry): string {
  return JSON.stringify([entry.manager, entry.operation, entry.subresource ?? '']);
}

/**
 * The managed fields of the Scale an object stands for: each entry of the
 * object that owns the spec replicas path, as an entry of autoscaling/v1
 * owning `spec.replicas` (the original's scale handler, to the subresource).
 */
export function scaleManagedFields(objectEntries: readonly ManagedFieldsEntry[] | undefined, paths: ScaleSubresourcePaths): ManagedFieldsEntry[] {
  const replicas = specReplicasFieldPath(paths);
  const scaleFields = FieldSet.fromPaths([SCALE_REPLICAS]).toFieldsV1();
  return (objectEntries ?? []).filter((e) => fieldsOf(e).has(replicas)).map((e) => ({ ...e, apiVersion: SCALE_API_VERSION, fieldsType: 'FieldsV1', fieldsV1: scaleFields }));
}

/**
 * The object's managed fields after a write of its Scale (the original's
 * scale handler, back to the parent): an entry of the object that owned the
 * spec replicas path keeps it only while its manager still owns
 * `spec.replicas` in the Scale; a manager of the Scale that did not own the
 * path before gets an entry of the object's version owning it.
 */
export function objectManagedFields(
  objectEntries: readonly ManagedFieldsEntry[] | undefined,
  scaleEntries: readonly ManagedFieldsEntry[],
  paths: ScaleSubresourcePaths,
  objectApiVersion: string,
): ManagedFieldsEntry[] {
  const replicas = specReplicasFieldPath(paths);
  const replicasOnly = FieldSet.fromPaths([replicas]);
  const scaleManagers = new Map(scaleEntries.map((e) => [managerKey(e), e]));
  const out: ManagedFieldsEntry[] = [];
  for (const entry of objectEntries ?? []) {
    const fields = fieldsOf(entry);
    if (!fields.has(replicas) || scaleManagers.delete(managerKey(entry))) {
      out.push(entry);
      continue;
    }
    const rest = fields.difference(replicasOnly);
    if (!rest.isEmpty()) out.push({ ...entry, fieldsV1: rest.toFieldsV1() });
  }
  for (const entry of scaleManagers.values()) {
    if (fieldsOf(entry).has(SCALE_REPLICAS)) out.push({ ...entry, apiVersion: objectApiVersion, fieldsType: 'FieldsV1', fieldsV1: replicasOnly.toFieldsV1() });
  }
  return out;
}
