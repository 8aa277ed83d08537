import type { ApiObject } from '@svc/apimachinery';
import { allocateLimits, fairAllocation, smoothDemand } from './borrowing';
import { flowSchemaFrom, priorityLevelFrom } from './config';
import { FlowControl } from './controller';
import { Integrator } from './integrator';
import type { Clock } from './queueset';

describe('borrowing', () => {
  test('the fair allocation adds up to the total and keeps every level within its bounds', () => {
    const allocs = fairAllocation(30, [
      { lower: 5, upper: Infinity, target: 40 },
      { lower: 5, upper: 12, target: 40 },
      { lower: 2, upper: 20, target: 0 },
    ]);
    expect(allocs.reduce((a, b) => a + b, 0)).toBeCloseTo(30, 6);
    expect(allocs[1]).toBeCloseTo(12, 6);
    expect(allocs[2]).toBeCloseTo(2, 6);
    expect(allocs[0]).toBeCloseTo(16, 6);
  });

  test('an idle level lends what it may to a busy one; a level that may not borrow stays at its nominal limit', () => {
    const limits = allocateLimits([
      { name: 'exempt', exempt: true, nominal: 0, minLimit: 0, maxLimit: 0, smoothed: 0, highWatermark: 3 },
      { name: 'busy', exempt: false, nominal: 10, minLimit: 10, maxLimit: Infinity, smoothed: 40, highWatermark: 40 },
      { name: 'idle', exempt: false, nominal: 10, minLimit: 5, maxLimit: 10, smoothed: 0, highWatermark: 0 },
      { name: 'fixed', exempt: false, nominal: 10, minLimit: 10, maxLimit: 10, smoothed: 40, highWatermark: 40 },
    ]);
    expect(limits.get('idle')).toBe(5);
    expect(limits.get('fixed')).toBe(10);
    expect(limits.get('busy')).toBe(15);
    expect(limits.get('exempt')).toBe(3);
  });

  test('the smoothed demand follows a rise at once and decays slowly', () => {
    expect(smoothDemand(10, 30, 5)).toBe(35);
    expect(smoothDemand(35, 0, 0)).toBeCloseTo(35 * 0.977, 6);
  });

  test('the integrator reports the time-weighted average, deviation and maximum', () => {
    let t = 0;
    const i = new Integrator(() => t);
    i.set(10);
    t = 1000;
    i.set(0);
    t = 2000;
    const r = i.reset();
    expect(r).toMatchObject({ durationMs: 2000, average: 5, max: 10 });
    expect(r.deviation).toBeCloseTo(5, 6);
    t = 3000;
    expect(i.reset()).toMatchObject({ average: 0, max: 0 });
  });

  test('the controller raises a busy level borrowing from an idle one after a period', async () => {
    let now = 0;
    const clock: Clock = { now: () => now, setTimer: () => () => undefined };
    const fc = new FlowControl(undefined, { serverConcurrencyLimit: 20, clock });
    const level = (name: string, lendablePercent: number): ApiObject => ({
      metadata: { name, uid: name, resourceVersion: '1' },
      spec: { type: 'Limited', limited: { nominalConcurrencyShares: 10, lendablePercent, limitResponse: { type: 'Queue', queuing: { queues: 8, handSize: 2, queueLengthLimit: 50 } } } },
    });
    const schema: ApiObject = {
      metadata: { name: 'busy', uid: 'busy', resourceVersion: '1' },
      spec: { matchingPrecedence: 10, priorityLevelConfiguration: { name: 'busy' }, distinguisherMethod: { type: 'ByUser' }, rules: [{ subjects: [{ kind: 'Group', group: { name: '*' } }], nonResourceRules: [{ verbs: ['*'], nonResourceURLs: ['*'] }] }] },
    };
    // busy and idle share 20 seats with the catch-all level (10 + 10 + 5 shares): ceil(20 × 10/25) = 8 each.
    fc.apply([flowSchemaFrom(schema)], [level('busy', 0), level('idle', 100)].map(priorityLevelFrom));
    const busy = () => fc.levelStates().find((l) => l.name === 'busy');
    expect(busy()?.queues.concurrencyLimit).toBe(8);
    const user = { username: 'u', uid: '', groups: ['system:authenticated'], extra: {} };
    const info = { isResourceRequest: false, verb: 'get', apiGroup: '', resource: '', subresource: '', namespace: '', path: '/version' };
    const tickets = Array.from({ length: 16 }, () => fc.admit(fc.classify(user, info), 1));
    await Promise.resolve();
    expect(busy()?.queues.executingSeats).toBe(8);
    now += 10_000;
    fc.adjustBorrowing();
    // The idle level lends all 8 of its seats; busy wants 16 and gets them.
    expect(busy()?.currentLimit).toBe(16);
    expect(busy()?.queues.executingSeats).toBe(16);
    for (const t of tickets) t.finish();
  });
});
