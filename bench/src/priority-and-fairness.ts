import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import { freePort, waitForPort, type Environment } from '@svc/testenv';
import { Client, cpuMs, ensureNamespace, runConcurrent, stats, type Percentiles } from './harness';

/**
 * What API Priority and Fairness costs and what it buys, in one run:
 *
 * - CPU of the gateway per create, as a service account (classified, not
 *   exempt), through the environment's gateway (priority and fairness on)
 *   and through a second gateway started with the same flags and
 *   `--enable-priority-and-fairness=false`, in alternating rounds.
 * - A second flow's gets, unloaded and while another service account of
 *   its priority level floods it with lists of 2,000 ConfigMaps (each list
 *   10 seats), on both gateways: its p50/p99 and the flood's refusals.
 *
 * The environment's gateways run with small limits (APF_ENVIRONMENT), so a
 * flood from one client of a two-core machine reaches them.
 */

export const APF_ENVIRONMENT = { serviceArgs: { gateway: ['--max-requests-inflight=20', '--max-mutating-requests-inflight=10'] } };

const NS = 'bench-apf';
const OBJECTS = 2000;
const CREATES = Number(process.env['BENCH_APF_CREATES'] ?? '1000');
const ROUNDS = 3;
/** Below the mutating in-flight limit (10) the gateway without priority and fairness applies. */
const CONCURRENCY = 8;
const GETS = 300;
const FLOOD_CONCURRENCY = 32;

export interface ApfFigures {
  createsPerRound: number;
  concurrency: number;
  gatewayCpuMsPerCreate: { on: number[]; off: number[] };
  createsPerSecond: { on: number[]; off: number[] };
  flood: Record<'on' | 'off', { unloaded: Percentiles; flooded: Percentiles; floodLists: number; floodRefused: number; floodFailed: number; readerRefused: number }>;
}

/** A second gateway with the first one's flags, priority and fairness off, on a free port. */
async function startGatewayWithoutApf(env: Environment): Promise<{ url: string; proc: ChildProcess }> {
  const gateway = env.processes.find((p) => p.name === 'gateway');
  if (!gateway) throw new Error('no gateway process');
  const args = fs.readFileSync(`/proc/${gateway.pid}/cmdline`, 'utf8').split('\0').filter(Boolean).slice(1);
  const port = await freePort();
  const own = args.map((a) => (a.startsWith('--listen=') ? `--listen=127.0.0.1:${port}` : a));
  const proc = spawn(process.execPath, [...own, '--enable-priority-and-fairness=false'], { stdio: 'ignore' });
  await waitForPort('127.0.0.1', port, 20_000, () => proc.exitCode === null);
  const url = `https://127.0.0.1:${port}`;
  const probe = new Client(env, url);
  try {
    for (let i = 0; i < 300 && (await probe.request('GET', '/readyz')).status !== 200; i++) await new Promise((r) => setTimeout(r, 100));
  } finally {
    probe.close();
  }
  return { url, proc };
}

async function tokenFor(admin: Client, name: string): Promise<string> {
  await admin.request('POST', `/api/v1/namespaces/${NS}/serviceaccounts`, { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } });
  const res = await admin.request('POST', `/api/v1/namespaces/${NS}/serviceaccounts/${name}/token`, { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {} });
  if (res.status !== 201) throw new Error(`token for ${name}: ${res.status} ${res.body.slice(0, 200)}`);
  return String((JSON.parse(res.body) as { status: { token: string } }).status.token);
}

async function setUp(admin: Client): Promise<Record<'writer' | 'flooder' | 'reader', string>> {
  await ensureNamespace(admin, NS);
  const tokens = { writer: await tokenFor(admin, 'writer'), flooder: await tokenFor(admin, 'flooder'), reader: await tokenFor(admin, 'reader') };
  const create = async (p: string, body: Record<string, unknown>): Promise<void> => {
    const res = await admin.request('POST', p, body);
    if (res.status !== 201) throw new Error(`POST ${p}: ${res.status} ${res.body.slice(0, 200)}`);
  };
  const rbac = `/apis/rbac.authorization.k8s.io/v1/namespaces/${NS}`;
  const flowcontrol = '/apis/flowcontrol.svc.io/v1';
  const objects: Array<[string, Record<string, unknown>]> = [
    [`${rbac}/roles`, { kind: 'Role', metadata: { name: 'configmaps' }, rules: [{ apiGroups: [''], resources: ['configmaps'], verbs: ['*'] }] }],
    [
      `${rbac}/rolebindings`,
      {
        kind: 'RoleBinding',
        metadata: { name: 'configmaps' },
        roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'configmaps' },
        subjects: Object.keys(tokens).map((name) => ({ kind: 'ServiceAccount', name, namespace: NS })),
      },
    ],
    // The flows share one level with queues, as workload-low does, ahead of the bootstrap schemas.
    [
      `${flowcontrol}/prioritylevelconfigurations`,
      {
        apiVersion: 'flowcontrol.svc.io/v1',
        kind: 'PriorityLevelConfiguration',
        metadata: { name: NS },
        spec: { type: 'Limited', limited: { nominalConcurrencyShares: 5000, limitResponse: { type: 'Queue', queuing: { queues: 64, handSize: 6, queueLengthLimit: 2 } } } },
      },
    ],
    [
      `${flowcontrol}/flowschemas`,
      {
        apiVersion: 'flowcontrol.svc.io/v1',
        kind: 'FlowSchema',
        metadata: { name: NS },
        spec: {
          priorityLevelConfiguration: { name: NS },
          matchingPrecedence: 50,
          distinguisherMethod: { type: 'ByUser' },
          rules: [{ subjects: [{ kind: 'ServiceAccount', serviceAccount: { namespace: NS, name: '*' } }], resourceRules: [{ verbs: ['*'], apiGroups: ['*'], resources: ['*'], namespaces: [NS] }] }],
        },
      },
    ],
  ];
  for (const [p, body] of objects) await create(p, body);
  await runConcurrent(OBJECTS, 16, (i) => create(`/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `big-${i}` }, data: { value: 'v'.repeat(256) } }));
  return tokens;
}

async function getLatencies(reader: Client, count: number): Promise<{ samples: number[]; refused: number }> {
  const samples: number[] = [];
  let refused = 0;
  for (let i = 0; i < count; i++) {
    const t = process.hrtime.bigint();
    const res = await reader.request('GET', `/api/v1/namespaces/${NS}/configmaps/big-${i % OBJECTS}`).catch(() => ({ status: 0 }));
    samples.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (res.status !== 200) refused++;
  }
  return { samples, refused };
}

async function floodFigures(env: Environment, url: string, tokens: Record<'flooder' | 'reader', string>): Promise<ApfFigures['flood']['on']> {
  const reader = new Client(env, url, tokens.reader);
  const flooder = new Client(env, url, tokens.flooder);
  try {
    // Warm: the gateway's cache of ConfigMaps and its object count (lists take 10 seats once it is known).
    for (let i = 0; i < 5; i++) await flooder.request('GET', `/api/v1/namespaces/${NS}/configmaps?resourceVersion=0`);
    await new Promise((r) => setTimeout(r, 1500));
    const unloaded = await getLatencies(reader, GETS);
    let stop = false;
    let lists = 0;
    let refused = 0;
    let failed = 0;
    // resourceVersion=0, as informers list: the gateway's cache answers, so the flood loads the gateway, not storage.
    const flood = Promise.all(
      Array.from({ length: FLOOD_CONCURRENCY }, async () => {
        while (!stop) {
          const res = await flooder.request('GET', `/api/v1/namespaces/${NS}/configmaps?resourceVersion=0`).catch(() => ({ status: 0 }));
          lists++;
          if (res.status === 429) {
            refused++;
            // A refused client waits a little, as clients honouring Retry-After do (a tenth of it, to keep the pressure on).
            await new Promise((r) => setTimeout(r, 100));
          } else if (res.status !== 200) failed++;
        }
      }),
    );
    await new Promise((r) => setTimeout(r, 1000));
    const flooded = await getLatencies(reader, GETS);
    stop = true;
    await flood;
    return { unloaded: stats(unloaded.samples), flooded: stats(flooded.samples), floodLists: lists, floodRefused: refused, floodFailed: failed, readerRefused: unloaded.refused + flooded.refused };
  } finally {
    reader.close();
    flooder.close();
  }
}

export async function benchPriorityAndFairness(env: Environment, admin: Client): Promise<ApfFigures> {
  const tokens = await setUp(admin);
  const off = await startGatewayWithoutApf(env);
  const gateways = { on: { url: env.url, pid: () => env.processes.find((p) => p.name === 'gateway')?.pid ?? 0 }, off: { url: off.url, pid: () => off.proc.pid ?? 0 } };
  try {
    const figures: ApfFigures = { createsPerRound: CREATES, concurrency: CONCURRENCY, gatewayCpuMsPerCreate: { on: [], off: [] }, createsPerSecond: { on: [], off: [] }, flood: {} as ApfFigures['flood'] };
    // Wait until the environment's gateway classifies into the bench's schema (it reads the configuration every second).
    const probe = new Client(env, env.url, tokens.reader);
    for (let i = 0; i < 100; i++) {
      const res = await probe.requestRaw('GET', `/api/v1/namespaces/${NS}/configmaps/big-0`);
      if (res.headers['x-svc-pf-flowschema-uid']) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    probe.close();
    for (const mode of ['on', 'off'] as const) {
      const writer = new Client(env, gateways[mode].url, tokens.writer);
      for (let i = 0; i < 100; i++) await writer.request('POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `warm-${mode}-${i}` } });
      writer.close();
    }
    for (let round = 0; round < ROUNDS; round++) {
      for (const mode of round % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
        const writer = new Client(env, gateways[mode].url, tokens.writer);
        const pid = gateways[mode].pid();
        const before = cpuMs(pid) ?? 0;
        const rate = await runConcurrent(CREATES, CONCURRENCY, async (i) => {
          const res = await writer.request('POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `c-${mode}-${round}-${i}` } });
          if (res.status !== 201) throw new Error(`create through the gateway (${mode}) answered ${res.status}: ${res.body.slice(0, 200)}`);
        });
        figures.gatewayCpuMsPerCreate[mode].push(Math.round((((cpuMs(pid) ?? 0) - before) / CREATES) * 100) / 100);
        figures.createsPerSecond[mode].push(Math.round(rate));
        writer.close();
      }
    }
    figures.flood.on = await floodFigures(env, gateways.on.url, tokens);
    figures.flood.off = await floodFigures(env, gateways.off.url, tokens);
    return figures;
  } finally {
    // Nothing of it needs a graceful stop: the environment's backends go next.
    off.proc.kill('SIGKILL');
  }
}

export function formatPriorityAndFairness(f: ApfFigures): string[] {
  const avg = (xs: number[]): string => (xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)).toFixed(2);
  const row = (label: string, on: string, off: string): string => `  ${label.padEnd(44)}${on.padEnd(26)}${off}`;
  const ms = (p: Percentiles): string => `${p.p50.toFixed(1)} / ${p.p99.toFixed(1)}`;
  return [
    `API Priority and Fairness: creates as a service account at concurrency ${f.concurrency}, ${f.createsPerRound} per round, alternating rounds`,
    row('', 'APF on', 'APF off (max-in-flight)'),
    row('gateway CPU per create, ms, each round', f.gatewayCpuMsPerCreate.on.join(', '), f.gatewayCpuMsPerCreate.off.join(', ')),
    row('gateway CPU per create, ms, mean', avg(f.gatewayCpuMsPerCreate.on), avg(f.gatewayCpuMsPerCreate.off)),
    row('creates/s, each round', f.createsPerSecond.on.join(', '), f.createsPerSecond.off.join(', ')),
    `A second flow's gets (p50 / p99, ms) unloaded and under a flood of ${FLOOD_CONCURRENCY} concurrent lists of ${OBJECTS} objects from one flow of its level (limits 20 + 10)`,
    row('gets unloaded', ms(f.flood.on.unloaded), ms(f.flood.off.unloaded)),
    row('gets under the flood', ms(f.flood.on.flooded), ms(f.flood.off.flooded)),
    row('gets not answered 200', String(f.flood.on.readerRefused), String(f.flood.off.readerRefused)),
    row('flood lists sent / refused (429) / failed', `${f.flood.on.floodLists} / ${f.flood.on.floodRefused} / ${f.flood.on.floodFailed}`, `${f.flood.off.floodLists} / ${f.flood.off.floodRefused} / ${f.flood.off.floodFailed}`),
  ];
}
