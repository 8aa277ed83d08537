import { ApiError, isJsonObject, type StatusCause } from '@svc/apimachinery';
import { mediaTypeOf, parseJson, parseYaml, PROTOBUF_TYPES, JSON_TYPE, YAML_TYPE, type ProtobufCodec } from '../negotiation';
import { parseBoolParam } from '../query-bool';
import { INT64_MAX, INT64_MIN, firstValue, int64NumberParam, safeNumber } from '../query-params';
import type { DeleteOptions } from '../registry/store';
import { notSupported } from '@svc/kinds';
import { dryRunCauses, refuseOptions } from './request-options';

/**
 * DeleteOptions of a delete, a deletecollection or a namespace's deletion,
 * from the query and the body, parsed and checked once. A field set in the
 * body wins over the same query parameter. Wrong types are 400 naming the
 * field, never ignored (the original cannot decode them); then the
 * original's checks of DeleteOptions, all problems in one 422 Invalid for
 * DeleteOptions (`orphanDependents` and `propagationPolicy` not both set, a
 * known `propagationPolicy`, `dryRun` only `All`). The policy reaches the store,
 * which leaves the garbage collector's finalizers on the object
 * (registry/propagation.ts).
 *
 * `gracePeriodSeconds` is accepted: kinds that delete gracefully (pods)
 * honour it, the others ignore it as the original does. A negative one is
 * read as 1, as the original reads it, not refused.
 *
 * The body is read in any media type a write accepts: JSON (also when no
 * Content-Type is sent), YAML, and protobuf (`kubectl drain` sends its
 * DeleteOptions so); another type is 415.
 */

export const PROPAGATION_POLICIES = ['Foreground', 'Background', 'Orphan'] as const;

/** 400 BadRequest with one cause naming the field. */
function refused(message: string, field: string, reason: string, causeMessage: string): ApiError {
  const cause: StatusCause = { reason, field, message: causeMessage };
  return ApiError.badRequest(message, [cause]);
}

function invalid(field: string, value: unknown, want: string): ApiError {
  const text = `Invalid value: ${JSON.stringify(value)}: must be ${want}`;
  return refused(`DeleteOptions.${field}: ${text}`, field, 'FieldValueInvalid', text);
}

/** What the body may set, type-checked; undefined for fields it leaves unset (absent or null). */
interface BodyOptions {
  preconditions?: { uid?: string; resourceVersion?: string };
  propagationPolicy?: string;
  gracePeriodSeconds?: number;
  orphanDependents?: boolean;
  dryRun?: string[];
}

/** How the body is encoded: its Content-Type, and the protobuf codec when the server has one. */
export interface BodyMedia {
  contentType?: string | undefined;
  protobuf?: ProtobufCodec | undefined;
}

const YAML_TYPES = [YAML_TYPE, 'application/x-yaml', 'text/yaml'];

function decodeOptionsBody(body: Buffer, media: BodyMedia): unknown {
  const type = mediaTypeOf(media.contentType);
  if (type === '' || type === JSON_TYPE) return parseJson(body);
  if (YAML_TYPES.includes(type)) return parseYaml(body);
  if (!PROTOBUF_TYPES.includes(type) || !media.protobuf) throw ApiError.unsupportedMediaType(type);
  const decoded = media.protobuf.decode(body);
  if (decoded.kind !== 'DeleteOptions') throw ApiError.badRequest(`the object provided is unrecognized (must be of type DeleteOptions): ${String(decoded.kind)} in version "${String(decoded.apiVersion)}"`);
  return decoded;
}

function bodyOptions(body: Buffer, media: BodyMedia): BodyOptions {
  const parsed = decodeOptionsBody(body, media);
  if (!isJsonObject(parsed)) throw ApiError.badRequest('DeleteOptions must be a JSON object');
  const out: BodyOptions = {};
  const set = (v: unknown): boolean => v !== undefined && v !== null;
  const pre = parsed['preconditions'];
  if (set(pre)) {
    if (!isJsonObject(pre)) throw invalid('preconditions', pre, 'an object');
    out.preconditions = {};
    for (const field of ['uid', 'resourceVersion'] as const) {
      const v = pre[field];
      if (!set(v)) continue;
      if (typeof v !== 'string') throw invalid(`preconditions.${field}`, v, 'a string');
      out.preconditions[field] = v;
    }
  }
  const policy = parsed['propagationPolicy'];
  if (set(policy)) {
    if (typeof policy !== 'string') throw invalid('propagationPolicy', policy, 'a string');
    out.propagationPolicy = policy;
  }
  const grace = parsed['gracePeriodSeconds'];
  if (set(grace)) {
    if (typeof grace !== 'number' || !Number.isInteger(grace)) throw invalid('gracePeriodSeconds', grace, 'an integer');
    if (grace > Number(INT64_MAX) || grace < Number(INT64_MIN)) throw invalid('gracePeriodSeconds', grace, `between ${INT64_MIN} and ${INT64_MAX}`);
    out.gracePeriodSeconds = safeNumber(BigInt(grace));
  }
  const orphan = parsed['orphanDependents'];
  if (set(orphan)) {
    if (typeof orphan !== 'boolean') throw invalid('orphanDependents', orphan, 'a boolean');
    out.orphanDependents = orphan;
  }
  const dryRun = parsed['dryRun'];
  if (set(dryRun)) {
    if (!Array.isArray(dryRun) || dryRun.some((v) => typeof v !== 'string')) throw invalid('dryRun', dryRun, 'a list of strings');
    out.dryRun = dryRun as string[];
  }
  return out;
}

/**
 * The options of a delete: `queryValues(name)` gives a query parameter's
 * values (none when absent), `body` is the request body (empty for none).
 */
export function parseDeleteOptions(queryValues: (name: string) => readonly string[], body: Buffer, media: BodyMedia = {}): DeleteOptions {
  // Every value is converted, the query's too where the body overrides it: a wrong one is never passed over.
  const queryDryRun = [...queryValues('dryRun')];
  const queryGrace = int64NumberParam(queryValues('gracePeriodSeconds'), 'gracePeriodSeconds');
  const queryOrphan = queryValues('orphanDependents');
  const fromBody = body.length > 0 ? bodyOptions(body, media) : {};

  const propagationPolicy = fromBody.propagationPolicy ?? firstValue(queryValues('propagationPolicy'));
  const orphanDependents = fromBody.orphanDependents ?? (queryOrphan.length > 0 ? parseBoolParam(queryOrphan) : undefined);
  const gracePeriodSeconds = fromBody.gracePeriodSeconds ?? queryGrace;
  // Either asking for a dry run makes it one: a delete is never done when a dry run was asked for.
  const dryRunValues = [...queryDryRun, ...(fromBody.dryRun ?? [])];

  // The original's checks of DeleteOptions, every problem reported at once.
  const causes: StatusCause[] = [];
  if (orphanDependents !== undefined && propagationPolicy !== undefined) {
    causes.push({ reason: 'FieldValueInvalid', field: 'propagationPolicy', message: `Invalid value: ${JSON.stringify(propagationPolicy)}: orphanDependents and deletionPropagation cannot be both set` });
  }
  if (propagationPolicy !== undefined && !(PROPAGATION_POLICIES as readonly string[]).includes(propagationPolicy)) {
    causes.push(notSupported('propagationPolicy', propagationPolicy, [...PROPAGATION_POLICIES, 'nil']));
  }
  causes.push(...dryRunCauses(dryRunValues));
  refuseOptions('DeleteOptions', causes);
  const dryRun = dryRunValues.length > 0;

  const options: DeleteOptions = { dryRun };
  if (fromBody.preconditions !== undefined) options.preconditions = fromBody.preconditions;
  if (propagationPolicy !== undefined) options.propagationPolicy = propagationPolicy;
  if (orphanDependents !== undefined) options.orphanDependents = orphanDependents;
  // Negative means 1 second, as in the original.
  if (gracePeriodSeconds !== undefined) options.gracePeriodSeconds = gracePeriodSeconds < 0 ? 1 : gracePeriodSeconds;
  return options;
}
