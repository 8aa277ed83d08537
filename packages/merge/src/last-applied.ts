/**
 * Moving between client-side apply (kubectl computes a patch from the
 * `kubectl.kubernetes.io/last-applied-configuration` annotation and writes it
 * as the `kubectl-client-side-apply` manager) and server-side apply by
 * kubectl (manager `kubectl`), as the original server's field manager does:
 *
 * - upgrade: a server-side apply by `kubectl` that conflicts only on fields
 *   the annotation records, with the value it records still live, takes
 *   those fields over as if forced; other conflicts still fail, and the
 *   error names only them;
 * - downgrade: after a server-side apply by `kubectl`, an object that carries
 *   the annotation has it rewritten to the configuration just applied, so a
 *   later client-side apply computes its patch from what is really applied.
 *   An annotation that would push the object's annotations over their size
 *   limit is dropped instead.
 *
 * Other managers apply unchanged: naming another manager opts out.
 */
import { canonicalGroup } from '@svc/apimachinery';
import { apply, type ApplyOptions, type ApplyResult } from './field-manager';
import type { FieldSet } from './field-set';
import { isJsonObject, jsonEqual, type JsonObject, type JsonValue } from './json';
import { rootSchema } from './topology';
import { compareValues, fieldSetOfValue, WalkContext } from './typed';

export const LAST_APPLIED_ANNOTATION = 'kubectl.kubernetes.io/last-applied-configuration';
/** The only manager whose applies upgrade from, and keep in step with, client-side apply (kubectl's default with --server-side). */
export const CLIENT_SIDE_UPGRADE_MANAGER = 'kubectl';
/** The original's limit on the total size of an object's annotations (keys and values). */
export const TOTAL_ANNOTATION_SIZE_LIMIT = 256 * 1024;

/** Server-side apply with the client-side apply upgrade and the last-applied annotation kept in step (see the module comment). */
export function applyUpgradingClientSide(options: ApplyOptions): ApplyResult {
  if (options.manager !== CLIENT_SIDE_UPGRADE_MANAGER || options.force) return syncLastApplied(options, apply(options));
  const forgiven = lastAppliedFields(options.live, options.apiVersion, options.schema);
  const result = apply(forgiven ? { ...options, forgivenConflicts: forgiven } : options);
  return syncLastApplied(options, result);
}

/**
 * The fields of the live object's last-applied configuration whose recorded
 * value is still the live one; undefined when there is no usable annotation
 * (none, not JSON, another apiVersion, or not matching the schema).
 */
export function lastAppliedFields(live: unknown, apiVersion: string, schema: ApplyOptions['schema']): FieldSet | undefined {
  if (!isJsonObject(live as JsonValue)) return undefined;
  const liveObj = live as JsonObject;
  const text = annotationsOf(liveObj)?.[LAST_APPLIED_ANNOTATION];
  if (typeof text !== 'string' || text === '') return undefined;
  let recorded: unknown;
  try {
    recorded = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (!isJsonObject(recorded as JsonValue)) return undefined;
  const lastApplied = recorded as JsonObject;
  if (typeof lastApplied.apiVersion !== 'string' || sameGroupVersion(lastApplied.apiVersion, apiVersion) === false) return undefined;
  const root = rootSchema(schema);
  const ctx = new WalkContext(true);
  const fields = fieldSetOfValue(lastApplied, root, ctx);
  const cmp = compareValues(lastApplied, liveObj, root, ctx);
  if (ctx.causes.length > 0) return undefined;
  return fields.difference(cmp.modified).difference(cmp.added).difference(cmp.removed);
}

function sameGroupVersion(a: string, b: string): boolean {
  const canonical = (gv: string): string => {
    const slash = gv.indexOf('/');
    return slash < 0 ? gv : `${canonicalGroup(gv.slice(0, slash))}${gv.slice(slash)}`;
  };
  return canonical(a) === canonical(b);
}

function annotationsOf(obj: JsonObject): JsonObject | undefined {
  const meta = obj.metadata;
  if (!isJsonObject(meta)) return undefined;
  return isJsonObject(meta.annotations) ? meta.annotations : undefined;
}

/** After an apply by kubectl: an object with the annotation has it set to the applied configuration (or dropped when too large). */
function syncLastApplied(options: ApplyOptions, result: ApplyResult): ApplyResult {
  if (options.manager !== CLIENT_SIDE_UPGRADE_MANAGER) return result;
  const annotations = annotationsOf(result.object);
  const current = annotations?.[LAST_APPLIED_ANNOTATION];
  if (annotations === undefined || typeof current !== 'string' || current === '') return result;
  const next: JsonObject = { ...annotations, [LAST_APPLIED_ANNOTATION]: encodeLastApplied(options.applied as JsonObject) };
  if (annotationsSize(next) > TOTAL_ANNOTATION_SIZE_LIMIT) delete next[LAST_APPLIED_ANNOTATION];
  if (jsonEqual(next, annotations)) return result;
  const object: JsonObject = { ...result.object, metadata: { ...(result.object.metadata as JsonObject), annotations: next } };
  return { ...result, object, changed: true };
}

/** The applied configuration without the annotation itself, as compact JSON with sorted keys and a final newline (as kubectl and the original write it). */
export function encodeLastApplied(applied: JsonObject): string {
  let config = applied;
  const annotations = annotationsOf(applied);
  if (annotations !== undefined && LAST_APPLIED_ANNOTATION in annotations) {
    const rest: JsonObject = { ...annotations };
    delete rest[LAST_APPLIED_ANNOTATION];
    config = { ...applied, metadata: { ...(applied.metadata as JsonObject), annotations: rest } };
  }
  return `${JSON.stringify(config, sortedKeys)}\n`;
}

function sortedKeys(_key: string, value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  return Object.fromEntries(Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function annotationsSize(annotations: JsonObject): number {
  let total = 0;
  for (const [k, v] of Object.entries(annotations)) total += Buffer.byteLength(k) + (typeof v === 'string' ? Buffer.byteLength(v) : 0);
  return total;
}
