import { ApiError, type ApiObject } from '@svc/apimachinery';
import {
  AUTOUPDATE_SPEC_ANNOTATION,
  PRIORITY_LEVEL_EXEMPT,
  applyFlowSchemaDefaults,
  applyPriorityLevelConfigurationDefaults,
  flowControlSpecsEqual,
  mandatoryFlowSchemas,
  mandatoryPriorityLevelConfigurations,
  suggestedFlowSchemas,
  suggestedPriorityLevelConfigurations,
} from '@svc/kinds';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import { realClock, sleep, type Clock } from './clock';
import { apiListWatch, SharedInformer } from './informer';

/**
 * `flowcontrol-bootstrap`: keeps the API Priority and Fairness configuration
 * the server starts from, as the original server's config producer does.
 * Missing objects are created (with `apf.svc.io/autoupdate-spec: "true"`);
 * a mandatory object's spec is put back whenever it differs (the exempt
 * level keeps its tunable shares and lendable percent); a suggested one is
 * updated only while its annotation says "true" (absent or unreadable: only
 * while it was never changed, generation 1, as the original decides, and the
 * annotation is then written with that decision); objects annotated "true"
 * that are no longer part of the configuration are deleted. Every replica
 * runs it (the writes are idempotent and conditional). It follows both
 * collections with its own informers, so a deletion or an edit is answered
 * at once, and checks everything again at least every resync period.
 */

export const FLOWCONTROL_PATH = '/apis/flowcontrol.svc.io/v1';
/** The field manager of its writes (the original's). */
export const FIELD_MANAGER = 'api-priority-and-fairness-config-producer-v1';
/** Default period of the full check (and of the informers' re-lists). */
export const DEFAULT_RESYNC_MS = 10_000;
/** How often it looks whether the informers' first lists are in. */
const SYNC_POLL_MS = 100;

/** Go's strconv.ParseBool: the spellings the original accepts in the annotation. */
export function parseBool(value: string | undefined): boolean | undefined {
  if (value === undefined) return undefined;
  if (['1', 't', 'T', 'TRUE', 'true', 'True'].includes(value)) return true;
  if (['0', 'f', 'F', 'FALSE', 'false', 'False'].includes(value)) return false;
  return undefined;
}

interface ConfigKind {
  kind: 'FlowSchema' | 'PriorityLevelConfiguration';
  plural: string;
  mandatory: () => ApiObject[];
  suggested: () => ApiObject[];
  /** Whether `actual`'s spec is what `expected` (defaulted) asks for. */
  specEqualish(expected: ApiObject, actual: ApiObject): boolean;
}

function defaultedSpec(obj: ApiObject, defaults: (o: ApiObject) => void): unknown {
  const copy = structuredClone(obj);
  defaults(copy);
  return copy['spec'];
}

const FLOW_SCHEMAS: ConfigKind = {
  kind: 'FlowSchema',
  plural: 'flowschemas',
  mandatory: mandatoryFlowSchemas,
  suggested: suggestedFlowSchemas,
  specEqualish: (expected, actual) => flowControlSpecsEqual(defaultedSpec(expected, applyFlowSchemaDefaults), actual['spec']),
};

const PRIORITY_LEVELS: ConfigKind = {
  kind: 'PriorityLevelConfiguration',
  plural: 'prioritylevelconfigurations',
  mandatory: mandatoryPriorityLevelConfigurations,
  suggested: suggestedPriorityLevelConfigurations,
  specEqualish(expected, actual) {
    const spec = defaultedSpec(expected, applyPriorityLevelConfigurationDefaults) as Record<string, unknown>;
    if (expected.metadata?.name === PRIORITY_LEVEL_EXEMPT) {
      // The exempt level's shares and lendable percent are the operator's to tune.
      const exempt = (actual['spec'] as { exempt?: Record<string, unknown> } | undefined)?.exempt;
      if (!exempt) return false;
      spec['exempt'] = { ...(spec['exempt'] as Record<string, unknown>), nominalConcurrencyShares: exempt['nominalConcurrencyShares'], lendablePercent: exempt['lendablePercent'] };
    }
    return flowControlSpecsEqual(spec, actual['spec']);
  },
};

/**
 * The original's ReviseIfNeeded: the object to write in place of `current`,
 * or undefined when it is as it should be. A mandatory object always
 * follows `bootstrap`; a suggested one only when its annotation allows it.
 */
export function reviseIfNeeded(current: ApiObject, bootstrap: ApiObject, mandatory: boolean, specEqualish: (expected: ApiObject, actual: ApiObject) => boolean): ApiObject | undefined {
  const annotation = current.metadata?.annotations?.[AUTOUPDATE_SPEC_ANNOTATION];
  const parsed = parseBool(annotation);
  // Without a readable annotation the spec is the server's as long as nobody changed it.
  const autoUpdate = mandatory || (parsed ?? current.metadata?.generation === 1);
  const updateAnnotation = parsed !== autoUpdate;
  const specChanged = autoUpdate && !specEqualish(bootstrap, current);
  if (!updateAnnotation && !specChanged) return undefined;
  const revised = structuredClone(current);
  if (specChanged) revised['spec'] = structuredClone(bootstrap['spec']);
  if (updateAnnotation) revised.metadata = { ...revised.metadata, annotations: { ...(revised.metadata?.annotations ?? {}), [AUTOUPDATE_SPEC_ANNOTATION]: String(autoUpdate) } };
  return revised;
}

export interface FlowControlBootstrapOptions {
  /** Period of the full check and of the informers' re-lists (default 10 s). */
  resyncMs?: number;
  clock?: Clock;
}

export interface PassResult {
  created: number;
  updated: number;
  deleted: number;
  failed: number;
}

/** Writes that meet a concurrent change are left for the next pass, which the change's event brings. */
function concurrent(err: unknown): boolean {
  return err instanceof ApiError && (err.code === 409 || err.code === 404);
}

export class FlowControlBootstrap {
  private readonly informers: Array<{ kind: ConfigKind; informer: SharedInformer }>;
  private readonly resyncMs: number;
  private readonly clock: Clock;
  private readonly stopping = new AbortController();
  private wake: (() => void) | undefined;
  private dirty = false;
  private passes = 0;
  private loop: Promise<void> | undefined;

  constructor(
    private readonly client: Pick<ApiClient, 'request' | 'watch'>,
    private readonly log: Logger,
    opts: FlowControlBootstrapOptions = {},
  ) {
    this.resyncMs = opts.resyncMs ?? DEFAULT_RESYNC_MS;
    this.clock = opts.clock ?? realClock;
    const timeoutSeconds = Math.max(1, Math.round(this.resyncMs / 1000));
    this.informers = [PRIORITY_LEVELS, FLOW_SCHEMAS].map((kind) => {
      const collection = `${FLOWCONTROL_PATH}/${kind.plural}`;
      const informer = new SharedInformer(collection, apiListWatch(client, collection, { timeoutSeconds }), log, { clock: this.clock });
      const kick = (): void => this.kick();
      informer.addEventHandler({ onAdd: kick, onUpdate: kick, onDelete: kick });
      return { kind, informer };
    });
  }

  /** The configuration has been checked (and written where needed) once, without failure. */
  get synced(): boolean {
    return this.passes > 0;
  }

  start(): void {
    if (this.loop) return;
    for (const { informer } of this.informers) informer.run();
    this.loop = this.run();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await Promise.all([this.loop, ...this.informers.map(({ informer }) => informer.stop())]);
  }

  private kick(): void {
    this.dirty = true;
    this.wake?.();
  }

  private async run(): Promise<void> {
    while (!this.stopping.signal.aborted) {
      const listed = this.informers.every(({ informer }) => informer.hasSynced());
      if (listed) {
        this.dirty = false;
        try {
          const result = await this.ensureAll();
          if (result.failed === 0) this.passes++;
          if (result.created + result.updated + result.deleted + result.failed > 0) this.log.info('API priority and fairness configuration checked', { ...result });
        } catch (err) {
          this.log.warn('API priority and fairness configuration not checked; retrying', { err: (err as Error).message });
        }
      }
      if (this.stopping.signal.aborted) break;
      // A change seen during the pass: check again at once. Before both lists are in there is nothing
      // to check, so a change (an informer's first adds) must not turn this into a loop that never yields.
      if (listed && this.dirty) continue;
      // Until an informer reports a change, the period passes or the controller stops.
      const waiting = new AbortController();
      const stop = (): void => waiting.abort();
      this.stopping.signal.addEventListener('abort', stop, { once: true });
      this.wake = stop;
      // An empty first list tells the handlers nothing: until both lists are in, look again soon.
      await sleep(this.clock, listed ? this.resyncMs : SYNC_POLL_MS, waiting.signal);
      this.stopping.signal.removeEventListener('abort', stop);
      this.wake = undefined;
    }
  }

  /** One pass over both kinds: suggested objects, then mandatory ones, then the leftovers of an older configuration. */
  async ensureAll(): Promise<PassResult> {
    const result: PassResult = { created: 0, updated: 0, deleted: 0, failed: 0 };
    for (const mandatory of [false, true]) {
      for (const { kind, informer } of this.informers) {
        for (const bootstrap of mandatory ? kind.mandatory() : kind.suggested()) await this.ensure(kind, informer, bootstrap, mandatory, result);
      }
    }
    for (const { kind, informer } of this.informers) await this.removeUnwanted(kind, informer, result);
    return result;
  }

  private path(kind: ConfigKind, name?: string): string {
    return `${FLOWCONTROL_PATH}/${kind.plural}${name === undefined ? '' : `/${encodeURIComponent(name)}`}`;
  }

  private async ensure(kind: ConfigKind, informer: SharedInformer, bootstrap: ApiObject, mandatory: boolean, result: PassResult): Promise<void> {
    const name = bootstrap.metadata?.name ?? '';
    const type = mandatory ? 'mandatory' : 'suggested';
    const current = informer.get(name);
    try {
      if (!current) {
        await this.client.request('POST', `${this.path(kind)}?fieldManager=${FIELD_MANAGER}`, bootstrap);
        result.created++;
        this.log.info('created', { kind: kind.kind, name, type });
        return;
      }
      const revised = reviseIfNeeded(current, bootstrap, mandatory, kind.specEqualish);
      if (!revised) return;
      await this.client.request('PUT', `${this.path(kind, name)}?fieldManager=${FIELD_MANAGER}`, revised);
      result.updated++;
      this.log.info('updated', { kind: kind.kind, name, type, annotation: revised.metadata?.annotations?.[AUTOUPDATE_SPEC_ANNOTATION] });
    } catch (err) {
      if (concurrent(err)) return;
      result.failed++;
      this.log.warn('could not write; retrying', { kind: kind.kind, name, type, err: (err as Error).message });
    }
  }

  /** Deletes objects annotated for auto-update that the configuration no longer has (the original's removal of dangling bootstrap objects). */
  private async removeUnwanted(kind: ConfigKind, informer: SharedInformer, result: PassResult): Promise<void> {
    const wanted = new Set([...kind.mandatory(), ...kind.suggested()].map((o) => o.metadata?.name));
    for (const obj of informer.list()) {
      const name = obj.metadata?.name ?? '';
      if (wanted.has(name) || parseBool(obj.metadata?.annotations?.[AUTOUPDATE_SPEC_ANNOTATION]) !== true) continue;
      try {
        const preconditions = { uid: obj.metadata?.uid, resourceVersion: obj.metadata?.resourceVersion };
        await this.client.request('DELETE', this.path(kind, name), { apiVersion: 'v1', kind: 'DeleteOptions', preconditions });
        result.deleted++;
        this.log.info('deleted an object the configuration no longer has', { kind: kind.kind, name });
      } catch (err) {
        if (concurrent(err)) continue;
        result.failed++;
        this.log.warn('could not delete; retrying', { kind: kind.kind, name, err: (err as Error).message });
      }
    }
  }
}
