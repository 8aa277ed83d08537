/**
 * Structured logs: one JSON object per line on stderr, with the service name
 * and, inside a request, its request id.
 */
export const LOG_LEVELS = ['debug', 'info', 'warn', 'error'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const ORDER: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger that adds these fields to every line (a request id, say). */
  with(fields: LogFields): Logger;
}

export interface LoggerOptions {
  level?: LogLevel;
  write?: (line: string) => void;
  now?: () => Date;
}

function errorFields(value: unknown): unknown {
  if (value instanceof Error) {
    const out: Record<string, unknown> = { message: value.message, name: value.name };
    if (value.stack) out['stack'] = value.stack;
    if (value.cause !== undefined) out['cause'] = errorFields(value.cause);
    return out;
  }
  return value;
}

export function createLogger(service: string, options: LoggerOptions = {}, base: LogFields = {}): Logger {
  const envLevel = process.env['SVC_LOG_LEVEL'] as LogLevel | undefined;
  const min = ORDER[options.level ?? envLevel ?? 'info'] ?? ORDER.info;
  const write = options.write ?? ((line: string) => process.stderr.write(line + '\n'));
  const now = options.now ?? (() => new Date());
  // A request's logger (`with`) is made for every call a service answers:
  // it shares the level, writer and clock read here once.
  const make = (fields: LogFields): Logger => {
    const emit = (level: LogLevel, msg: string, extra?: LogFields): void => {
      if (ORDER[level] < min) return;
      const record: LogFields = { time: now().toISOString(), level, service, msg, ...fields };
      if (extra) for (const [k, v] of Object.entries(extra)) record[k] = errorFields(v);
      let line: string;
      try {
        line = JSON.stringify(record);
      } catch {
        line = JSON.stringify({ time: record['time'], level, service, msg, note: 'fields not serialisable' });
      }
      write(line);
    };
    return {
      debug: (m, f) => emit('debug', m, f),
      info: (m, f) => emit('info', m, f),
      warn: (m, f) => emit('warn', m, f),
      error: (m, f) => emit('error', m, f),
      with: (more) => make({ ...fields, ...more }),
    };
  };
  return make(base);
}
