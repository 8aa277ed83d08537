import { admissionReviewResponse, reviewVersionFor, InvalidReviewResponse } from './review';

/** The checks of a webhook's answer, without a network. */
const UID = '6b1c4f0e-0000-4000-8000-000000000001';
const answer = (response: Record<string, unknown>, envelope: Record<string, unknown> = {}): string => JSON.stringify({ apiVersion: 'admission.svc.io/v1', kind: 'AdmissionReview', response: { uid: UID, ...response }, ...envelope });
const PATCH = Buffer.from('[{"op":"add","path":"/metadata/labels","value":{}}]').toString('base64');

describe('AdmissionReview answers', () => {
  test('the version sent is the first listed that we speak', () => {
    expect(reviewVersionFor(['v1beta1', 'v1'])).toBe('v1beta1');
    expect(reviewVersionFor(['v2', 'v1'])).toBe('v1');
    expect(reviewVersionFor(['v2'])).toBeUndefined();
  });

  test('a v1 answer: allowed, status, warnings, audit annotations and a JSON patch are read', () => {
    const r = admissionReviewResponse(answer({ allowed: true, patch: PATCH, patchType: 'JSONPatch', warnings: ['w'], auditAnnotations: { k: 'v' } }), UID, 'v1', true);
    expect(r).toEqual({ allowed: true, patch: Buffer.from(PATCH, 'base64'), patchType: 'JSONPatch', warnings: ['w'], auditAnnotations: { k: 'v' } });
    const denied = admissionReviewResponse(answer({ allowed: false, status: { code: 403, message: 'no', reason: 'Forbidden', details: { name: 'x' } } }), UID, 'v1', false);
    expect(denied).toMatchObject({ allowed: false, status: { code: 403, message: 'no', reason: 'Forbidden', details: { name: 'x' } } });
    // The upstream group name is accepted: webhook libraries written for the original answer in it.
    expect(admissionReviewResponse(answer({ allowed: true }, { apiVersion: 'admission.k8s.io/v1' }), UID, 'v1', false).allowed).toBe(true);
  });

  test.each([
    ['not JSON', 'nope', /the answer is not a JSON AdmissionReview/],
    ['no response', JSON.stringify({ apiVersion: 'admission.svc.io/v1', kind: 'AdmissionReview' }), /webhook response was absent/],
    ['another uid', answer({ uid: 'other', allowed: true }), /expected response.uid="6b1c4f0e-0000-4000-8000-000000000001", got "other"/],
    ['another kind', answer({ allowed: true }, { kind: 'ConversionReview' }), /expected webhook response of admission.svc.io\/v1, Kind=AdmissionReview, got admission.svc.io\/v1, Kind=ConversionReview/],
    ['v1beta1 envelope to a v1 request', answer({ allowed: true }, { apiVersion: 'admission.svc.io/v1beta1' }), /expected webhook response of admission.svc.io\/v1/],
    ['allowed not a boolean', answer({ allowed: 'yes' }), /response.allowed must be a boolean/],
    ['warnings not strings', answer({ allowed: true, warnings: [1] }), /response.warnings must be a list of strings/],
    ['annotations not strings', answer({ allowed: true, auditAnnotations: { a: 1 } }), /response.auditAnnotations must be a map of strings/],
    ['status code not an integer', answer({ allowed: false, status: { code: '403' } }), /response.status.code must be an integer/],
    ['patch not base64', answer({ allowed: true, patch: '{not base64}', patchType: 'JSONPatch' }), /response.patch must be base64 text/],
    ['patch without patchType', answer({ allowed: true, patch: PATCH }), /webhook returned response.patch but not response.patchType/],
    ['patchType without patch', answer({ allowed: true, patchType: 'JSONPatch' }), /webhook returned response.patchType but not response.patch/],
  ])('%s is refused', (_name, body, message) => {
    expect(() => admissionReviewResponse(body, UID, 'v1', true)).toThrow(InvalidReviewResponse);
    expect(() => admissionReviewResponse(body, UID, 'v1', true)).toThrow(message);
  });

  test('a validating webhook may not answer with a patch', () => {
    expect(() => admissionReviewResponse(answer({ allowed: true, patch: PATCH, patchType: 'JSONPatch' }), UID, 'v1', false)).toThrow('validating webhook may not return response.patch');
    expect(() => admissionReviewResponse(answer({ allowed: true, patchType: 'JSONPatch' }), UID, 'v1', false)).toThrow('validating webhook may not return response.patchType');
  });

  test('v1beta1: the envelope and uid are not checked, a patch is a JSON patch, and a validating webhook’s patch is dropped', () => {
    const body = JSON.stringify({ response: { uid: 'anything', allowed: true, patch: PATCH } });
    expect(admissionReviewResponse(body, UID, 'v1beta1', true)).toMatchObject({ allowed: true, patchType: 'JSONPatch', patch: Buffer.from(PATCH, 'base64') });
    expect(admissionReviewResponse(body, UID, 'v1beta1', false).patch).toBeUndefined();
  });
});
