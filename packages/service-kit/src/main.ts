import { FlagError, parseFlags, usage, type FlagSpecs, type ParsedFlags } from './flags';
import { createLogger, LOG_LEVELS, type LogLevel } from './logger';
import { startTracing, stopTracing } from './tracing';
import { readTracingConfigFile, tracingSettings } from './tracing-config';
import { startProcessMetrics, type MetricsEndpoint } from './metrics-server';
import { versionText } from './version';

/**
 * Every service takes `--log-level`, settable as well by `SVC_LOG_LEVEL`
 * (the flag wins); an unknown level refuses the start instead of falling
 * back to a level nobody asked for.
 */
const LOG_LEVEL_FLAG = {
  'log-level': { description: `Least severe level logged: ${LOG_LEVELS.join(', ')} (default: SVC_LOG_LEVEL, else info)` },
};

/** Listed by `--help`; answered before any other flag is read (versionRequest). */
const VERSION_FLAG = {
  version: { description: 'Print the version and exit; --version=raw prints every field of the build (JSON)' },
};

export function logLevelFrom(flags: Pick<ParsedFlags, 'getOptional'>): LogLevel {
  const fromFlag = flags.getOptional('log-level');
  const value = fromFlag ?? process.env['SVC_LOG_LEVEL'] ?? 'info';
  if (!(LOG_LEVELS as readonly string[]).includes(value)) {
    throw new FlagError(`${fromFlag !== undefined ? '--log-level' : 'SVC_LOG_LEVEL'} ${JSON.stringify(value)} is not a log level: use one of ${LOG_LEVELS.join(', ')}`);
  }
  return value as LogLevel;
}

/**
 * `--version` (`--version=true`) prints `<service> <gitVersion>`, `--version=raw`
 * every field of the build (version.ts); undefined when not asked.
 */
export function versionRequest(service: string, argv: readonly string[]): string | undefined {
  for (const arg of argv) {
    if (arg === '--') break;
    if (arg === '--version' || arg === '--version=true') return versionText(service, false);
    if (arg === '--version=raw') return versionText(service, true);
  }
  return undefined;
}

/**
 * The shape of every service's `main`: parse flags (or print `--help` or
 * `--version`), start, and stop cleanly on SIGINT/SIGTERM.
 */
export function runMain(
  service: string,
  specs: FlagSpecs,
  start: (flags: ParsedFlags) => Promise<{ close(): Promise<void> }>,
  argv: readonly string[] = process.argv.slice(2),
): void {
  const allSpecs: FlagSpecs = { ...LOG_LEVEL_FLAG, ...VERSION_FLAG, ...specs };
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage(service, allSpecs) + '\n');
    return;
  }
  const version = versionRequest(service, argv);
  if (version !== undefined) {
    process.stdout.write(version);
    return;
  }
  let flags: ParsedFlags;
  try {
    flags = parseFlags(argv, allSpecs);
    // Every logger the service makes from here on reads the level from the environment.
    process.env['SVC_LOG_LEVEL'] = logLevelFrom(flags);
  } catch (err) {
    if (err instanceof FlagError) {
      process.stderr.write(`${service}: ${err.message}\n\n${usage(service, allSpecs)}\n`);
      process.exit(2);
    }
    throw err;
  }
  const log = createLogger(service);
  // Tracing is set up before anything starts, so every span of the service is recorded; a
  // configuration that cannot be honoured refuses the start. A service declaring
  // --tracing-config-file (the gateway) reads the original server's TracingConfiguration.
  try {
    const file = specs['tracing-config-file'] && flags.get('tracing-config-file') ? readTracingConfigFile(flags.get('tracing-config-file')) : undefined;
    const tracing = tracingSettings(service, process.env, file);
    if (tracing) startTracing(tracing, log);
  } catch (err) {
    log.error('start failed', { err });
    process.exit(1);
  }
  // Metrics first (a bad --show-hidden-metrics-for-version refuses the start), so the start itself is measured.
  let metrics: MetricsEndpoint | undefined;
  const started = startProcessMetrics(service, flags, (name) => name in specs, log).then(async (endpoint) => {
    metrics = endpoint;
    const handle = await start(flags);
    return {
      close: async () => {
        await handle.close();
        await metrics?.close();
      },
    };
  });
  started.then(
    (handle) => {
      let stopping = false;
      const stop = (signal: string): void => {
        if (stopping) return;
        stopping = true;
        log.info('stopping', { signal });
        handle
          .close()
          .then(() => stopTracing())
          .then(
          () => process.exit(0),
          (err: unknown) => {
            log.error('stop failed', { err });
            process.exit(1);
          },
        );
      };
      process.on('SIGINT', () => stop('SIGINT'));
      process.on('SIGTERM', () => stop('SIGTERM'));
    },
    (err: unknown) => {
      log.error('start failed', { err });
      process.exit(1);
    },
  );
}
