import type { Logger } from '@svc/service-kit';
import { DropCounter, countGenerated } from './drops';
import { RotatingFileWriter, StdoutWriter } from './log-backend';
import { loadPolicyFile, type PolicyEvaluator } from './policy';
import type { AuditBackend } from './types';
import { BatchingBackend, DEFAULT_BATCH_OPTIONS, webhookSender, type BatchOptions } from './webhook-backend';

/** How the gateway audits (the `--audit-*` flags). */
export interface AuditOptions {
  policyFile: string;
  /** The log file; `-` for standard output; unset: no log. */
  logPath?: string;
  logMaxAgeDays?: number;
  logMaxBackups?: number;
  logMaxSizeMB?: number;
  /** Events waiting to be written to the log at most. */
  logBufferSize?: number;
  /** A kubeconfig naming the audit webhook; unset: no webhook. */
  webhookConfigFile?: string;
  webhookBatch?: Partial<BatchOptions>;
}

/** The policy and the backends every audited request's events go to. */
export class Auditor {
  constructor(
    readonly policy: PolicyEvaluator,
    private readonly backends: AuditBackend[],
    private readonly onClose: Array<() => void> = [],
  ) {}

  /** Hands one event (as JSON) to every backend; none of them waits. */
  emit(eventJson: string): void {
    countGenerated();
    for (const backend of this.backends) backend.write(eventJson);
  }

  /** Writes and sends what is buffered. */
  async close(): Promise<void> {
    await Promise.allSettled(this.backends.map((b) => b.close()));
    for (const fn of this.onClose) fn();
  }
}

const DEFAULT_LOG_BUFFER_SIZE = 10_000;

/**
 * The auditor the options describe: the policy is read now (a policy that
 * cannot be used refuses the start, naming file, line and field); without a
 * log or a webhook, as without a policy, nothing is audited (undefined).
 */
export function createAuditor(options: AuditOptions, log: Logger): Auditor | undefined {
  if (!options.policyFile) return undefined;
  const policy = loadPolicyFile(options.policyFile);
  const backends: AuditBackend[] = [];
  const onClose: Array<() => void> = [];
  if (options.logPath === '-') backends.push(new StdoutWriter(new DropCounter('log', log)));
  else if (options.logPath) {
    backends.push(
      new RotatingFileWriter(
        options.logPath,
        {
          maxBytes: (options.logMaxSizeMB ?? 0) * 1024 * 1024,
          maxBackups: options.logMaxBackups ?? 0,
          maxAgeDays: options.logMaxAgeDays ?? 0,
          maxQueuedEvents: options.logBufferSize ?? DEFAULT_LOG_BUFFER_SIZE,
        },
        new DropCounter('log', log),
      ),
    );
  }
  if (options.webhookConfigFile) {
    const sender = webhookSender(options.webhookConfigFile);
    backends.push(new BatchingBackend(sender.send, { ...DEFAULT_BATCH_OPTIONS, ...options.webhookBatch }, new DropCounter('webhook', log)));
    onClose.push(sender.close);
  }
  if (backends.length === 0) {
    log.warn('an audit policy is given without --audit-log-path or --audit-webhook-config-file: nothing is audited', { policyFile: options.policyFile });
    return undefined;
  }
  log.info('auditing', { policyFile: options.policyFile, log: options.logPath ?? '', webhook: options.webhookConfigFile ?? '' });
  return new Auditor(policy, backends, onClose);
}
