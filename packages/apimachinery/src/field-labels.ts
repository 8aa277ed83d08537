import { ApiError } from './errors';
import type { ResourceDefinition } from './registry';
import { parseFieldSelector } from './selectors';

/** Field labels every kind supports. */
const STANDARD_FIELD_LABELS: readonly string[] = ['metadata.name', 'metadata.namespace'];
/** The rule for kinds that do not list their selectable fields. */
const DEFAULT_FIELD_LABEL = /^(spec|status|type|involvedObject|reason|source)\b/;

/**
 * Refuses (400 `field label not supported: <label>`) a field selector that
 * names a field the kind cannot be selected by. Lists, watches and
 * deletecollection all pass here, so they accept the same selectors.
 */
export function checkFieldLabels(def: Pick<ResourceDefinition, 'selectableFields'>, fieldSelector: string | undefined): void {
  for (const r of parseFieldSelector(fieldSelector).requirements) {
    if (STANDARD_FIELD_LABELS.includes(r.field)) continue;
    const supported = def.selectableFields ? def.selectableFields.includes(r.field) : DEFAULT_FIELD_LABEL.test(r.field);
    if (!supported) throw ApiError.badRequest(`field label not supported: ${r.field}`);
  }
}
