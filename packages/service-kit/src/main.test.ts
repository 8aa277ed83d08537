import { FlagError } from './flags';
import { logLevelFrom } from './main';

describe('the log level a service starts with', () => {
  const flags = (value?: string) => ({ getOptional: () => value });
  const saved = process.env['SVC_LOG_LEVEL'];
  afterEach(() => {
    if (saved === undefined) delete process.env['SVC_LOG_LEVEL'];
    else process.env['SVC_LOG_LEVEL'] = saved;
  });

  test('the flag wins over the environment, the environment over the default', () => {
    process.env['SVC_LOG_LEVEL'] = 'warn';
    expect(logLevelFrom(flags('debug'))).toBe('debug');
    expect(logLevelFrom(flags())).toBe('warn');
    delete process.env['SVC_LOG_LEVEL'];
    expect(logLevelFrom(flags())).toBe('info');
  });

  test('an unknown level refuses the start, naming where it came from', () => {
    expect(() => logLevelFrom(flags('loud'))).toThrow(new FlagError('--log-level "loud" is not a log level: use one of debug, info, warn, error'));
    process.env['SVC_LOG_LEVEL'] = 'verbose';
    expect(() => logLevelFrom(flags())).toThrow(/SVC_LOG_LEVEL "verbose" is not a log level/);
  });
});
