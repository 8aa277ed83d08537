import { ApiError, isJsonObject, labelSelectorFromObject, rfc3339, type ApiObject, type LabelSelectorObject, type ResourceDefinition } from '@svc/apimachinery';
import { EVICTION_SCHEMA, POLICY_GROUP } from '@svc/kinds';
import { parseDeleteOptions } from '../../handlers/delete-options';
import { parseDryRun, readContext, writeContext, writeDefinition, type ResourceHandler, type ResourceRequest } from '../../handlers/common';
import { annotateAudit, deleteObject, getObject, listObjects, updateObject, type DeleteOptions, type WriteContext } from '../store';
import { callOptionsWithin } from '../../request-timeout';
import { readReview, respond } from './review-io';

/**
 * `POST pods/<name>/eviction` (policy/v1 Eviction, policy/v1beta1 accepted):
 * deletes the pod when its PodDisruptionBudget allows, as the original's
 * eviction subresource decides:
 *
 * - a pod that is terminating, Pending, Succeeded or Failed, or one no
 *   budget selects, is deleted at once;
 * - a pod selected by more than one budget is a 500 (not supported);
 * - a pod that is not Ready is deleted without using the budget when the
 *   budget's unhealthyPodEvictionPolicy is AlwaysAllow, or (IfHealthyBudget,
 *   the default) when the budget is already met;
 * - otherwise the budget must allow a disruption: one whose status is
 *   behind its generation, or that allows none, answers 429 ("Cannot evict
 *   pod as it would violate the pod's disruption budget.", its cause of type
 *   DisruptionBudget); else disruptionsAllowed is decremented and the pod
 *   recorded in disruptedPods by a compare-and-swap of the budget's status
 *   (a lost race reads again), then the pod is deleted with the Eviction's
 *   DeleteOptions.
 *
 * The Eviction passes admission first (CREATE of pods/eviction). A dry
 * run (the query's or the DeleteOptions') checks all of it and changes
 * nothing. The answer is 201 with a Success Status.
 */

const API_VERSIONS = ['v1', 'v1beta1'];
/** How often a lost race on the budget's status is retried (the original's EvictionsRetry). */
const MAX_ATTEMPTS = 20;
/** The most evictions a budget records before its controller confirms them. */
const MAX_DISRUPTED_PODS = 2000;

/** How the original names the budget in a refusal. */
const BUDGET_RESOURCE = { group: POLICY_GROUP, resource: 'poddisruptionbudget' };

type Fields = Record<string, unknown>;
const record = (v: unknown): Fields => (isJsonObject(v) ? (v as Fields) : {});

function budgetViolation(message: string): ApiError {
  return new ApiError(429, 'TooManyRequests', "Cannot evict pod as it would violate the pod's disruption budget.", { causes: [{ reason: 'DisruptionBudget', message }], retryAfterSeconds: 0 });
}

/** The pod goes without consulting a budget: it is terminating or not running (the original's canIgnorePDB). */
function ignoresBudget(pod: ApiObject): boolean {
  const phase = record(pod['status'])['phase'];
  return !!pod.metadata?.deletionTimestamp || phase === 'Succeeded' || phase === 'Failed' || phase === 'Pending';
}

function podReady(pod: ApiObject): boolean {
  const conditions = record(pod['status'])['conditions'];
  return Array.isArray(conditions) && conditions.some((c) => record(c)['type'] === 'Ready' && record(c)['status'] === 'True');
}

function budgetsDefinition(r: ResourceRequest): ResourceDefinition {
  const def = r.deps.registry.lookup(POLICY_GROUP, 'v1', 'poddisruptionbudgets');
  if (!def) throw ApiError.internal('the poddisruptionbudgets kind is not registered');
  return def;
}

/** The DeleteOptions of the Eviction, checked as a DELETE's are; the query's dryRun joins the body's. */
function deleteOptionsOf(eviction: ApiObject, queryDryRun: boolean): DeleteOptions {
  const given = eviction['deleteOptions'];
  const options = given === undefined || given === null ? { dryRun: false } : parseDeleteOptions(() => [], Buffer.from(JSON.stringify(given)));
  return { ...options, dryRun: options.dryRun === true || queryDryRun };
}

/**
 * Decides with the budget (and records the eviction on it): undefined when the pod may go,
 * the preconditions its deletion needs otherwise added to `options`.
 */
async function useBudget(ctx: WriteContext, r: ResourceRequest, pod: ApiObject, options: DeleteOptions): Promise<DeleteOptions> {
  const pdbDef = budgetsDefinition(r);
  const namespace = r.info.namespace;
  const page = await listObjects({ deps: r.deps, def: pdbDef, namespace, requestId: ctx.requestId, deadline: ctx.deadline }, { limit: 0 });
  const budgets = page.items.filter((b) => labelSelectorFromObject(record(b['spec'])['selector'] as LabelSelectorObject | undefined).matches(pod.metadata?.labels));
  if (budgets.length === 0) return options;
  if (budgets.length > 1) throw ApiError.internal('This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.');
  const budget = budgets[0] as ApiObject;
  const name = budget.metadata?.name ?? '';
  const spec = record(budget['spec']);
  const status = record(budget['status']);
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  if (!podReady(pod)) {
    // The pod is already down: it may go when the budget says so, deleted as it was read.
    const sure = { ...options, preconditions: { ...(options.preconditions ?? {}), resourceVersion: pod.metadata?.resourceVersion ?? '' } };
    if (spec['unhealthyPodEvictionPolicy'] === 'AlwaysAllow') return sure;
    if (num(status['desiredHealthy']) > 0 && num(status['currentHealthy']) >= num(status['desiredHealthy'])) return sure;
  }
  if (num(status['observedGeneration']) < (budget.metadata?.generation ?? 0)) throw budgetViolation(`The disruption budget ${name} is still being processed by the server.`);
  const allowed = num(status['disruptionsAllowed']);
  if (allowed < 0) throw ApiError.forbidden(BUDGET_RESOURCE, name, 'pdb disruptions allowed is negative');
  const disrupted = record(status['disruptedPods']);
  if (Object.keys(disrupted).length > MAX_DISRUPTED_PODS) throw ApiError.forbidden(BUDGET_RESOURCE, name, 'DisruptedPods map too big - too many evictions not confirmed by PDB controller');
  if (allowed === 0) throw budgetViolation(`The disruption budget ${name} needs ${num(status['desiredHealthy'])} healthy pods and has ${num(status['currentHealthy'])} currently`);
  if (options.dryRun) return options;
  const next = { ...budget, status: { ...status, disruptionsAllowed: allowed - 1, disruptedPods: { ...disrupted, [pod.metadata?.name ?? '']: rfc3339(ctx.now ?? new Date()) } } };
  // Compare-and-swap at the budget's resourceVersion: a concurrent change is a 409 and the eviction is decided again.
  const { fieldManager: _manager, ...statusCtx } = ctx;
  await updateObject({ ...statusCtx, def: writeDefinition(pdbDef, 'status'), subresource: 'status', dryRun: false }, name, next);
  return options;
}

function checkName(r: ResourceRequest, eviction: ApiObject): void {
  const meta = record(eviction.metadata);
  // The name is required, as the original compares it even when empty: an Eviction without one evicts nothing.
  if (meta['name'] !== r.info.name) throw ApiError.badRequest('name in URL does not match name in Eviction object');
  if (typeof meta['namespace'] === 'string' && meta['namespace'] !== '' && meta['namespace'] !== r.info.namespace) {
    throw ApiError.badRequest(`the namespace of the provided object (${meta['namespace']}) does not match the namespace sent on the request (${r.info.namespace})`);
  }
}

/**
 * Admission of the eviction itself (CREATE of pods/eviction, the object a
 * policy/v1 Eviction), as the original admits it before deciding: a
 * mutating webhook may change it (its DeleteOptions), a validating one
 * refuse it. Returns the Eviction as admitted.
 */
async function admitEviction(ctx: WriteContext, r: ResourceRequest, eviction: ApiObject): Promise<ApiObject> {
  const input = {
    operation: 'CREATE' as const,
    kind: { group: POLICY_GROUP, version: 'v1', kind: 'Eviction' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subresource: 'eviction',
    namespace: r.info.namespace,
    name: r.info.name,
    userInfo: ctx.user,
    dryRun: ctx.dryRun,
    options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1', ...(ctx.dryRun ? { dryRun: ['All'] } : {}) },
  };
  const opts = () => callOptionsWithin(ctx, ctx.deps.limits.admissionTimeoutMs);
  const mutated = await ctx.deps.admission.admit({ ...input, phase: 'mutating-then-validating', object: eviction }, opts());
  for (const w of mutated.warnings) ctx.warn(w);
  annotateAudit(ctx, mutated.auditAnnotations);
  if (mutated.validated) return eviction;
  const final = mutated.object ?? eviction;
  const validated = await ctx.deps.admission.admit({ ...input, phase: 'validating', object: final }, opts());
  for (const w of validated.warnings) ctx.warn(w);
  annotateAudit(ctx, validated.auditAnnotations);
  return final;
}

export const eviction: ResourceHandler = async (req, res, r) => {
  const expected = { group: POLICY_GROUP, version: 'v1', kind: 'Eviction', schema: EVICTION_SCHEMA, versions: API_VERSIONS };
  const { object: sent } = await readReview(req, r, expected, POLICY_GROUP);
  checkName(r, sent);
  const queryDryRun = parseDryRun(req);
  const base = writeContext(req, r);
  const shown: ApiObject = { ...sent, apiVersion: `${POLICY_GROUP}/v1`, kind: 'Eviction', metadata: { ...record(sent.metadata), name: r.info.name, namespace: r.info.namespace } };
  const object = await admitEviction({ ...base, dryRun: deleteOptionsOf(sent, queryDryRun).dryRun === true }, r, shown);
  const requested = deleteOptionsOf(object, queryDryRun);
  const podCtx: WriteContext = { ...base, subresource: '', dryRun: requested.dryRun === true };
  for (let attempt = 0; ; attempt++) {
    const pod = (await getObject(readContext(req, r), r.info.name)).object;
    try {
      const options = ignoresBudget(pod) ? requested : await useBudget(podCtx, r, pod, requested);
      await deleteObject(podCtx, r.info.name, options);
      break;
    } catch (err) {
      if (err instanceof ApiError && err.code === 409 && attempt < MAX_ATTEMPTS) continue;
      throw err;
    }
  }
  respond(req, res, r, 201, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' }, 'Status', 'v1');
};
