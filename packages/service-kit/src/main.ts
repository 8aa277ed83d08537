import { FlagError, parseFlags, usage, type FlagSpecs, type ParsedFlags } from './flags';
import { createLogger } from './logger';

/**
 * The shape of every service's `main`: parse flags (or print `--help`), start,
 * and stop cleanly on SIGINT/SIGTERM.
 */
export function runMain(
  service: string,
  specs: FlagSpecs,
  start: (flags: ParsedFlags) => Promise<{ close(): Promise<void> }>,
  argv: readonly string[] = process.argv.slice(2),
): void {
  const log = createLogger(service);
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(usage(service, specs) + '\n');
    return;
  }
  let flags: ParsedFlags;
  try {
    flags = parseFlags(argv, specs);
  } catch (err) {
    if (err instanceof FlagError) {
      process.stderr.write(`${service}: ${err.message}\n\n${usage(service, specs)}\n`);
      process.exit(2);
    }
    throw err;
  }
  start(flags).then(
    (handle) => {
      let stopping = false;
      const stop = (signal: string): void => {
        if (stopping) return;
        stopping = true;
        log.info('stopping', { signal });
        handle.close().then(
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
