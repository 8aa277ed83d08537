import { ApiError, type StatusDetails, type StatusReason } from '@svc/apimachinery';
import type { ReviewStatus } from './review';

/**
 * The two ways a webhook call ends badly, as the original server tells them
 * apart: the call failed (no answer in time, a connection or TLS error, an
 * answer that is not a 200 or not a valid AdmissionReview), which the
 * webhook's failurePolicy decides about; or the webhook answered and
 * refused, which always refuses the request with the webhook's status.
 */

/** A call that failed; `failurePolicy` decides whether the request goes on. */
export class WebhookCallError extends Error {
  override readonly name = 'WebhookCallError';

  constructor(
    readonly webhook: string,
    readonly reason: string,
    /** Whether it says the webhook is unavailable (counts towards isolating it). */
    readonly unavailable = true,
  ) {
    super(`failed calling webhook ${JSON.stringify(webhook)}: ${reason}`);
  }

  /** The refusal under `failurePolicy: Fail` (the original's internal error). */
  toApiError(): ApiError {
    return new ApiError(500, 'InternalError', `Internal error occurred: ${this.message}`, { causes: [{ message: this.message }] });
  }
}

/** A call not made: the webhook is isolated after failing again and again (see isolation.ts). */
export class WebhookIsolatedError extends WebhookCallError {
  constructor(webhook: string, failures: number, retryInMs: number) {
    super(webhook, `the webhook is isolated after ${failures} consecutive failed calls; not called for another ${Math.ceil(retryInMs / 1000)}s`, false);
  }
}

/** The refusal of a webhook that answered `allowed: false`: its status, with a code of at least 400 and the message naming the webhook (the original's ToStatusErr). */
export function webhookRejection(webhook: string, status: ReviewStatus | undefined): ApiError {
  const deniedBy = `admission webhook ${JSON.stringify(webhook)} denied the request`;
  const code = status?.code !== undefined && status.code >= 400 ? status.code : 400;
  const message = status?.message ? `${deniedBy}: ${status.message}` : status?.reason ? `${deniedBy}: ${status.reason}` : `${deniedBy} without explanation`;
  return new ApiError(code, (status?.reason ?? '') as StatusReason, message, status?.details as StatusDetails | undefined);
}

/** A dry-run request that a webhook with side effects matched (SPEC dry-run rule 3). */
export function dryRunUnsupported(webhook: string): ApiError {
  return ApiError.badRequest(`admission webhook ${JSON.stringify(webhook)} does not support dry run`);
}
