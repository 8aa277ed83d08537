import { dealHand, QueueSet, type Clock, type Decision, type RequestParams, type Ticket } from './queueset';

/** A clock moved by hand: timers fire when time passes them. */
class FakeClock implements Clock {
  private t = 1000;
  private timers: Array<{ at: number; fn: () => void; live: boolean }> = [];

  now(): number {
    return this.t;
  }

  setTimer(ms: number, fn: () => void): () => void {
    const timer = { at: this.t + ms, fn, live: true };
    this.timers.push(timer);
    return () => void (timer.live = false);
  }

  advance(ms: number): void {
    this.t += ms;
    for (const timer of this.timers.filter((x) => x.live && x.at <= this.t)) {
      timer.live = false;
      timer.fn();
    }
    this.timers = this.timers.filter((x) => x.live);
  }
}

/** Settled decisions of tickets, read after the microtasks run. */
async function settled(tickets: Ticket[]): Promise<Array<Decision | 'pending'>> {
  const out: Array<Decision | 'pending'> = tickets.map(() => 'pending');
  tickets.forEach((t, i) => void t.decision.then((d) => (out[i] = d)));
  await new Promise((r) => setImmediate(r));
  return out;
}

const QUEUING = { queues: 8, handSize: 2, queueLengthLimit: 50 };

function params(flow: number, extra: Partial<RequestParams> = {}): RequestParams {
  return { seats: 1, hash: flow * 7919 + 13, flowSchema: `fs-${flow}`, distinguisher: `user-${flow}`, waitMs: 15_000, ...extra };
}

describe('shuffle sharding', () => {
  test('a hand holds distinct queues of the deck, the same for the same hash', () => {
    for (const hash of [0, 1, 12345, 2 ** 51 + 17, 987654321987]) {
      const hand = dealHand(hash, 64, 8);
      expect(hand).toHaveLength(8);
      expect(new Set(hand).size).toBe(8);
      for (const q of hand) expect(q >= 0 && q < 64).toBe(true);
      expect(dealHand(hash, 64, 8)).toEqual(hand);
    }
    expect(dealHand(5, 4, 8)).toHaveLength(4);
  });
});

describe('queue set', () => {
  test('requests run at once while seats are free, then wait, and run as seats free up', async () => {
    const clock = new FakeClock();
    const qs = new QueueSet({ concurrencyLimit: 2, queuing: QUEUING }, clock);
    const tickets = [qs.start(params(1)), qs.start(params(1)), qs.start(params(1))];
    expect(await settled(tickets)).toEqual(['execute', 'execute', 'pending']);
    expect(qs.waitingCount).toBe(1);
    clock.advance(5);
    tickets[0]?.finish();
    expect(await settled(tickets)).toEqual(['execute', 'execute', 'execute']);
    expect(qs.executingSeats).toBe(2);
  });

  test('fairness: a flow that floods does not delay another flow beyond its fair turn', async () => {
    const clock = new FakeClock();
    const qs = new QueueSet({ concurrencyLimit: 1, queuing: { queues: 16, handSize: 1, queueLengthLimit: 100 } }, clock);
    expect(dealHand(params(1).hash, 16, 1)).not.toEqual(dealHand(params(2).hash, 16, 1));
    const order: Array<{ flow: number; ticket: Ticket }> = [];
    const start = (flow: number): void => {
      const ticket = qs.start(params(flow));
      void ticket.decision.then(() => order.push({ flow, ticket }));
    };
    // Flow 1 takes the seat and queues 19 more; flow 2 then asks for 5.
    for (let i = 0; i < 20; i++) start(1);
    for (let i = 0; i < 5; i++) start(2);
    await settled([]);
    // One at a time, each request taking 10 ms.
    for (let served = 0; served < 25; served++) {
      expect(order).toHaveLength(served + 1);
      clock.advance(10);
      order[served]?.ticket.finish();
      await settled([]);
    }
    const flows = order.map((o) => o.flow);
    expect(flows.filter((f) => f === 2)).toHaveLength(5);
    // The two flows take turns while both wait: flow 2 is done within the first dozen, not after flow 1's twenty.
    expect(flows.lastIndexOf(2)).toBeLessThan(12);
    expect(flows.slice(0, 12).filter((f) => f === 1).length).toBeGreaterThanOrEqual(5);
  });

  test('the queue length limit refuses once the seats are taken and the chosen queue is full', async () => {
    const clock = new FakeClock();
    const qs = new QueueSet({ concurrencyLimit: 1, queuing: { queues: 1, handSize: 1, queueLengthLimit: 3 } }, clock);
    const tickets = Array.from({ length: 6 }, () => qs.start(params(1)));
    expect(await settled(tickets)).toEqual(['execute', 'pending', 'pending', 'pending', 'queue-full', 'queue-full']);
    expect(qs.dump()).toMatchObject({ waiting: 3, executing: 1, rejected: 2 });
  });

  test('a full queue refuses even when a few seats are free that no waiting request fits in', async () => {
    const qs = new QueueSet({ concurrencyLimit: 4, queuing: { queues: 1, handSize: 1, queueLengthLimit: 2 } }, new FakeClock());
    const tickets = Array.from({ length: 4 }, () => qs.start(params(1, { seats: 3 })));
    expect(await settled(tickets)).toEqual(['execute', 'pending', 'pending', 'queue-full']);
    expect(qs.executingSeats).toBe(3);
  });

  test('a request waiting longer than its wait limit is refused with time-out and leaves its queue', async () => {
    const clock = new FakeClock();
    const qs = new QueueSet({ concurrencyLimit: 1, queuing: QUEUING }, clock);
    const tickets = [qs.start(params(1)), qs.start(params(2, { waitMs: 100 }))];
    clock.advance(99);
    expect(await settled(tickets)).toEqual(['execute', 'pending']);
    clock.advance(1);
    expect(await settled(tickets)).toEqual(['execute', 'time-out']);
    expect(qs.waitingCount).toBe(0);
    expect(qs.dump().timedOut).toBe(1);
    // The seat it waited for goes to nobody else later: finishing the first leaves the set idle.
    tickets[0]?.finish();
    expect(qs.idle).toBe(true);
  });

  test('a request cancelled while queued leaves its queue; cancelling an executing one does nothing', async () => {
    const clock = new FakeClock();
    const qs = new QueueSet({ concurrencyLimit: 1, queuing: QUEUING }, clock);
    const tickets = [qs.start(params(1)), qs.start(params(2)), qs.start(params(3))];
    tickets[1]?.cancel();
    tickets[0]?.cancel();
    expect(await settled(tickets)).toEqual(['execute', 'cancelled', 'pending']);
    expect(qs.waitingCount).toBe(1);
    tickets[0]?.finish();
    expect(await settled(tickets)).toEqual(['execute', 'cancelled', 'execute']);
    expect(qs.dump()).toMatchObject({ cancelled: 1, dispatched: 2 });
  });

  test('a level without queues refuses over its limit; a request wider than the level runs alone', async () => {
    const clock = new FakeClock();
    const qs = new QueueSet({ concurrencyLimit: 3, queuing: undefined }, clock);
    const a = qs.start(params(1, { seats: 2 }));
    const b = qs.start(params(2, { seats: 2 }));
    const c = qs.start(params(3, { seats: 1 }));
    expect(await settled([a, b, c])).toEqual(['execute', 'concurrency-limit', 'execute']);
    a.finish();
    c.finish();
    const wide = qs.start(params(4, { seats: 5 }));
    const after = qs.start(params(5));
    expect(await settled([wide, after])).toEqual(['execute', 'concurrency-limit']);
  });

  test('the exempt level runs everything at once', async () => {
    const qs = new QueueSet({ concurrencyLimit: Infinity, queuing: undefined }, new FakeClock());
    const tickets = Array.from({ length: 100 }, (_, i) => qs.start(params(i)));
    expect((await settled(tickets)).every((d) => d === 'execute')).toBe(true);
    expect(qs.executingCount).toBe(100);
  });

  test('wider requests count their seats: a 3-seat request waits for 3 free seats', async () => {
    const clock = new FakeClock();
    const qs = new QueueSet({ concurrencyLimit: 4, queuing: QUEUING }, clock);
    const small = [qs.start(params(1)), qs.start(params(1))];
    const wide = qs.start(params(2, { seats: 3 }));
    expect(await settled([...small, wide])).toEqual(['execute', 'execute', 'pending']);
    small[0]?.finish();
    expect(await settled([wide])).toEqual(['execute']);
    expect(qs.executingSeats).toBe(4);
  });
});
