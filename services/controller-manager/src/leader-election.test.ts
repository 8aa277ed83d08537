import { ApiError } from '@svc/apimachinery';
import { createLogger } from '@svc/service-kit';
import { FakeClock, settle } from './testing/fake-clock';
import type { RecordedEvent } from './event-recorder';
import { LeaderElector, microTime, type Lease, type LeaseApi } from './leader-election';

const quiet = createLogger('test', { write: () => undefined });

/** One Lease in memory with the API's compare-and-swap on resourceVersion; writes can be made to fail. */
class FakeLeaseApi implements LeaseApi {
  stored: Lease | undefined;
  private rv = 0;
  down = false;

  async get(): Promise<Lease | undefined> {
    if (this.down) throw new Error('connection refused');
    return this.stored && structuredClone(this.stored);
  }

  async create(lease: Lease): Promise<Lease> {
    if (this.down) throw new Error('connection refused');
    if (this.stored) throw new ApiError(409, 'AlreadyExists', 'exists');
    this.stored = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.rv) } };
    return structuredClone(this.stored);
  }

  async update(lease: Lease): Promise<Lease> {
    if (this.down) throw new Error('connection refused');
    if (!this.stored || lease.metadata?.resourceVersion !== this.stored.metadata?.resourceVersion) throw new ApiError(409, 'Conflict', 'the object has been modified');
    this.stored = { ...lease, metadata: { ...lease.metadata, resourceVersion: String(++this.rv) } };
    return structuredClone(this.stored);
  }
}

/** One candidate's way to the shared Lease, which can be cut off alone (its process died or lost the network). */
function view(api: FakeLeaseApi): LeaseApi & { down: boolean } {
  const v = {
    down: false,
    get: () => (v.down ? Promise.reject(new Error('connection refused')) : api.get()),
    create: (l: Lease) => (v.down ? Promise.reject(new Error('connection refused')) : api.create(l)),
    update: (l: Lease) => (v.down ? Promise.reject(new Error('connection refused')) : api.update(l)),
  };
  return v;
}

function elector(api: LeaseApi, clock: FakeClock, identity: string): { elector: LeaderElector; events: string[]; done: Promise<void> } {
  const events: string[] = [];
  const e = new LeaderElector({ lease: api, namespace: 'svc-system', name: 'svc-controller-manager', identity, clock, log: quiet });
  const done = e.run({
    onStartedLeading: () => events.push('started'),
    onStoppedLeading: () => events.push('stopped'),
    onNewLeader: (id) => events.push(`leader ${id}`),
  });
  return { elector: e, events, done };
}

describe('leader election', () => {
  test('the first candidate creates the Lease and leads; it renews every retry period', async () => {
    const clock = new FakeClock();
    const api = new FakeLeaseApi();
    const a = elector(api, clock, 'host-a_1');
    await settle();
    expect(a.events).toEqual(['leader host-a_1', 'started']);
    expect(a.elector.isLeader()).toBe(true);
    expect(api.stored?.spec).toEqual({
      holderIdentity: 'host-a_1',
      leaseDurationSeconds: 15,
      acquireTime: microTime(clock.now()),
      renewTime: microTime(clock.now()),
      leaseTransitions: 0,
    });
    const acquired = api.stored?.spec?.acquireTime;
    await clock.advance(2000);
    expect(api.stored?.spec?.renewTime).toBe(microTime(clock.now()));
    expect(api.stored?.spec?.acquireTime).toBe(acquired);
    expect(api.stored?.spec?.leaseTransitions).toBe(0);
    await a.elector.stop();
    await a.done;
  });

  test('a live Lease is not taken over; an expired one is, with a transition counted', async () => {
    const clock = new FakeClock();
    const api = new FakeLeaseApi();
    const toA = view(api);
    const a = elector(toA, clock, 'host-a_1');
    await settle();
    const b = elector(api, clock, 'host-b_2');
    // While the leader renews, the other waits however long.
    await clock.advance(60_000);
    expect(b.events).toEqual(['leader host-a_1']);
    expect(b.elector.isLeader()).toBe(false);
    expect(b.elector.leader()).toBe('host-a_1');
    // The leader is cut off: no more renewals.
    const lastRenewal = Date.parse(api.stored?.spec?.renewTime ?? '');
    toA.down = true;
    for (let waited = 0; !b.elector.isLeader() && waited < 30_000; waited += 100) await clock.advance(100);
    expect(b.elector.isLeader()).toBe(true);
    // b saw that renewal at its next try (a retry period, jittered), waited the lease duration, and took over at the try after.
    expect(clock.now() - lastRenewal).toBeGreaterThanOrEqual(15_000);
    expect(clock.now() - lastRenewal).toBeLessThanOrEqual(15_000 + 2 * 2_400 + 100);
    // a gave up at its renew deadline, before b took over.
    expect(a.events).toEqual(['leader host-a_1', 'started', 'stopped']);
    await a.done;
    expect(b.events).toEqual(['leader host-a_1', 'leader host-b_2', 'started']);
    expect(api.stored?.spec).toMatchObject({ holderIdentity: 'host-b_2', leaseTransitions: 1, acquireTime: api.stored?.spec?.renewTime });
    await b.elector.stop();
  });

  test('a Lease found held by a dead holder is taken only after the lease duration as observed here', async () => {
    const clock = new FakeClock();
    const api = new FakeLeaseApi();
    const old = microTime(clock.now() - 3_600_000);
    api.stored = { metadata: { name: 'svc-controller-manager', namespace: 'svc-system', resourceVersion: '7' }, spec: { holderIdentity: 'gone_0', leaseDurationSeconds: 15, acquireTime: old, renewTime: old, leaseTransitions: 4 } };
    const b = elector(api, clock, 'host-b_2');
    await clock.advance(14_000);
    expect(b.elector.isLeader()).toBe(false);
    await clock.advance(4_000);
    expect(b.elector.isLeader()).toBe(true);
    expect(api.stored?.spec?.leaseTransitions).toBe(5);
    await b.elector.stop();
  });

  test('the leader stops leading when it cannot renew within the deadline', async () => {
    const clock = new FakeClock();
    const api = new FakeLeaseApi();
    const a = elector(api, clock, 'host-a_1');
    await settle();
    api.down = true;
    // Failed renewals within the deadline are retried.
    await clock.advance(7_000);
    expect(a.elector.isLeader()).toBe(true);
    api.down = false;
    await clock.advance(1_000);
    expect(a.elector.isLeader()).toBe(true);
    api.down = true;
    await clock.advance(9_000);
    expect(a.elector.isLeader()).toBe(true);
    await clock.advance(1_000);
    expect(a.elector.isLeader()).toBe(false);
    expect(a.events).toEqual(['leader host-a_1', 'started', 'stopped']);
    await a.done;
  });

  test('a leader that finds another holder in the Lease stops at once', async () => {
    const clock = new FakeClock();
    const api = new FakeLeaseApi();
    const a = elector(api, clock, 'host-a_1');
    await settle();
    const stored = api.stored as Lease;
    api.stored = { ...stored, metadata: { ...stored.metadata, resourceVersion: '99' }, spec: { ...stored.spec, holderIdentity: 'usurper_9', renewTime: microTime(clock.now()) } };
    await clock.advance(2_000);
    expect(a.events).toEqual(['leader host-a_1', 'started', 'leader usurper_9', 'stopped']);
    await a.done;
  });

  test('stop releases the Lease so a standby takes over at its next try', async () => {
    const clock = new FakeClock();
    const api = new FakeLeaseApi();
    const a = elector(api, clock, 'host-a_1');
    await settle();
    const b = elector(api, clock, 'host-b_2');
    await clock.advance(4_000);
    await a.elector.stop();
    expect(api.stored?.spec).toMatchObject({ holderIdentity: '', leaseDurationSeconds: 1 });
    await clock.advance(2_400);
    expect(b.elector.isLeader()).toBe(true);
    expect(a.events).toEqual(['leader host-a_1', 'started']);
    await b.elector.stop();
  });

  test('the new leader reports a LeaderElection event on the Lease; a standby reports none', async () => {
    const clock = new FakeClock();
    const api = new FakeLeaseApi();
    const recorded: RecordedEvent[] = [];
    const events = { record: async (e: RecordedEvent) => void recorded.push(e) };
    const start = (identity: string) => {
      const e = new LeaderElector({ lease: api, namespace: 'svc-system', name: 'svc-controller-manager', identity, clock, log: quiet, events });
      return { e, done: e.run({ onStartedLeading: () => undefined, onStoppedLeading: () => undefined }) };
    };
    const a = start('host-a_1');
    await settle();
    const b = start('host-b_2');
    await clock.advance(4_000);
    expect(recorded).toEqual([
      {
        regarding: { apiVersion: 'coordination.svc.io/v1', kind: 'Lease', namespace: 'svc-system', name: 'svc-controller-manager' },
        type: 'Normal',
        reason: 'LeaderElection',
        action: 'Acquire',
        note: 'host-a_1 became leader',
      },
    ]);
    await a.e.stop();
    await clock.advance(2_400);
    expect(recorded.map((e) => e.note)).toEqual(['host-a_1 became leader', 'host-b_2 became leader']);
    await b.e.stop();
    await Promise.all([a.done, b.done]);
  });

  test('settings must leave room: lease duration > renew deadline > retry period', () => {
    const base = { lease: new FakeLeaseApi(), namespace: 'n', name: 'l', identity: 'i', log: quiet };
    expect(() => new LeaderElector({ ...base, leaseDurationMs: 10_000, renewDeadlineMs: 10_000 })).toThrow('--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline');
    expect(() => new LeaderElector({ ...base, renewDeadlineMs: 2_000, retryPeriodMs: 2_000 })).toThrow('--leader-elect-renew-deadline must be greater than --leader-elect-retry-period');
  });
});
