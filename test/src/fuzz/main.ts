import * as path from 'node:path';
import { startEnvironment } from '@svc/testenv';
import { adminRequest } from '../e2e/http';
import { formatReport, fuzzPassed, prepareFuzz, runFuzz } from './hostile-requests';

/**
 * `make fuzz`: starts the whole system (real etcd, NATS and services on free
 * loopback ports), sends the seeded stream of hostile requests, prints the
 * report and exits non-zero if anything was wrong. SVC_FUZZ_SEED and
 * SVC_FUZZ_REQUESTS (default 10,000) choose the stream.
 */
async function main(): Promise<void> {
  const seed = Number(process.env['SVC_FUZZ_SEED'] ?? 20261126);
  const requests = Number(process.env['SVC_FUZZ_REQUESTS'] ?? 10000);
  const env = await startEnvironment({ crds: [path.join(__dirname, '..', '..', 'fixtures', 'crds')] });
  try {
    const request = (method: string, p: string, body?: string) => adminRequest(env, method, p, body);
    const canaries = await prepareFuzz(request);
    const report = await runFuzz(env, canaries, { seed, requests }, request);
    const ready = await adminRequest(env, 'GET', '/readyz');
    process.stdout.write(`${formatReport(report)}\n/readyz after the run: ${ready.status}\n`);
    process.exitCode = fuzzPassed(report) && ready.status === 200 ? 0 : 1;
  } finally {
    await env.stop(true);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`fuzz: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exit(1);
});
