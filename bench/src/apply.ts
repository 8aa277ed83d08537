/**
 * Benchmark of server-side apply: an object of about 200 fields (scalars, a
 * string map, a set list, a keyed list of structs, a nested struct) managed by
 * three appliers, each re-applying its configuration with one changed value.
 * `make bench` calls benchApply and reports the percentiles.
 */
import { performance } from 'node:perf_hooks';
import type { Schema } from '@svc/apimachinery';
import { apply, fieldSetOf, type JsonObject, type JsonValue } from '@svc/merge';

export interface BenchResult {
  iterations: number;
  /** Number of fields the object sets (leaves and list items). */
  fields: number;
  p50Ms: number;
  p99Ms: number;
  meanMs: number;
}

const MANAGERS = ['alpha', 'beta', 'gamma'] as const;

export const BENCH_SCHEMA: Schema = {
  type: 'object',
  properties: {
    apiVersion: { type: 'string' },
    kind: { type: 'string' },
    metadata: { type: 'object' },
    spec: {
      type: 'object',
      properties: {
        ...Object.fromEntries(Array.from({ length: 45 }, (_, i) => [`field${i}`, { type: 'string' } as Schema])),
        settings: { type: 'object', additionalProperties: { type: 'string' } },
        tags: { type: 'array', 'x-svc-list-type': 'set', items: { type: 'string' } },
        containers: {
          type: 'array',
          'x-svc-patch-strategy': 'merge',
          'x-svc-patch-merge-key': 'name',
          items: {
            type: 'object',
            properties: {
              name: { type: 'string' },
              image: { type: 'string' },
              cpu: { type: 'string' },
              memory: { type: 'string' },
              replicas: { type: 'integer' },
              args: { type: 'array', items: { type: 'string' } },
            },
          },
        },
        nested: {
          type: 'object',
          properties: Object.fromEntries(Array.from({ length: 20 }, (_, i) => [`n${i}`, { type: 'integer' } as Schema])),
        },
      },
    },
  },
};

/** The configuration one manager applies: a third of each part of the object. */
function configFor(m: number, round: number): JsonObject {
  const spec: JsonObject = {};
  for (let i = m; i < 45; i += 3) spec[`field${i}`] = `v${i}`;
  const settings: JsonObject = {};
  for (let i = m; i < 40; i += 3) settings[`key${i}`] = `value${i}`;
  spec.settings = settings;
  spec.tags = Array.from({ length: 7 }, (_, i) => `tag-${m}-${i}`);
  spec.containers = Array.from({ length: 4 }, (_, i): JsonValue => ({
    name: `c${m}-${i}`,
    image: `image:${i}`,
    cpu: '100m',
    memory: '64Mi',
    replicas: i,
    args: ['--a', '--b'],
  }));
  const nested: JsonObject = {};
  for (let i = m; i < 20; i += 3) nested[`n${i}`] = i;
  spec.nested = nested;
  // The one value that changes on every round.
  spec[`field${m}`] = `round-${round}`;
  return { apiVersion: 'v1', kind: 'Bench', metadata: { name: 'bench', namespace: 'default', labels: { [`owner-${m}`]: 'yes' } }, spec };
}

function percentile(sorted: number[], p: number): number {
  if (sorted.length === 0) return 0;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i] as number;
}

/** Runs `iterations` applies (after a warm-up) and returns latency percentiles in milliseconds. */
export function benchApply(iterations = 1000): BenchResult {
  let clock = Date.parse('2024-01-01T00:00:00Z');
  const tick = (): Date => new Date((clock += 1000));
  let live: JsonObject | undefined;
  for (let m = 0; m < MANAGERS.length; m++) {
    live = apply({ live, applied: configFor(m, 0), manager: MANAGERS[m] as string, apiVersion: 'v1', now: tick(), schema: BENCH_SCHEMA }).object;
  }
  const warmup = Math.min(200, Math.max(10, Math.floor(iterations / 5)));
  const samples: number[] = [];
  for (let i = 0; i < warmup + iterations; i++) {
    const m = i % MANAGERS.length;
    const applied = configFor(m, i + 1);
    const start = performance.now();
    live = apply({ live, applied, manager: MANAGERS[m] as string, apiVersion: 'v1', now: tick(), schema: BENCH_SCHEMA }).object;
    const elapsed = performance.now() - start;
    if (i >= warmup) samples.push(elapsed);
  }
  samples.sort((a, b) => a - b);
  const mean = samples.reduce((a, b) => a + b, 0) / Math.max(1, samples.length);
  return {
    iterations,
    fields: fieldSetOf(live, BENCH_SCHEMA).size,
    p50Ms: percentile(samples, 50),
    p99Ms: percentile(samples, 99),
    meanMs: mean,
  };
}
