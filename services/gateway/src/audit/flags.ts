import { FlagError, parseDuration, type FlagSpecs, type ParsedFlags } from '@svc/service-kit';
import type { AuditOptions } from './auditor';
import { DEFAULT_BATCH_OPTIONS } from './webhook-backend';

/** The original server's audit flags (the log and the webhook in batch mode). */
export const AUDIT_FLAGS: FlagSpecs = {
  'audit-policy-file': { description: 'Audit Policy (audit.svc.io/v1) deciding what is audited at which level; without it nothing is audited', default: '' },
  'audit-log-path': { description: 'Audit log file, one JSON event per line ("-": standard output); unset: no log', default: '' },
  'audit-log-maxage': { description: 'Days an audit log backup is kept (0: no limit)', default: '0' },
  'audit-log-maxbackup': { description: 'Audit log backups kept (0: all)', default: '0' },
  'audit-log-maxsize': { description: 'Megabytes the audit log reaches before it rotates (0: 100)', default: '0' },
  'audit-log-format': { description: 'Format of the audit log: "json" (one Event per line)', default: 'json' },
  'audit-log-batch-buffer-size': { description: 'Audit events waiting to be written to the log at most; more are dropped (and counted)', default: '10000' },
  'audit-webhook-config-file': { description: 'kubeconfig naming the audit webhook, which receives EventList batches; unset: no webhook', default: '' },
  'audit-webhook-mode': { description: 'How events reach the webhook: "batch" (buffered, sent asynchronously)', default: 'batch' },
  'audit-webhook-batch-buffer-size': { description: 'Audit events buffered for the webhook at most; more are dropped (and counted)', default: String(DEFAULT_BATCH_OPTIONS.bufferSize) },
  'audit-webhook-batch-max-size': { description: 'Audit events in one batch at most', default: String(DEFAULT_BATCH_OPTIONS.maxBatchSize) },
  'audit-webhook-batch-max-wait': { description: 'How long the first event of a batch waits for more before the batch is sent', default: '30s' },
  'audit-webhook-initial-backoff': { description: 'The wait before a failed batch is sent again (each next retry waits 1.5 times longer; a batch is tried 5 times)', default: '10s' },
};

function positive(flags: ParsedFlags, name: string): number {
  const n = flags.getInt(name);
  if (n < 1) throw new FlagError(`--${name} must be at least 1, got ${n}`);
  return n;
}

function nonNegative(flags: ParsedFlags, name: string): number {
  const n = flags.getInt(name);
  if (n < 0) throw new FlagError(`--${name} must not be negative, got ${n}`);
  return n;
}

/** The audit options the flags give; undefined without a policy file (nothing is audited). */
export function auditOptionsFromFlags(flags: ParsedFlags): AuditOptions | undefined {
  const format = flags.get('audit-log-format');
  if (format !== 'json') {
    throw new FlagError(`--audit-log-format=${format}: only "json" is supported (the original's "legacy" one-line text format is not)`);
  }
  const mode = flags.get('audit-webhook-mode');
  if (mode !== 'batch') throw new FlagError(`--audit-webhook-mode=${mode}: only "batch" is supported (a webhook never holds a request)`);
  const policyFile = flags.get('audit-policy-file');
  if (!policyFile) return undefined;
  const options: AuditOptions = {
    policyFile,
    logMaxAgeDays: nonNegative(flags, 'audit-log-maxage'),
    logMaxBackups: nonNegative(flags, 'audit-log-maxbackup'),
    logMaxSizeMB: nonNegative(flags, 'audit-log-maxsize'),
    logBufferSize: positive(flags, 'audit-log-batch-buffer-size'),
    webhookBatch: {
      bufferSize: positive(flags, 'audit-webhook-batch-buffer-size'),
      maxBatchSize: positive(flags, 'audit-webhook-batch-max-size'),
      maxBatchWaitMs: parseDuration(flags.get('audit-webhook-batch-max-wait'), 'audit-webhook-batch-max-wait'),
      initialBackoffMs: parseDuration(flags.get('audit-webhook-initial-backoff'), 'audit-webhook-initial-backoff'),
    },
  };
  if (flags.get('audit-log-path')) options.logPath = flags.get('audit-log-path');
  if (flags.get('audit-webhook-config-file')) options.webhookConfigFile = flags.get('audit-webhook-config-file');
  return options;
}
