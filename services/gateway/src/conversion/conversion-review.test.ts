import type { ApiObject } from '@svc/apimachinery';
import { CONVERSION_REVIEW_API_VERSION, ConversionReviewError, conversionReviewRequest, convertedObjectsFrom, reviewVersionFor } from './conversion-review';

const UID = '0f9a3c52-1111-4222-8333-444455556666';
const original: ApiObject = {
  apiVersion: 'example.com/v1',
  kind: 'Widget',
  metadata: { name: 'w1', namespace: 'default', uid: 'u-1', resourceVersion: '7', labels: { a: 'b' }, annotations: { note: 'x' }, generation: 2 },
  spec: { size: 3 },
};

/** The answer a correct webhook gives for `original`, with `edit` applied. */
function answer(edit: (review: Record<string, any>) => void = () => undefined): string {
  const converted = { ...structuredClone(original), apiVersion: 'example.com/v2', spec: { dimensions: { size: 3 } } };
  const review: Record<string, any> = { apiVersion: CONVERSION_REVIEW_API_VERSION, kind: 'ConversionReview', response: { uid: UID, result: { status: 'Success' }, convertedObjects: [converted] } };
  edit(review);
  return JSON.stringify(review);
}

const convert = (body: string): ApiObject[] => convertedObjectsFrom(body, UID, [original], 'example.com/v2');

describe('ConversionReview', () => {
  it('asks for the desired version with our uid and the objects', () => {
    expect(conversionReviewRequest(UID, 'example.com/v2', [original])).toEqual({
      apiVersion: 'apiextensions.svc.io/v1',
      kind: 'ConversionReview',
      request: { uid: UID, desiredAPIVersion: 'example.com/v2', objects: [original] },
    });
  });

  it('asks in v1beta1 when that is the version the webhook speaks', () => {
    expect(conversionReviewRequest(UID, 'example.com/v2', [original], 'v1beta1').apiVersion).toBe('apiextensions.svc.io/v1beta1');
  });

  it('picks the first ConversionReview version a webhook lists that we speak', () => {
    expect(reviewVersionFor(['v1beta1', 'v1'])).toBe('v1beta1');
    expect(reviewVersionFor(['v2', 'v1', 'v1beta1'])).toBe('v1');
    expect(() => reviewVersionFor(['v2'])).toThrow(/webhook does not accept known ConversionReview versions \(v1, v1beta1\)/);
  });

  it('checks a v1beta1 answer as upstream: its result and objects, not its kind or uid', () => {
    const beta = (body: string): ApiObject[] => convertedObjectsFrom(body, UID, [original], 'example.com/v2', 'v1beta1');
    for (const apiVersion of ['apiextensions.svc.io/v1beta1', 'apiextensions.k8s.io/v1beta1']) {
      expect(beta(answer((r) => (r['apiVersion'] = apiVersion)))[0]?.apiVersion).toBe('example.com/v2');
    }
    expect(beta(answer((r) => delete r['response'].uid))[0]?.apiVersion).toBe('example.com/v2');
    expect(() => beta(answer((r) => delete r['response']))).toThrow(/no response provided/);
    expect(() => beta(answer((r) => (r['response'].result = { status: 'Failure', message: 'no' })))).toThrow(/^no$/);
    expect(() => beta(answer((r) => (r['response'].convertedObjects[0].metadata.name = 'w2')))).toThrow(/must have the same name/);
  });

  it('takes the converted objects of a correct answer, also one in the upstream group', () => {
    expect(convert(answer())).toEqual([{ ...original, apiVersion: 'example.com/v2', spec: { dimensions: { size: 3 } } }]);
    expect(convert(answer((r) => (r['apiVersion'] = 'apiextensions.k8s.io/v1')))[0]?.apiVersion).toBe('example.com/v2');
  });

  it('keeps labels and annotations the webhook changed, and puts back any other metadata', () => {
    const [converted] = convert(
      answer((r) => {
        const meta = r['response'].convertedObjects[0].metadata;
        meta.labels = { a: 'c', added: 'yes' };
        delete meta.annotations;
        meta.resourceVersion = '99';
        meta.generation = 5;
        meta.finalizers = ['example.com/f'];
      }),
    );
    expect(converted?.metadata).toEqual({ name: 'w1', namespace: 'default', uid: 'u-1', resourceVersion: '7', generation: 2, labels: { a: 'c', added: 'yes' } });
  });

  const refused: Array<[string, string, RegExp]> = [
    ['an answer that is not JSON', 'garbage', /not a JSON ConversionReview/],
    ['an answer that is not an object', '[1]', /not a JSON ConversionReview/],
    ['another kind', answer((r) => (r['kind'] = 'AdmissionReview')), /expected webhook response of apiextensions.svc.io\/v1, Kind=ConversionReview, got apiextensions.svc.io\/v1, Kind=AdmissionReview/],
    ['another review version', answer((r) => (r['apiVersion'] = 'apiextensions.k8s.io/v1beta1')), /expected webhook response of/],
    ['no response', answer((r) => delete r['response']), /no response provided/],
    ['another uid', answer((r) => (r['response'].uid = 'other')), /expected response.uid="0f9a3c52-1111-4222-8333-444455556666", got "other"/],
    ['a failure result, with its message', answer((r) => (r['response'].result = { status: 'Failure', message: 'cannot convert w1' })), /^cannot convert w1$/],
    ['a failure result without a message', answer((r) => (r['response'].result = { status: 'Failure' })), /response.result.status was 'Failure', not 'Success'/],
    ['no result', answer((r) => delete r['response'].result), /response.result.status was '', not 'Success'/],
    ['fewer objects', answer((r) => (r['response'].convertedObjects = [])), /returned 0 objects, expected 1/],
    ['more objects', answer((r) => r['response'].convertedObjects.push(r['response'].convertedObjects[0])), /returned 2 objects, expected 1/],
    ['an object that is not an object', answer((r) => (r['response'].convertedObjects = ['x'])), /invalid converted object at index 0: not an object/],
    ['the wrong apiVersion', answer((r) => (r['response'].convertedObjects[0].apiVersion = 'example.com/v1')), /invalid groupVersion \(expected example.com\/v2, received example.com\/v1\)/],
    ['another kind of object', answer((r) => (r['response'].convertedObjects[0].kind = 'Gadget')), /invalid kind \(expected Widget, received Gadget\)/],
    ['another name', answer((r) => (r['response'].convertedObjects[0].metadata.name = 'w2')), /must have the same name: w1 != w2/],
    ['another namespace', answer((r) => (r['response'].convertedObjects[0].metadata.namespace = 'other')), /must have the same namespace/],
    ['another uid of the object', answer((r) => (r['response'].convertedObjects[0].metadata.uid = 'u-2')), /must have the same uid/],
    ['no metadata', answer((r) => delete r['response'].convertedObjects[0].metadata), /missing metadata in converted object/],
    ['labels that are not strings', answer((r) => (r['response'].convertedObjects[0].metadata.labels = { a: 1 })), /metadata.labels\[a\] must be a string/],
    ['invalid labels', answer((r) => (r['response'].convertedObjects[0].metadata.labels = { 'a b': 'c' })), /invalid metadata in object at index 0: metadata.labels/],
    ['annotations that are not an object', answer((r) => (r['response'].convertedObjects[0].metadata.annotations = 'x')), /metadata.annotations must be an object/],
  ];

  it.each(refused)('refuses %s', (_what, body, message) => {
    expect(() => convert(body)).toThrow(ConversionReviewError);
    expect(() => convert(body)).toThrow(message);
  });
});
