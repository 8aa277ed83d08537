/**
 * The audit API (`audit.svc.io/v1`, the original server's `audit.k8s.io/v1`):
 * the levels and stages a policy names and the Event the gateway writes.
 */
export const AUDIT_API_VERSION = 'audit.svc.io/v1';
/** Policy files written for the original server name its group; they are read as ours. */
export const POLICY_API_VERSIONS = [AUDIT_API_VERSION, 'audit.k8s.io/v1'] as const;

export const LEVELS = ['None', 'Metadata', 'Request', 'RequestResponse'] as const;
export type Level = (typeof LEVELS)[number];

export const STAGES = ['RequestReceived', 'ResponseStarted', 'ResponseComplete', 'Panic'] as const;
export type Stage = (typeof STAGES)[number];

/** Orders levels: `atLeast('Request', 'Metadata')` is true. */
export function atLeast(level: Level, min: Level): boolean {
  return LEVELS.indexOf(level) >= LEVELS.indexOf(min);
}

export interface AuditUser {
  username?: string;
  uid?: string;
  groups?: string[];
  extra?: Record<string, string[]>;
}

export interface ObjectReference {
  resource?: string;
  namespace?: string;
  name?: string;
  apiGroup?: string;
  apiVersion?: string;
  subresource?: string;
}

export interface ResponseStatus {
  metadata: Record<string, never>;
  status?: string;
  message?: string;
  reason?: string;
  details?: unknown;
  code: number;
}

export interface AuditEvent {
  kind: 'Event';
  apiVersion: typeof AUDIT_API_VERSION;
  level: Level;
  auditID: string;
  stage: Stage;
  requestURI: string;
  verb: string;
  user: AuditUser;
  impersonatedUser?: AuditUser;
  sourceIPs?: string[];
  userAgent?: string;
  objectRef?: ObjectReference;
  responseStatus?: ResponseStatus;
  requestObject?: unknown;
  responseObject?: unknown;
  requestReceivedTimestamp: string;
  stageTimestamp: string;
  annotations?: Record<string, string>;
}

/** Where events go (the log file, the webhook): each takes one event's JSON, never blocking the request. */
export interface AuditBackend {
  readonly name: string;
  /** Takes one event serialized as JSON; false when it was dropped (a full buffer). */
  write(eventJson: string): boolean;
  /** Writes or sends what is buffered, then releases its resources. */
  close(): Promise<void>;
}
