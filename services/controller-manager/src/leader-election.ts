import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { ApiError, type ApiObject } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { ApiClient } from './client';
import { realClock, sleep, type Clock } from './clock';
import type { EventRecorder } from './event-recorder';

/**
 * Leader election on a `coordination.svc.io/v1` Lease, as client-go's
 * leaderelection package runs it for the original controller-manager: a
 * candidate takes the Lease by creating it, or by updating it once its
 * holder has not renewed it for `leaseDurationSeconds` as this candidate
 * observed (its own clock measures from when it saw the last change, so
 * clocks of different hosts need not agree); the leader renews it every
 * retry period and gives up when a renewal has not succeeded within the
 * renew deadline. Every write is a compare-and-swap on the Lease's
 * resourceVersion, so of two candidates racing only one wins.
 */

export interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  acquireTime?: string;
  renewTime?: string;
  leaseTransitions?: number;
}

export interface Lease extends ApiObject {
  spec?: LeaseSpec;
}

/** The one Lease an elector competes for. */
export interface LeaseApi {
  /** The Lease, or undefined when it does not exist. */
  get(): Promise<Lease | undefined>;
  /** Creates it; rejects with a 409 ApiError when it exists. */
  create(lease: Lease): Promise<Lease>;
  /** Replaces it; rejects with a 409 ApiError when its resourceVersion is stale. */
  update(lease: Lease): Promise<Lease>;
}

export function apiLease(client: Pick<ApiClient, 'request'>, namespace: string, name: string): LeaseApi {
  const base = `/apis/coordination.svc.io/v1/namespaces/${encodeURIComponent(namespace)}/leases`;
  return {
    async get() {
      try {
        return await client.request<Lease>('GET', `${base}/${encodeURIComponent(name)}`);
      } catch (err) {
        if (err instanceof ApiError && err.code === 404) return undefined;
        throw err;
      }
    },
    create: (lease) => client.request<Lease>('POST', base, lease),
    update: (lease) => client.request<Lease>('PUT', `${base}/${encodeURIComponent(name)}`, lease),
  };
}

/** This process's identity in the election: the host name and a random suffix, so two processes of one host differ. */
export function candidateIdentity(): string {
  return `${hostname()}_${randomBytes(8).toString('hex')}`;
}

/** A Lease time (RFC 3339 with microseconds, as the original's MicroTime). */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export interface LeaderElectionConfig {
  lease: LeaseApi;
  /** Where the Lease is, for logs and its metadata. */
  namespace: string;
  name: string;
  identity: string;
  /** How long candidates wait after the last observed renewal before they take over (default 15 s). */
  leaseDurationMs?: number;
  /** How long the leader keeps trying to renew before it gives up (default 10 s). */
  renewDeadlineMs?: number;
  /** How often candidates try to acquire and the leader renews (default 2 s). */
  retryPeriodMs?: number;
  clock?: Clock;
  log: Logger;
  /** Where the original's `LeaderElection` event on the Lease goes (`<identity> became leader`); none without it. */
  events?: Pick<EventRecorder, 'record'>;
}

export interface LeaderCallbacks {
  /** This candidate now leads. */
  onStartedLeading(): void;
  /** It no longer does (renewal failed, or someone else holds the Lease); called once, only after onStartedLeading. */
  onStoppedLeading(): void;
  /** The holder changed (including to this candidate). */
  onNewLeader?(identity: string): void;
}

export class LeaderElector {
  private readonly clock: Clock;
  private readonly leaseDurationMs: number;
  private readonly renewDeadlineMs: number;
  private readonly retryPeriodMs: number;
  private readonly abort = new AbortController();
  /** The Lease as last read or written, and when this candidate saw it change. */
  private observed: Lease | undefined;
  private observedAt = 0;
  private leading = false;
  private lastRenew = 0;
  private reportedLeader: string | undefined;
  private running: Promise<void> | undefined;

  constructor(private readonly config: LeaderElectionConfig) {
    this.clock = config.clock ?? realClock;
    this.leaseDurationMs = config.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = config.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = config.retryPeriodMs ?? 2_000;
    if (this.leaseDurationMs <= this.renewDeadlineMs) throw new Error('--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline');
    if (this.renewDeadlineMs <= this.retryPeriodMs) throw new Error('--leader-elect-renew-deadline must be greater than --leader-elect-retry-period');
  }

  get identity(): string {
    return this.config.identity;
  }

  isLeader(): boolean {
    return this.leading;
  }

  /** The holder as last observed (maybe this candidate). */
  leader(): string | undefined {
    return this.observed?.spec?.holderIdentity || undefined;
  }

  /** When the leader last renewed, on this candidate's clock (0 when not leading). */
  lastRenewal(): number {
    return this.leading ? this.lastRenew : 0;
  }

  /** Competes until this candidate led and lost, or `stop` was called; resolves then. */
  run(callbacks: LeaderCallbacks): Promise<void> {
    this.running ??= this.loop(callbacks);
    return this.running;
  }

  /** Stops competing; a leader gives the Lease up so another candidate takes over at once. */
  async stop(): Promise<void> {
    this.abort.abort();
    await this.running;
    if (!this.leading) return;
    this.leading = false;
    const held = this.observed;
    if (!held || held.spec?.holderIdentity !== this.config.identity) return;
    const now = microTime(this.clock.now());
    try {
      await this.config.lease.update({ ...held, spec: { ...held.spec, holderIdentity: '', leaseDurationSeconds: 1, acquireTime: now, renewTime: now } });
      this.config.log.info('leader lease released', { lease: this.where(), identity: this.config.identity });
    } catch (err) {
      this.config.log.warn('could not release the leader lease', { lease: this.where(), err: (err as Error).message });
    }
  }

  private reportLeading(): void {
    const { namespace, name, identity } = this.config;
    const uid = this.observed?.metadata?.uid;
    const regarding = { apiVersion: 'coordination.svc.io/v1', kind: 'Lease', namespace, name, ...(uid ? { uid } : {}) };
    void this.config.events?.record({ regarding, type: 'Normal', reason: 'LeaderElection', action: 'Acquire', note: `${identity} became leader` });
  }

  private async loop(callbacks: LeaderCallbacks): Promise<void> {
    const signal = this.abort.signal;
    this.config.log.info('attempting to acquire the leader lease', { lease: this.where(), identity: this.config.identity });
    // Acquire: try now, then every retry period.
    while (!signal.aborted) {
      if (await this.attempt(callbacks)) break;
      await sleep(this.clock, this.jittered(), signal);
    }
    if (signal.aborted) return;
    this.leading = true;
    this.lastRenew = this.clock.now();
    this.config.log.info('acquired the leader lease', { lease: this.where(), identity: this.config.identity });
    this.reportLeading();
    callbacks.onStartedLeading();
    // Renew every retry period; give up when no renewal succeeded within the deadline.
    while (!signal.aborted) {
      await sleep(this.clock, this.retryPeriodMs, signal);
      if (signal.aborted) return;
      const remaining = this.lastRenew + this.renewDeadlineMs - this.clock.now();
      const renewed = remaining > 0 && (await this.withDeadline(this.attempt(callbacks), remaining));
      if (signal.aborted) return;
      if (renewed) {
        this.lastRenew = this.clock.now();
        continue;
      }
      if (this.clock.now() - this.lastRenew < this.renewDeadlineMs && this.observed?.spec?.holderIdentity === this.config.identity) continue;
      this.leading = false;
      this.config.log.error('lost the leader lease', { lease: this.where(), identity: this.config.identity, holder: this.leader() });
      callbacks.onStoppedLeading();
      return;
    }
  }

  /** One try to acquire or renew; true when this candidate holds the Lease afterwards. */
  private async attempt(callbacks: LeaderCallbacks): Promise<boolean> {
    const now = this.clock.now();
    const durationSeconds = Math.round(this.leaseDurationMs / 1000);
    const mine: LeaseSpec = { holderIdentity: this.config.identity, leaseDurationSeconds: durationSeconds, acquireTime: microTime(now), renewTime: microTime(now), leaseTransitions: 0 };
    try {
      const current = await this.config.lease.get();
      if (!current) {
        const created = await this.config.lease.create({
          apiVersion: 'coordination.svc.io/v1',
          kind: 'Lease',
          metadata: { name: this.config.name, namespace: this.config.namespace },
          spec: mine,
        });
        this.observe(created, callbacks);
        return true;
      }
      this.observe(current, callbacks);
      const spec = current.spec ?? {};
      const holder = spec.holderIdentity ?? '';
      const held = holder !== '' && holder !== this.config.identity;
      const durationMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
      if (held && this.observedAt + durationMs > now) return false;
      const next: LeaseSpec =
        holder === this.config.identity
          ? { ...mine, acquireTime: spec.acquireTime ?? mine.acquireTime, leaseTransitions: spec.leaseTransitions ?? 0 }
          : { ...mine, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 };
      const updated = await this.config.lease.update({ ...current, spec: { ...spec, ...next } });
      this.observe(updated, callbacks);
      return true;
    } catch (err) {
      // A lost race (409) or an unreachable server: the next try decides.
      const level = err instanceof ApiError && err.code === 409 ? 'debug' : 'warn';
      this.config.log[level]('leader lease not acquired or renewed', { lease: this.where(), err: (err as Error).message });
      return false;
    }
  }

  /** Remembers the Lease; a change of holder or renewal restarts the local lease timer. */
  private observe(lease: Lease, callbacks: LeaderCallbacks): void {
    const before = this.observed?.spec;
    const spec = lease.spec ?? {};
    if (!before || before.holderIdentity !== spec.holderIdentity || before.renewTime !== spec.renewTime) this.observedAt = this.clock.now();
    this.observed = lease;
    const holder = spec.holderIdentity ?? '';
    if (holder && holder !== this.reportedLeader) {
      this.reportedLeader = holder;
      if (holder !== this.config.identity) this.config.log.info('new leader observed', { lease: this.where(), leader: holder });
      callbacks.onNewLeader?.(holder);
    }
  }

  /** `attempt`'s answer, or false once `ms` passed without one. */
  private withDeadline(attempt: Promise<boolean>, ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const cancel = this.clock.after(ms, () => resolve(false));
      void attempt.then((ok) => {
        cancel();
        resolve(ok);
      });
    });
  }

  /** The retry period stretched by up to a fifth, so candidates do not try in lockstep. */
  private jittered(): number {
    return this.retryPeriodMs * (1 + Math.random() * 0.2);
  }

  private where(): string {
    return `${this.config.namespace}/${this.config.name}`;
  }
}
