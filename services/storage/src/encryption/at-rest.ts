import { watchFileContent, type FileWatch, type FileWatchTimers, type FlagSpecs, type Logger, type ParsedFlags } from '@svc/service-kit';
import { EncryptionConfigError, parseEncryptionConfig, readEncryptionConfig, type EncryptionConfig } from './config';
import { ConfiguredTransformer, type ValueTransformer } from './transformer';

/**
 * The encryption of values at rest, from `--encryption-provider-config`,
 * followed when `--encryption-provider-config-automatic-reload` is set: a
 * changed file that reads well replaces the providers (writes then use the
 * new first provider, reads every provider of the new file); one that does
 * not is logged naming the field, and the last good configuration stays, as
 * the original keeps serving with its last good configuration. Key
 * material never reaches a log line.
 */
export interface EncryptionAtRestOptions {
  file: string;
  automaticReload: boolean;
  log: Logger;
  pollMs?: number;
  timers?: FileWatchTimers;
}

export class EncryptionAtRest implements ValueTransformer {
  private current: ConfiguredTransformer;
  private watch: FileWatch | undefined;
  /** How many times a new version of the file was applied. */
  reloads = 0;

  /** Reads the file: a file that does not read refuses the start (EncryptionConfigError naming the file and field). */
  constructor(private readonly options: EncryptionAtRestOptions) {
    const { text, config } = readEncryptionConfig(options.file);
    this.current = new ConfiguredTransformer(config);
    options.log.info('encryption at rest configured', { file: options.file, automaticReload: options.automaticReload, ...summary(config) });
    if (options.automaticReload) {
      this.watch = watchFileContent(options.file, text, (t) => this.reload(t), {
        pollMs: options.pollMs ?? 60_000,
        ...(options.timers ? { timers: options.timers } : {}),
        onReadError: (err) => options.log.warn('encryption configuration cannot be read; the last one read stays', { file: options.file, err: err.message }),
      });
    }
  }

  /** Reads the file now (a reload would otherwise wait for the change event or the poll). */
  check(): void {
    this.watch?.check();
  }

  private reload(text: string): void {
    let config: EncryptionConfig;
    try {
      config = parseEncryptionConfig(text, this.options.file);
    } catch (err) {
      const problems = err instanceof EncryptionConfigError ? err.problems : [(err as Error).message];
      this.options.log.error('encryption configuration refused; the last good one stays', { file: this.options.file, problems });
      return;
    }
    this.current = new ConfiguredTransformer(config);
    this.reloads++;
    this.options.log.info('encryption configuration reloaded', { file: this.options.file, ...summary(config) });
  }

  encrypts(group: string, resource: string): boolean {
    return this.current.encrypts(group, resource);
  }

  toStorage(group: string, resource: string, etcdKey: Buffer, plain: Buffer): Buffer {
    return this.current.toStorage(group, resource, etcdKey, plain);
  }

  fromStorage(etcdKey: Buffer | string, stored: Buffer): Buffer {
    return this.current.fromStorage(etcdKey, stored);
  }

  stale(group: string, resource: string, stored: Buffer): boolean {
    return this.current.stale(group, resource, stored);
  }

  close(): void {
    this.watch?.close();
    this.watch = undefined;
  }
}

/** What a log line may tell of a configuration: resources, provider types and key names, never secrets. */
function summary(config: EncryptionConfig): { resources: { resources: string[]; providers: string[] }[] } {
  return {
    resources: config.resources.map((r) => ({
      resources: r.resources,
      providers: r.providers.map((p) => (p.type === 'identity' ? 'identity' : `${p.type}(${p.keys.map((k) => k.name).join(',')})`)),
    })),
  };
}

/** The flags of storage and watch-fanout (both read etcd's values). */
export const ENCRYPTION_FLAGS: FlagSpecs = {
  'encryption-provider-config': {
    description:
      'EncryptionConfiguration file (apiserver.config.svc.io/v1, YAML or JSON): which resources are encrypted in etcd and with which providers (the first writes, all read). Empty: values are stored in plain text',
    default: '',
  },
  'encryption-provider-config-automatic-reload': {
    description: 'Follow --encryption-provider-config and apply a changed file without a restart (a file that does not read is logged and the last good one stays)',
    boolean: true,
    default: 'false',
  },
};

/** The encryption of a service's flags; undefined when no configuration is given. */
export function encryptionFromFlags(flags: ParsedFlags, log: Logger): EncryptionAtRest | undefined {
  const file = flags.get('encryption-provider-config');
  if (!file) {
    // As the original refuses it: a reload of no file is a mistake in the flags, not a no-op.
    if (flags.getBool('encryption-provider-config-automatic-reload')) throw new Error('--encryption-provider-config-automatic-reload must be set with --encryption-provider-config');
    return undefined;
  }
  return new EncryptionAtRest({ file, automaticReload: flags.getBool('encryption-provider-config-automatic-reload'), log });
}
