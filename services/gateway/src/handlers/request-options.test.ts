import { ApiError } from '@svc/apimachinery';
import { checkQueryOptions, dryRunCauses, fieldManagerCauses } from './request-options';

/** The query's options of each verb, checked as the original checks them: 422 Invalid naming the options kind; 400 for ListOptions (SPEC). */
describe('checkQueryOptions', () => {
  const answer = (verb: string, query: string, contentType?: string): string => {
    const params = new URLSearchParams(query);
    try {
      checkQueryOptions(verb, (name) => params.getAll(name), contentType);
    } catch (err) {
      if (err instanceof ApiError) return `${err.code} ${err.message}`;
      throw err;
    }
    return 'accepted';
  };
  const MERGE = 'application/merge-patch+json';
  const APPLY = 'application/apply-patch+yaml';

  test.each([
    ['create', 'dryRun=All&dryRun=All&fieldValidation=Strict&fieldManager=me', undefined, 'accepted'],
    ['create', 'dryRun=All&dryRun=bad', undefined, '422 CreateOptions.meta.svc.io "" is invalid: dryRun: Unsupported value: []string{"All", "bad"}: supported values: "All"'],
    ['create', 'dryRun=', undefined, '422 CreateOptions.meta.svc.io "" is invalid: dryRun: Unsupported value: []string{""}: supported values: "All"'],
    ['update', 'fieldValidation=strict', undefined, '422 UpdateOptions.meta.svc.io "" is invalid: fieldValidation: Unsupported value: "strict": supported values: "", "Ignore", "Strict", "Warn"'],
    ['update', 'fieldManager=a%01b', undefined, '422 UpdateOptions.meta.svc.io "" is invalid: fieldManager: Invalid value: "a\\u0001b": invalid character U+0001 (at position 1)'],
    ['create', `fieldManager=${'m'.repeat(129)}`, undefined, '422 CreateOptions.meta.svc.io "" is invalid: fieldManager: Too long: must have at most 128 bytes'],
    ['patch', 'force=false', MERGE, '422 PatchOptions.meta.svc.io "" is invalid: force: Forbidden: may not be specified for non-apply patch'],
    ['patch', 'force=true&fieldManager=x', APPLY, 'accepted'],
    ['patch', 'force=true', APPLY, '422 PatchOptions.meta.svc.io "" is invalid: fieldManager: Required value: is required for apply patch'],
    ['patch', 'dryRun=x&fieldValidation=y', MERGE, '422 PatchOptions.meta.svc.io "" is invalid: dryRun: Unsupported value: []string{"x"}: supported values: "All", fieldValidation: Unsupported value: "y": supported values: "", "Ignore", "Strict", "Warn"'],
    ['list', 'sendInitialEvents=false', undefined, '400 sendInitialEvents: Forbidden: sendInitialEvents is forbidden for list'],
    ['list', 'resourceVersionMatch=Exact', undefined, '400 resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided'],
    ['list', 'resourceVersionMatch=Exact&resourceVersion=0', undefined, '400 resourceVersionMatch: Forbidden: resourceVersionMatch "exact" is forbidden for resourceVersion "0"'],
    ['list', 'resourceVersionMatch=Bad&resourceVersion=5', undefined, '400 resourceVersionMatch: Unsupported value: "Bad": supported values: "Exact", "NotOlderThan", ""'],
    ['list', 'resourceVersionMatch=NotOlderThan&resourceVersion=5&limit=1', undefined, 'accepted'],
    ['deletecollection', 'resourceVersionMatch=NotOlderThan&resourceVersion=5&continue=abc', undefined, '400 resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden when continue is provided'],
    ['watch', 'sendInitialEvents=true&resourceVersionMatch=NotOlderThan', undefined, 'accepted'],
    ['watch', 'sendInitialEvents=false', undefined, '400 resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan'],
    ['watch', 'resourceVersionMatch=NotOlderThan&resourceVersion=5', undefined, '400 resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided'],
    ['get', 'dryRun=bad&fieldValidation=bad&sendInitialEvents=true', undefined, 'accepted'],
    ['delete', 'fieldManager=a%01b', undefined, 'accepted'],
  ])('%s ?%s (%s): %s', (verb, query, contentType, expected) => {
    expect(answer(verb, query, contentType)).toBe(expected);
  });
});

describe('option causes', () => {
  test('dryRun: only All, every value', () => {
    expect(dryRunCauses([])).toEqual([]);
    expect(dryRunCauses(['All', 'All'])).toEqual([]);
    expect(dryRunCauses(['all'])).toHaveLength(1);
  });

  test('fieldManager: length in bytes, positions in bytes, printable characters only', () => {
    expect(fieldManagerCauses('kubectl-client-side-apply')).toEqual([]);
    expect(fieldManagerCauses('mañana ünïcode €')).toEqual([]);
    expect(fieldManagerCauses('é'.repeat(65))).toEqual([{ reason: 'FieldValueTooLong', field: 'fieldManager', message: 'Too long: must have at most 128 bytes' }]);
    expect(fieldManagerCauses('é\n\t').map((c) => c.message)).toEqual(['Invalid value: "é\\n\\t": invalid character U+000A (at position 2)', 'Invalid value: "é\\n\\t": invalid character U+0009 (at position 3)']);
    expect(fieldManagerCauses('a\u00a0b\u007f')).toHaveLength(2);
  });
});
