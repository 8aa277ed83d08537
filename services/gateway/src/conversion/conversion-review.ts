import { isJsonObject, validateAnnotations, validateLabels, type ApiObject, type StatusCause } from '@svc/apimachinery';

/**
 * The ConversionReview exchange with a conversion webhook: the request we
 * send and the checks its answer must pass before any converted object is
 * used (as upstream's webhook converter checks it). Pure, so every rule is
 * tested without a network.
 */
export const CONVERSION_REVIEW_API_VERSION = 'apiextensions.svc.io/v1';

/** A webhook's answer that cannot be used; the message says why. */
export class ConversionReviewError extends Error {
  override readonly name = 'ConversionReviewError';
}

/** The ConversionReview versions we speak, in the order upstream lists them. */
export const CONVERSION_REVIEW_VERSIONS = ['v1', 'v1beta1'] as const;
export type ConversionReviewVersion = (typeof CONVERSION_REVIEW_VERSIONS)[number];

/**
 * The version a webhook is sent: the first of its `conversionReviewVersions`
 * (most preferred first) that we speak, as upstream picks it.
 */
export function reviewVersionFor(accepted: readonly string[]): ConversionReviewVersion {
  const chosen = accepted.find((v): v is ConversionReviewVersion => (CONVERSION_REVIEW_VERSIONS as readonly string[]).includes(v));
  if (!chosen) throw new ConversionReviewError(`webhook does not accept known ConversionReview versions (${CONVERSION_REVIEW_VERSIONS.join(', ')})`);
  return chosen;
}

export interface ConversionReviewRequest {
  apiVersion: string;
  kind: 'ConversionReview';
  request: { uid: string; desiredAPIVersion: string; objects: ApiObject[] };
}

/** v1 and v1beta1 requests have the same fields; only apiVersion tells them apart. */
export function conversionReviewRequest(uid: string, desiredAPIVersion: string, objects: ApiObject[], version: ConversionReviewVersion = 'v1'): ConversionReviewRequest {
  return { apiVersion: `apiextensions.svc.io/${version}`, kind: 'ConversionReview', request: { uid, desiredAPIVersion, objects } };
}

function fail(message: string): never {
  throw new ConversionReviewError(message);
}

function causesText(causes: StatusCause[]): string {
  return causes.map((c) => `${c.field ?? ''}: ${c.message ?? ''}`).join(', ');
}

/**
 * Metadata of a converted object (present, checked by the caller) is the
 * original's: a webhook may change only labels and annotations (checked like any labels and annotations);
 * anything else it changed there is put back.
 */
function restoreMetadata(original: ApiObject, converted: Record<string, unknown>, index: number): ApiObject['metadata'] {
  const answered = converted['metadata'] as Record<string, unknown>;
  const meta: NonNullable<ApiObject['metadata']> = { ...structuredClone(original.metadata ?? {}) };
  for (const field of ['labels', 'annotations'] as const) {
    const value = answered[field];
    if (value === undefined || value === null) {
      delete meta[field];
      continue;
    }
    if (!isJsonObject(value)) fail(`invalid metadata in object at index ${index}: metadata.${field} must be an object`);
    const strings: Record<string, string> = {};
    for (const [k, v] of Object.entries(value)) {
      if (typeof v !== 'string') fail(`invalid metadata in object at index ${index}: metadata.${field}[${k}] must be a string`);
      strings[k] = v;
    }
    const causes = field === 'labels' ? validateLabels(strings, 'metadata.labels') : validateAnnotations(strings, 'metadata.annotations');
    if (causes.length > 0) fail(`invalid metadata in object at index ${index}: ${causesText(causes)}`);
    meta[field] = strings;
  }
  return meta;
}

/** One converted object: the desired apiVersion, the same kind and identity; metadata as `restoreMetadata` leaves it. */
function checkConverted(original: ApiObject, converted: unknown, desiredAPIVersion: string, index: number): ApiObject {
  if (!isJsonObject(converted)) fail(`invalid converted object at index ${index}: not an object`);
  if (converted['apiVersion'] !== desiredAPIVersion) {
    fail(`invalid converted object at index ${index}: invalid groupVersion (expected ${desiredAPIVersion}, received ${String(converted['apiVersion'])})`);
  }
  if (converted['kind'] !== original.kind) fail(`invalid converted object at index ${index}: invalid kind (expected ${String(original.kind)}, received ${String(converted['kind'])})`);
  const meta = converted['metadata'];
  if (meta === undefined) fail(`invalid metadata in object at index ${index}: missing metadata in converted object`);
  if (!isJsonObject(meta)) fail(`invalid metadata in object at index ${index}: metadata must be an object`);
  for (const field of ['name', 'namespace', 'uid'] as const) {
    const want = original.metadata?.[field] ?? '';
    const got = meta[field] ?? '';
    if (want !== got) fail(`invalid converted object at index ${index}: must have the same ${field}: ${String(want)} != ${String(got)}`);
  }
  return { ...(converted as ApiObject), metadata: restoreMetadata(original, converted, index) };
}

/**
 * The converted objects of an answer, in the order of `originals`, or a
 * ConversionReviewError. A v1 answer must be a ConversionReview v1 (our
 * group or upstream's: webhooks written for it answer in its name) whose
 * response has our uid; a v1beta1 answer is not checked for its kind or uid,
 * as upstream never checked them in v1beta1. Either must have a Success
 * result and one converted object per object sent.
 */
export function convertedObjectsFrom(body: string, uid: string, originals: ApiObject[], desiredAPIVersion: string, version: ConversionReviewVersion = 'v1'): ApiObject[] {
  let review: unknown;
  try {
    review = JSON.parse(body);
  } catch {
    fail('the answer is not a JSON ConversionReview');
  }
  if (!isJsonObject(review)) fail('the answer is not a JSON ConversionReview');
  if (version === 'v1') {
    if (!['apiextensions.svc.io/v1', 'apiextensions.k8s.io/v1'].includes(review['apiVersion'] as string) || review['kind'] !== 'ConversionReview') {
      fail(`expected webhook response of ${CONVERSION_REVIEW_API_VERSION}, Kind=ConversionReview, got ${String(review['apiVersion'])}, Kind=${String(review['kind'])}`);
    }
  }
  const response = review['response'];
  if (!isJsonObject(response)) fail('no response provided');
  if (version === 'v1' && response['uid'] !== uid) fail(`expected response.uid=${JSON.stringify(uid)}, got ${JSON.stringify(response['uid'] ?? '')}`);
  const result = isJsonObject(response['result']) ? response['result'] : {};
  if (result['status'] !== 'Success') {
    const message = typeof result['message'] === 'string' ? result['message'] : '';
    fail(message !== '' ? message : `response.result.status was '${String(result['status'] ?? '')}', not 'Success'`);
  }
  const converted = Array.isArray(response['convertedObjects']) ? response['convertedObjects'] : [];
  if (converted.length !== originals.length) fail(`returned ${converted.length} objects, expected ${originals.length}`);
  return originals.map((original, i) => checkConverted(original, converted[i], desiredAPIVersion, i));
}
