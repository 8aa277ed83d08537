import * as path from 'node:path';
import { startEnvironment, type Environment } from '@svc/testenv';
import { formatReport, prepareFuzz, runFuzz } from '../fuzz/hostile-requests';
import { adminRequest } from './http';

/**
 * A bounded, seeded fuzz pass (test/src/fuzz/hostile-requests.ts; `make
 * fuzz` runs 10,000 of the same stream): hostile requests of every class
 * against the running system. No answer is a 5xx, no connection is dropped
 * without a status line, every 4xx is a Status, every write aimed at a
 * canary is refused and the 20 canaries are byte-for-byte unchanged, and the
 * gateway's resident memory stays under a stated bound. A failure prints the
 * seed and the requests.
 */
const SEED = Number(process.env['SVC_FUZZ_SEED'] ?? 20261123);
const REQUESTS = Number(process.env['SVC_FUZZ_REQUESTS'] ?? 3000);
/** The gateway may hold at most this much resident memory at any point of the run. */
const GATEWAY_RSS_BOUND_BYTES = 768 * 1024 * 1024;

describe('fuzz', () => {
  let env: Environment;
  let canaries: Map<string, string>;
  const request = (method: string, p: string, body?: string) => adminRequest(env, method, p, body);

  beforeAll(async () => {
    env = await startEnvironment({ crds: [path.join(__dirname, '..', '..', 'fixtures', 'crds')] });
    canaries = await prepareFuzz(request);
  });

  afterAll(async () => {
    await env?.stop(true);
  });

  test(`${REQUESTS} seeded hostile requests (seed ${SEED}): no 5xx, no dropped connection, canary writes refused, canaries unchanged, bounded gateway memory`, async () => {
    const report = await runFuzz(env, canaries, { seed: SEED, requests: REQUESTS }, request);
    process.stdout.write(`${formatReport(report)}\n`);
    expect(report.rawRequests).toBeGreaterThan(0);
    expect(report.canaryWrites).toBeGreaterThan(0);
    expect(report.serverErrors.slice(0, 20)).toEqual([]);
    expect(report.dropped.slice(0, 20)).toEqual([]);
    expect(report.withoutStatus.slice(0, 20)).toEqual([]);
    expect(report.notRefused.slice(0, 20)).toEqual([]);
    expect(report.canaries).toBe(20);
    expect(report.canariesChanged).toEqual([]);
    expect(report.peakGatewayRssBytes).toBeGreaterThan(0);
    expect(report.peakGatewayRssBytes).toBeLessThan(GATEWAY_RSS_BOUND_BYTES);
    expect((await adminRequest(env, 'GET', '/readyz')).status).toBe(200);
  }, 900000);
});
