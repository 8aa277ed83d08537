import { createHash } from 'node:crypto';
import { CelCompileError, compileAdmissionExpression, type CompiledExpression } from '@svc/cel';
import type { WebhookEndpoint } from '@svc/service-kit';
import type { AdmissionConfigurationReader } from '../configurations';
import type { MatchResources } from '../policy/matching';
import type { IsolatedWebhook } from './isolation';
import { reviewVersionFor, type AdmissionReviewVersion } from './review';
import type { FailurePolicy, WebhookClientConfig, WebhookConfiguration, WebhookSpec } from './types';

/**
 * Webhooks as the dispatcher uses them: every configuration is compiled once
 * per version of the object (its uid and resourceVersion): its selection
 * (rules, selectors, match policy), its CEL match conditions, the address
 * it is called at and the review version it is sent, with the v1 defaults
 * for anything still absent.
 */

export type WebhookConfigurationKind = 'MutatingWebhookConfiguration' | 'ValidatingWebhookConfiguration';

/** Where a webhook is called, or why it cannot be. */
export type ResolvedEndpoint = { endpoint: WebhookEndpoint & { caBundle?: Buffer }; error?: undefined } | { endpoint?: undefined; error: string };

export interface CompiledMatchCondition {
  name: string;
  program?: CompiledExpression;
  /** Why it did not compile (the configuration predates the write-time checks). */
  error?: string;
}

export interface CompiledWebhook {
  /** The webhook within its configuration (`<configuration>/<name>/<index>`): what reinvocation remembers. */
  uid: string;
  configuration: string;
  name: string;
  /** What the rules and selectors are: `resourceRules` are the webhook's `rules`. */
  match: MatchResources;
  matchConditions: CompiledMatchCondition[];
  failurePolicy: FailurePolicy;
  sideEffects: string;
  timeoutMs: number;
  /** Absent when the webhook lists no version we speak. */
  reviewVersion: AdmissionReviewVersion | undefined;
  /** Mutating webhooks with `reinvocationPolicy: IfNeeded`. */
  reinvoke: boolean;
  target: ResolvedEndpoint;
  /** Its identity for isolation: a changed address or CA is another webhook. */
  isolation: IsolatedWebhook;
}

const DEFAULT_TIMEOUT_SECONDS = 10;

/** The URL a client config stands for: `url`, or `https://<name>.<namespace>.svc:<port><path>` for a service reference. */
export function resolveEndpoint(config: WebhookClientConfig | undefined): ResolvedEndpoint {
  let url: string;
  if (config?.url) {
    url = config.url;
  } else if (config?.service) {
    const s = config.service;
    url = `https://${s.name}.${s.namespace}.svc:${s.port ?? 443}${s.path ?? ''}`;
  } else {
    return { error: 'the webhook has neither clientConfig.url nor clientConfig.service' };
  }
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return { error: `clientConfig: ${JSON.stringify(url)} is not a URL` };
  }
  if (parsed.protocol !== 'https:') return { error: `clientConfig: ${JSON.stringify(url)} is not an https URL` };
  const caBundle = config.caBundle ? Buffer.from(config.caBundle, 'base64') : undefined;
  return { endpoint: { url: parsed.toString(), ...(caBundle && caBundle.length > 0 ? { caBundle } : {}) } };
}

function compileConditions(spec: WebhookSpec, index: number): CompiledMatchCondition[] {
  return (spec.matchConditions ?? []).map((c, j) => {
    try {
      const program = compileAdmissionExpression(c.expression ?? '', { authorizer: true }, { field: `webhooks[${index}].matchConditions[${j}].expression`, resultType: 'bool' });
      return { name: c.name ?? '', program };
    } catch (err) {
      if (err instanceof CelCompileError) return { name: c.name ?? '', error: `compilation error: ${err.message}` };
      throw err;
    }
  });
}

export function compileWebhook(configuration: string, spec: WebhookSpec, index: number, mutating: boolean): CompiledWebhook {
  const name = spec.name ?? '';
  const target = resolveEndpoint(spec.clientConfig);
  const ca = target.endpoint?.caBundle ? createHash('sha256').update(target.endpoint.caBundle).digest('hex').slice(0, 16) : '';
  return {
    uid: `${configuration}/${name}/${index}`,
    configuration,
    name,
    match: {
      namespaceSelector: spec.namespaceSelector ?? null,
      objectSelector: spec.objectSelector ?? null,
      resourceRules: spec.rules ?? [],
      matchPolicy: spec.matchPolicy ?? 'Equivalent',
    },
    matchConditions: compileConditions(spec, index),
    failurePolicy: spec.failurePolicy === 'Ignore' ? 'Ignore' : 'Fail',
    sideEffects: spec.sideEffects ?? '',
    timeoutMs: (spec.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS) * 1000,
    reviewVersion: reviewVersionFor(spec.admissionReviewVersions ?? []),
    reinvoke: mutating && spec.reinvocationPolicy === 'IfNeeded',
    target,
    isolation: { id: `${configuration}/${name} ${target.endpoint?.url ?? ''} ${ca}`, configuration, webhook: name },
  };
}

interface CompiledConfiguration {
  uid: string;
  resourceVersion: string;
  webhooks: CompiledWebhook[];
}

/**
 * The webhooks of one kind of configuration, in the order the original
 * calls them (configurations by name, webhooks in the order listed).
 */
export class WebhookSource {
  private readonly compiled = new Map<string, CompiledConfiguration>();
  private list: readonly CompiledWebhook[] = [];
  private generation = Number.NaN;
  /** How many configuration versions were compiled (for tests). */
  compilations = 0;

  constructor(
    private readonly configurations: AdmissionConfigurationReader,
    private readonly kind: WebhookConfigurationKind,
  ) {}

  /** The current webhooks; `changed` is called when they are compiled anew. */
  webhooks(changed?: () => void): readonly CompiledWebhook[] {
    const generation = this.configurations.generation;
    if (generation === this.generation) return this.list;
    const seen = new Set<string>();
    const out: CompiledWebhook[] = [];
    for (const obj of this.configurations.list(this.kind)) {
      const name = obj.metadata?.name ?? '';
      seen.add(name);
      out.push(...this.configuration(name, obj as WebhookConfiguration).webhooks);
    }
    for (const name of this.compiled.keys()) if (!seen.has(name)) this.compiled.delete(name);
    this.list = out;
    this.generation = generation;
    changed?.();
    return out;
  }

  private configuration(name: string, obj: WebhookConfiguration): CompiledConfiguration {
    const uid = obj.metadata?.uid ?? '';
    const resourceVersion = obj.metadata?.resourceVersion ?? '';
    const known = this.compiled.get(name);
    if (known && known.uid === uid && known.resourceVersion === resourceVersion) return known;
    const mutating = this.kind === 'MutatingWebhookConfiguration';
    const compiled = { uid, resourceVersion, webhooks: (Array.isArray(obj.webhooks) ? obj.webhooks : []).map((spec, i) => compileWebhook(name, spec, i, mutating)) };
    this.compiled.set(name, compiled);
    this.compilations++;
    return compiled;
  }
}

