import * as fs from 'node:fs';
import type { IncomingHttpHeaders } from 'node:http';
import * as https from 'node:https';
import { Etcd3 } from 'etcd3';
import type { Environment } from '@svc/testenv';

/**
 * What the scenarios of `make bench` share: the HTTPS client of the load
 * generator, percentiles, and the CPU and memory of the system's processes
 * read from /proc.
 */

export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

export interface Percentiles {
  p50: number;
  p99: number;
}

export function stats(samples: number[]): Percentiles {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99) };
}

export const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Milliseconds since `start` (a process.hrtime.bigint()). */
export const msSince = (start: bigint): number => Number(process.hrtime.bigint() - start) / 1e6;

/** A number the way the bench prints it: two decimals below 10, none above. */
export const fmt = (n: unknown): string => (typeof n === 'number' ? (n < 10 ? n.toFixed(2) : n.toFixed(0)) : String(n));

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body as it came off the connection (not decompressed). */
  bytes: Buffer;
}

export class Client {
  private readonly agent: https.Agent;
  /** With a token: a bearer token and no client certificate; otherwise the admin's certificate. */
  constructor(
    env: Environment,
    private readonly url = env.url,
    private readonly token?: string,
  ) {
    this.agent = new https.Agent({
      keepAlive: true,
      maxSockets: 128,
      ca: fs.readFileSync(env.pki.caCert),
      ...(token === undefined ? { cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) } : {}),
    });
  }
  /** `token` overrides the client's own for this request. */
  async request(method: string, p: string, body?: unknown, token = this.token): Promise<{ status: number; body: string }> {
    const res = await this.requestRaw(method, p, body, token === undefined ? {} : { authorization: `Bearer ${token}` });
    return { status: res.status, body: res.bytes.toString() };
  }
  /** A request with extra headers, answering the status, the headers and the body's bytes as received. */
  requestRaw(method: string, p: string, body?: unknown, extraHeaders: Record<string, string> = {}): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...(this.token !== undefined ? { authorization: `Bearer ${this.token}` } : {}), ...extraHeaders };
      const req = https.request(`${this.url}${p}`, { method, agent: this.agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      if (body !== undefined) req.write(JSON.stringify(body));
      req.end();
    });
  }
  watch(p: string, onLine: (line: string) => void): () => void {
    const req = https.request(`${this.url}${p}`, { agent: this.agent }, (res) => {
      let buf = '';
      res.on('data', (c: Buffer) => {
        buf += c.toString();
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          onLine(buf.slice(0, nl));
          buf = buf.slice(nl + 1);
        }
      });
    });
    // A watch the server ends or resets just stops delivering lines; its caller counts what arrived.
    req.on('error', () => undefined);
    req.end();
    return () => req.destroy();
  }
  close(): void {
    this.agent.destroy();
  }
}

export async function runConcurrent(total: number, concurrency: number, op: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await op(next++);
    }),
  );
  return total / (msSince(started) / 1000);
}

/** CPU time (user + system) a process has used, in ms; undefined where /proc is not there. */
export function cpuMs(pid: number): number | undefined {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * 10 : undefined;
  } catch {
    return undefined;
  }
}

/** Every process of the system by name, with etcd and NATS. */
export function systemProcesses(env: Environment): Array<{ name: string; pid: number }> {
  return [...env.processes, env.etcd.process, env.nats.process].map((p) => ({ name: p.name.replace(/-\d+$/, ''), pid: p.pid }));
}

/**
 * Starts counting CPU: the returned function answers the CPU time in ms
 * each process of the system (replicas summed under one name) and this
 * one, the `load generator`, has used since; with `extra` processes (a
 * floor server the bench started).
 */
export function cpuSince(env: Environment, extra: Array<{ name: string; pid: number }> = []): () => Record<string, number> {
  const procs = [...systemProcesses(env), ...extra];
  const before = procs.map((p) => cpuMs(p.pid));
  const self = process.cpuUsage();
  return () => {
    const selfUsed = process.cpuUsage(self);
    const out: Record<string, number> = {};
    procs.forEach((p, i) => {
      const a = before[i];
      const b = cpuMs(p.pid);
      if (a !== undefined && b !== undefined) out[p.name] = (out[p.name] ?? 0) + (b - a);
    });
    out['load generator'] = (selfUsed.user + selfUsed.system) / 1000;
    return out;
  };
}

/** Divides every figure by `by`, to two decimals. */
export function perOp(cpu: Record<string, number>, by: number): Record<string, number> {
  return Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, Math.round((v / by) * 100) / 100]));
}

/** Runs `fn` and reports the CPU each process (and this one, the load generator) spent per operation. */
export async function cpuPerOp(env: Environment, ops: number, fn: () => Promise<void>): Promise<Record<string, number>> {
  const used = cpuSince(env);
  await fn();
  return perOp(used(), ops);
}

/** Resident memory of a process, bytes (0 where /proc is not there). */
export function rssBytes(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** Runs `op` while sampling the resident memory of the named processes every 20 ms; returns the peaks, MiB. */
export async function peakRss(env: Environment, names: string[], op: () => Promise<void>): Promise<Record<string, number>> {
  const procs = env.processes.filter((p) => names.includes(p.name));
  const peaks: Record<string, number> = Object.fromEntries(procs.map((p) => [p.name, rssBytes(p.pid)]));
  const timer = setInterval(() => {
    for (const p of procs) peaks[p.name] = Math.max(peaks[p.name] ?? 0, rssBytes(p.pid));
  }, 20);
  try {
    await op();
  } finally {
    clearInterval(timer);
  }
  return Object.fromEntries(Object.entries(peaks).map(([k, v]) => [k, Math.round(v / 1048576)]));
}

/** etcd straight, as the raw floor: through the same TLS with a client certificate as storage. */
export function directEtcd(env: Environment): Etcd3 {
  const storageIdentity = env.internalPki.identities.storage;
  return new Etcd3({
    hosts: env.etcd.endpoint,
    credentials: { rootCertificate: fs.readFileSync(env.internalPki.caCert), certChain: fs.readFileSync(storageIdentity.cert), privateKey: fs.readFileSync(storageIdentity.key) },
    // Big enough for the unpaged range reads of the list figures (the client's default is 4 MiB).
    grpcOptions: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 },
  });
}

/** Creates a namespace (an existing one is fine). */
export async function ensureNamespace(client: Client, name: string): Promise<void> {
  const res = await client.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  if (res.status !== 201 && res.status !== 409) throw new Error(`creating namespace ${name} answered ${res.status}: ${res.body.slice(0, 200)}`);
}
