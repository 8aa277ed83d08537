import { createLogger } from '@svc/service-kit';
import { WebhookIsolation, type IsolatedWebhook } from './isolation';

/** The isolation of failing webhooks with a clock the test moves. */
describe('webhook isolation', () => {
  const lines: Array<Record<string, unknown>> = [];
  const log = createLogger('admission-test', { level: 'info', write: (line) => lines.push(JSON.parse(line) as Record<string, unknown>) });
  let now = 0;
  const target: IsolatedWebhook = { id: 'cfg/hook https://x/ ', configuration: 'cfg', webhook: 'hook.test' };
  const isolation = (failures = 3) => new WebhookIsolation({ failures, backoffMs: 1000, maxBackoffMs: 3000, now: () => now, log });

  beforeEach(() => {
    now = 0;
    lines.length = 0;
  });

  test('isolated after N consecutive failures, not before; a success in between starts the count again', () => {
    const iso = isolation();
    iso.failed(target);
    iso.failed(target);
    iso.succeeded(target);
    iso.failed(target);
    iso.failed(target);
    expect(iso.gate(target)).toEqual({ call: true, trial: false });
    iso.failed(target);
    expect(iso.gate(target)).toEqual({ call: false, failures: 3, retryInMs: 1000 });
    expect(lines.map((l) => [l['level'], l['msg'], l['webhook'], l['configuration'], l['backoffMs']])).toEqual([['warn', 'admission webhook isolated', 'hook.test', 'cfg', 1000]]);
  });

  test('after the back-off one trial call goes, the others wait for it; a failed trial doubles the period up to the cap, a good one ends the isolation', () => {
    const iso = isolation(1);
    iso.failed(target);
    now = 999;
    expect(iso.gate(target).call).toBe(false);
    now = 1000;
    expect(iso.gate(target)).toEqual({ call: true, trial: true });
    expect(iso.gate(target).call).toBe(false);
    iso.failed(target);
    now = 2999;
    expect(iso.gate(target)).toEqual({ call: false, failures: 2, retryInMs: 1 });
    now = 3000;
    expect(iso.gate(target).call).toBe(true);
    iso.failed(target);
    now = 6000;
    expect(iso.gate(target).call).toBe(true);
    iso.failed(target);
    // Capped at 3000.
    now = 8999;
    expect(iso.gate(target).call).toBe(false);
    now = 9000;
    expect(iso.gate(target).call).toBe(true);
    iso.succeeded(target);
    expect(iso.gate(target)).toEqual({ call: true, trial: false });
    expect(lines.map((l) => l['msg'])).toEqual(['admission webhook isolated', 'admission webhook isolated again', 'admission webhook isolated again', 'admission webhook isolated again', 'admission webhook isolation ended']);
    expect(lines.at(-1)).toMatchObject({ webhook: 'hook.test', isolatedMs: 9000 });
    expect(iso.stats()).toEqual([{ configuration: 'cfg', webhook: 'hook.test', isolated: false, consecutiveFailures: 0, isolations: 1, skipped: 4 }]);
  });

  test('a failure reported after the isolation began (a call started before it) does not lengthen it', () => {
    const iso = isolation(1);
    iso.failed(target);
    iso.failed(target);
    now = 1000;
    expect(iso.gate(target)).toEqual({ call: true, trial: true });
  });

  test('a trial never reported is taken as lost after a minute', () => {
    const iso = isolation(1);
    iso.failed(target);
    now = 1000;
    expect(iso.gate(target).call).toBe(true);
    now = 30_000;
    expect(iso.gate(target).call).toBe(false);
    now = 61_001;
    expect(iso.gate(target)).toEqual({ call: true, trial: true });
  });

  test('0 failures never isolates; retain forgets webhooks no longer configured', () => {
    const never = isolation(0);
    for (let i = 0; i < 10; i++) never.failed(target);
    expect(never.gate(target).call).toBe(true);
    const iso = isolation(1);
    iso.failed(target);
    iso.retain(new Set(['another']));
    expect(iso.gate(target)).toEqual({ call: true, trial: false });
    expect(iso.stats()).toEqual([]);
  });
});
