import { ApiError, type StatusCause } from '@svc/apimachinery';
import { forbidden, notSupported } from '@svc/kinds';
import { mediaTypeOf } from '../negotiation';
import { firstValue } from '../query-params';
import { isApplyPatchType } from './patch';

/**
 * The options of a request (CreateOptions, UpdateOptions, PatchOptions,
 * ListOptions from the query; DeleteOptions from the query and the body),
 * checked as the original server checks them after decoding: every problem
 * is collected, and a request with any is 422 Invalid naming the options
 * kind (`PatchOptions.meta.svc.io "" is invalid: ...`), one cause per
 * field; ListOptions problems are 400 BadRequest with the same causes
 * (SPEC section 7). A value the decoder cannot convert at all (an integer that is not
 * one) stays 400 BadRequest, as there (query-params.ts).
 *
 * The router checks the query's options of every resource request here,
 * before any handler runs, so built-in kinds, custom resources and
 * subresources refuse the same values in the same words.
 */

export const OPTIONS_GROUP = 'meta.svc.io';

export type OptionsKind = 'CreateOptions' | 'UpdateOptions' | 'PatchOptions' | 'DeleteOptions' | 'ListOptions';

/** 422 Invalid for options with problems. */
export function invalidOptions(kind: OptionsKind, causes: StatusCause[]): ApiError {
  return ApiError.invalid({ group: OPTIONS_GROUP, kind }, '', causes);
}

/**
 * Throws when there is any cause: 422 Invalid naming the options kind; for
 * ListOptions 400 BadRequest with the same causes, as SPEC section 7 has
 * it for list and watch parameters that do not fit together.
 */
export function refuseOptions(kind: OptionsKind, causes: StatusCause[]): void {
  if (causes.length === 0) return;
  if (kind === 'ListOptions') throw ApiError.badRequest(causes.map((c) => `${c.field ?? ''}: ${c.message ?? ''}`).join(', '), causes);
  throw invalidOptions(kind, causes);
}

const quote = (v: string): string => JSON.stringify(v);

/** `dryRun`: every value must be `All` (the list is shown as the original shows a list of strings). */
export function dryRunCauses(values: readonly string[]): StatusCause[] {
  if (values.every((v) => v === 'All')) return [];
  return [{ reason: 'FieldValueNotSupported', field: 'dryRun', message: `Unsupported value: []string{${values.map(quote).join(', ')}}: supported values: "All"` }];
}

export const FIELD_MANAGER_MAX_BYTES = 128;

/** Printable as the original counts it: letters, marks, numbers, punctuation, symbols and the ASCII space. */
const PRINTABLE = /^[\p{L}\p{M}\p{N}\p{P}\p{S} ]$/u;

/** `fieldManager`: at most 128 bytes, every character printable (position in bytes, as the original counts). */
export function fieldManagerCauses(manager: string): StatusCause[] {
  const causes: StatusCause[] = [];
  if (Buffer.byteLength(manager) > FIELD_MANAGER_MAX_BYTES) {
    causes.push({ reason: 'FieldValueTooLong', field: 'fieldManager', message: `Too long: must have at most ${FIELD_MANAGER_MAX_BYTES} bytes` });
  }
  let position = 0;
  for (const ch of manager) {
    if (!PRINTABLE.test(ch)) {
      const code = (ch.codePointAt(0) ?? 0).toString(16).toUpperCase().padStart(4, '0');
      const shown = manager.length > 64 ? `${manager.slice(0, 64)}...` : manager;
      causes.push({ reason: 'FieldValueInvalid', field: 'fieldManager', message: `Invalid value: ${quote(shown)}: invalid character U+${code} (at position ${position})` });
    }
    position += Buffer.byteLength(ch);
  }
  return causes;
}

const FIELD_VALIDATION_VALUES = ['', 'Ignore', 'Strict', 'Warn'];

/** `fieldValidation`: empty (the default, Warn), Ignore, Warn or Strict. */
export function fieldValidationCauses(value: string): StatusCause[] {
  return FIELD_VALIDATION_VALUES.includes(value) ? [] : [notSupported('fieldValidation', value, FIELD_VALIDATION_VALUES)];
}

/** The query of a request: a parameter's values, none when absent. */
export type QueryValues = (name: string) => readonly string[];

function writeCauses(values: QueryValues): StatusCause[] {
  return [...fieldManagerCauses(firstValue(values('fieldManager')) ?? ''), ...dryRunCauses(values('dryRun')), ...fieldValidationCauses(firstValue(values('fieldValidation')) ?? '')];
}

/** PatchOptions: `force` only on apply, which needs a `fieldManager`; then the write options. */
function patchCauses(values: QueryValues, contentType: string | undefined): StatusCause[] {
  const causes: StatusCause[] = [];
  if (!isApplyPatchType(mediaTypeOf(contentType))) {
    if (values('force').length > 0) causes.push(forbidden('force', 'may not be specified for non-apply patch'));
  } else if ((firstValue(values('fieldManager')) ?? '') === '') {
    causes.push({ reason: 'FieldValueRequired', field: 'fieldManager', message: 'Required value: is required for apply patch' });
  }
  return [...causes, ...writeCauses(values)];
}

const MATCH_EXACT = 'Exact';
const MATCH_NOT_OLDER = 'NotOlderThan';

/** ListOptions of a list or a deletecollection. */
function listCauses(values: QueryValues): StatusCause[] {
  const causes: StatusCause[] = [];
  const match = firstValue(values('resourceVersionMatch')) ?? '';
  const rv = firstValue(values('resourceVersion')) ?? '';
  if (match !== '') {
    if (rv === '') causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden unless resourceVersion is provided'));
    if ((firstValue(values('continue')) ?? '') !== '') causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
    if (match !== MATCH_EXACT && match !== MATCH_NOT_OLDER) causes.push(notSupported('resourceVersionMatch', match, [MATCH_EXACT, MATCH_NOT_OLDER, '']));
    if (match === MATCH_EXACT && rv === '0') causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch "exact" is forbidden for resourceVersion "0"'));
  }
  if (values('sendInitialEvents').length > 0) causes.push(forbidden('sendInitialEvents', 'sendInitialEvents is forbidden for list'));
  return causes;
}

/** ListOptions of a watch: `resourceVersionMatch` only NotOlderThan, and only with `sendInitialEvents` (which requires it). */
function watchCauses(values: QueryValues): StatusCause[] {
  const causes: StatusCause[] = [];
  const match = firstValue(values('resourceVersionMatch')) ?? '';
  const initialEvents = values('sendInitialEvents').length > 0;
  if (initialEvents && match !== MATCH_NOT_OLDER) causes.push(forbidden('resourceVersionMatch', `sendInitialEvents requires setting resourceVersionMatch to ${MATCH_NOT_OLDER}`));
  if (match !== '') {
    if (!initialEvents) causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'));
    if (match !== MATCH_NOT_OLDER) causes.push(notSupported('resourceVersionMatch', match, [MATCH_NOT_OLDER]));
    if ((firstValue(values('continue')) ?? '') !== '') causes.push(forbidden('resourceVersionMatch', 'resourceVersionMatch is forbidden when continue is provided'));
  }
  return causes;
}

/**
 * Checks the query's options of a resource request by its verb; throws the
 * 422 when any is invalid. Delete and deletecollection check their
 * DeleteOptions (query and body) in delete-options.ts; a deletecollection's
 * ListOptions are checked here.
 */
export function checkQueryOptions(verb: string, values: QueryValues, contentType: string | undefined): void {
  switch (verb) {
    case 'create':
      return refuseOptions('CreateOptions', writeCauses(values));
    case 'update':
      return refuseOptions('UpdateOptions', writeCauses(values));
    case 'patch':
      return refuseOptions('PatchOptions', patchCauses(values, contentType));
    case 'list':
    case 'deletecollection':
      return refuseOptions('ListOptions', listCauses(values));
    case 'watch':
      return refuseOptions('ListOptions', watchCauses(values));
    default:
      return undefined;
  }
}
