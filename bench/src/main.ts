import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import type { Etcd3 } from 'etcd3';
import { connect } from 'nats';
import { benchRbac } from './rbac-decision';
import { benchAdmission, formatAdmission, type AdmissionFigures } from './admission';
import { benchApply } from './apply';
import { startTracingSink, tracingRequested } from './tracing-sink';
import { startEnvironment, type Environment } from '@svc/testenv';

/** Extra node flags for every service of the system (`BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"` profiles them). */
const NODE_ARGS = (process.env['BENCH_NODE_ARGS'] ?? '').split(' ').filter((a) => a !== '');

/**
 * `BENCH_AUDIT=1`: the gateway audits with the default policy
 * (deploy/audit-policy.yaml) to `<dir>/logs/audit.log`, as `make up` runs it.
 */
function benchEnvironmentOptions(dir: string): Parameters<typeof startEnvironment>[0] {
  const audit = process.env['BENCH_AUDIT'] === '1' ? { audit: { policyFile: path.join(__dirname, '..', '..', 'deploy', 'audit-policy.yaml'), logPath: path.join(dir, 'logs', 'audit.log') } } : {};
  return { dir, authorizationMode: 'RBAC', nodeArgs: NODE_ARGS, ...audit };
}
import { benchValidationRules, formatValidationRules, type ValidationRulesFigures } from './validation-rules';
import { benchCustomResources, formatCustomResourceBench, type CustomResourceBench } from './custom-resources';
import { benchGarbageCollection, formatGarbageCollection, type GarbageCollectionFigures } from './garbage-collection';
import { Client, cpuMs, cpuPerOp, directEtcd, fmt, rssBytes, runConcurrent, stats } from './harness';
import { benchLists, formatLists, type ListFigures } from './lists';
import { benchWatchers, formatWatchers, type WatchersFigures } from './watchers';
import { benchSecretEncryption, formatSecretEncryption } from './secret-encryption';
import { APF_ENVIRONMENT, benchPriorityAndFairness, formatPriorityAndFairness } from './priority-and-fairness';

/**
 * `make bench`: our figures next to the raw limits measured in the same run.
 * Creates through the gateway vs. the same guarded creates straight into
 * etcd; get/list latency; create-to-watch-event latency vs. raw NATS
 * publish-to-receive; 1,000 watchers of one namespace under creates vs.
 * bare Node HTTPS and raw NATS fan-out (watchers.ts); unpaged lists vs. the etcd range read
 * (lists.ts); server-side apply of a 200-field object.
 * `BENCH_ONLY=<name>` runs one scenario of SCENARIOS alone, in a fresh
 * environment, and writes `bench/results/<name>.json`.
 * Every loop is bounded in count; all traffic stays on 127.0.0.1.
 */
const CREATES_PER_LEVEL = Number(process.env['BENCH_CREATES'] ?? '1000');
const CONCURRENCY = [1, 16, 64];

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
  // The gateway may end a watcher that does not read; that is not a failure of the bench.
  stalled.on('error', () => undefined);
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

interface Scenario {
  /** Its figures (written to `bench/results/<name>.json`) and their lines in the output. */
  run(env: Environment, client: Client, etcd: Etcd3): Promise<{ figures: unknown; lines: string[] }>;
  /** Options of its environment besides the bench's own. */
  environment?: Parameters<typeof startEnvironment>[0];
}

/** What `BENCH_ONLY=<name> make bench` runs alone, each in a fresh environment. */
const SCENARIOS: Record<string, Scenario> = {
  /** The create throughput and the CPU per create. */
  creates: {
    run: async (env, client, etcd) => {
      const figures = await createFigures(env, client, etcd);
      // The cost of encrypting Secrets at rest: the same creates with and without, in this environment.
      const secrets = await benchSecretEncryption(env, client, etcd, CREATES_PER_LEVEL, CONCURRENCY[CONCURRENCY.length - 1] as number);
      return { figures: { ...figures, secretEncryption: secrets }, lines: [...formatThroughput(figures), ...formatCpuPerCreate(figures), ...formatSecretEncryption(secrets)] };
    },
  },
  /** The custom resource definition figures. */
  crds: {
    run: async (env, client) => {
      const figures = await benchCustomResources(env, client);
      return { figures, lines: formatCustomResourceBench(figures) };
    },
  },
  /** 1,000 watchers of one namespace under ~100 creates/s of 1 KiB, next to bare Node HTTPS and raw NATS fan-out. */
  watchers: {
    run: async (env, client) => {
      const figures = await benchWatchers(env, client);
      return { figures, lines: formatWatchers(figures) };
    },
  },
  /** Creates with nothing configured, one validating webhook on loopback, a policy of three CEL validations. */
  admission: {
    run: async (env, client) => {
      const figures = await benchAdmission(env, client);
      return { figures, lines: formatAdmission(figures) };
    },
  },
  /** 10,000 dependents of 100 owners: the time until all are collected, the controller-manager's memory per object. */
  gc: {
    run: async (env, client) => {
      const figures = await benchGarbageCollection(env, client);
      return { figures, lines: formatGarbageCollection(figures) };
    },
  },
  /** API Priority and Fairness: gateway CPU per create with it on and off, a second flow's gets under a flood from one flow. */
  apf: {
    environment: APF_ENVIRONMENT,
    run: async (env, client) => {
      const figures = await benchPriorityAndFairness(env, client);
      return { figures, lines: formatPriorityAndFairness(figures) };
    },
  },
  /** Unpaged lists (consistent and resourceVersion=0, gzip) next to the etcd range read. */
  lists: {
    run: async (env, client, etcd) => {
      const figures = await benchLists(env, client, etcd);
      return { figures, lines: formatLists(figures) };
    },
  },
};

async function runAlone(name: string, scenario: Scenario): Promise<void> {
  const sink = tracingRequested() ? await startTracingSink() : undefined;
  const env = await startEnvironment({ ...benchEnvironmentOptions(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'))), ...scenario.environment, ...(sink ? { env: sink.env } : {}) });
  const client = new Client(env);
  const etcd = directEtcd(env);
  try {
    const started = process.hrtime.bigint();
    const { figures, lines } = await scenario.run(env, client, etcd);
    const seconds = Math.round(Number(process.hrtime.bigint() - started) / 1e9);
    const traced = sink ? { tracing: sink.received() } : {};
    if (sink) lines.push(`tracing on (100% sampled, OTLP/HTTP protobuf to a local sink): ${sink.received().exports} exports, ${fmt(sink.received().bytes / 1024)} KiB`);
    process.stdout.write([...lines, `(${name}: ${seconds} s)`].join('\n') + '\n');
    fs.mkdirSync(path.join(__dirname, '..', 'results'), { recursive: true });
    fs.writeFileSync(path.join(__dirname, '..', 'results', `${name}${sink ? '-tracing' : ''}.json`), JSON.stringify({ seconds, ...traced, ...(figures as object) }, null, 2));
  } finally {
    client.close();
    etcd.close();
    await env.stop(true);
    await sink?.close();
  }
}

async function main(): Promise<void> {
  const only = process.env['BENCH_ONLY'];
  if (only) {
    const scenario = SCENARIOS[only];
    if (!scenario) throw new Error(`BENCH_ONLY=${only}: no such scenario (${Object.keys(SCENARIOS).join(', ')})`);
    return runAlone(only, scenario);
  }
  // RBAC, as make up runs; the service account of the token figures is bound to edit in default.
  const env = await startEnvironment(benchEnvironmentOptions(fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-'))));
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
    results['watchFanout'] = await benchWatchers(env, client);
    Object.assign(results, await benchLists(env, client, etcd));

    results['validationRules'] = await benchValidationRules((method, p, body) => client.request(method, p, body));
    results['admission'] = await benchAdmission(env, client);
    results['garbageCollection'] = await benchGarbageCollection(env, client);
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
  lines.push(...formatLists(results as unknown as ListFigures));
  const w = results['watchers'] as { kiBPerWatch: number; gatewayRssMiB: { before: number; after: number }; createToEventMs: { alone: { p50: number; p99: number }; with1000IdleAndOneStalled: { p50: number; p99: number } } };
  lines.push(`1000 idle watches: gateway RSS ${w.gatewayRssMiB.before} -> ${w.gatewayRssMiB.after} MiB (${w.kiBPerWatch} KiB per watch); create -> event p99 ${fmt(w.createToEventMs.alone.p99)} ms alone, ${fmt(w.createToEventMs.with1000IdleAndOneStalled.p99)} ms beside them and a stalled watcher`);
  lines.push(...formatWatchers(results['watchFanout'] as WatchersFigures));
  lines.push(...formatCustomResourceBench(results['customResources'] as CustomResourceBench));
  lines.push(...formatCpuPerCreate(results as unknown as CreateFigures));
  const floor = results['httpsFloor'] as { ratePerSecond: number; serverCpuMs: number } | undefined;
  if (floor) lines.push(`bare express on HTTPS, same POSTs: ${floor.serverCpuMs.toFixed(2)} ms CPU per request (${floor.ratePerSecond} req/s)`);
  lines.push(...formatValidationRules(results['validationRules'] as ValidationRulesFigures));
  lines.push(...formatAdmission(results['admission'] as AdmissionFigures));
  lines.push(...formatGarbageCollection(results['garbageCollection'] as GarbageCollectionFigures));
  process.stdout.write(lines.join('\n') + '\n');
  fs.mkdirSync(path.join(__dirname, '..', 'results'), { recursive: true });
  fs.writeFileSync(path.join(__dirname, '..', 'results', 'latest.json'), JSON.stringify(results, null, 2));
}

main().catch((err: unknown) => {
  process.stderr.write(`bench: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
