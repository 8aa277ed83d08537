import { ApiError } from '@svc/apimachinery';
import { ProtobufObjectCodec } from '@svc/protobuf-codec';
import { parseDeleteOptions } from './delete-options';

type Query = Record<string, string[]>;

function parse(query: Query = {}, body?: unknown): ReturnType<typeof parseDeleteOptions> {
  const raw = body === undefined ? Buffer.alloc(0) : Buffer.from(typeof body === 'string' ? body : JSON.stringify(body));
  return parseDeleteOptions((name) => query[name] ?? [], raw);
}

function refusal(query: Query, body?: unknown): ApiError {
  try {
    parse(query, body);
  } catch (err) {
    if (err instanceof ApiError) return err;
    throw err;
  }
  throw new Error('expected a refusal');
}

describe('DeleteOptions', () => {
  test('nothing set: delete at once, no dry run', () => {
    expect(parse()).toEqual({ dryRun: false });
    expect(parse({}, '')).toEqual({ dryRun: false });
    expect(parse({}, {})).toEqual({ dryRun: false });
  });

  test.each([
    ['query Background', { propagationPolicy: ['Background'] }, undefined, { dryRun: false, propagationPolicy: 'Background' }],
    ['body Background (kubectl delete)', {}, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Background' }, { dryRun: false, propagationPolicy: 'Background' }],
    ['orphanDependents false in the body', {}, { orphanDependents: false }, { dryRun: false, orphanDependents: false }],
    ['orphanDependents false in the query', { orphanDependents: ['false'] }, undefined, { dryRun: false, orphanDependents: false }],
    ['orphanDependents 0 in the query', { orphanDependents: ['0'] }, undefined, { dryRun: false, orphanDependents: false }],
    ['grace period 0 (kubectl --force)', { gracePeriodSeconds: ['0'] }, undefined, { dryRun: false, gracePeriodSeconds: 0 }],
    ['grace period 1 in the body (kubectl --now)', {}, { gracePeriodSeconds: 1, propagationPolicy: 'Background' }, { dryRun: false, gracePeriodSeconds: 1, propagationPolicy: 'Background' }],
    ['a negative grace period reads as 1', { gracePeriodSeconds: ['-5'] }, undefined, { dryRun: false, gracePeriodSeconds: 1 }],
    ['a negative grace period in the body reads as 1', {}, { gracePeriodSeconds: -1 }, { dryRun: false, gracePeriodSeconds: 1 }],
    ['dryRun in the query', { dryRun: ['All'] }, undefined, { dryRun: true }],
    ['dryRun in the body', {}, { dryRun: ['All'] }, { dryRun: true }],
    ['preconditions', {}, { preconditions: { uid: 'u', resourceVersion: '7' } }, { dryRun: false, preconditions: { uid: 'u', resourceVersion: '7' } }],
    ['nulls are unset', {}, { propagationPolicy: null, orphanDependents: null, gracePeriodSeconds: null, dryRun: null, preconditions: null }, { dryRun: false }],
    ['the body wins over the query', { propagationPolicy: ['Orphan'], gracePeriodSeconds: ['30'] }, { propagationPolicy: 'Background', gracePeriodSeconds: 0 }, { dryRun: false, propagationPolicy: 'Background', gracePeriodSeconds: 0 }],
  ])('%s is accepted', (_name, query, body, want) => {
    expect(parse(query as Query, body)).toEqual(want);
  });

  test.each([
    ['Foreground in the query', { propagationPolicy: ['Foreground'] }, undefined, { dryRun: false, propagationPolicy: 'Foreground' }],
    ['Orphan in the body', {}, { propagationPolicy: 'Orphan' }, { dryRun: false, propagationPolicy: 'Orphan' }],
    ['Orphan in a dry run', { dryRun: ['All'] }, { propagationPolicy: 'Orphan' }, { dryRun: true, propagationPolicy: 'Orphan' }],
    ['Orphan in the body over Background in the query', { propagationPolicy: ['Background'] }, { propagationPolicy: 'Orphan' }, { dryRun: false, propagationPolicy: 'Orphan' }],
    ['orphanDependents true in the body', {}, { orphanDependents: true }, { dryRun: false, orphanDependents: true }],
    ['orphanDependents true in the query', { orphanDependents: ['true'] }, undefined, { dryRun: false, orphanDependents: true }],
    ['orphanDependents in the query, any value but false or 0', { orphanDependents: ['1'] }, undefined, { dryRun: false, orphanDependents: true }],
  ])('%s reaches the store', (_name, query, body, want) => {
    expect(parse(query as Query, body)).toEqual(want);
  });

  test.each([
    ['both in the body', {}, { orphanDependents: false, propagationPolicy: 'Background' }, 'Background'],
    ['both in the query', { orphanDependents: ['false'], propagationPolicy: ['Background'] }, undefined, 'Background'],
    ['one in each', { orphanDependents: ['true'] }, { propagationPolicy: 'Foreground' }, 'Foreground'],
    ['orphanDependents true with Orphan', {}, { orphanDependents: true, propagationPolicy: 'Orphan' }, 'Orphan'],
  ])('orphanDependents and propagationPolicy both set (%s) is refused', (_name, query, body, policy) => {
    const err = refusal(query as Query, body);
    expect([err.code, err.reason, err.details?.kind, err.details?.group]).toEqual([422, 'Invalid', 'DeleteOptions', 'meta.svc.io']);
    expect(err.message).toBe(`DeleteOptions.meta.svc.io "" is invalid: propagationPolicy: Invalid value: "${policy}": orphanDependents and deletionPropagation cannot be both set`);
    expect(err.details?.causes).toEqual([expect.objectContaining({ field: 'propagationPolicy', reason: 'FieldValueInvalid' })]);
  });

  test.each([
    ['a policy that is not a string', {}, { propagationPolicy: 1 }, /^DeleteOptions\.propagationPolicy: Invalid value: 1: must be a string$/],
    ['orphanDependents that is not a boolean', {}, { orphanDependents: 'true' }, /^DeleteOptions\.orphanDependents: Invalid value: "true": must be a boolean$/],
    ['a grace period that is not an integer', {}, { gracePeriodSeconds: 'soon' }, /^DeleteOptions\.gracePeriodSeconds: Invalid value: "soon": must be an integer$/],
    ['a fractional grace period', {}, { gracePeriodSeconds: 1.5 }, /^DeleteOptions\.gracePeriodSeconds/],
    ['a grace period beyond int64 in the body', {}, '{"gracePeriodSeconds": 1e30}', /^DeleteOptions\.gracePeriodSeconds: Invalid value: 1e\+30: must be between/],
    ['a grace period in the query that is not an integer', { gracePeriodSeconds: ['soon'] }, undefined, /^gracePeriodSeconds: Invalid value: "soon": must be an integer$/],
    ['a wrong query grace period under a body one', { gracePeriodSeconds: ['soon'] }, { gracePeriodSeconds: 0 }, /^gracePeriodSeconds: Invalid value: "soon"/],
    ['dryRun that is not a list', {}, { dryRun: 'All' }, /^DeleteOptions\.dryRun: Invalid value: "All": must be a list of strings$/],
    ['preconditions that are not an object', {}, { preconditions: 'x' }, /^DeleteOptions\.preconditions: /],
    ['a uid that is not a string', {}, { preconditions: { uid: 5 } }, /^DeleteOptions\.preconditions\.uid: /],
    ['a body that is not an object', {}, '[]', /^DeleteOptions must be a JSON object$/],
  ])('%s is 400 naming it', (_name, query, body, message) => {
    const err = refusal(query as Query, body);
    expect(err.code).toBe(400);
    expect(err.reason).toBe('BadRequest');
    expect(err.message).toMatch(message);
  });
});

describe('DeleteOptions the original refuses as invalid', () => {
  const PREFIX = 'DeleteOptions.meta.svc.io "" is invalid: ';
  test.each([
    ['an unknown policy', { propagationPolicy: ['Sideways'] }, undefined, 'propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil"'],
    ['an empty policy', { propagationPolicy: [''] }, undefined, 'propagationPolicy: Unsupported value: "": supported values: "Foreground", "Background", "Orphan", "nil"'],
    ['an unknown policy in the body', {}, { propagationPolicy: 'background' }, 'propagationPolicy: Unsupported value: "background": supported values: "Foreground", "Background", "Orphan", "nil"'],
    ['an unknown dryRun in the query', { dryRun: ['Sometimes'] }, undefined, 'dryRun: Unsupported value: []string{"Sometimes"}: supported values: "All"'],
    ['an unknown dryRun in the body', { dryRun: ['All'] }, { dryRun: ['Sometimes'] }, 'dryRun: Unsupported value: []string{"All", "Sometimes"}: supported values: "All"'],
    [
      'every problem at once',
      { orphanDependents: ['true'], propagationPolicy: ['Sideways'], dryRun: ['x'] },
      undefined,
      'propagationPolicy: Invalid value: "Sideways": orphanDependents and deletionPropagation cannot be both set, propagationPolicy: Unsupported value: "Sideways": supported values: "Foreground", "Background", "Orphan", "nil", dryRun: Unsupported value: []string{"x"}: supported values: "All"',
    ],
  ])('%s is 422 Invalid for DeleteOptions', (_name, query, body, message) => {
    const err = refusal(query as Query, body);
    expect([err.code, err.reason, err.details?.kind, err.details?.group, err.message]).toEqual([422, 'Invalid', 'DeleteOptions', 'meta.svc.io', `${PREFIX}${message}`]);
  });
});

describe('DeleteOptions in every body media type', () => {
  const codec = new ProtobufObjectCodec();
  const none = (): string[] => [];

  test('protobuf, in the group/version of the resource deleted (kubectl drain)', () => {
    const body = Buffer.from(codec.encode({ apiVersion: 'v1', kind: 'DeleteOptions', gracePeriodSeconds: 30, propagationPolicy: 'Background', preconditions: { uid: 'u' }, dryRun: ['All'] }));
    expect(parseDeleteOptions(none, body, { contentType: 'application/vnd.kubernetes.protobuf', protobuf: codec })).toEqual({
      dryRun: true,
      gracePeriodSeconds: 30,
      propagationPolicy: 'Background',
      preconditions: { uid: 'u' },
    });
    const policy = Buffer.from(codec.encode({ apiVersion: 'policy/v1', kind: 'DeleteOptions', orphanDependents: true }));
    expect(parseDeleteOptions(none, policy, { contentType: 'application/vnd.svc.protobuf', protobuf: codec })).toEqual({ dryRun: false, orphanDependents: true });
  });

  test('YAML', () => {
    expect(parseDeleteOptions(none, Buffer.from('propagationPolicy: Foreground\n'), { contentType: 'application/yaml' })).toEqual({ dryRun: false, propagationPolicy: 'Foreground' });
  });

  test('the original checks apply to a protobuf body too', () => {
    const body = Buffer.from(codec.encode({ apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Sideways' }));
    expect(() => parseDeleteOptions(none, body, { contentType: 'application/vnd.kubernetes.protobuf', protobuf: codec })).toThrow(/^DeleteOptions\.meta\.svc\.io "" is invalid: propagationPolicy: Unsupported value: "Sideways"/);
  });

  test.each([
    ['another kind in protobuf', () => Buffer.from(codec.encode({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x' } })), 'application/vnd.kubernetes.protobuf', 400, /^the object provided is unrecognized \(must be of type DeleteOptions\): ConfigMap/],
    ['protobuf without the prefix', () => Buffer.from('{}'), 'application/vnd.kubernetes.protobuf', 400, /4-byte prefix/],
    ['an unknown media type', () => Buffer.from('{}'), 'text/plain', 415, /^the body of the request was in an unknown format/],
  ])('%s is refused', (_name, body, contentType, code, message) => {
    let err: unknown;
    try {
      parseDeleteOptions(none, body(), { contentType, protobuf: codec });
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(ApiError);
    expect([(err as ApiError).code, (err as ApiError).message]).toEqual([code, expect.stringMatching(message)]);
  });
});
