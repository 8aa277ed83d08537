import { parseFlags } from '@svc/service-kit';
import { ADMISSION_FLAGS, webhookSettings } from './flags';

/** The webhook flags of the admission service: defaults, durations, and what is refused. */
describe('admission webhook flags', () => {
  const TLS = ['--internal-ca-file=ca.crt', '--internal-cert-file=a.crt', '--internal-key-file=a.key'];
  const settings = (...args: string[]) => webhookSettings(parseFlags([...TLS, ...args], ADMISSION_FLAGS));

  test('defaults: 8 MiB answers, isolation after 5 failures for 10 s doubling to 3 minutes', () => {
    expect(settings()).toEqual({ maxResponseBytes: 8 * 1024 * 1024, isolation: { failures: 5, backoffMs: 10_000, maxBackoffMs: 180_000 } });
    expect(settings('--webhook-isolation-failures=0', '--webhook-isolation-backoff=500ms', '--webhook-isolation-max-backoff=1m', '--webhook-max-response-bytes=1024')).toEqual({
      maxResponseBytes: 1024,
      isolation: { failures: 0, backoffMs: 500, maxBackoffMs: 60_000 },
    });
  });

  test.each([
    [['--webhook-max-response-bytes=0'], /--webhook-max-response-bytes must be positive/],
    [['--webhook-isolation-failures=-1'], /may not be negative/],
    [['--webhook-isolation-backoff=2m', '--webhook-isolation-max-backoff=1m'], /at most --webhook-isolation-max-backoff/],
    [['--webhook-isolation-backoff=10'], /invalid duration/],
    [['--webhook-client-cert-file=/tmp/x.crt'], /go together/],
  ])('%j is refused', (args, message) => {
    expect(() => settings(...args)).toThrow(message);
  });
});
