import { ApiError, canonicalGroup, type ApiObject, type ResourceDefinition } from '@svc/apimachinery';
import { admissionVariables, authorizerLibrary, CelCompileError, compile, type CelDeclaredType } from '@svc/cel';
import { builtinResources, customResourceDefinitions, declaredType } from '@svc/kinds';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import type { SharedInformer, SharedInformerFactory } from './informer';
import { runWorkers, WorkQueue, type SyncResult, type WorkQueueOptions } from './work-queue';

/**
 * The type checking status of ValidatingAdmissionPolicies, as the original
 * server's policy status controller keeps it: each policy whose generation
 * changed is type-checked against the kinds its `matchConstraints` name
 * (rules without wildcards; at most ten kinds), the schemas of built-in
 * kinds and of established custom resources giving `object` and
 * `oldObject` (and `params`, when the paramKind is known) their declared
 * types. Each validation expression and messageExpression that does not
 * type-check for a kind is reported in `status.typeChecking.expressionWarnings`
 * (`spec.validations[i].expression` with `<group>/<version>, Kind=<kind>:
 * <problem>` per kind), and `status.observedGeneration` says which
 * generation was checked. Type checking never changes what a policy does.
 *
 * What the CEL package's checker finds: references to fields a typed
 * object does not declare, comparisons and arithmetic between values of
 * different known types, results of a type an operator cannot take. It
 * infers less than the original's checker (functions of the library,
 * macros over typed lists and maps yield `dyn` in places), so some
 * expressions the original would warn about pass here.
 */

export const ADMISSIONREGISTRATION = 'admissionregistration.svc.io';
const POLICIES = `/apis/${ADMISSIONREGISTRATION}/v1/validatingadmissionpolicies`;
const CRDS = '/apis/apiextensions.svc.io/v1/customresourcedefinitions';
/** At most this many kinds are checked per policy (the original's maxTypesToCheck). */
export const MAX_TYPES_TO_CHECK = 10;

export interface ExpressionWarning {
  fieldRef: string;
  warning: string;
}

/** A kind an expression is checked against, with its object schema. */
export interface CheckedKind {
  group: string;
  version: string;
  kind: string;
  definition: ResourceDefinition;
}

/** The kinds the server serves: the built-in ones and those of established custom resource definitions. */
export interface KindResolver {
  /** The kind served at group/version/resource, if any. */
  forResource(group: string, version: string, resource: string): CheckedKind | undefined;
  /** The kind group/version/kind, if served. */
  forKind(group: string, version: string, kind: string): CheckedKind | undefined;
}

let builtins: ResourceDefinition[] | undefined;

/** Kinds from the built-ins and the given definitions (their registry entries made once per definition version). */
export class ServedKinds implements KindResolver {
  private readonly crdEntries = new Map<string, { version: string; definitions: ResourceDefinition[] }>();

  constructor(private readonly crds: () => ApiObject[]) {}

  private definitions(): ResourceDefinition[] {
    builtins ??= builtinResources().filter((d) => !d.virtual);
    const out = [...builtins];
    const seen = new Set<string>();
    for (const crd of this.crds()) {
      const key = crd.metadata?.uid ?? crd.metadata?.name ?? '';
      seen.add(key);
      const version = crd.metadata?.resourceVersion ?? '';
      let entry = this.crdEntries.get(key);
      if (!entry || entry.version !== version) {
        entry = { version, definitions: customResourceDefinitions(crd) };
        this.crdEntries.set(key, entry);
      }
      out.push(...entry.definitions);
    }
    for (const key of this.crdEntries.keys()) if (!seen.has(key)) this.crdEntries.delete(key);
    return out;
  }

  private find(test: (d: ResourceDefinition) => boolean): CheckedKind | undefined {
    const d = this.definitions().find(test);
    return d ? { group: d.group, version: d.version, kind: d.kind, definition: d } : undefined;
  }

  forResource(group: string, version: string, resource: string): CheckedKind | undefined {
    const g = canonicalGroup(group);
    return this.find((d) => d.group === g && d.version === version && d.plural === resource);
  }

  forKind(group: string, version: string, kind: string): CheckedKind | undefined {
    const g = canonicalGroup(group);
    return this.find((d) => d.group === g && d.version === version && d.kind === kind);
  }
}

interface PolicySpec {
  paramKind?: { apiVersion?: string; kind?: string } | null;
  matchConstraints?: { resourceRules?: Array<{ apiGroups?: string[]; apiVersions?: string[]; resources?: string[] }> } | null;
  validations?: Array<{ expression?: string; messageExpression?: string }>;
  variables?: Array<{ name?: string; expression?: string }>;
}

/** `<group>/<version>, Kind=<kind>`, as the original prints a GroupVersionKind. */
export function gvkString(k: { group: string; version: string; kind: string }): string {
  return `${k.group}/${k.version}, Kind=${k.kind}`;
}

/**
 * The kinds a policy is checked against (the original's typesToCheck): from
 * each rule of `matchConstraints.resourceRules` without wildcards in its
 * groups and versions, every named resource (wildcards and subresources
 * skipped) that a kind is served at; sorted by group, version and kind, at
 * most MAX_TYPES_TO_CHECK.
 */
export function kindsToCheck(policy: ApiObject, kinds: KindResolver): CheckedKind[] {
  const spec = (policy['spec'] ?? {}) as PolicySpec;
  const found = new Map<string, CheckedKind>();
  for (const rule of spec.matchConstraints?.resourceRules ?? []) {
    const groups = rule.apiGroups ?? [];
    const versions = rule.apiVersions ?? [];
    if (groups.length === 0 || versions.length === 0 || groups.some((g) => g.includes('*')) || versions.some((v) => v.includes('*'))) continue;
    const resources = (rule.resources ?? []).filter((r) => !/[*/]/.test(r));
    for (const group of [...groups].sort()) {
      for (const version of [...versions].sort()) {
        for (const resource of [...resources].sort()) {
          const kind = kinds.forResource(group, version, resource);
          if (!kind) continue;
          found.set(gvkString(kind), kind);
          if (found.size === MAX_TYPES_TO_CHECK) return sortKinds([...found.values()]);
        }
      }
    }
  }
  return sortKinds([...found.values()]);
}

function sortKinds(list: CheckedKind[]): CheckedKind[] {
  return list.sort((a, b) => a.group.localeCompare(b.group) || a.version.localeCompare(b.version) || a.kind.localeCompare(b.kind));
}

/** The declared type of a kind's objects (the whole object: type meta, metadata, the kind's fields). */
function objectType(kind: CheckedKind): CelDeclaredType {
  return declaredType(kind.definition.schema as unknown as Record<string, unknown>);
}

/** The problem a compile error names, without the field and the "Invalid value" wording. */
function problem(err: CelCompileError): string {
  return err.detail.replace(/^Invalid value: /, '').replace(/^compilation failed: /, '');
}

/**
 * The warnings of a policy (pure, for tests): each validation expression
 * and messageExpression compiled against each kind to check, with the
 * policy's variables compiled first against the same types.
 */
export function typeCheckPolicy(policy: ApiObject, kinds: KindResolver): ExpressionWarning[] {
  const spec = (policy['spec'] ?? {}) as PolicySpec;
  const checked = kindsToCheck(policy, kinds);
  if (checked.length === 0) return [];
  const hasParams = spec.paramKind !== undefined && spec.paramKind !== null;
  let paramsType: CelDeclaredType = 'dyn';
  if (spec.paramKind?.apiVersion && spec.paramKind.kind) {
    const slash = spec.paramKind.apiVersion.indexOf('/');
    const [group, version] = slash < 0 ? ['', spec.paramKind.apiVersion] : [spec.paramKind.apiVersion.slice(0, slash), spec.paramKind.apiVersion.slice(slash + 1)];
    const paramKind = kinds.forKind(group, version, spec.paramKind.kind);
    if (paramKind) paramsType = objectType(paramKind);
  }
  const namespace = kinds.forKind('', 'v1', 'Namespace');
  const issues = new Map<string, string[]>();
  for (const kind of checked) {
    const type = objectType(kind);
    const base: Record<string, CelDeclaredType> = {
      ...admissionVariables({ params: hasParams, namespaceObject: true, authorizer: true }),
      object: type,
      oldObject: type,
      ...(hasParams ? { params: paramsType } : {}),
      ...(namespace ? { namespaceObject: objectType(namespace) } : {}),
    };
    // Variables first, each typed by what its expression yields for this kind ('dyn' when it does not compile).
    const variableTypes: Record<string, CelDeclaredType> = {};
    const withVariables = (): Record<string, CelDeclaredType> => ({ ...base, variables: { object: { ...variableTypes } } });
    for (const v of spec.variables ?? []) {
      try {
        variableTypes[v.name ?? ''] = compile(v.expression ?? '', { field: 'variable', variables: withVariables(), functions: authorizerLibrary }).resultType;
      } catch (err) {
        if (!(err instanceof CelCompileError)) throw err;
        variableTypes[v.name ?? ''] = 'dyn';
      }
    }
    const variables = withVariables();
    const check = (fieldRef: string, source: string | undefined): void => {
      if (!source) return;
      try {
        compile(source, { field: fieldRef, variables, functions: authorizerLibrary });
      } catch (err) {
        if (!(err instanceof CelCompileError)) throw err;
        issues.set(fieldRef, [...(issues.get(fieldRef) ?? []), `${gvkString(kind)}: ${problem(err)}`]);
      }
    };
    (spec.validations ?? []).forEach((v, i) => {
      check(`spec.validations[${i}].expression`, v.expression);
      check(`spec.validations[${i}].messageExpression`, v.messageExpression);
    });
  }
  // In the order of the validations, as the original lists them.
  const out: ExpressionWarning[] = [];
  (spec.validations ?? []).forEach((_v, i) => {
    for (const fieldRef of [`spec.validations[${i}].expression`, `spec.validations[${i}].messageExpression`]) {
      const found = issues.get(fieldRef);
      if (found) out.push({ fieldRef, warning: found.join('\n') });
    }
  });
  return out;
}

export interface PolicyStatusControllerOptions {
  queue?: WorkQueueOptions;
}

/** Writes `status.typeChecking` and `status.observedGeneration` of every policy whose generation was not checked yet. */
export class AdmissionPolicyStatusController {
  private readonly policies: SharedInformer;
  private readonly crds: SharedInformer;
  private readonly kinds: ServedKinds;
  private readonly queue: WorkQueue;
  private workers: Promise<void> | undefined;

  constructor(
    private readonly client: Pick<ApiClient, 'request'>,
    informers: SharedInformerFactory,
    private readonly log: Logger,
    opts: PolicyStatusControllerOptions = {},
  ) {
    this.policies = informers.informerFor(POLICIES);
    this.crds = informers.informerFor(CRDS);
    this.kinds = new ServedKinds(() => this.crds.list());
    this.queue = new WorkQueue(opts.queue);
  }

  get synced(): boolean {
    return this.policies.hasSynced() && this.crds.hasSynced();
  }

  start(): void {
    if (this.workers) return;
    const changed = (policy: ApiObject): void => {
      if (policy.metadata?.name) this.queue.add(policy.metadata.name);
    };
    this.policies.addEventHandler({ onAdd: changed, onUpdate: (_old, policy) => changed(policy) });
    this.workers = runWorkers(1, this.queue, (name) => this.reconcile(name), (name, err) =>
      this.log.warn('validating admission policy status not written; retrying', { name, err: err.message, retries: this.queue.numRequeues(name) + 1 }),
    );
  }

  async stop(): Promise<void> {
    this.queue.shutDown();
    await this.workers;
  }

  private async reconcile(name: string): Promise<SyncResult> {
    const policy = this.policies.get(name);
    if (!policy || policy.metadata?.deletionTimestamp) return;
    const generation = policy.metadata?.generation ?? 0;
    const status = (policy['status'] as Record<string, unknown> | undefined) ?? {};
    if (status['observedGeneration'] === generation && status['typeChecking'] !== undefined) return;
    // The custom resources' schemas are needed before a policy on them is checked.
    if (!this.crds.hasSynced()) return { requeueAfterMs: 500 };
    const warnings = typeCheckPolicy(policy, this.kinds);
    const next = { ...status, observedGeneration: generation, typeChecking: warnings.length > 0 ? { expressionWarnings: warnings } : {} };
    try {
      await this.client.request('PUT', `${POLICIES}/${encodeURIComponent(name)}/status`, { ...policy, status: next });
      this.log.info('validating admission policy type-checked', { name, generation, warnings: warnings.length });
    } catch (err) {
      // A newer version is on its way through the watch; a gone one needs nothing.
      if (err instanceof ApiError && (err.code === 409 || err.code === 404)) return;
      throw err;
    }
  }
}
