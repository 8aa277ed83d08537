import { randomUUID } from 'node:crypto';
import { ApiError, isJsonObject, type ApiObject } from '@svc/apimachinery';
import { AdmissionActivation, COST_BUDGET, evaluateWithAuthorizer, type AuthorizationCheck, type AuthorizationDecision, type CelAuthorizer } from '@svc/cel';
import { jsonPatch } from '@svc/merge';
import { WEBHOOK_AGENT_OPTIONS, WebhookAgents, postJson, type LogFields, type Logger, type WebhookEndpoint, type WebhookReply } from '@svc/service-kit';
import type { AdmissionConfigurationReader } from '../configurations';
import type { AdmissionAttributes, NamespaceReader } from '../plugins';
import { aggregateErrors, asVersion, isAdmissionConfigurationResource, matchedRequest, matchesResources, NO_EQUIVALENTS, type EquivalentResourceMapper, type GroupVersionKind, type GroupVersionResource } from '../policy/matching';
import { WebhookSource, type CompiledWebhook } from './compile';
import { WebhookCallError, WebhookIsolatedError, dryRunUnsupported, webhookRejection } from './errors';
import { DEFAULT_ISOLATION, WebhookIsolation, type IsolationOptions } from './isolation';
import { recordFailOpen, recordWebhookCall, registerIsolationMetrics } from '../admission-metrics';
import { sameJson, type ReinvocationState } from './reinvocation-state';
import { InvalidReviewResponse, admissionReviewRequest, admissionReviewResponse, type AdmissionReviewResponse } from './review';

/**
 * The admission webhooks of the original server
 * (`admission/plugin/webhook/mutating` and `validating`): for each request,
 * the webhooks whose rules, selectors and match conditions select it are
 * sent an AdmissionReview. Mutating webhooks are called one after the other,
 * each on the object the one before left (its JSON patch applied); one with
 * `reinvocationPolicy: IfNeeded` is called again, once, when a later
 * webhook changed the object. Validating webhooks are called all at once.
 * A refusal refuses the request with the webhook's status; a call that
 * fails follows the webhook's failurePolicy (`Fail` refuses with a 500
 * naming the webhook, `Ignore` goes on with a warning). Requests about
 * admission's own configuration are never sent.
 */

/** The request's attributes, with its options object when the caller has one (`request.options`). */
export type WebhookAttributes = AdmissionAttributes & { options?: unknown };

/** What admission hands back besides the object: warnings, audit annotations, the webhooks that changed the object. */
export class AdmissionRecord {
  readonly warnings: string[] = [];
  readonly auditAnnotations: Record<string, string> = {};
  readonly mutatedBy: string[] = [];

  warn(text: string): void {
    if (!this.warnings.includes(text)) this.warnings.push(text);
  }

  /** The first value of a key stays (the original refuses to overwrite an annotation). */
  annotate(key: string, value: string): void {
    if (!(key in this.auditAnnotations)) this.auditAnnotations[key] = value;
  }

  merge(other: { warnings: readonly string[]; auditAnnotations: Readonly<Record<string, string>> }): void {
    for (const w of other.warnings) this.warn(w);
    for (const [k, v] of Object.entries(other.auditAnnotations)) this.annotate(k, v);
  }
}

/** Audit annotation prefixes (the original's, in our group's name). */
export const MUTATION_ANNOTATION_PREFIX = 'mutation.webhook.admission.svc.io/';
export const MUTATION_FAILED_OPEN_PREFIX = 'failed-open.mutation.webhook.admission.svc.io/';
export const VALIDATION_FAILED_OPEN_PREFIX = 'failed-open.validating.webhook.admission.svc.io/';

/** The budget of one webhook's match conditions together (the original's). */
const MATCH_CONDITIONS_COST_BUDGET = 2_500_000;

/** One POST of a review; injectable so tests can count or fail calls. */
export type WebhookPoster = (endpoint: WebhookEndpoint, url: string, body: string, timeoutMs: number, maxBytes: number) => Promise<WebhookReply>;

/** Posts over HTTPS with a kept-alive connection per webhook address, presenting `clientCertificate` when given. */
export function httpsPoster(agents: WebhookAgents, clientCertificate?: { cert: Buffer; key: Buffer }): WebhookPoster {
  return (endpoint, url, body, timeoutMs, maxBytes) =>
    postJson(
      { server: url, ...(endpoint.caBundle ? { ca: Buffer.from(endpoint.caBundle) } : {}), ...(clientCertificate ? { cert: clientCertificate.cert, key: clientCertificate.key } : {}) },
      body,
      timeoutMs,
      maxBytes,
      agents.agentFor(endpoint),
    );
}

export interface AdmissionWebhooksOptions {
  configurations: AdmissionConfigurationReader;
  namespaces: NamespaceReader;
  /** Asks the authorization service (the `authorizer` of match conditions); without it every check errs. */
  authorize?: (check: AuthorizationCheck) => Promise<AuthorizationDecision>;
  /** Other versions resources are served at (matchPolicy Equivalent). */
  equivalents?: EquivalentResourceMapper;
  /** Why a patched object does not decode as its kind (then the patch is a failed call); without it patched objects are not decoded here. */
  decodeProblem?: (kind: GroupVersionKind, obj: ApiObject) => string | undefined;
  /** How reviews are posted; HTTPS with kept-alive connections by default. */
  post?: WebhookPoster;
  /** The client certificate presented to webhooks (with the default poster). */
  clientCertificate?: { cert: Buffer; key: Buffer };
  /** The largest answer read; a larger one is a failed call. */
  maxResponseBytes?: number;
  isolation?: IsolationOptions;
  log: Logger;
}

export const DEFAULT_MAX_RESPONSE_BYTES = 8 * 1024 * 1024;

/** A webhook that selects the request, as the resource and kind its rules matched. */
interface Invocation {
  hook: CompiledWebhook;
  resource: GroupVersionResource;
  kind: GroupVersionKind;
}

/** The attributes with another object; the rest (lazily parsed objects included) as they are. */
export function withObject<T extends AdmissionAttributes>(attrs: T, object: ApiObject | undefined): T {
  const out = Object.defineProperties({}, Object.getOwnPropertyDescriptors(attrs)) as T;
  Object.defineProperty(out, 'object', { value: object, enumerable: true, writable: true, configurable: true });
  return out;
}

/** Decisions learnt during one request, shared by every match condition of it. */
class RequestDecisions implements CelAuthorizer {
  private readonly known = new Map<string, AuthorizationDecision>();

  constructor(private readonly authorize: ((check: AuthorizationCheck) => Promise<AuthorizationDecision>) | undefined) {}

  check(attributes: AuthorizationCheck): AuthorizationDecision | undefined {
    return this.known.get(JSON.stringify(attributes));
  }

  readonly ask = async (check: AuthorizationCheck): Promise<AuthorizationDecision> => {
    const decision = this.authorize ? await this.authorize(check) : { decision: 'no-opinion' as const, reason: '', error: 'no authorizer is configured' };
    this.known.set(JSON.stringify(check), decision);
    return decision;
  };
}


const SIDE_EFFECT_FREE = new Set(['None', 'NoneOnDryRun']);

export class AdmissionWebhooks {
  readonly isolation: WebhookIsolation;
  private readonly mutating: WebhookSource;
  private readonly validating: WebhookSource;
  private readonly agents: WebhookAgents | undefined;
  private readonly post: WebhookPoster;
  private readonly maxResponseBytes: number;
  private readonly equivalents: EquivalentResourceMapper;
  private readonly unregisterMetrics: () => void;

  constructor(private readonly opts: AdmissionWebhooksOptions) {
    this.mutating = new WebhookSource(opts.configurations, 'MutatingWebhookConfiguration');
    this.validating = new WebhookSource(opts.configurations, 'ValidatingWebhookConfiguration');
    this.isolation = new WebhookIsolation({ ...(opts.isolation ?? DEFAULT_ISOLATION), log: opts.log });
    this.unregisterMetrics = registerIsolationMetrics(this.isolation);
    if (opts.post) {
      this.post = opts.post;
    } else {
      this.agents = new WebhookAgents(64, { ...WEBHOOK_AGENT_OPTIONS, ...(opts.clientCertificate ?? {}) });
      this.post = httpsPoster(this.agents, opts.clientCertificate);
    }
    this.maxResponseBytes = opts.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.equivalents = opts.equivalents ?? NO_EQUIVALENTS;
  }

  /** Closes the kept-alive connections. */
  close(): void {
    this.unregisterMetrics();
    this.agents?.destroy();
  }

  /** Whether no webhook is configured at all (the common case: nothing to do per request). */
  get empty(): boolean {
    return this.webhooks(this.mutating).length === 0 && this.webhooks(this.validating).length === 0;
  }

  private webhooks(source: WebhookSource): readonly CompiledWebhook[] {
    return source.webhooks(() => this.forgetUnconfigured());
  }

  /** Connections and isolation state of webhooks no longer configured go. */
  private forgetUnconfigured(): void {
    const all = [...this.mutating.webhooks(), ...this.validating.webhooks()];
    this.agents?.retain(all.flatMap((h) => (h.target.endpoint ? [h.target.endpoint] : [])));
    this.isolation.retain(new Set(all.map((h) => h.isolation.id)));
  }

  /**
   * One round of mutating webhooks on `attrs.object` (the second when
   * `state.reinvoking`); the object they leave. Throws the ApiError that
   * refuses the request.
   */
  async mutate(attrs: WebhookAttributes, state: ReinvocationState, record: AdmissionRecord): Promise<ApiObject | undefined> {
    if (isAdmissionConfigurationResource(attrs)) return attrs.object;
    const hooks = this.webhooks(this.mutating);
    if (hooks.length === 0) return attrs.object;
    // Built-in plugins changed the object in the second round: every eligible webhook is called again.
    if (state.reinvoking && state.outputChangedSinceLastWebhook(attrs.object)) state.requireReinvokingPreviouslyInvoked();
    const decisions = new RequestDecisions(this.opts.authorize);
    let current = attrs;
    try {
      for (const [index, hook] of hooks.entries()) {
        const invocation = await this.invocationFor(hook, current, decisions);
        if (!invocation) continue;
        // A webhook is never called for the first time in the second round.
        if (state.reinvoking && !state.shouldReinvokeWebhook(hook.uid)) continue;
        const round = state.reinvoking ? 1 : 0;
        const before = current.object;
        let failure: unknown;
        try {
          const after = await this.callMutating(invocation, current, record);
          if (after !== before) current = withObject(current, after);
        } catch (err) {
          failure = err;
        }
        const changed = current.object !== before && !sameJson(current.object, before);
        record.annotate(`${MUTATION_ANNOTATION_PREFIX}round_${round}_index_${index}`, JSON.stringify({ configuration: hook.configuration, webhook: hook.name, mutated: changed }));
        if (changed) {
          state.requireReinvokingPreviouslyInvoked();
          state.shouldReinvoke = true;
          if (!record.mutatedBy.includes(hook.name)) record.mutatedBy.push(hook.name);
        }
        if (hook.reinvoke) state.invoked(hook.uid);
        if (failure !== undefined) this.failed(hook, failure, record, `${MUTATION_FAILED_OPEN_PREFIX}round_${round}_index_${index}`);
      }
    } finally {
      state.setLastOutput(current.object);
    }
    return current.object;
  }

  /** Every validating webhook that selects the request, called at once; the first refusal (in the webhooks' order) is thrown. */
  async validate(attrs: WebhookAttributes, record: AdmissionRecord): Promise<void> {
    if (isAdmissionConfigurationResource(attrs)) return;
    const hooks = this.webhooks(this.validating);
    if (hooks.length === 0) return;
    const decisions = new RequestDecisions(this.opts.authorize);
    const invocations: Invocation[] = [];
    for (const hook of hooks) {
      const invocation = await this.invocationFor(hook, attrs, decisions);
      if (invocation) invocations.push(invocation);
    }
    if (invocations.length === 0) return;
    const failures = await Promise.all(invocations.map((inv) => this.callValidating(inv, attrs, record).then(() => undefined, (err: unknown) => err)));
    let first: ApiError | undefined;
    failures.forEach((failure, index) => {
      if (failure === undefined) return;
      const invocation = invocations[index] as Invocation;
      try {
        this.failed(invocation.hook, failure, record, `${VALIDATION_FAILED_OPEN_PREFIX}round_0_index_${index}`);
      } catch (err) {
        first ??= ApiError.from(err);
      }
    });
    if (first) throw first;
  }

  /**
   * What a webhook's failure does: a failed call under `Ignore` is a
   * warning and an audit annotation, anything else refuses (a failed call
   * under `Fail` as the original's internal error).
   */
  private failed(hook: CompiledWebhook, failure: unknown, record: AdmissionRecord, failedOpenKey: string): void {
    if (!(failure instanceof WebhookCallError)) throw failure;
    // An isolated webhook's skipped calls are not logged one by one: its isolation is.
    const isolated = failure instanceof WebhookIsolatedError;
    const log = (msg: string, fields: LogFields): void => (isolated ? this.opts.log.debug(msg, fields) : this.opts.log.warn(msg, fields));
    if (hook.failurePolicy === 'Ignore') {
      log('admission webhook call failed; going on (failurePolicy Ignore)', { configuration: hook.configuration, webhook: hook.name, reason: failure.reason });
      record.warn(`${failure.message} (ignored: failurePolicy is Ignore)`);
      record.annotate(failedOpenKey, hook.name);
      recordFailOpen(hook.name, failedOpenKey.startsWith(MUTATION_FAILED_OPEN_PREFIX));
      return;
    }
    log('admission webhook call failed; refusing (failurePolicy Fail)', { configuration: hook.configuration, webhook: hook.name, reason: failure.reason });
    throw failure.toApiError();
  }

  /**
   * Whether `hook` selects the request (the original's ShouldCallHook): the
   * namespace and object selectors, the rules (and under Equivalent the
   * other versions of the resource), then the match conditions. A webhook
   * without rules selects nothing.
   */
  private async invocationFor(hook: CompiledWebhook, attrs: WebhookAttributes, decisions: RequestDecisions): Promise<Invocation | undefined> {
    if ((hook.match.resourceRules ?? []).length === 0) return undefined;
    const matched = await matchesResources(hook.match, attrs, this.opts.namespaces, this.equivalents);
    if (!matched.matches) return undefined;
    const invocation = { hook, resource: matched.resource, kind: matched.kind };
    if (hook.matchConditions.length === 0) return invocation;
    const outcome = await this.matchConditions(invocation, attrs, decisions);
    if (outcome === true) return invocation;
    if (outcome === false || hook.failurePolicy === 'Ignore') return undefined;
    throw ApiError.forbidden({ group: attrs.resource.group, resource: attrs.resource.resource }, attrs.name, outcome);
  }

  /** true when every condition holds, false when one does not, else the errors (as the original's matcher decides). */
  private async matchConditions(invocation: Invocation, attrs: WebhookAttributes, decisions: RequestDecisions): Promise<boolean | string> {
    const activation = new AdmissionActivation({
      object: attrs.operation === 'DELETE' ? null : (attrs.object ?? null),
      oldObject: attrs.oldObject ?? null,
      request: matchedRequest(attrs, invocation),
      authorizer: decisions,
    });
    let remaining = MATCH_CONDITIONS_COST_BUDGET;
    const errors: string[] = [];
    for (const condition of invocation.hook.matchConditions) {
      if (!condition.program) {
        errors.push(condition.error ?? `match condition ${JSON.stringify(condition.name)} did not compile`);
        continue;
      }
      const { outcome, cost } = await evaluateWithAuthorizer(condition.program, activation, decisions.ask, { costBudget: Math.min(COST_BUDGET, remaining) });
      remaining -= cost;
      if (!outcome.ok) {
        errors.push(`expression '${condition.program.source}' resulted in error: ${outcome.error.message}`);
        continue;
      }
      if (outcome.value === false) return false;
      if (outcome.value !== true) errors.push(`expression '${condition.program.source}' resulted in a ${typeof outcome.value}, not a bool`);
      if (remaining <= 0) {
        errors.push('the match conditions ran out of their cost budget');
        break;
      }
    }
    return errors.length === 0 ? true : aggregateErrors(errors);
  }

  /** Calls a mutating webhook; the object with its patch applied (the same object when it sent none). */
  private async callMutating(invocation: Invocation, attrs: WebhookAttributes, record: AdmissionRecord): Promise<ApiObject | undefined> {
    const { hook } = invocation;
    const response = await this.call(invocation, attrs, true, record);
    if (!response.allowed) throw webhookRejection(hook.name, response.status);
    if (!response.patch) return attrs.object;
    if (response.patchType !== 'JSONPatch') throw new WebhookCallError(hook.name, `unsupported patch type ${JSON.stringify(response.patchType ?? '')}`, false);
    let operations: unknown;
    try {
      operations = JSON.parse(response.patch.toString('utf8'));
    } catch (err) {
      throw new WebhookCallError(hook.name, `received undecodable patch in webhook response: ${(err as Error).message}`, false);
    }
    if (!Array.isArray(operations)) throw new WebhookCallError(hook.name, 'received undecodable patch in webhook response: a JSON patch is a list of operations', false);
    if (operations.length === 0) return attrs.object;
    if (!attrs.object) throw ApiError.internal(`admission webhook ${JSON.stringify(hook.name)} attempted to modify the object, which is not supported for this operation`);
    let patched: unknown;
    try {
      // The patch is of the object as the webhook saw it (the version its rules matched); the result goes back to the request's version.
      patched = jsonPatch(asVersion(attrs.object, invocation.kind), operations);
    } catch (err) {
      throw new WebhookCallError(hook.name, `the patch in the webhook response could not be applied: ${(err as Error).message}`, false);
    }
    if (!isJsonObject(patched)) throw new WebhookCallError(hook.name, 'the patch in the webhook response does not leave an object', false);
    const result = asVersion(patched as ApiObject, attrs.kind);
    const problem = this.opts.decodeProblem?.(attrs.kind, result);
    if (problem) throw new WebhookCallError(hook.name, `the patched object could not be decoded: ${problem}`, false);
    return result;
  }

  private async callValidating(invocation: Invocation, attrs: WebhookAttributes, record: AdmissionRecord): Promise<void> {
    const response = await this.call(invocation, attrs, false, record);
    if (!response.allowed) throw webhookRejection(invocation.hook.name, response.status);
  }

  /**
   * One AdmissionReview exchange: the dry-run rule, the isolation gate, the
   * POST within the webhook's timeout and response limit, the checks of the
   * answer; its warnings and audit annotations are recorded.
   */
  private async call(invocation: Invocation, attrs: WebhookAttributes, mutating: boolean, record: AdmissionRecord): Promise<AdmissionReviewResponse> {
    const { hook } = invocation;
    if (attrs.dryRun && !SIDE_EFFECT_FREE.has(hook.sideEffects)) throw dryRunUnsupported(hook.name);
    if (!hook.reviewVersion) throw new WebhookCallError(hook.name, 'could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)', false);
    const endpoint = hook.target.endpoint;
    if (!endpoint) throw new WebhookCallError(hook.name, `could not get REST client: ${hook.target.error}`, false);
    const gate = this.isolation.gate(hook.isolation);
    if (!gate.call) {
      throw new WebhookIsolatedError(hook.name, gate.failures, gate.retryInMs);
    }
    const uid = randomUUID();
    const body = JSON.stringify(admissionReviewRequest(uid, { ...matchedRequest(attrs, invocation), object: asVersion(attrs.object, invocation.kind), oldObject: asVersion(attrs.oldObject, invocation.kind) }, hook.reviewVersion));
    // The webhook is told its deadline, as the original tells it.
    const url = new URL(endpoint.url);
    url.searchParams.set('timeout', `${Math.ceil(hook.timeoutMs / 1000)}s`);
    let response: AdmissionReviewResponse;
    const called = { name: hook.name, mutating, operation: attrs.operation, started: performance.now(), httpCode: 0 };
    try {
      let reply: WebhookReply;
      try {
        reply = await this.post(endpoint, url.toString(), body, hook.timeoutMs, this.maxResponseBytes);
      } catch (err) {
        throw new WebhookCallError(hook.name, `failed to call webhook: Post ${JSON.stringify(url.toString())}: ${(err as Error).message}`);
      }
      called.httpCode = reply.status;
      if (reply.status < 200 || reply.status > 299) throw new WebhookCallError(hook.name, `failed to call webhook: the server responded with the status code ${reply.status}${answerText(reply.body)}`);
      try {
        response = admissionReviewResponse(reply.body, uid, hook.reviewVersion, mutating);
      } catch (err) {
        if (err instanceof InvalidReviewResponse) throw new WebhookCallError(hook.name, `received invalid webhook response: ${err.message}`);
        throw err;
      }
    } catch (err) {
      if (err instanceof WebhookCallError && err.unavailable) this.isolation.failed(hook.isolation);
      else this.isolation.succeeded(hook.isolation);
      recordWebhookCall({ ...called, failed: true });
      throw err;
    }
    this.isolation.succeeded(hook.isolation);
    recordWebhookCall(response.allowed ? called : { ...called, rejectedWith: response.status?.code ?? 0 });
    for (const [key, value] of Object.entries(response.auditAnnotations)) record.annotate(`${hook.name}/${key}`, value);
    for (const warning of response.warnings) record.warn(warning);
    return response;
  }
}

/** What a failed answer said, shortened for the message: a Status's message, or the start of the body. */
function answerText(body: string): string {
  let text = body.trim();
  try {
    const parsed: unknown = JSON.parse(text);
    if (isJsonObject(parsed) && typeof parsed['message'] === 'string') text = parsed['message'];
  } catch {
    // Not JSON: the body as it is.
  }
  if (text === '') return '';
  return `: ${text.length > 256 ? `${text.slice(0, 256)}...` : text}`;
}
