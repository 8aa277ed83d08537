import type { ApiObject, ResourceDefinition } from '@svc/apimachinery';
import type { Schema } from '@svc/merge';
import {
  MUTATING_WEBHOOK_CONFIGURATION_SCHEMA,
  VALIDATING_ADMISSION_POLICY_BINDING_SCHEMA,
  VALIDATING_ADMISSION_POLICY_SCHEMA,
  VALIDATING_WEBHOOK_CONFIGURATION_SCHEMA,
} from './admissionregistration-schemas';
import { validateValidatingAdmissionPolicy, validateValidatingAdmissionPolicyBinding, validateWebhookConfiguration } from './admissionregistration-validation';
import { nextGeneration } from './generation';
import { groupKindDefinition } from './group-definition';
import { asList, asRecord, asString, isRecord, setDefault, type Fields } from './object-access';
import { keepStatus, resetStatus } from './status';

/**
 * `admissionregistration.svc.io/v1` (the original's admissionregistration.k8s.io):
 * MutatingWebhookConfiguration and ValidatingWebhookConfiguration say which
 * requests the admission service sends to which webhook;
 * ValidatingAdmissionPolicy holds CEL validations the admission service runs
 * itself, applied through ValidatingAdmissionPolicyBindings. All four are
 * cluster-scoped, in the `api-extensions` category, with the original's v1
 * defaults and validation. These objects are never themselves sent to a
 * webhook or evaluated by a policy, so a broken webhook cannot lock the
 * cluster out of fixing its configuration.
 */

export const ADMISSIONREGISTRATION_GROUP = 'admissionregistration.svc.io';
/** The upstream name of the group, as manifests written for the original server carry it. */
export const ADMISSIONREGISTRATION_GROUP_UPSTREAM = 'admissionregistration.k8s.io';

export const ADMISSION_KINDS = {
  mutatingWebhookConfiguration: 'MutatingWebhookConfiguration',
  validatingWebhookConfiguration: 'ValidatingWebhookConfiguration',
  validatingAdmissionPolicy: 'ValidatingAdmissionPolicy',
  validatingAdmissionPolicyBinding: 'ValidatingAdmissionPolicyBinding',
} as const;

/** The resources of the group (never admitted through webhooks or policies). */
export const ADMISSIONREGISTRATION_RESOURCES = ['mutatingwebhookconfigurations', 'validatingwebhookconfigurations', 'validatingadmissionpolicies', 'validatingadmissionpolicybindings'] as const;

/** The v1 default of a webhook's timeout, in seconds. */
export const DEFAULT_WEBHOOK_TIMEOUT_SECONDS = 10;

function defaultRule(rule: unknown): void {
  if (isRecord(rule)) setDefault(rule, 'scope', '*');
}

function defaultSelectors(target: Fields): void {
  setDefault(target, 'namespaceSelector', {});
  setDefault(target, 'objectSelector', {});
}

/** A webhook's v1 defaults: Fail, Equivalent, every namespace and object, 10 seconds, port 443, rules of any scope; Never reinvoked. */
function defaultWebhook(hook: Fields, mutating: boolean): void {
  setDefault(hook, 'failurePolicy', 'Fail');
  setDefault(hook, 'matchPolicy', 'Equivalent');
  defaultSelectors(hook);
  setDefault(hook, 'timeoutSeconds', DEFAULT_WEBHOOK_TIMEOUT_SECONDS);
  if (mutating) setDefault(hook, 'reinvocationPolicy', 'Never');
  asList(hook['rules']).forEach(defaultRule);
  const service = asRecord(asRecord(hook['clientConfig'])?.['service']);
  if (service) setDefault(service, 'port', 443);
}

export function applyWebhookConfigurationDefaults(obj: ApiObject, mutating: boolean): void {
  for (const hook of asList(obj['webhooks'])) if (isRecord(hook)) defaultWebhook(hook, mutating);
}

function defaultMatchResources(match: Fields): void {
  setDefault(match, 'matchPolicy', 'Equivalent');
  defaultSelectors(match);
  asList(match['resourceRules']).forEach(defaultRule);
  asList(match['excludeResourceRules']).forEach(defaultRule);
}

export function applyValidatingAdmissionPolicyDefaults(obj: ApiObject): void {
  const spec = asRecord(obj['spec']);
  if (!spec) return;
  setDefault(spec, 'failurePolicy', 'Fail');
  const constraints = asRecord(spec['matchConstraints']);
  if (constraints) defaultMatchResources(constraints);
}

export function applyValidatingAdmissionPolicyBindingDefaults(obj: ApiObject): void {
  const spec = asRecord(obj['spec']);
  if (!spec) return;
  const match = asRecord(spec['matchResources']);
  if (match) defaultMatchResources(match);
  const ref = asRecord(spec['paramRef']);
  if (ref) setDefault(ref, 'parameterNotFoundAction', 'Deny');
}

/** Generation 1 on create, one more when anything but metadata (and a separately written status) changes. */
function generationStrategy(statusSeparate: boolean): Pick<NonNullable<ResourceDefinition['strategy']>, 'prepareForCreate' | 'prepareForUpdate'> {
  return {
    prepareForCreate(obj) {
      if (statusSeparate) resetStatus(obj);
      obj.metadata = { ...(obj.metadata ?? {}), generation: 1 };
    },
    prepareForUpdate(obj, old) {
      if (statusSeparate) keepStatus(obj, old);
      obj.metadata = { ...(obj.metadata ?? {}), generation: nextGeneration(obj, old, statusSeparate) };
    },
  };
}

function definition(kind: string, plural: string, schema: Schema, extra: Partial<ResourceDefinition>): ResourceDefinition {
  return groupKindDefinition(ADMISSIONREGISTRATION_GROUP, 'v1', kind, plural, false, schema, { categories: ['api-extensions'], allowUnconditionalUpdate: true, ...extra });
}

function webhookCount(obj: ApiObject): number {
  return asList(obj['webhooks']).length;
}

function paramKindColumn(obj: ApiObject): string {
  const kind = asRecord(asRecord(obj['spec'])?.['paramKind']);
  return kind ? `${asString(kind['apiVersion']) ?? ''}/${asString(kind['kind']) ?? ''}` : '<unset>';
}

/** A label selector as the original prints it (`a=b,c in (d,e),!f`), `<none>` when empty. */
function selectorString(selector: Fields): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(asRecord(selector['matchLabels']) ?? {})) parts.push(`${k}=${String(v)}`);
  for (const e of asList(selector['matchExpressions'])) {
    const r = asRecord(e);
    if (!r) continue;
    const key = asString(r['key']) ?? '';
    const values = asList(r['values']).map(String).sort().join(',');
    const op = r['operator'];
    if (op === 'In') parts.push(`${key} in (${values})`);
    else if (op === 'NotIn') parts.push(`${key} notin (${values})`);
    else if (op === 'Exists') parts.push(key);
    else if (op === 'DoesNotExist') parts.push(`!${key}`);
  }
  return parts.length === 0 ? '<none>' : parts.sort().join(',');
}

function paramRefColumn(obj: ApiObject): string {
  const ref = asRecord(asRecord(obj['spec'])?.['paramRef']);
  if (!ref) return '<unset>';
  const name = asString(ref['name']) ?? '';
  if (name !== '') {
    const namespace = asString(ref['namespace']) ?? '';
    // Whether the parameter kind is cluster-scoped is not known here: a name without a namespace prints `*/`.
    return namespace !== '' ? `${namespace}/${name}` : `*/${name}`;
  }
  const selector = asRecord(ref['selector']);
  return selector ? selectorString(selector) : '<unset>';
}

const WEBHOOKS_COLUMN = { name: 'Webhooks', type: 'integer' as const, jsonPath: '.webhooks', description: 'The number of webhooks of the configuration.', compute: webhookCount };

export function admissionRegistrationDefinitions(): ResourceDefinition[] {
  const webhookConfiguration = (kind: string, plural: string, schema: Schema, mutating: boolean): ResourceDefinition =>
    definition(kind, plural, schema, {
      printerColumns: [WEBHOOKS_COLUMN],
      strategy: {
        ...generationStrategy(false),
        applyDefaults: (obj) => applyWebhookConfigurationDefaults(obj, mutating),
        validate: (obj) => validateWebhookConfiguration(obj, mutating),
      },
    });
  return [
    webhookConfiguration(ADMISSION_KINDS.mutatingWebhookConfiguration, 'mutatingwebhookconfigurations', MUTATING_WEBHOOK_CONFIGURATION_SCHEMA, true),
    webhookConfiguration(ADMISSION_KINDS.validatingWebhookConfiguration, 'validatingwebhookconfigurations', VALIDATING_WEBHOOK_CONFIGURATION_SCHEMA, false),
    definition(ADMISSION_KINDS.validatingAdmissionPolicy, 'validatingadmissionpolicies', VALIDATING_ADMISSION_POLICY_SCHEMA, {
      subresources: [{ name: 'status', verbs: ['get', 'patch', 'update'] }],
      printerColumns: [
        { name: 'Validations', type: 'integer', jsonPath: '.spec.validations', description: 'The number of validations of the policy.', compute: (obj) => asList(asRecord(obj['spec'])?.['validations']).length },
        { name: 'ParamKind', type: 'string', jsonPath: '.spec.paramKind', description: 'The kind of the parameters of the policy.', compute: paramKindColumn },
      ],
      strategy: {
        ...generationStrategy(true),
        applyDefaults: applyValidatingAdmissionPolicyDefaults,
        validate: validateValidatingAdmissionPolicy,
      },
    }),
    definition(ADMISSION_KINDS.validatingAdmissionPolicyBinding, 'validatingadmissionpolicybindings', VALIDATING_ADMISSION_POLICY_BINDING_SCHEMA, {
      printerColumns: [
        { name: 'PolicyName', type: 'string', jsonPath: '.spec.policyName', description: 'The policy bound.' },
        { name: 'ParamRef', type: 'string', jsonPath: '.spec.paramRef', description: 'The parameters the policy is run with.', compute: paramRefColumn },
      ],
      strategy: {
        ...generationStrategy(false),
        applyDefaults: applyValidatingAdmissionPolicyBindingDefaults,
        validate: validateValidatingAdmissionPolicyBinding,
      },
    }),
  ];
}
