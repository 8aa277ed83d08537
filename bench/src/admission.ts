import { fork, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { prepareWebhooks, type Environment } from '@svc/testenv';
import { Client, cpuSince, ensureNamespace, fmt, msSince, perOp, runConcurrent, sleep, stats, type Percentiles } from './harness';

/**
 * What admission costs a create: ConfigMap creates with nothing
 * configured; then, in the same run, with one validating webhook served on
 * loopback (a child process answering `allowed`), with a
 * ValidatingAdmissionPolicy of three CEL validations, and with both
 * configured but matching neither (other namespace), interleaved. For each:
 * the latency of one create at a time (p50/p99), the rate at a concurrency,
 * and the CPU each process spent per create.
 */

const CREATES = Number(process.env['BENCH_CREATES'] ?? '1000');
const LATENCY_CREATES = 500;
const CONCURRENCY = 16;
const GROUP = '/apis/admissionregistration.svc.io/v1';

const NAMESPACES = { none: 'bench-adm-none', webhook: 'bench-adm-webhook', policy: 'bench-adm-policy' } as const;
type Variant = 'none' | 'unmatched' | 'webhook' | 'policy';

/** The policy's three validations, over data every created object carries. */
export const POLICY_VALIDATIONS = [
  { expression: 'int(object.data.replicas) <= int(object.data.maxReplicas)', message: 'replicas must not exceed maxReplicas' },
  { expression: "object.data.owner.matches('^[a-z][a-z0-9-]*$')", message: 'owner must be a lower-case name' },
  { expression: "!has(object.data.tags) || object.data.tags.startsWith('team-')", messageExpression: "'tags must start with team-: ' + object.data.tags" },
];

export function benchConfigMap(name: string, data: Record<string, string> = {}): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { replicas: '2', maxReplicas: '5', owner: 'payments-api', tags: 'team-a,team-b', ...data } };
}

export interface AdmissionFigures {
  creates: number;
  concurrency: number;
  latencyCreates: number;
  /** One create at a time, ms. */
  latencyMs: Record<Variant, Percentiles>;
  /** Over nothing configured, ms. */
  addedLatencyMs: { webhook: Percentiles; policy: Percentiles };
  createsPerSecond: Record<Variant, number>;
  /** CPU per create at the concurrency, ms, by process (the webhook's child process as `loopback webhook`). */
  cpuMsPerCreate: Record<Variant, Record<string, number>>;
  /** Reviews the webhook answered (at least one per create into its namespace). */
  webhookReviews: number;
}

function startWebhook(certFile: string, keyFile: string, host: string, port: number): Promise<ChildProcess> {
  const child = fork(path.join(__dirname, 'loopback-webhook.js'), [certFile, keyFile, host, String(port)], { stdio: 'ignore' });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`the loopback webhook exited (${code})`)));
  });
}

function reviewsAnswered(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve((m as { reviews: number }).reviews));
    child.send({ count: true });
  });
}

async function post(client: Client, p: string, body: unknown, expected = 201): Promise<void> {
  const res = await client.request('POST', p, body);
  if (res.status !== expected) throw new Error(`POST ${p} answered ${res.status}: ${res.body.slice(0, 300)}`);
}

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error(`${what}: not in effect in time`);
    await sleep(100);
  }
}

export async function benchAdmission(env: Environment, client: Client, creates = CREATES): Promise<AdmissionFigures> {
  for (const ns of Object.values(NAMESPACES)) await ensureNamespace(client, ns);
  const serving = await prepareWebhooks({}, path.join(env.dir, 'bench-webhook-serving'));
  const webhook = await startWebhook(serving.certFile, serving.keyFile, serving.localServingHost, serving.localServingPort);
  try {
    const target: Record<Variant, string> = { none: NAMESPACES.none, unmatched: NAMESPACES.none, webhook: NAMESPACES.webhook, policy: NAMESPACES.policy };
    let serial = 0;
    const create = (variant: Variant) => post(client, `/api/v1/namespaces/${target[variant]}/configmaps`, benchConfigMap(`${variant}-${serial++}`));
    const latency = async (variant: Variant): Promise<Percentiles> => {
      const samples: number[] = [];
      for (let i = 0; i < LATENCY_CREATES; i++) {
        const t = process.hrtime.bigint();
        await create(variant);
        samples.push(msSince(t));
      }
      return stats(samples);
    };
    const rate = async (variant: Variant): Promise<{ rate: number; cpu: Record<string, number> }> => {
      const used = cpuSince(env, [{ name: 'loopback webhook', pid: webhook.pid ?? 0 }]);
      const r = await runConcurrent(creates, CONCURRENCY, () => create(variant));
      return { rate: Math.round(r), cpu: perOp(used(), creates) };
    };
    const latencyMs = {} as Record<Variant, Percentiles>;
    const createsPerSecond = {} as Record<Variant, number>;
    const cpuMsPerCreate = {} as Record<Variant, Record<string, number>>;
    const measure = async (variants: Variant[]): Promise<void> => {
      for (const v of variants) latencyMs[v] = await latency(v);
      for (const v of variants) {
        const { rate: r, cpu } = await rate(v);
        createsPerSecond[v] = r;
        cpuMsPerCreate[v] = cpu;
      }
    };

    for (let i = 0; i < 100; i++) await create('none');
    // Nothing configured.
    await measure(['none']);

    await post(client, `${GROUP}/validatingwebhookconfigurations`, {
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'bench-loopback' },
      webhooks: [
        {
          name: 'loopback.bench.svc.io',
          clientConfig: { url: serving.url('/validate'), caBundle: serving.localServingCaData.toString('base64') },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: { 'svc.io/metadata.name': NAMESPACES.webhook } },
          sideEffects: 'None',
          admissionReviewVersions: ['v1'],
          failurePolicy: 'Fail',
        },
      ],
    });
    await post(client, `${GROUP}/validatingadmissionpolicies`, {
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: 'bench-three-validations' },
      spec: { failurePolicy: 'Fail', matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }] }, validations: POLICY_VALIDATIONS },
    });
    await post(client, `${GROUP}/validatingadmissionpolicybindings`, {
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: 'bench-three-validations' },
      spec: { policyName: 'bench-three-validations', validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'svc.io/metadata.name': NAMESPACES.policy } } } },
    });
    let probe = 0;
    await until('the webhook', async () => {
      await client.request('POST', `/api/v1/namespaces/${NAMESPACES.webhook}/configmaps?dryRun=All`, benchConfigMap(`probe-${probe++}`));
      return (await reviewsAnswered(webhook)) > 0;
    });
    await until('the policy', async () => (await client.request('POST', `/api/v1/namespaces/${NAMESPACES.policy}/configmaps?dryRun=All`, benchConfigMap(`probe-${probe++}`, { owner: 'Bad Owner' }))).status === 422);
    const reviewsBefore = await reviewsAnswered(webhook);

    for (let i = 0; i < 50; i++) for (const v of ['webhook', 'policy'] as const) await create(v);
    await measure(['unmatched', 'webhook', 'policy']);
    const webhookReviews = (await reviewsAnswered(webhook)) - reviewsBefore;
    const added = (v: 'webhook' | 'policy'): Percentiles => ({ p50: round2(latencyMs[v].p50 - latencyMs.none.p50), p99: round2(latencyMs[v].p99 - latencyMs.none.p99) });
    return {
      creates,
      concurrency: CONCURRENCY,
      latencyCreates: LATENCY_CREATES,
      latencyMs: Object.fromEntries(Object.entries(latencyMs).map(([k, v]) => [k, { p50: round2(v.p50), p99: round2(v.p99) }])) as Record<Variant, Percentiles>,
      addedLatencyMs: { webhook: added('webhook'), policy: added('policy') },
      createsPerSecond,
      cpuMsPerCreate,
      webhookReviews,
    };
  } finally {
    webhook.kill();
  }
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

export function formatAdmission(f: AdmissionFigures): string[] {
  const label: Record<Variant, string> = { none: 'nothing configured', unmatched: 'configured, not matching', webhook: 'one validating webhook', policy: 'policy, 3 CEL validations' };
  const cpuOf = (v: Variant, name: string): string => (f.cpuMsPerCreate[v]?.[name] ?? 0).toFixed(2);
  const lines = [
    `admission: ConfigMap creates (latency one at a time over ${f.latencyCreates}; rate at concurrency ${f.concurrency} over ${f.creates}; same run)`,
    '  variant                     p50 ms  p99 ms  creates/s  CPU/create ms: gateway  admission  webhook',
  ];
  for (const v of ['none', 'unmatched', 'webhook', 'policy'] as const) {
    const l = f.latencyMs[v];
    lines.push(`  ${label[v].padEnd(26)}  ${fmt(l.p50).padStart(6)}  ${fmt(l.p99).padStart(6)}  ${String(f.createsPerSecond[v]).padStart(9)}  ${cpuOf(v, 'gateway').padStart(21)}  ${cpuOf(v, 'admission').padStart(9)}  ${cpuOf(v, 'loopback webhook').padStart(7)}`);
  }
  lines.push(`  added per create: webhook p50 ${fmt(f.addedLatencyMs.webhook.p50)} ms p99 ${fmt(f.addedLatencyMs.webhook.p99)} ms; policy p50 ${fmt(f.addedLatencyMs.policy.p50)} ms p99 ${fmt(f.addedLatencyMs.policy.p99)} ms (${f.webhookReviews} reviews answered)`);
  return lines;
}
