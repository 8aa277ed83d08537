import type { ApiObject, LabelSelectorObject, ServiceReference, WebhookClientConfig } from '@svc/apimachinery';

export type { ServiceReference, WebhookClientConfig };
import type { RuleWithOperations } from '../policy/matching';

/**
 * The fields of MutatingWebhookConfiguration and
 * ValidatingWebhookConfiguration (admissionregistration.svc.io/v1) that
 * admission reads, as stored: the kind's defaults are applied when a
 * configuration is written, and the dispatcher applies them again for a
 * field that is still absent.
 */

export interface MatchCondition {
  name: string;
  expression: string;
}

export type FailurePolicy = 'Fail' | 'Ignore';
export type MatchPolicy = 'Exact' | 'Equivalent';

export interface WebhookSpec {
  name: string;
  clientConfig: WebhookClientConfig;
  rules?: RuleWithOperations[];
  failurePolicy?: FailurePolicy;
  matchPolicy?: MatchPolicy;
  namespaceSelector?: LabelSelectorObject;
  objectSelector?: LabelSelectorObject;
  sideEffects?: string;
  timeoutSeconds?: number;
  admissionReviewVersions?: string[];
  /** Mutating webhooks only: `Never` (the default) or `IfNeeded`. */
  reinvocationPolicy?: string;
  matchConditions?: MatchCondition[];
}

export interface WebhookConfiguration extends ApiObject {
  webhooks?: WebhookSpec[];
}
