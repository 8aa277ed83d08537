import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { Etcd3 } from 'etcd3';
import { connect } from 'nats';
import { benchRbac } from './rbac-decision';
import { benchApply } from './apply';
import { startEnvironment, type Environment } from '@svc/testenv';
import { benchValidationRules, formatValidationRules, type ValidationRulesFigures } from './validation-rules';
import { benchCustomResources, formatCustomResourceBench, type CustomResourceBench } from './custom-resources';

/**
 * `make bench`: our figures next to the raw limits measured in the same run.
 * Creates through the gateway vs. the same guarded creates straight into
 * etcd; get/list latency; create-to-watch-event latency vs. raw NATS
 * publish-to-receive; server-side apply of a 200-field object.
 * Every loop is bounded in count; all traffic stays on 127.0.0.1.
 */
const CREATES_PER_LEVEL = Number(process.env['BENCH_CREATES'] ?? '1000');
const CONCURRENCY = [1, 16, 64];

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number;
}

function stats(samples: number[]): { p50: number; p99: number } {
  const s = [...samples].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99) };
}

class Client {
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
  request(method: string, p: string, body?: unknown, token = this.token): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const headers: Record<string, string> = { 'content-type': 'application/json', ...(token !== undefined ? { authorization: `Bearer ${token}` } : {}) };
      const req = https.request(`${this.url}${p}`, { method, agent: this.agent, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
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
    req.end();
    return () => req.destroy();
  }
  close(): void {
    this.agent.destroy();
  }
}

async function runConcurrent(total: number, concurrency: number, op: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < total) await op(next++);
    }),
  );
  const seconds = Number(process.hrtime.bigint() - started) / 1e9;
  return total / seconds;
}

/** CPU time (user + system) a process has used, in ms; undefined where /proc is not there. */
function cpuMs(pid: number): number | undefined {
  try {
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    const ticks = Number(fields[11]) + Number(fields[12]);
    return Number.isFinite(ticks) ? ticks * 10 : undefined;
  } catch {
    return undefined;
  }
}

/** Every process of the system by name, with etcd and NATS. */
function systemProcesses(env: Environment): Array<{ name: string; pid: number }> {
  return [...env.processes, env.etcd.process, env.nats.process].map((p) => ({ name: p.name.replace(/-\d+$/, ''), pid: p.pid }));
}

/** Runs `fn` and reports the CPU each process (and this one, the load generator) spent per operation. */
async function cpuPerOp(env: Environment, ops: number, fn: () => Promise<void>): Promise<Record<string, number>> {
  const procs = systemProcesses(env);
  const before = procs.map((p) => cpuMs(p.pid));
  const self = process.cpuUsage();
  await fn();
  const selfUsed = process.cpuUsage(self);
  const out: Record<string, number> = {};
  procs.forEach((p, i) => {
    const a = before[i];
    const b = cpuMs(p.pid);
    if (a !== undefined && b !== undefined) out[p.name] = (out[p.name] ?? 0) + (b - a) / ops;
  });
  out['load generator'] = (selfUsed.user + selfUsed.system) / 1000 / ops;
  for (const k of Object.keys(out)) out[k] = Math.round((out[k] as number) * 100) / 100;
  return out;
}

/**
 * CPU per request of a bare express-on-HTTPS server (https-floor.ts) under
 * the same creates at the given concurrency: what any Node HTTPS front pays
 * before doing work.
 */
async function httpsFloor(env: Environment, total: number, concurrency: number): Promise<{ ratePerSecond: number; serverCpuMs: number }> {
  const child = fork(path.join(__dirname, 'https-floor.js'), [env.pki.servingCert, env.pki.servingKey, env.pki.caCert], { stdio: 'ignore' });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m) => resolve((m as { port: number }).port));
      child.once('exit', (code) => reject(new Error(`the HTTPS floor server exited (${code})`)));
    });
    const client = new Client(env, `https://127.0.0.1:${port}`);
    try {
      for (let i = 0; i < 200; i++) await client.request('POST', '/api/v1/namespaces/default/configmaps', configMap(`warm-${i}`));
      const before = cpuMs(child.pid ?? 0) ?? 0;
      const ratePerSecond = await runConcurrent(total, concurrency, async (i) => {
        const res = await client.request('POST', '/api/v1/namespaces/default/configmaps', configMap(`floor-${i}`));
        if (res.status !== 201) throw new Error(`floor server answered ${res.status}`);
      });
      const serverCpuMs = ((cpuMs(child.pid ?? 0) ?? 0) - before) / total;
      return { ratePerSecond: Math.round(ratePerSecond), serverCpuMs: Math.round(serverCpuMs * 100) / 100 };
    } finally {
      client.close();
    }
  } finally {
    child.kill();
  }
}

/** Resident memory of a process, bytes (0 where /proc is not there). */
function rssBytes(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) * 1024;
  } catch {
    return 0;
  }
}

/** Runs `op` while sampling the resident memory of the named processes every 20 ms; returns the peaks. */
async function peakRss(env: Environment, names: string[], op: () => Promise<void>): Promise<Record<string, number>> {
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

/**
 * Unpaged lists of 10,000 ConfigMaps of 1 KiB and of 50,000 of 200 B: the
 * objects are written straight into etcd (the list is what is measured),
 * then listed through the gateway, next to the same range read straight
 * from etcd; with the peak resident memory of gateway and storage.
 */
async function bigLists(env: Environment, client: Client, etcd: Etcd3): Promise<unknown[]> {
  const out: unknown[] = [];
  for (const [count, bytes] of [[10_000, 1024], [50_000, 200]] as const) {
    const ns = `bench-big-${count}`;
    await client.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    const value = 'v'.repeat(bytes);
    await runConcurrent(count, 64, async (i) => {
      const name = `cm-${i}`;
      const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, uid: `u-${i}`, creationTimestamp: new Date().toISOString() }, data: { value } };
      await etcd.put(`/registry/configmaps/${ns}/${name}`).value(JSON.stringify(obj));
    });
    const gatewayMs: number[] = [];
    let bodyBytes = 0;
    const peaks = await peakRss(env, ['gateway', 'storage'], async () => {
      for (let i = 0; i < 3; i++) {
        const t = process.hrtime.bigint();
        const res = await client.request('GET', `/api/v1/namespaces/${ns}/configmaps`);
        gatewayMs.push(Number(process.hrtime.bigint() - t) / 1e6);
        if (res.status !== 200) throw new Error(`list of ${count} answered ${res.status}: ${res.body.slice(0, 200)}`);
        bodyBytes = res.body.length;
      }
    });
    const directMs: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t = process.hrtime.bigint();
      const all = await etcd.getAll().prefix(`/registry/configmaps/${ns}/`).strings();
      if (Object.keys(all).length !== count) throw new Error('direct read missed objects');
      directMs.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    out.push({ objects: count, objectBytes: bytes, responseMiB: Math.round((bodyBytes / 1048576) * 10) / 10, gatewayMs: stats(gatewayMs), etcdDirectMs: stats(directMs), peakRssMiB: peaks });
  }
  return out;
}

/**
 * 1,000 idle watches on one gateway: memory per watch; then create-to-event
 * latency of one reading watcher with those watches open and one watcher
 * that never reads, next to the same without them.
 */
async function idleWatchers(env: Environment, client: Client): Promise<unknown> {
  const gateway = env.processes.find((p) => p.name === 'gateway');
  if (!gateway) throw new Error('no gateway');
  await client.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench-idle' } });
  const latency = async (ns: string): Promise<{ p50: number; p99: number }> => {
    const list = JSON.parse((await client.request('GET', `/api/v1/namespaces/${ns}/configmaps`)).body) as { metadata: { resourceVersion: string } };
    const sentAt = new Map<string, bigint>();
    const samples: number[] = [];
    const stop = client.watch(`/api/v1/namespaces/${ns}/configmaps?watch=1&resourceVersion=${list.metadata.resourceVersion}`, (line) => {
      const ev = JSON.parse(line) as { type: string; object: { metadata: { name: string } } };
      const t = sentAt.get(ev.object.metadata.name);
      if (ev.type === 'ADDED' && t !== undefined) samples.push(Number(process.hrtime.bigint() - t) / 1e6);
    });
    await new Promise((r) => setTimeout(r, 300));
    for (let i = 0; i < 300; i++) {
      const name = `lat-${ns}-${i}`;
      sentAt.set(name, process.hrtime.bigint());
      void client.request('POST', `/api/v1/namespaces/${ns}/configmaps`, configMap(name));
      await new Promise((r) => setTimeout(r, 10));
    }
    const deadline = Date.now() + 10000;
    while (samples.length < 300 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    stop();
    return stats(samples);
  };
  await client.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench-lat-a' } });
  await client.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench-lat-b' } });
  const alone = await latency('bench-lat-a');
  const watchClient = new https.Agent({ keepAlive: true, maxSockets: 2000, ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) });
  const before = rssBytes(gateway.pid);
  const open: Array<() => void> = [];
  let started = 0;
  for (let i = 0; i < 1000; i++) {
    const req = https.request(`${env.url}/api/v1/namespaces/bench-idle/configmaps?watch=1&resourceVersion=0&timeoutSeconds=600`, { agent: watchClient }, (res) => {
      started++;
      res.resume();
    });
    req.on('error', () => undefined);
    req.end();
    open.push(() => req.destroy());
  }
  // Every watch answered, then quiet for a while before anything is measured.
  const settleBy = Date.now() + 60000;
  while (started < 1000 && Date.now() < settleBy) await new Promise((r) => setTimeout(r, 100));
  await new Promise((r) => setTimeout(r, 3000));
  const after = rssBytes(gateway.pid);
  // One watcher of the written namespace that never reads what it is sent.
  const stalled = https.request(`${env.url}/api/v1/namespaces/bench-lat-b/configmaps?watch=1&resourceVersion=0`, { agent: false, ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) }, (res) => res.pause());
  stalled.end();
  const crowded = await latency('bench-lat-b');
  stalled.destroy();
  for (const close of open) close();
  watchClient.destroy();
  return { idleWatches: 1000, answered: started, gatewayRssMiB: { before: Math.round(before / 1048576), after: Math.round(after / 1048576) }, kiBPerWatch: Math.round((after - before) / 1024 / 1000), createToEventMs: { alone, with1000IdleAndOneStalled: crowded } };
}

const configMap = (name: string) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { k: 'v'.repeat(64) } });

/**
 * A service-account token against a client certificate: creates at the
 * highest concurrency, back to back, each credential reused (so cached after
 * its first request); then the first request of fresh tokens (a JWT
 * signature check and the account lookup) against the second.
 */
async function tokenVersusCertificate(env: Environment, admin: Client): Promise<unknown> {
  const c = CONCURRENCY[CONCURRENCY.length - 1] as number;
  const issue = async (): Promise<string> => {
    const res = await admin.request('POST', '/api/v1/namespaces/default/serviceaccounts/default/token', { apiVersion: 'authentication.svc.io/v1', kind: 'TokenRequest', spec: {} });
    if (res.status !== 201) throw new Error(`TokenRequest answered ${res.status}: ${res.body}`);
    return (JSON.parse(res.body) as { status: { token: string } }).status.token;
  };
  const creates = async (client: Client, prefix: string): Promise<number> =>
    Math.round(
      await runConcurrent(CREATES_PER_LEVEL, c, async (i) => {
        const res = await client.request('POST', '/api/v1/namespaces/default/configmaps', configMap(`${prefix}-${i}`));
        if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.body}`);
      }),
    );
  const bound = await admin.request('POST', '/apis/rbac.authorization.svc.io/v1/namespaces/default/rolebindings', {
    metadata: { name: 'bench-edit' },
    roleRef: { apiGroup: 'rbac.authorization.svc.io', kind: 'ClusterRole', name: 'edit' },
    subjects: [{ kind: 'ServiceAccount', name: 'default', namespace: 'default' }],
  });
  if (bound.status !== 201) throw new Error(`binding the service account answered ${bound.status}: ${bound.body}`);
  const tokenClient = new Client(env, env.url, await issue());
  // The binding and the aggregated edit role reach authz within a second or two.
  for (let i = 0; i < 100; i++) {
    const res = await tokenClient.request('POST', '/api/v1/namespaces/default/configmaps', configMap(`sa-ready-${i}`));
    if (res.status === 201) break;
    if (i === 99) throw new Error(`the service account may not create: ${res.status} ${res.body}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  let certificate = 0;
  let token = 0;
  try {
    for (let i = 0; i < 50; i++) await tokenClient.request('POST', '/api/v1/namespaces/default/configmaps', configMap(`sa-warm-${i}`));
    certificate = await creates(admin, 'cert-again');
    token = await creates(tokenClient, 'sa');
  } finally {
    tokenClient.close();
  }
  // Fresh tokens over one warm connection, so that only the token differs between the two requests.
  const first: number[] = [];
  const second: number[] = [];
  const tokens: string[] = [];
  for (let i = 0; i < 100; i++) tokens.push(await issue());
  const fresh = new Client(env, env.url, tokens[0]);
  try {
    await fresh.request('GET', '/api/v1/namespaces/default/configmaps/c1-1');
    for (const t of tokens.slice(1)) {
      for (const samples of [first, second]) {
        const started = process.hrtime.bigint();
        const res = await fresh.request('GET', '/api/v1/namespaces/default/configmaps/c1-1', undefined, t);
        if (res.status !== 200) throw new Error(`get with a fresh token answered ${res.status}: ${res.body}`);
        samples.push(Number(process.hrtime.bigint() - started) / 1e6);
      }
    }
  } finally {
    fresh.close();
  }
  // A TokenReview reaches authn every time: fresh tokens (signature check and lookup) against the same token again.
  const reviewFresh: number[] = [];
  const reviewAgain: number[] = [];
  for (const t of tokens.slice(1)) {
    for (const samples of [reviewFresh, reviewAgain]) {
      const started = process.hrtime.bigint();
      const res = await admin.request('POST', '/apis/authentication.svc.io/v1/tokenreviews', { apiVersion: 'authentication.svc.io/v1', kind: 'TokenReview', spec: { token: t } });
      if (res.status !== 201 || !res.body.includes('"authenticated":true')) throw new Error(`TokenReview answered ${res.status}: ${res.body}`);
      samples.push(Number(process.hrtime.bigint() - started) / 1e6);
    }
  }
  return { concurrency: c, createsPerSecond: { certificate, token }, getWithFreshTokenMs: { first: stats(first), second: stats(second) }, tokenReviewMs: { fresh: stats(reviewFresh), again: stats(reviewAgain) } };
}

interface CreateFigures {
  createThroughput: Array<{ concurrency: number; gateway: number; etcd: number; ratio: number }>;
  cpuMsPerCreate: Record<string, number>;
  cpuMsPerDirectCreate: Record<string, number>;
}

/**
 * ConfigMap creates through the gateway next to the same guarded creates
 * straight into etcd, at each concurrency, with the CPU each process spent
 * per create at the highest one.
 */
async function createFigures(env: Environment, client: Client, etcd: Etcd3): Promise<CreateFigures> {
  const results: Partial<CreateFigures> = {};
  // Warm up both paths.
  for (let i = 0; i < 50; i++) await client.request('POST', '/api/v1/namespaces/default/configmaps', configMap(`warm-${i}`));
  const throughput: Array<{ concurrency: number; gateway: number; etcd: number; ratio: number }> = [];
  for (const c of CONCURRENCY) {
    let gateway = 0;
    const cpu = await cpuPerOp(env, CREATES_PER_LEVEL, async () => {
      gateway = await runConcurrent(CREATES_PER_LEVEL, c, async (i) => {
        const res = await client.request('POST', '/api/v1/namespaces/default/configmaps', configMap(`c${c}-${i}`));
        if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.body}`);
      });
    });
    if (c === CONCURRENCY[CONCURRENCY.length - 1]) results.cpuMsPerCreate = cpu;
    let direct = 0;
    const directCpu = await cpuPerOp(env, CREATES_PER_LEVEL, async () => {
      direct = await runConcurrent(CREATES_PER_LEVEL, c, async (i) => {
        const key = Buffer.from(`/registry/configmaps/default/direct-c${c}-${i}`);
        const value = Buffer.from(JSON.stringify({ ...configMap(`direct-c${c}-${i}`), metadata: { name: `direct-c${c}-${i}`, namespace: 'default', uid: 'x', creationTimestamp: new Date().toISOString() } }));
        const res = await etcd.kv.txn({ compare: [{ key, target: 'Create', result: 'Equal', create_revision: 0 }], success: [{ request_put: { key, value } }], failure: [] });
        if (!res.succeeded) throw new Error('direct create lost its guard');
      });
    });
    if (c === CONCURRENCY[CONCURRENCY.length - 1]) results.cpuMsPerDirectCreate = directCpu;
    throughput.push({ concurrency: c, gateway: Math.round(gateway), etcd: Math.round(direct), ratio: Math.round((gateway / direct) * 100) / 100 });
  }
  results.createThroughput = throughput;
  return results as CreateFigures;
}

/** etcd straight, as the raw floor: through the same TLS with a client certificate as storage. */
function directEtcd(env: Environment): Etcd3 {
  const storageIdentity = env.internalPki.identities.storage;
  return new Etcd3({
    hosts: env.etcd.endpoint,
    credentials: { rootCertificate: fs.readFileSync(env.internalPki.caCert), certChain: fs.readFileSync(storageIdentity.cert), privateKey: fs.readFileSync(storageIdentity.key) },
    // Big enough for the unpaged range reads of the list figures (the client's default is 4 MiB).
    grpcOptions: { 'grpc.max_receive_message_length': 512 * 1024 * 1024 },
  });
}

function formatThroughput(figures: CreateFigures): string[] {
  const lines = ['create throughput (ops/s)', '  concurrency  gateway   etcd direct  ratio'];
  for (const t of figures.createThroughput) lines.push(`  ${String(t.concurrency).padEnd(11)}  ${String(t.gateway).padEnd(8)}  ${String(t.etcd).padEnd(11)}  ${t.ratio}`);
  return lines;
}

function formatCpuPerCreate(figures: CreateFigures): string[] {
  const cpu = figures.cpuMsPerCreate;
  const directCpu = figures.cpuMsPerDirectCreate;
  if (!cpu || !directCpu) return [];
  const sum = (r: Record<string, number>): number => Object.values(r).reduce((a, b) => a + b, 0);
  const lines = [`CPU per create at concurrency ${CONCURRENCY[CONCURRENCY.length - 1]}, ms   gateway path  etcd direct`];
  for (const [name, ms] of Object.entries(cpu).sort((a, b) => b[1] - a[1])) lines.push(`  ${name.padEnd(20)}          ${ms.toFixed(2).padStart(6)}       ${(directCpu[name] ?? 0).toFixed(2).padStart(6)}`);
  lines.push(`  ${'total'.padEnd(20)}          ${sum(cpu).toFixed(2).padStart(6)}       ${sum(directCpu).toFixed(2).padStart(6)}`);
  return lines;
}

/** `BENCH_ONLY=creates make bench`: only the create throughput and the CPU per create, in a fresh environment. */
async function createsOnly(): Promise<void> {
  const env = await startEnvironment({ dir: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-')), authorizationMode: 'RBAC' });
  const client = new Client(env);
  const etcd = directEtcd(env);
  try {
    const figures = await createFigures(env, client, etcd);
    process.stdout.write([...formatThroughput(figures), ...formatCpuPerCreate(figures)].join('\n') + '\n');
    fs.mkdirSync(path.join(__dirname, '..', 'results'), { recursive: true });
    fs.writeFileSync(path.join(__dirname, '..', 'results', 'creates.json'), JSON.stringify(figures, null, 2));
  } finally {
    client.close();
    etcd.close();
    await env.stop(true);
  }
}

/** `BENCH_ONLY=crds make bench`: only the custom resource definition figures, in a fresh environment. */
async function customResourcesOnly(): Promise<void> {
  const env = await startEnvironment({ dir: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-')), authorizationMode: 'RBAC' });
  const client = new Client(env);
  try {
    const crds = await benchCustomResources(env, client);
    process.stdout.write(formatCustomResourceBench(crds).join('\n') + '\n');
    fs.mkdirSync(path.join(__dirname, '..', 'results'), { recursive: true });
    fs.writeFileSync(path.join(__dirname, '..', 'results', 'crds.json'), JSON.stringify(crds, null, 2));
  } finally {
    client.close();
    await env.stop(true);
  }
}

async function main(): Promise<void> {
  if (process.env['BENCH_ONLY'] === 'crds') return customResourcesOnly();
  if (process.env['BENCH_ONLY'] === 'creates') return createsOnly();
  // RBAC, as make up runs; the service account of the token figures is bound to edit in default.
  const env = await startEnvironment({ dir: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-')), authorizationMode: 'RBAC' });
  const client = new Client(env);
  const etcd = directEtcd(env);
  const results: Record<string, unknown> = { machine: { cpus: os.cpus().length, memoryGiB: Math.round(os.totalmem() / 2 ** 30), node: process.version }, createsPerLevel: CREATES_PER_LEVEL };
  try {
    Object.assign(results, await createFigures(env, client, etcd));
    results['serviceAccountToken'] = await tokenVersusCertificate(env, client);
    results['httpsFloor'] = await httpsFloor(env, CREATES_PER_LEVEL, CONCURRENCY[CONCURRENCY.length - 1] as number);

    const getSamples: number[] = [];
    for (let i = 0; i < 500; i++) {
      const t = process.hrtime.bigint();
      await client.request('GET', '/api/v1/namespaces/default/configmaps/c1-1');
      getSamples.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    await client.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench-list' } });
    for (let i = 0; i < 500; i++) await client.request('POST', '/api/v1/namespaces/bench-list/configmaps', configMap(`l-${i}`));
    const listSamples: number[] = [];
    for (let i = 0; i < 50; i++) {
      const t = process.hrtime.bigint();
      await client.request('GET', '/api/v1/namespaces/bench-list/configmaps');
      listSamples.push(Number(process.hrtime.bigint() - t) / 1e6);
    }
    results['getMs'] = stats(getSamples);
    results['list500Ms'] = stats(listSamples);

    // Create-to-watch-event latency at ~100 creates/s.
    await client.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'bench-watch' } });
    const list = JSON.parse((await client.request('GET', '/api/v1/namespaces/bench-watch/configmaps')).body) as { metadata: { resourceVersion: string } };
    const sentAt = new Map<string, bigint>();
    const watchSamples: number[] = [];
    const stop = client.watch(`/api/v1/namespaces/bench-watch/configmaps?watch=1&resourceVersion=${list.metadata.resourceVersion}`, (line) => {
      const ev = JSON.parse(line) as { type: string; object: { metadata: { name: string } } };
      const t = sentAt.get(ev.object.metadata.name);
      if (ev.type === 'ADDED' && t !== undefined) watchSamples.push(Number(process.hrtime.bigint() - t) / 1e6);
    });
    await new Promise((r) => setTimeout(r, 300));
    const WATCH_CREATES = 500;
    for (let i = 0; i < WATCH_CREATES; i++) {
      const name = `w-${i}`;
      sentAt.set(name, process.hrtime.bigint());
      void client.request('POST', '/api/v1/namespaces/bench-watch/configmaps', configMap(name));
      await new Promise((r) => setTimeout(r, 10));
    }
    const deadline = Date.now() + 10000;
    while (watchSamples.length < WATCH_CREATES && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    stop();
    results['createToWatchMs'] = { ...stats(watchSamples), received: watchSamples.length, sent: WATCH_CREATES };

    // Raw NATS publish-to-receive on the same server, the floor for the above.
    // With the publisher's certificate (NATS lets only it publish), on a subject outside the change stream.
    const fanoutIdentity = env.internalPki.identities['watch-fanout'];
    const nc = await connect({ servers: env.nats.url, tls: { caFile: env.internalPki.caCert, certFile: fanoutIdentity.cert, keyFile: fanoutIdentity.key } });
    const natsSamples: number[] = [];
    const sub = nc.subscribe('_INBOX.bench-latency', { callback: (_e, m) => natsSamples.push(Number(process.hrtime.bigint() - BigInt(new TextDecoder().decode(m.data))) / 1e6) });
    for (let i = 0; i < 500; i++) {
      nc.publish('_INBOX.bench-latency', new TextEncoder().encode(String(process.hrtime.bigint())));
      await new Promise((r) => setTimeout(r, 2));
    }
    await nc.flush();
    await new Promise((r) => setTimeout(r, 200));
    sub.unsubscribe();
    await nc.close();
    results['natsPublishToReceiveMs'] = stats(natsSamples);

    results['watchers'] = await idleWatchers(env, client);
    results['bigLists'] = await bigLists(env, client, etcd);

    results['validationRules'] = await benchValidationRules((method, p, body) => client.request(method, p, body));
    // Last: the definitions stay installed, so they would weigh on the figures after them.
    results['customResources'] = await benchCustomResources(env, client);
    results['rbacDecision'] = benchRbac(10000);
    const applyBench = benchApply(2000);
    results['apply200FieldsMs'] = { p50: applyBench.p50Ms, p99: applyBench.p99Ms, fields: applyBench.fields };
  } finally {
    client.close();
    etcd.close();
    await env.stop(true);
  }

  const fmt = (n: unknown): string => (typeof n === 'number' ? (n < 10 ? n.toFixed(2) : n.toFixed(0)) : String(n));
  const lines = formatThroughput(results as unknown as CreateFigures);
  const p = (k: string): string => {
    const v = results[k] as { p50: number; p99: number };
    return `p50 ${fmt(v.p50)} ms  p99 ${fmt(v.p99)} ms`;
  };
  type P = { p50: number; p99: number };
  const sa = results['serviceAccountToken'] as { concurrency: number; createsPerSecond: { certificate: number; token: number }; getWithFreshTokenMs: { first: P; second: P }; tokenReviewMs: { fresh: P; again: P } };
  lines.push(`creates at concurrency ${sa.concurrency}: client certificate (system:masters) ${sa.createsPerSecond.certificate}/s, service-account token (RBAC, bound to edit) ${sa.createsPerSecond.token}/s`);
  lines.push(`get with a fresh token      first p50 ${fmt(sa.getWithFreshTokenMs.first.p50)} ms p99 ${fmt(sa.getWithFreshTokenMs.first.p99)} ms; second p50 ${fmt(sa.getWithFreshTokenMs.second.p50)} ms p99 ${fmt(sa.getWithFreshTokenMs.second.p99)} ms`);
  lines.push(`TokenReview                 fresh token p50 ${fmt(sa.tokenReviewMs.fresh.p50)} ms p99 ${fmt(sa.tokenReviewMs.fresh.p99)} ms; same token again p50 ${fmt(sa.tokenReviewMs.again.p50)} ms p99 ${fmt(sa.tokenReviewMs.again.p99)} ms`);
  lines.push(`get one object              ${p('getMs')}`);
  lines.push(`list 500 objects            ${p('list500Ms')}`);
  lines.push(`create -> watch event       ${p('createToWatchMs')}  (${(results['createToWatchMs'] as { received: number }).received}/${(results['createToWatchMs'] as { sent: number }).sent} events at ~100/s)`);
  lines.push(`raw NATS publish -> receive ${p('natsPublishToReceiveMs')}`);
  lines.push(`apply, 200 fields, 3 mgrs   ${p('apply200FieldsMs')}`);
  const rbac = results['rbacDecision'] as { objects: number; p50Us: number; p99Us: number };
  lines.push(`RBAC decision, ${rbac.objects} roles and bindings loaded: p50 ${rbac.p50Us} us  p99 ${rbac.p99Us} us (inside authz, no gRPC)`);
  for (const l of results['bigLists'] as Array<{ objects: number; objectBytes: number; responseMiB: number; gatewayMs: { p50: number }; etcdDirectMs: { p50: number }; peakRssMiB: Record<string, number> }>) {
    lines.push(`unpaged list ${l.objects} x ${l.objectBytes} B (${l.responseMiB} MiB): gateway p50 ${fmt(l.gatewayMs.p50)} ms, etcd direct ${fmt(l.etcdDirectMs.p50)} ms; peak RSS gateway ${l.peakRssMiB['gateway']} MiB, storage ${l.peakRssMiB['storage']} MiB`);
  }
  const w = results['watchers'] as { kiBPerWatch: number; gatewayRssMiB: { before: number; after: number }; createToEventMs: { alone: { p50: number; p99: number }; with1000IdleAndOneStalled: { p50: number; p99: number } } };
  lines.push(`1000 idle watches: gateway RSS ${w.gatewayRssMiB.before} -> ${w.gatewayRssMiB.after} MiB (${w.kiBPerWatch} KiB per watch); create -> event p99 ${fmt(w.createToEventMs.alone.p99)} ms alone, ${fmt(w.createToEventMs.with1000IdleAndOneStalled.p99)} ms beside them and a stalled watcher`);
  lines.push(...formatCustomResourceBench(results['customResources'] as CustomResourceBench));
  lines.push(...formatCpuPerCreate(results as unknown as CreateFigures));
  const floor = results['httpsFloor'] as { ratePerSecond: number; serverCpuMs: number } | undefined;
  if (floor) lines.push(`bare express on HTTPS, same POSTs: ${floor.serverCpuMs.toFixed(2)} ms CPU per request (${floor.ratePerSecond} req/s)`);
  lines.push(...formatValidationRules(results['validationRules'] as ValidationRulesFigures));
  process.stdout.write(lines.join('\n') + '\n');
  fs.mkdirSync(path.join(__dirname, '..', 'results'), { recursive: true });
  fs.writeFileSync(path.join(__dirname, '..', 'results', 'latest.json'), JSON.stringify(results, null, 2));
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
