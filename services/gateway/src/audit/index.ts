export { Auditor, createAuditor, type AuditOptions } from './auditor';
export { auditEventsGenerated, droppedAuditEvents } from './drops';
export { AUDIT_FLAGS, auditOptionsFromFlags } from './flags';
export { withAudit, withAuditBegin } from './filter';
export { PolicyError, compilePolicy, loadPolicyFile, parsePolicy, type Policy, type PolicyEvaluator } from './policy';
export type { AuditEvent, Level, Stage } from './types';
