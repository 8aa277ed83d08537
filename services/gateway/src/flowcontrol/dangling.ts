import type { ApiObject } from '@svc/apimachinery';

/**
 * The `Dangling` condition of a FlowSchema's status, as the original's
 * configuration consumer writes it: True (reason NotFound) while the
 * priority level it names does not exist, False (reason Found) once it
 * does. Answers the object with the condition set, or undefined when the
 * stored condition already says so (nothing to write).
 */
export function withDanglingCondition(schema: ApiObject, levelName: string, levelExists: boolean, now: Date = new Date()): ApiObject | undefined {
  const wanted = levelExists
    ? { type: 'Dangling', status: 'False', reason: 'Found', message: `This FlowSchema references the PriorityLevelConfiguration object named "${levelName}" and it exists` }
    : { type: 'Dangling', status: 'True', reason: 'NotFound', message: `This FlowSchema references the PriorityLevelConfiguration object named "${levelName}" but there is no such object` };
  const status = (typeof schema['status'] === 'object' && schema['status'] !== null ? schema['status'] : {}) as Record<string, unknown>;
  const conditions = Array.isArray(status['conditions']) ? (status['conditions'] as Array<Record<string, unknown>>) : [];
  const current = conditions.find((c) => c['type'] === 'Dangling');
  if (current && current['status'] === wanted.status && current['reason'] === wanted.reason && current['message'] === wanted.message) return undefined;
  // The transition time moves only when the status does.
  const lastTransitionTime = current && current['status'] === wanted.status && typeof current['lastTransitionTime'] === 'string' ? current['lastTransitionTime'] : now.toISOString().replace(/\.\d+Z$/, 'Z');
  const condition = { ...wanted, lastTransitionTime };
  return { ...schema, status: { ...status, conditions: [...conditions.filter((c) => c['type'] !== 'Dangling'), condition] } };
}
