import type { QueuingConfiguration } from './config';
import { Integrator, type IntegratorResults } from './integrator';

/**
 * The requests of one priority level: run at once, refused, or queued and
 * dispatched fairly, as the original's queueset (fair queuing for server
 * requests):
 *
 * - Shuffle sharding: a flow's hash deals it a hand of `handSize` queues out
 *   of `queues`; the request joins the one of them holding the least work.
 * - A queue holding `queueLengthLimit` requests refuses the next one (429,
 *   reason queue-full).
 * - Virtual time R (seat-seconds) advances at the rate each active queue
 *   would be served if the seats were shared evenly among them. Each queue
 *   keeps the R at which its next request may start; dispatch takes the
 *   head of the queue whose head would finish first in R, as long as its
 *   seats are free, and advances that queue's R by the request's estimated
 *   work (seats × an estimated service time); a finished request corrects
 *   its queue's R by what it really took.
 * - A request waits at most its wait limit (then 429, time-out), and a
 *   request whose client went away leaves its queue.
 *
 * A level without queuing (limitResponse Reject) runs a request when its
 * seats are free and refuses it otherwise; the exempt level runs every
 * request at once. JavaScript runs one thing at a time, so there is no lock.
 */

export interface Clock {
  /** Milliseconds, monotonic. */
  now(): number;
  /** Calls `fn` after `ms`; the returned function cancels it. */
  setTimer(ms: number, fn: () => void): () => void;
}

export const realClock: Clock = {
  now: () => performance.now(),
  setTimer(ms, fn) {
    const t = setTimeout(fn, ms);
    t.unref();
    return () => clearTimeout(t);
  },
};

export type RejectReason = 'queue-full' | 'concurrency-limit' | 'time-out' | 'cancelled';
export type Decision = 'execute' | RejectReason;

export interface QueueSetConfig {
  /** Seats the level may use at once; Infinity for the exempt level. */
  concurrencyLimit: number;
  /** Undefined: no queues (the request is refused when the seats are taken). */
  queuing: QueuingConfiguration | undefined;
}

export interface RequestParams {
  seats: number;
  /** The flow's hash (flowHash). */
  hash: number;
  flowSchema: string;
  distinguisher: string;
  /** How long the request may wait in a queue. */
  waitMs: number;
  /** What the debug dump shows of the request (user, verb, path). */
  details?: RequestDetails;
}

export interface RequestDetails {
  user: string;
  verb: string;
  path: string;
  namespace: string;
  name: string;
  apiVersion: string;
  resource: string;
  subresource: string;
}

/** What the level reports as requests move (the metrics). */
export interface QueueSetObserver {
  waiting(flowSchema: string, requests: number, seats: number): void;
  executing(flowSchema: string, requests: number, seats: number): void;
  dispatched(flowSchema: string, waitedMs: number): void;
  rejected(flowSchema: string, reason: RejectReason, waitedMs: number): void;
}

const NO_OBSERVER: QueueSetObserver = { waiting: () => undefined, executing: () => undefined, dispatched: () => undefined, rejected: () => undefined };

/** The service time one seat of a request is estimated to take (the original's 3 ms), in seconds. */
const ESTIMATED_SERVICE_SECONDS = 0.003;

interface QueuedRequest {
  params: RequestParams;
  seats: number;
  work: number;
  arrivalR: number;
  arrivedAt: number;
  startedAt: number;
  queue: Queue | undefined;
  state: 'waiting' | 'executing' | 'done';
  resolve: (d: Decision) => void;
  cancelTimer: () => void;
}

class Queue {
  readonly waiting: QueuedRequest[] = [];
  readonly executing = new Set<QueuedRequest>();
  seatsInUse = 0;
  waitingSeats = 0;
  waitingWork = 0;
  nextDispatchR = 0;

  constructor(readonly index: number) {}

  get active(): boolean {
    return this.waiting.length > 0 || this.executing.size > 0;
  }
}

/** Deals a hand of distinct queue indexes from a flow's hash (mixed-radix digits of the hash pick from what is left of the deck). */
export function dealHand(hash: number, deckSize: number, handSize: number): number[] {
  const deck = Array.from({ length: deckSize }, (_, i) => i);
  const hand: number[] = [];
  let h = hash;
  for (let i = 0; i < Math.min(handSize, deckSize); i++) {
    const left = deckSize - i;
    const pick = h % left;
    h = Math.floor(h / left);
    hand.push(deck[pick] as number);
    deck[pick] = deck[left - 1] as number;
  }
  return hand;
}

export interface QueueDump {
  index: number;
  waiting: number;
  executing: number;
  seatsInUse: number;
  nextDispatchR: number;
  waitingSeats: number;
  waitingWork: number;
}

export interface RequestDump {
  flowSchema: string;
  distinguisher: string;
  queueIndex: number;
  indexInQueue: number;
  arrivedAt: number;
  startedAt: number;
  seats: number;
  details: RequestDetails | undefined;
}

export interface QueueSetDump {
  waiting: number;
  executing: number;
  seatsInUse: number;
  dispatched: number;
  rejected: number;
  timedOut: number;
  cancelled: number;
  queues: QueueDump[];
  requests: RequestDump[];
}

/** A request admitted to the level: wait for the decision, then call finish once it has run. */
export interface Ticket {
  /** Resolves once: execute, or the reason it was refused. */
  readonly decision: Promise<Decision>;
  /** The client went away: a waiting request leaves its queue (nothing once it executes). */
  cancel(): void;
  /** The request has run (frees its seats and dispatches what can run next). */
  finish(): void;
}

export class QueueSet {
  private queues: Queue[] = [];
  /** Requests running without a queue (exempt and reject levels). */
  private readonly queueless = new Set<QueuedRequest>();
  private currentR = 0;
  private lastSync: number;
  private seatsInUse = 0;
  private seatsWaiting = 0;
  /** Seats in use and waiting over time: what borrowing reads. */
  private readonly demand: Integrator;
  private requestsWaiting = 0;
  private requestsExecuting = 0;
  private robinIndex = -1;
  private enqueues = 0;
  private counts = { dispatched: 0, rejected: 0, timedOut: 0, cancelled: 0 };

  constructor(
    private config: QueueSetConfig,
    private readonly clock: Clock = realClock,
    private readonly observer: QueueSetObserver = NO_OBSERVER,
  ) {
    this.lastSync = clock.now();
    this.demand = new Integrator(() => clock.now());
    this.queues = Array.from({ length: config.queuing?.queues ?? 0 }, (_, i) => new Queue(i));
  }

  get concurrencyLimit(): number {
    return this.config.concurrencyLimit;
  }

  get idle(): boolean {
    return this.requestsWaiting === 0 && this.requestsExecuting === 0;
  }

  get waitingCount(): number {
    return this.requestsWaiting;
  }

  get executingCount(): number {
    return this.requestsExecuting;
  }

  get executingSeats(): number {
    return this.seatsInUse;
  }

  /**
   * A new configuration (limit, queues). Requests executing keep their
   * seats; waiting requests are dealt again into the new queues when their
   * number changed, in the order they arrived.
   */
  reconfigure(config: QueueSetConfig): void {
    this.syncTime();
    const before = this.queues.length;
    this.config = config;
    const wanted = config.queuing?.queues ?? 0;
    if (wanted !== before) {
      const waiting = this.queues.flatMap((q) => q.waiting).sort((a, b) => a.arrivedAt - b.arrivedAt);
      this.queues = Array.from({ length: wanted }, (_, i) => new Queue(i));
      this.robinIndex = -1;
      for (const r of waiting) {
        if (wanted === 0) {
          // No queues any more: what waited is refused, as the level now refuses when full.
          this.leaveQueue(r);
          this.reject(r, 'concurrency-limit');
          continue;
        }
        r.queue = this.chooseQueue(r.params.hash);
        this.enqueue(r, true);
      }
    }
    this.dispatchAsMuchAsPossible();
  }

  start(params: RequestParams): Ticket {
    this.syncTime();
    const now = this.clock.now();
    let resolve!: (d: Decision) => void;
    const decision = new Promise<Decision>((r) => (resolve = r));
    const seats = Math.max(1, params.seats);
    const req: QueuedRequest = {
      params,
      seats,
      work: seats * ESTIMATED_SERVICE_SECONDS,
      arrivalR: this.currentR,
      arrivedAt: now,
      startedAt: 0,
      queue: undefined,
      state: 'waiting',
      resolve,
      cancelTimer: () => undefined,
    };
    const ticket: Ticket = { decision, cancel: () => this.cancel(req), finish: () => this.finish(req) };
    if (!this.config.queuing || this.queues.length === 0) {
      if (this.canAccommodate(seats)) this.execute(req);
      else this.reject(req, 'concurrency-limit');
      return ticket;
    }
    const queue = this.chooseQueue(params.hash);
    // The original refuses only while every seat is taken; here a full queue always refuses, so a queue never outgrows its
    // bound (wide requests can leave a few seats free that nothing waiting fits in).
    if (queue.waiting.length >= this.config.queuing.queueLengthLimit) {
      this.reject(req, 'queue-full');
      return ticket;
    }
    req.queue = queue;
    this.enqueue(req, false);
    this.dispatchAsMuchAsPossible();
    if (req.state === 'waiting') req.cancelTimer = this.clock.setTimer(params.waitMs, () => this.giveUp(req, 'time-out'));
    return ticket;
  }

  /** The seat demand (in use and waiting) since the last call. */
  takeDemand(): IntegratorResults {
    return this.demand.reset();
  }

  /** What the debug endpoints show. */
  dump(): QueueSetDump {
    const requests: RequestDump[] = [];
    const dumpOf = (r: QueuedRequest, queueIndex: number, indexInQueue: number): RequestDump => ({
      flowSchema: r.params.flowSchema,
      distinguisher: r.params.distinguisher,
      queueIndex,
      indexInQueue,
      arrivedAt: r.arrivedAt,
      startedAt: r.startedAt,
      seats: r.seats,
      details: r.params.details,
    });
    for (const q of this.queues) {
      q.waiting.forEach((r, i) => requests.push(dumpOf(r, q.index, i)));
      for (const r of q.executing) requests.push(dumpOf(r, q.index, -1));
    }
    for (const r of this.queueless) requests.push(dumpOf(r, -1, -1));
    return {
      waiting: this.requestsWaiting,
      executing: this.requestsExecuting,
      seatsInUse: this.seatsInUse,
      ...this.counts,
      queues: this.queues.map((q) => ({
        index: q.index,
        waiting: q.waiting.length,
        executing: q.executing.size,
        seatsInUse: q.seatsInUse,
        nextDispatchR: q.nextDispatchR,
        waitingSeats: q.waitingSeats,
        waitingWork: q.waitingWork,
      })),
      requests,
    };
  }

  /** The rate R advances at: the seats in demand (at most the limit) shared by the active queues. */
  private virtualTimeRatio(): number {
    let active = 0;
    let demanded = 0;
    for (const q of this.queues) {
      demanded += q.seatsInUse + q.waitingSeats;
      if (q.active) active++;
    }
    if (active === 0) return 0;
    return Math.min(demanded, this.config.concurrencyLimit) / active;
  }

  private syncTime(): void {
    const now = this.clock.now();
    const elapsed = (now - this.lastSync) / 1000;
    this.lastSync = now;
    if (elapsed > 0) this.currentR += this.virtualTimeRatio() * elapsed;
  }

  /** The queue of the flow's hand holding the least waiting work (the deal's order rotates so ties are shared). */
  private chooseQueue(hash: number): Queue {
    const queuing = this.config.queuing as QueuingConfiguration;
    const hand = dealHand(hash, this.queues.length, queuing.handSize);
    const offset = this.enqueues++ % hand.length;
    let best: Queue | undefined;
    for (let i = 0; i < hand.length; i++) {
      const q = this.queues[hand[(offset + i) % hand.length] as number] as Queue;
      if (!best || q.waitingWork < best.waitingWork) best = q;
    }
    return best as Queue;
  }

  private enqueue(req: QueuedRequest, requeued: boolean): void {
    const q = req.queue as Queue;
    if (!q.active) q.nextDispatchR = this.currentR;
    q.waiting.push(req);
    q.waitingSeats += req.seats;
    q.waitingWork += req.work;
    if (!requeued) {
      this.requestsWaiting++;
      this.seatsWaiting += req.seats;
      this.demand.set(this.seatsInUse + this.seatsWaiting);
      this.observer.waiting(req.params.flowSchema, 1, req.seats);
    }
    this.boundNextDispatch(q);
  }

  private leaveQueue(req: QueuedRequest, bound = true): void {
    const q = req.queue;
    if (!q) return;
    const i = q.waiting.indexOf(req);
    if (i >= 0) q.waiting.splice(i, 1);
    q.waitingSeats -= req.seats;
    q.waitingWork -= req.work;
    this.requestsWaiting--;
    this.seatsWaiting -= req.seats;
    this.demand.set(this.seatsInUse + this.seatsWaiting);
    this.observer.waiting(req.params.flowSchema, -1, -req.seats);
    if (bound) this.boundNextDispatch(q);
  }

  private canAccommodate(seats: number): boolean {
    const limit = this.config.concurrencyLimit;
    if (limit === Infinity) return true;
    // A request wider than the whole level runs alone.
    if (seats > limit) return this.requestsExecuting === 0;
    return this.seatsInUse + seats <= limit;
  }

  private execute(req: QueuedRequest): void {
    req.state = 'executing';
    req.startedAt = this.clock.now();
    req.cancelTimer();
    this.requestsExecuting++;
    this.seatsInUse += req.seats;
    this.demand.set(this.seatsInUse + this.seatsWaiting);
    if (req.queue) {
      req.queue.executing.add(req);
      req.queue.seatsInUse += req.seats;
    } else {
      this.queueless.add(req);
    }
    this.counts.dispatched++;
    this.observer.executing(req.params.flowSchema, 1, req.seats);
    this.observer.dispatched(req.params.flowSchema, req.startedAt - req.arrivedAt);
    req.resolve('execute');
  }

  private reject(req: QueuedRequest, reason: RejectReason): void {
    req.state = 'done';
    req.cancelTimer();
    this.counts.rejected++;
    if (reason === 'time-out') this.counts.timedOut++;
    if (reason === 'cancelled') this.counts.cancelled++;
    this.observer.rejected(req.params.flowSchema, reason, this.clock.now() - req.arrivedAt);
    req.resolve(reason);
  }

  private giveUp(req: QueuedRequest, reason: 'time-out' | 'cancelled'): void {
    if (req.state !== 'waiting') return;
    this.syncTime();
    this.leaveQueue(req);
    this.reject(req, reason);
  }

  private cancel(req: QueuedRequest): void {
    this.giveUp(req, 'cancelled');
  }

  private finish(req: QueuedRequest): void {
    if (req.state !== 'executing') return;
    this.syncTime();
    req.state = 'done';
    this.requestsExecuting--;
    this.seatsInUse -= req.seats;
    this.demand.set(this.seatsInUse + this.seatsWaiting);
    this.observer.executing(req.params.flowSchema, -1, -req.seats);
    const q = req.queue;
    if (q) {
      q.executing.delete(req);
      q.seatsInUse -= req.seats;
      // The queue was charged the estimate when the request started; now it pays what the request really took.
      const actual = (this.clock.now() - req.startedAt) / 1000;
      q.nextDispatchR -= req.seats * (ESTIMATED_SERVICE_SECONDS - actual);
      this.boundNextDispatch(q);
    } else {
      this.queueless.delete(req);
    }
    this.dispatchAsMuchAsPossible();
  }

  private dispatchAsMuchAsPossible(): void {
    while (this.requestsWaiting > 0 && this.seatsInUse < this.config.concurrencyLimit && this.dispatchOne());
  }

  /** Dispatches the head of the queue whose head would finish first in virtual time, when its seats are free. */
  private dispatchOne(): boolean {
    const n = this.queues.length;
    let best: Queue | undefined;
    let bestIndex = -1;
    let bestFinish = Infinity;
    for (let i = 0; i < n; i++) {
      this.robinIndex = (this.robinIndex + 1) % n;
      const q = this.queues[this.robinIndex] as Queue;
      const head = q.waiting[0];
      if (!head) continue;
      const finish = q.nextDispatchR + head.work;
      if (finish < bestFinish) {
        bestFinish = finish;
        best = q;
        bestIndex = this.robinIndex;
      }
    }
    const head = best?.waiting[0];
    if (!best || !head || !this.canAccommodate(head.seats)) return false;
    // The next round starts after the chosen queue, so the others win ties.
    this.robinIndex = bestIndex;
    this.leaveQueue(head, false);
    best.nextDispatchR += head.work;
    this.execute(head);
    this.boundNextDispatch(best);
    return true;
  }

  /** A queue's next dispatch never precedes its head's arrival in virtual time (the original's anti-windup). */
  private boundNextDispatch(q: Queue): void {
    const head = q.waiting[0];
    if (head && q.nextDispatchR < head.arrivalR) q.nextDispatchR = head.arrivalR;
  }
}
