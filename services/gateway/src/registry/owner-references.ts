import type { ObjectMeta, StatusCause } from '@svc/apimachinery';

/**
 * The original server's checks of `metadata.ownerReferences`, run on every
 * create and update of every kind: each reference needs an apiVersion with
 * a version (one that does not parse as `group/version` or `version` has
 * none), a kind, a name and a uid; an Event may not be an owner; at most
 * one reference is the controller. Causes name the field as the original
 * does (`metadata.ownerReferences.uid`, without the index).
 */

const FIELD = 'metadata.ownerReferences';

/** Kinds that may never own anything (apiVersion and kind), as the original's banned owners. */
const BANNED_OWNERS = new Set(['v1/Event', 'events.svc.io/v1/Event']);

/** The version of an apiVersion: `v1`, `group/v1`; empty when it does not parse. */
export function versionOf(apiVersion: string): string {
  const parts = apiVersion.split('/');
  if (parts.length === 1) return apiVersion;
  if (parts.length === 2 && parts[0] !== '') return parts[1] ?? '';
  return '';
}

function invalid(field: string, value: unknown, detail: string): StatusCause {
  return { reason: 'FieldValueInvalid', field, message: `Invalid value: ${JSON.stringify(value)}: ${detail}` };
}

export function validateOwnerReferences(meta: ObjectMeta): StatusCause[] {
  const causes: StatusCause[] = [];
  let firstController = '';
  for (const ref of meta.ownerReferences ?? []) {
    const apiVersion = typeof ref.apiVersion === 'string' ? ref.apiVersion : '';
    const kind = typeof ref.kind === 'string' ? ref.kind : '';
    if (versionOf(apiVersion) === '') causes.push(invalid(`${FIELD}.apiVersion`, apiVersion, 'version must not be empty'));
    if (kind === '') causes.push(invalid(`${FIELD}.kind`, kind, 'kind must not be empty'));
    if (!ref.name) causes.push(invalid(`${FIELD}.name`, ref.name ?? '', 'name must not be empty'));
    if (!ref.uid) causes.push(invalid(`${FIELD}.uid`, ref.uid ?? '', 'uid must not be empty'));
    if (BANNED_OWNERS.has(`${apiVersion}/${kind}`)) causes.push(invalid(FIELD, ref, `${apiVersion}, Kind=${kind} is disallowed from being an owner`));
    if (ref.controller === true) {
      const current = `${kind}/${ref.name ?? ''}`;
      if (firstController === '') firstController = current;
      else causes.push(invalid(FIELD, firstController, `Only one reference can have Controller set to true. Found "true" in references for ${firstController} and ${current}`));
    }
  }
  return causes;
}
