import type { AdmissionResult } from '../plugins';
import { withObject, type AdmissionRecord, type AdmissionWebhooks, type WebhookAttributes } from './dispatcher';
import { ReinvocationState, sameJson } from './reinvocation-state';

export { ReinvocationState };

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
