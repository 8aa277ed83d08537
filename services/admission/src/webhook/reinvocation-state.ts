import type { ApiObject } from '@svc/apimachinery';
import { jsonEqual, type JsonValue } from '@svc/merge';

/** Whether two objects are the same JSON (key order aside). */
export function sameJson(a: ApiObject | undefined, b: ApiObject | undefined): boolean {
  return jsonEqual(a as JsonValue | undefined, b as JsonValue | undefined);
}

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
