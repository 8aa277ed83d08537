import { ApiError, DEFAULT_NAMESPACE, SYSTEM_NAMESPACE, type ApiObject, type ResourceDefinition } from '@svc/apimachinery';
import type { Logger } from '@svc/service-kit';
import type { GatewayDeps } from '../backends';
import { KUBERNETES_SERVICE_NAME, ipFamilyOf } from '../service-ip';
import { createObject, deleteObject, getObject, listObjects, updateObject } from './store';
import { systemWriteContext } from './system-namespaces';

/**
 * The `default/kubernetes` Service and its Endpoints, kept as the original
 * server's "kubernetes service" controller and lease endpoint reconciler keep
 * them. Every gateway holds a Lease in the system namespace (one per
 * advertised address and port, renewed each pass) and, every interval:
 *
 * 1. renews its own Lease;
 * 2. creates the Service when it is missing (ClusterIP the first address of
 *    the service range, port `https` 443 to the gateway's port; like the
 *    original, an existing Service is left as it is);
 * 3. writes the Endpoints when they differ from the live gateways: one
 *    address per gateway whose Lease was renewed within its duration, as
 *    this gateway observed it (so clocks need not agree), grouped by port;
 *    Leases that expired are deleted.
 *
 * A gateway that stops deletes its Lease and rewrites the Endpoints without
 * itself. The original keys its leases by IP alone; here several gateways may
 * share an address on different ports (the test harness runs them so), and
 * the Endpoints then hold one subset per port.
 */

/** Labels the endpoint Leases carry, naming the Service they back. */
export const ENDPOINT_LEASE_LABEL = 'svc.io/apiserver-endpoint';
/** The original's `endpointslice.kubernetes.io/skip-mirror`: no EndpointSlice mirrors these Endpoints. */
export const SKIP_MIRROR_LABEL = 'endpointslice.svc.io/skip-mirror';
const SERVICE_LABELS = { component: 'apiserver', provider: 'svc' };
const PORT_NAME = 'https';
const SERVICE_PORT = 443;

/** The original's reconcile interval and endpoint lease TTL. */
export const DEFAULT_ENDPOINT_RECONCILER_INTERVAL_MS = 10_000;
export const DEFAULT_ENDPOINT_LEASE_DURATION_MS = 15_000;

export interface DefaultServiceOptions {
  /** ClusterIP of the Service (firstServiceIP of the service range). */
  serviceIP: string;
  /** The address this gateway is reached at, as an endpoint. */
  advertiseAddress: string;
  /** The gateway's HTTPS port: the Service's targetPort and the endpoint's port. */
  port: number;
  intervalMs: number;
  leaseDurationMs: number;
  /** False (`--endpoint-reconciler-type=none`): only the Service is kept; no Lease, the Endpoints left to others. */
  endpoints?: boolean;
}

/** Time as the reconciler reads it and waits (injected by tests). */
export interface ReconcilerClock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

const REAL_CLOCK: ReconcilerClock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms).unref()),
};

/** An RFC 3339 time with microseconds, as Lease times are written. */
function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

/** `127.0.0.1:6443`, `[fd00::1]:6443`. */
export function hostPort(address: string, port: number): string {
  return address.includes(':') ? `[${address}]:${port}` : `${address}:${port}`;
}

function parseHostPort(text: string): { address: string; port: number } | undefined {
  const sep = text.lastIndexOf(':');
  if (sep <= 0) return undefined;
  const port = Number(text.slice(sep + 1));
  const address = text.slice(0, sep).replace(/^\[(.*)\]$/, '$1');
  return Number.isInteger(port) && port > 0 && port < 65536 && address ? { address, port } : undefined;
}

/** The Lease of one endpoint: `gateway-127.0.0.1-6443`, `gateway-fd00--1-6443`. */
export function endpointLeaseName(address: string, port: number): string {
  return `gateway-${address.replace(/:/g, '-')}-${port}`;
}

interface LiveEndpoint {
  address: string;
  port: number;
}

/** The Endpoints subsets of a set of gateways: one subset per port, ascending, addresses sorted as the original lists them. */
export function endpointSubsets(endpoints: readonly LiveEndpoint[]): Array<Record<string, unknown>> {
  const byPort = new Map<number, Set<string>>();
  for (const e of endpoints) byPort.set(e.port, (byPort.get(e.port) ?? new Set()).add(e.address));
  return [...byPort]
    .sort(([a], [b]) => a - b)
    .map(([port, addresses]) => ({
      addresses: [...addresses].sort().map((ip) => ({ ip })),
      ports: [{ name: PORT_NAME, port, protocol: 'TCP' }],
    }));
}

/** The Service as the original creates it. */
export function kubernetesService(serviceIP: string, targetPort: number): ApiObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: KUBERNETES_SERVICE_NAME, namespace: DEFAULT_NAMESPACE, labels: { ...SERVICE_LABELS } },
    spec: {
      ports: [{ name: PORT_NAME, protocol: 'TCP', port: SERVICE_PORT, targetPort }],
      clusterIP: serviceIP,
      clusterIPs: [serviceIP],
      type: 'ClusterIP',
      sessionAffinity: 'None',
      ipFamilies: [ipFamilyOf(serviceIP)],
      ipFamilyPolicy: 'SingleStack',
      internalTrafficPolicy: 'Cluster',
    },
  };
}

/** JSON with every object's keys sorted: the stored form may order keys otherwise. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === 'object' && v !== null && !Array.isArray(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}

function isCode(err: unknown, ...codes: number[]): boolean {
  return err instanceof ApiError && codes.includes(err.code);
}

export class DefaultServiceReconciler {
  private readonly leaseName: string;
  /** When this gateway last saw each Lease's renewTime change: expiry is judged from these, not from the writers' clocks. */
  private readonly observed = new Map<string, { renewTime: string; at: number }>();
  private stopping = false;
  private pass: Promise<void> = Promise.resolve();

  constructor(
    private readonly deps: GatewayDeps,
    private readonly options: DefaultServiceOptions,
    private readonly log: Logger,
    private readonly clock: ReconcilerClock = REAL_CLOCK,
  ) {
    this.leaseName = endpointLeaseName(options.advertiseAddress, options.port);
  }

  private def(group: string, resource: string): ResourceDefinition {
    const def = this.deps.registry.lookup(group, 'v1', resource);
    if (!def) throw new Error(`${resource} are not registered`);
    return def;
  }

  private ctx(group: string, resource: string, namespace: string) {
    return systemWriteContext(this.deps, this.def(group, resource), 'default-service', namespace);
  }

  private leases() {
    return this.ctx('coordination.svc.io', 'leases', SYSTEM_NAMESPACE);
  }

  /**
   * Runs the passes until stop(): once the gateway is ready (as the original
   * waits for its own /readyz), every interval; a pass that fails is retried
   * sooner, so a gateway that starts before its backends joins quickly.
   */
  start(ready: () => Promise<boolean>): void {
    void (async () => {
      while (!this.stopping && !(await ready())) await this.clock.sleep(500);
      while (!this.stopping) {
        const ok = await this.runPass();
        if (this.stopping) break;
        await this.clock.sleep(ok ? this.options.intervalMs : Math.min(this.options.intervalMs, 1000));
      }
    })();
  }

  private runPass(): Promise<boolean> {
    const run = this.pass.then(() => this.reconcile());
    this.pass = run.catch(() => undefined);
    return run.then(
      () => true,
      (err: unknown) => {
        this.log.warn('could not reconcile the kubernetes service', { err: (err as Error).message });
        return false;
      },
    );
  }

  /** One pass: renew this gateway's Lease, create a missing Service, bring the Endpoints up to date. */
  async reconcile(): Promise<void> {
    if (this.stopping) return;
    const endpoints = this.options.endpoints !== false;
    if (endpoints) await this.renewLease();
    await this.ensureService();
    if (endpoints) await this.reconcileEndpoints(true);
  }

  /**
   * Takes this gateway out (graceful shutdown): no further passes, its Lease
   * deleted and the Endpoints rewritten without it. Bounded by two intervals,
   * as the original, so a stop does not hang on unreachable backends.
   */
  async stop(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.options.endpoints === false) return;
    const removal = this.pass.then(async () => {
      try {
        await deleteObject(this.leases(), this.leaseName, {});
      } catch (err) {
        if (!isCode(err, 404)) throw err;
      }
      await this.reconcileEndpoints(false);
      this.log.info('removed this gateway from the kubernetes service endpoints', { endpoint: hostPort(this.options.advertiseAddress, this.options.port) });
    });
    const bound = new Promise<void>((resolve) => setTimeout(resolve, 2 * this.options.intervalMs).unref());
    await Promise.race([removal.catch((err: unknown) => this.log.warn('could not remove this gateway from the kubernetes service endpoints', { err: (err as Error).message })), bound]);
  }

  private async renewLease(): Promise<void> {
    const now = microTime(this.clock.now());
    const spec = {
      holderIdentity: hostPort(this.options.advertiseAddress, this.options.port),
      leaseDurationSeconds: Math.max(1, Math.ceil(this.options.leaseDurationMs / 1000)),
      renewTime: now,
    };
    let current: ApiObject | undefined;
    try {
      current = (await getObject(this.leases(), this.leaseName)).object;
    } catch (err) {
      if (!isCode(err, 404)) throw err;
    }
    if (!current) {
      const lease: ApiObject = {
        apiVersion: 'coordination.svc.io/v1',
        kind: 'Lease',
        metadata: { name: this.leaseName, namespace: SYSTEM_NAMESPACE, labels: { [ENDPOINT_LEASE_LABEL]: KUBERNETES_SERVICE_NAME } },
        spec: { ...spec, acquireTime: now },
      };
      await createObject(this.leases(), lease);
      return;
    }
    const renewed = { ...current, spec: { ...((current['spec'] as Record<string, unknown> | undefined) ?? {}), ...spec } };
    await updateObject(this.leases(), this.leaseName, renewed);
  }

  private async ensureService(): Promise<void> {
    const ctx = this.ctx('', 'services', DEFAULT_NAMESPACE);
    try {
      await getObject(ctx, KUBERNETES_SERVICE_NAME);
      return;
    } catch (err) {
      if (!isCode(err, 404)) throw err;
    }
    try {
      await createObject(ctx, kubernetesService(this.options.serviceIP, this.options.port));
      this.log.info('created the kubernetes service', { clusterIP: this.options.serviceIP });
    } catch (err) {
      if (!isCode(err, 409)) throw err;
    }
  }

  /** The gateways whose Lease is live; expired Leases are deleted. `self` says whether this gateway counts. */
  private async liveEndpoints(self: boolean): Promise<LiveEndpoint[]> {
    const ctx = this.leases();
    const page = await listObjects(ctx, { labelSelector: `${ENDPOINT_LEASE_LABEL}=${KUBERNETES_SERVICE_NAME}` });
    const now = this.clock.now();
    const live: LiveEndpoint[] = [];
    const seen = new Set<string>();
    for (const lease of page.items) {
      const name = lease.metadata?.name ?? '';
      if (lease.metadata?.labels?.[ENDPOINT_LEASE_LABEL] !== KUBERNETES_SERVICE_NAME || name === this.leaseName) continue;
      seen.add(name);
      const spec = (lease['spec'] as Record<string, unknown> | undefined) ?? {};
      const renewTime = String(spec['renewTime'] ?? '');
      const last = this.observed.get(name);
      if (!last || last.renewTime !== renewTime) this.observed.set(name, { renewTime, at: now });
      const at = this.observed.get(name)?.at ?? now;
      const durationMs = (typeof spec['leaseDurationSeconds'] === 'number' ? spec['leaseDurationSeconds'] : 0) * 1000;
      const endpoint = parseHostPort(String(spec['holderIdentity'] ?? ''));
      if (endpoint && now - at <= durationMs) {
        live.push(endpoint);
        continue;
      }
      try {
        await deleteObject(ctx, name, { preconditions: { resourceVersion: lease.metadata?.resourceVersion ?? '' } });
        this.log.info('deleted an expired kubernetes service endpoint lease', { lease: name, holder: spec['holderIdentity'] });
      } catch (err) {
        // Renewed or deleted meanwhile: the next pass sees it as it is then.
        if (!isCode(err, 404, 409)) throw err;
      }
    }
    for (const name of this.observed.keys()) if (!seen.has(name)) this.observed.delete(name);
    if (self) live.push({ address: this.options.advertiseAddress, port: this.options.port });
    return live;
  }

  private async reconcileEndpoints(self: boolean): Promise<void> {
    const live = await this.liveEndpoints(self);
    // As the original, never erase every endpoint: with none live the last ones stay.
    if (live.length === 0) return;
    const subsets = endpointSubsets(live);
    const ctx = this.ctx('', 'endpoints', DEFAULT_NAMESPACE);
    let current: ApiObject | undefined;
    try {
      current = (await getObject(ctx, KUBERNETES_SERVICE_NAME)).object;
    } catch (err) {
      if (!isCode(err, 404)) throw err;
    }
    const labelled = current?.metadata?.labels?.[SKIP_MIRROR_LABEL] === 'true';
    if (current && labelled && canonical(current['subsets'] ?? []) === canonical(subsets)) return;
    this.log.info('resetting the kubernetes service endpoints', { endpoints: live.map((e) => hostPort(e.address, e.port)) });
    if (!current) {
      const created: ApiObject = {
        apiVersion: 'v1',
        kind: 'Endpoints',
        metadata: { name: KUBERNETES_SERVICE_NAME, namespace: DEFAULT_NAMESPACE, labels: { [SKIP_MIRROR_LABEL]: 'true' } },
        subsets,
      };
      try {
        await createObject(ctx, created);
      } catch (err) {
        if (!isCode(err, 409)) throw err;
      }
      return;
    }
    const metadata = { ...(current.metadata ?? {}), labels: { ...(current.metadata?.labels ?? {}), [SKIP_MIRROR_LABEL]: 'true' } };
    await updateObject(ctx, KUBERNETES_SERVICE_NAME, { ...current, metadata, subsets });
  }
}
