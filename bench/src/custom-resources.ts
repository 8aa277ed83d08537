import * as fs from 'node:fs';
import type { Environment } from '@svc/testenv';

/**
 * Custom resource definitions at scale: 1,000 definitions installed with
 * bounded concurrency (each waited for until its resource is served), the
 * memory they cost the gateway and watch-fanout, discovery and OpenAPI
 * latency with them in place, and the time from a definition's create
 * until its resource answers, over further definitions created one by one.
 */

export interface Requester {
  request(method: string, path: string, body?: unknown): Promise<{ status: number; body: string }>;
}

export interface CustomResourceBench {
  definitions: number;
  groups: number;
  installSeconds: number;
  rssMiB: Record<string, { before: number; after: number; kiBPerDefinition: number }>;
  latencyMs: Record<string, { p50: number; p99: number; first: number; samples: number }>;
  createToServedMs: { p50: number; p99: number; samples: number };
}

const DEFINITIONS = Number(process.env['BENCH_CRDS'] ?? '1000');
const INSTALL_CONCURRENCY = 16;
const PER_GROUP = 4;
const SERVED_SAMPLES = 50;

function percentile(sorted: number[], p: number): number {
  return sorted.length === 0 ? NaN : (sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] as number);
}

function rssMiB(pid: number): number {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024;
  } catch {
    return 0;
  }
}

function definition(i: number): { body: unknown; collection: string } {
  const group = `g${Math.floor(i / PER_GROUP)}.bench.example.com`;
  const plural = `kind${i}s`;
  const body = {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.${group}` },
    spec: {
      group,
      scope: 'Namespaced',
      names: { plural, singular: `kind${i}`, kind: `Kind${i}` },
      versions: [
        {
          name: 'v1',
          served: true,
          storage: true,
          subresources: { status: {}, scale: { specReplicasPath: '.spec.replicas', statusReplicasPath: '.status.replicas' } },
          schema: {
            openAPIV3Schema: {
              type: 'object',
              properties: {
                spec: { type: 'object', properties: { replicas: { type: 'integer', minimum: 0 }, image: { type: 'string' }, ports: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, port: { type: 'integer' } } } } } },
                status: { type: 'object', properties: { replicas: { type: 'integer' }, ready: { type: 'boolean' } } },
              },
            },
          },
        },
      ],
    },
  };
  return { body, collection: `/apis/${group}/v1/namespaces/default/${plural}` };
}

/** Creates a definition and returns the milliseconds until its resource answers a list. */
async function install(client: Requester, i: number): Promise<number> {
  const { body, collection } = definition(i);
  const started = process.hrtime.bigint();
  const created = await client.request('POST', '/apis/apiextensions.svc.io/v1/customresourcedefinitions', body);
  if (created.status !== 201) throw new Error(`definition ${i}: ${created.status} ${created.body.slice(0, 200)}`);
  for (let tries = 0; ; tries++) {
    if ((await client.request('GET', `${collection}?limit=1`)).status === 200) return Number(process.hrtime.bigint() - started) / 1e6;
    if (tries > 3000) throw new Error(`definition ${i} was not served within 30 s`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function timed(client: Requester, path: string, samples: number): Promise<{ p50: number; p99: number; first: number; samples: number }> {
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const started = process.hrtime.bigint();
    const res = await client.request('GET', path);
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  const first = times[0] as number;
  const sorted = [...times].sort((a, b) => a - b);
  const round = (n: number): number => Math.round(n * 100) / 100;
  return { p50: round(percentile(sorted, 50)), p99: round(percentile(sorted, 99)), first: round(first), samples };
}

export async function benchCustomResources(env: Environment, client: Requester): Promise<CustomResourceBench> {
  const watched = env.processes.filter((p) => p.name === 'gateway' || p.name.startsWith('watch-fanout'));
  // Let start-up garbage settle, so the before figure is not inflated by it.
  await new Promise((r) => setTimeout(r, 2000));
  const before = Object.fromEntries(watched.map((p) => [p.name, rssMiB(p.pid)]));

  let next = 0;
  const started = Date.now();
  await Promise.all(
    Array.from({ length: INSTALL_CONCURRENCY }, async () => {
      while (next < DEFINITIONS) await install(client, next++);
    }),
  );
  const installSeconds = Math.round((Date.now() - started) / 100) / 10;
  await new Promise((r) => setTimeout(r, 2000));
  const rss: CustomResourceBench['rssMiB'] = {};
  for (const p of watched) {
    const after = rssMiB(p.pid);
    const b = before[p.name] ?? 0;
    rss[p.name] = { before: Math.round(b), after: Math.round(after), kiBPerDefinition: Math.round(((after - b) * 1024) / DEFINITIONS) };
  }

  const latencyMs: CustomResourceBench['latencyMs'] = {
    'GET /apis': await timed(client, '/apis', 50),
    'GET /apis/<group>/v1': await timed(client, '/apis/g0.bench.example.com/v1', 50),
    'GET /openapi/v2': await timed(client, '/openapi/v2', 5),
    'GET /openapi/v3': await timed(client, '/openapi/v3', 20),
    'GET /openapi/v3/apis/<group>/v1': await timed(client, '/openapi/v3/apis/g1.bench.example.com/v1', 20),
  };

  const served: number[] = [];
  for (let i = 0; i < SERVED_SAMPLES; i++) served.push(await install(client, DEFINITIONS + i));
  served.sort((a, b) => a - b);
  return {
    definitions: DEFINITIONS,
    groups: Math.ceil(DEFINITIONS / PER_GROUP),
    installSeconds,
    rssMiB: rss,
    latencyMs,
    createToServedMs: { p50: Math.round(percentile(served, 50)), p99: Math.round(percentile(served, 99)), samples: SERVED_SAMPLES },
  };
}

export function formatCustomResourceBench(r: CustomResourceBench): string[] {
  const lines = [`${r.definitions} custom resource definitions (${r.groups} groups, with status and scale) installed in ${r.installSeconds} s at concurrency ${INSTALL_CONCURRENCY}`];
  for (const [name, m] of Object.entries(r.rssMiB)) lines.push(`  ${name.padEnd(14)} RSS ${m.before} -> ${m.after} MiB (${m.kiBPerDefinition} KiB per definition)`);
  for (const [what, l] of Object.entries(r.latencyMs)) lines.push(`  ${what.padEnd(32)} first ${l.first} ms, p50 ${l.p50} ms, p99 ${l.p99} ms (${l.samples} requests)`);
  lines.push(`  definition create -> resource served: p50 ${r.createToServedMs.p50} ms, p99 ${r.createToServedMs.p99} ms (${r.createToServedMs.samples} more, one by one)`);
  return lines;
}
