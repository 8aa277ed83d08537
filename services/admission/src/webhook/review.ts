import { isJsonObject, type ApiObject } from '@svc/apimachinery';
import type { MatchedRequest } from '../policy/matching';

/**
 * The AdmissionReview exchange with an admission webhook: the request we
 * send and the checks its answer must pass (as the original server's
 * `VerifyAdmissionResponse`). Pure, so every rule is tested without a
 * network. We send `admission.svc.io/<version>`; a v1 answer may name our
 * group or the upstream one (`admission.k8s.io/v1`), which webhook libraries
 * written for the original always answer in.
 */

export const ADMISSION_REVIEW_GROUP = 'admission.svc.io';
const UPSTREAM_ADMISSION_REVIEW_GROUP = 'admission.k8s.io';

/** The AdmissionReview versions we speak, in the order the original lists them. */
export const ADMISSION_REVIEW_VERSIONS = ['v1', 'v1beta1'] as const;
export type AdmissionReviewVersion = (typeof ADMISSION_REVIEW_VERSIONS)[number];

/** The version a webhook is sent: the first of its `admissionReviewVersions` that we speak, as the original picks it. */
export function reviewVersionFor(accepted: readonly string[]): AdmissionReviewVersion | undefined {
  return accepted.find((v): v is AdmissionReviewVersion => (ADMISSION_REVIEW_VERSIONS as readonly string[]).includes(v));
}

/** What one webhook call is about: the request, seen as the resource and kind the webhook's rules matched, with its objects. */
export interface ReviewSubject extends MatchedRequest {
  object: ApiObject | undefined;
  oldObject: ApiObject | undefined;
}

export interface AdmissionReviewRequest {
  apiVersion: string;
  kind: 'AdmissionReview';
  request: Record<string, unknown>;
}

/** The review sent to a webhook (v1 and v1beta1 requests have the same fields). Empty optional fields are left out, as the original encodes them. */
export function admissionReviewRequest(uid: string, subject: ReviewSubject, version: AdmissionReviewVersion): AdmissionReviewRequest {
  const user: Record<string, unknown> = { username: subject.userInfo.username };
  if (subject.userInfo.uid) user['uid'] = subject.userInfo.uid;
  if (subject.userInfo.groups.length > 0) user['groups'] = subject.userInfo.groups;
  if (Object.keys(subject.userInfo.extra).length > 0) user['extra'] = subject.userInfo.extra;
  const request: Record<string, unknown> = { uid, kind: subject.kind, resource: subject.resource };
  if (subject.subResource) request['subResource'] = subject.subResource;
  request['requestKind'] = subject.requestKind;
  request['requestResource'] = subject.requestResource;
  if (subject.requestSubResource) request['requestSubResource'] = subject.requestSubResource;
  if (subject.name) request['name'] = subject.name;
  if (subject.namespace) request['namespace'] = subject.namespace;
  request['operation'] = subject.operation;
  request['userInfo'] = user;
  request['object'] = subject.object ?? null;
  request['oldObject'] = subject.oldObject ?? null;
  request['dryRun'] = subject.dryRun;
  request['options'] = subject.options ?? null;
  return { apiVersion: `${ADMISSION_REVIEW_GROUP}/${version}`, kind: 'AdmissionReview', request };
}

/** The status a webhook refuses with (metav1.Status, all parts optional). */
export interface ReviewStatus {
  code?: number;
  message?: string;
  reason?: string;
  status?: string;
  details?: Record<string, unknown>;
}

/** A webhook's answer, checked. */
export interface AdmissionReviewResponse {
  allowed: boolean;
  /** The JSON patch, decoded from base64 (mutating webhooks only). */
  patch?: Buffer;
  patchType?: string;
  status?: ReviewStatus;
  warnings: string[];
  auditAnnotations: Record<string, string>;
}

/** An answer that cannot be used; the message says why. */
export class InvalidReviewResponse extends Error {
  override readonly name = 'InvalidReviewResponse';
}

function fail(message: string): never {
  throw new InvalidReviewResponse(message);
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function stringList(value: unknown, field: string): string[] {
  if (value === undefined || value === null) return [];
  if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) fail(`response.${field} must be a list of strings`);
  return value as string[];
}

function stringMap(value: unknown, field: string): Record<string, string> {
  if (value === undefined || value === null) return {};
  if (!isJsonObject(value) || Object.values(value).some((v) => typeof v !== 'string')) fail(`response.${field} must be a map of strings`);
  return value as Record<string, string>;
}

function statusOf(value: unknown): ReviewStatus | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isJsonObject(value)) fail('response.status must be an object');
  const out: ReviewStatus = {};
  if (value['code'] !== undefined) {
    if (typeof value['code'] !== 'number' || !Number.isInteger(value['code'])) fail('response.status.code must be an integer');
    out.code = value['code'];
  }
  for (const field of ['message', 'reason', 'status'] as const) {
    const v = value[field];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string') fail(`response.status.${field} must be a string`);
    out[field] = v;
  }
  if (isJsonObject(value['details'])) out.details = value['details'];
  return out;
}

/**
 * The checked answer of a webhook, or InvalidReviewResponse. A v1 answer
 * must be an AdmissionReview v1 (our group or upstream's) whose response
 * carries our uid; a v1beta1 answer is not checked for its kind or uid, and
 * a patch without a patchType is a JSONPatch, as the original reads
 * v1beta1. A validating webhook may not answer with a patch; a mutating one
 * sends patch and patchType together.
 */
export function admissionReviewResponse(body: string, uid: string, version: AdmissionReviewVersion, mutating: boolean): AdmissionReviewResponse {
  let review: unknown;
  try {
    review = JSON.parse(body);
  } catch {
    fail('the answer is not a JSON AdmissionReview');
  }
  if (!isJsonObject(review)) fail('the answer is not a JSON AdmissionReview');
  const response = review['response'];
  if (!isJsonObject(response)) fail('webhook response was absent');
  if (version === 'v1') {
    if (response['uid'] !== uid) fail(`expected response.uid=${JSON.stringify(uid)}, got ${JSON.stringify(response['uid'] ?? '')}`);
    const apiVersion = review['apiVersion'];
    if ((apiVersion !== `${ADMISSION_REVIEW_GROUP}/v1` && apiVersion !== `${UPSTREAM_ADMISSION_REVIEW_GROUP}/v1`) || review['kind'] !== 'AdmissionReview') {
      fail(`expected webhook response of ${ADMISSION_REVIEW_GROUP}/v1, Kind=AdmissionReview, got ${String(apiVersion ?? '')}, Kind=${String(review['kind'] ?? '')}`);
    }
  }
  const allowed = response['allowed'] ?? false;
  if (typeof allowed !== 'boolean') fail('response.allowed must be a boolean');
  const out: AdmissionReviewResponse = {
    allowed,
    warnings: stringList(response['warnings'], 'warnings'),
    auditAnnotations: stringMap(response['auditAnnotations'], 'auditAnnotations'),
  };
  const status = statusOf(response['status']);
  if (status) out.status = status;

  const rawPatch = response['patch'] ?? undefined;
  const rawType = response['patchType'] ?? undefined;
  if (rawPatch !== undefined && (typeof rawPatch !== 'string' || !BASE64.test(rawPatch))) fail('response.patch must be base64 text');
  if (rawType !== undefined && typeof rawType !== 'string') fail('response.patchType must be a string');
  const patch = rawPatch ? Buffer.from(rawPatch, 'base64') : undefined;
  if (version === 'v1beta1') {
    if (mutating && patch && patch.length > 0) {
      out.patch = patch;
      out.patchType = 'JSONPatch';
    }
    return out;
  }
  if (!mutating) {
    if (patch && patch.length > 0) fail('validating webhook may not return response.patch');
    if (rawType !== undefined) fail('validating webhook may not return response.patchType');
    return out;
  }
  if (patch && patch.length > 0 && rawType === undefined) fail('webhook returned response.patch but not response.patchType');
  if ((!patch || patch.length === 0) && rawType !== undefined) fail('webhook returned response.patchType but not response.patch');
  if (rawType === '') fail('webhook returned invalid response.patchType of ""');
  if (patch && patch.length > 0) {
    out.patch = patch;
    out.patchType = rawType as string;
  }
  return out;
}
