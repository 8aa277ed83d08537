import type { ApiObject } from '@svc/apimachinery';
import type { AdmissionResult } from '../plugins';
import { sameJson, withObject, type AdmissionRecord, type AdmissionWebhooks, type WebhookAttributes } from './dispatcher';

/**
 * What reinvocation remembers across the two rounds of one request's
 * mutating admission (the original's webhookReinvokeContext): the webhooks
 * called that may be called again, the ones to call again, the object the
 * webhooks last left.
 */
export class ReinvocationState {
  /** The second round is under way. */
  reinvoking = false;
  /** A webhook changed the object: built-in plugins and eligible webhooks run again. */
  shouldReinvoke = false;
  private lastOutput: { object: ApiObject | undefined } | undefined;
  private readonly previouslyInvoked = new Set<string>();
  private readonly toReinvoke = new Set<string>();

  shouldReinvokeWebhook(uid: string): boolean {
    return this.toReinvoke.has(uid);
  }

  requireReinvokingPreviouslyInvoked(): void {
    for (const uid of this.previouslyInvoked) this.toReinvoke.add(uid);
    this.previouslyInvoked.clear();
  }

  invoked(uid: string): void {
    this.previouslyInvoked.add(uid);
  }

  outputChangedSinceLastWebhook(object: ApiObject | undefined): boolean {
    return this.lastOutput !== undefined && !sameJson(this.lastOutput.object, object);
  }

  setLastOutput(object: ApiObject | undefined): void {
    this.lastOutput = { object: object === undefined ? undefined : (JSON.parse(JSON.stringify(object)) as ApiObject) };
  }
}

/**
 * Mutating admission as the original orders it: the built-in mutating
 * plugins, then the mutating webhooks; when a webhook changed the object,
 * everything once more (the original's reinvocation): the built-in plugins
 * all, the webhooks only those with `reinvocationPolicy: IfNeeded` called
 * before a later change (or every such one, when the built-in plugins
 * changed the object the webhooks had left).
 */
export async function mutateWithReinvocation(
  attrs: WebhookAttributes,
  builtIn: (attrs: WebhookAttributes) => Promise<AdmissionResult>,
  webhooks: AdmissionWebhooks | undefined,
  record: AdmissionRecord,
): Promise<AdmissionResult> {
  const first = await builtIn(attrs);
  if (!webhooks || webhooks.empty) return first;
  const state = new ReinvocationState();
  let changed = first.changed;
  let object = first.object;
  const round = async (): Promise<void> => {
    const out = await webhooks.mutate(withObject(attrs, object), state, record);
    if (out !== object) {
      changed ||= !sameJson(out, object);
      object = out;
    }
  };
  await round();
  if (!state.shouldReinvoke) return { object, changed };
  state.reinvoking = true;
  const again = await builtIn(withObject(attrs, object));
  if (again.changed) {
    object = again.object;
    changed = true;
  }
  await round();
  return { object, changed };
}
