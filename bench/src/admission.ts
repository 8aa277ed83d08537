import { fork, type ChildProcess } from 'node:child_process';
import * as path from 'node:path';
import { AdmissionConfigurations, policyValidator } from '@svc/admission';
import type { ApiObject } from '@svc/apimachinery';
import { createLogger, loadInternalTls } from '@svc/service-kit';
import { StorageClient } from '@svc/storage/client';
import { prepareWebhooks, type Environment } from '@svc/testenv';
import { Client, cpuSince, ensureNamespace, fmt, msSince, perOp, runConcurrent, sleep, stats, type Percentiles } from './harness';

/**
 * What admission costs a create: ConfigMap creates with nothing
 * configured; then, in the same run, with one validating webhook served on
 * loopback (a child process answering `allowed`), with a
 * ValidatingAdmissionPolicy of three CEL validations, and with both
 * configured but matching neither (other namespace), interleaved. For each:
 * the latency of one create at a time (p50/p99), the rate at a concurrency,
 * and the CPU each process spent per create; the TLS connections the
 * webhook's reviews came on; and the policy's own cost per object, in
 * process.
 */

const CREATES = Number(process.env['BENCH_CREATES'] ?? '1000');
const LATENCY_CREATES = 500;
const CONCURRENCY = 16;
/** Rounds of creates at the concurrency, the variants alternating. */
const ROUNDS = 2;
const GROUP = '/apis/admissionregistration.svc.io/v1';

const NAMESPACES = { none: 'bench-adm-none', webhook: 'bench-adm-webhook', policy: 'bench-adm-policy' } as const;
type Variant = 'none' | 'unmatched' | 'webhook' | 'policy';

/** The policy's three validations, over data every created object carries. */
export const POLICY_VALIDATIONS = [
  { expression: 'int(object.data.replicas) <= int(object.data.maxReplicas)', message: 'replicas must not exceed maxReplicas' },
  { expression: "object.data.owner.matches('^[a-z][a-z0-9-]*$')", message: 'owner must be a lower-case name' },
  { expression: "!has(object.data.tags) || object.data.tags.startsWith('team-')", messageExpression: "'tags must start with team-: ' + object.data.tags" },
];

const POLICY_NAME = 'bench-three-validations';

/** The policy and its binding (Deny, in `namespace`). */
function policyObjects(namespace: string): { policy: ApiObject; binding: ApiObject } {
  const metadata = { name: POLICY_NAME, generation: 1, resourceVersion: '1', uid: 'bench-policy' };
  return {
    policy: {
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata,
      spec: { failurePolicy: 'Fail', matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE', 'UPDATE'], resources: ['configmaps'] }] }, validations: POLICY_VALIDATIONS },
    },
    binding: {
      apiVersion: 'admissionregistration.svc.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { ...metadata, uid: 'bench-binding' },
      spec: { policyName: POLICY_NAME, validationActions: ['Deny'], matchResources: { namespaceSelector: { matchLabels: { 'svc.io/metadata.name': namespace } } } },
    },
  };
}

export function benchConfigMap(name: string, data: Record<string, string> = {}): Record<string, unknown> {
  return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { replicas: '2', maxReplicas: '5', owner: 'payments-api', tags: 'team-a,team-b', ...data } };
}

export interface AdmissionFigures {
  creates: number;
  concurrency: number;
  latencyCreates: number;
  /** One create at a time, ms. */
  latencyMs: Record<Variant, Percentiles>;
  /** Over the creates they took turns with (configured, matching neither), ms. */
  addedLatencyMs: { webhook: Percentiles; policy: Percentiles };
  createsPerSecond: Record<Variant, number>;
  /** CPU per create at the concurrency, ms, by process (the webhook's child process as `loopback webhook`). */
  cpuMsPerCreate: Record<Variant, Record<string, number>>;
  /** Reviews the webhook answered (at least one per create into its namespace). */
  webhookReviews: number;
  /** The TLS connections those reviews came on, while creates went one at a time and at the concurrency (connections kept alive and reused make few). */
  webhookConnections: { oneAtATime: number; atConcurrency: number };
  /** The policy evaluated in process (the admission service's validator, no gRPC or HTTP): microseconds per object, and with no policy configured. */
  policyInProcessMicros: { withPolicy: number; withoutPolicy: number; perObject: number; objects: number };
}

function startWebhook(certFile: string, keyFile: string, host: string, port: number): Promise<ChildProcess> {
  const child = fork(path.join(__dirname, 'loopback-webhook.js'), [certFile, keyFile, host, String(port)], { stdio: 'ignore' });
  return new Promise((resolve, reject) => {
    child.once('message', () => resolve(child));
    child.once('exit', (code) => reject(new Error(`the loopback webhook exited (${code})`)));
  });
}

/** Reviews the webhook answered so far, and the TLS connections they came on. */
function webhookCounts(child: ChildProcess): Promise<{ reviews: number; connections: number }> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m as { reviews: number; connections: number }));
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
    const latencyMs = {} as Record<Variant, Percentiles>;
    const createsPerSecond = {} as Record<Variant, number>;
    const cpuMsPerCreate = {} as Record<Variant, Record<string, number>>;
    /**
     * One create at a time, the variants taking turns create by create (so
     * each sees the same moments of a shared machine); then the rate of
     * each, in ROUNDS alternating rounds, with the CPU each process spent.
     */
    let afterLatency = { reviews: 0, connections: 0 };
    const measure = async (variants: Variant[]): Promise<void> => {
      const samples = new Map<Variant, number[]>(variants.map((v) => [v, []]));
      for (let i = 0; i < LATENCY_CREATES; i++) {
        for (const v of variants) {
          const t = process.hrtime.bigint();
          await create(v);
          samples.get(v)?.push(msSince(t));
        }
      }
      for (const v of variants) latencyMs[v] = stats(samples.get(v) ?? []);
      afterLatency = await webhookCounts(webhook);
      const seconds = new Map<Variant, number>(variants.map((v) => [v, 0]));
      const cpu = new Map<Variant, Record<string, number>>(variants.map((v) => [v, {}]));
      const perRound = Math.ceil(creates / ROUNDS);
      for (let round = 0; round < ROUNDS; round++) {
        for (const v of variants) {
          const used = cpuSince(env, [{ name: 'loopback webhook', pid: webhook.pid ?? 0 }]);
          const started = process.hrtime.bigint();
          await runConcurrent(perRound, CONCURRENCY, () => create(v));
          seconds.set(v, (seconds.get(v) ?? 0) + msSince(started) / 1000);
          const total = cpu.get(v) ?? {};
          for (const [name, ms] of Object.entries(used())) total[name] = (total[name] ?? 0) + ms;
          cpu.set(v, total);
        }
      }
      for (const v of variants) {
        createsPerSecond[v] = Math.round((perRound * ROUNDS) / (seconds.get(v) ?? 1));
        cpuMsPerCreate[v] = perOp(cpu.get(v) ?? {}, perRound * ROUNDS);
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
    const { policy, binding } = policyObjects(NAMESPACES.policy);
    const unstored = (o: ApiObject): ApiObject => ({ ...o, metadata: { name: POLICY_NAME } });
    await post(client, `${GROUP}/validatingadmissionpolicies`, unstored(policy));
    await post(client, `${GROUP}/validatingadmissionpolicybindings`, unstored(binding));
    let probe = 0;
    await until('the webhook', async () => {
      await client.request('POST', `/api/v1/namespaces/${NAMESPACES.webhook}/configmaps?dryRun=All`, benchConfigMap(`probe-${probe++}`));
      return (await webhookCounts(webhook)).reviews > 0;
    });
    await until('the policy', async () => (await client.request('POST', `/api/v1/namespaces/${NAMESPACES.policy}/configmaps?dryRun=All`, benchConfigMap(`probe-${probe++}`, { owner: 'Bad Owner' }))).status === 422);
    const before = await webhookCounts(webhook);

    for (let i = 0; i < 50; i++) for (const v of ['webhook', 'policy'] as const) await create(v);
    await measure(['unmatched', 'webhook', 'policy']);
    const after = await webhookCounts(webhook);
    // Over the creates that took turns with them, configured but matched by neither.
    const added = (v: 'webhook' | 'policy'): Percentiles => ({ p50: round2(latencyMs[v].p50 - latencyMs.unmatched.p50), p99: round2(latencyMs[v].p99 - latencyMs.unmatched.p99) });
    return {
      creates,
      concurrency: CONCURRENCY,
      latencyCreates: LATENCY_CREATES,
      latencyMs: Object.fromEntries(Object.entries(latencyMs).map(([k, v]) => [k, { p50: round2(v.p50), p99: round2(v.p99) }])) as Record<Variant, Percentiles>,
      addedLatencyMs: { webhook: added('webhook'), policy: added('policy') },
      createsPerSecond,
      cpuMsPerCreate,
      webhookReviews: after.reviews - before.reviews,
      webhookConnections: { oneAtATime: afterLatency.connections - before.connections, atConcurrency: after.connections - afterLatency.connections },
      policyInProcessMicros: await policyInProcess(env),
    };
  } finally {
    webhook.kill();
  }
}

const round2 = (n: number): number => Math.round(n * 100) / 100;

/**
 * The admission service's policy step, built as the service builds it, in
 * this process: each of `objects` fresh ConfigMaps validated with the
 * policy bound to its namespace, and with nothing configured; microseconds
 * per object. The policy has no parameters, so storage is not read.
 */
export async function policyInProcess(env: Environment, objects = 20_000): Promise<AdmissionFigures['policyInProcessMicros']> {
  const identity = env.internalPki.identities.admission;
  const storage = new StorageClient(env.addresses['storage'] as string, loadInternalTls({ caFile: env.internalPki.caCert, certFile: identity.cert, keyFile: identity.key }));
  try {
    const namespace: ApiObject = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACES.policy, labels: { 'svc.io/metadata.name': NAMESPACES.policy } } };
    const time = async (configured: boolean): Promise<number> => {
      const configurations = new AdmissionConfigurations();
      if (configured) {
        const { policy, binding } = policyObjects(NAMESPACES.policy);
        configurations.apply('ValidatingAdmissionPolicy', policy);
        configurations.apply('ValidatingAdmissionPolicyBinding', binding);
      }
      const step = policyValidator({
        configurations,
        namespaces: { getNamespace: async () => namespace },
        storage,
        authorize: async () => ({ decision: 'no-opinion', reason: '' }),
        log: createLogger('bench', { level: 'error' }),
      });
      const validate = (i: number, data: Record<string, string> = {}) =>
        step.validate({
          operation: 'CREATE',
          kind: { group: '', version: 'v1', kind: 'ConfigMap' },
          resource: { group: '', version: 'v1', resource: 'configmaps' },
          subresource: '',
          namespace: NAMESPACES.policy,
          name: `o${i}`,
          userInfo: { username: 'bench', uid: '', groups: ['system:authenticated'], extra: {} },
          // A fresh object each time, as every request brings one.
          object: { ...benchConfigMap(`o${i}`, data), metadata: { name: `o${i}`, namespace: NAMESPACES.policy } },
          oldObject: undefined,
          dryRun: false,
        });
      // The policy refuses a bad owner when configured (and only then).
      const refusal = await validate(-1, { owner: 'Bad Owner' }).then(
        () => undefined,
        (err: unknown) => String(err instanceof Error ? err.message : err),
      );
      if (configured !== (refusal?.includes('owner must be a lower-case name') ?? false)) throw new Error(`the in-process policy step did not decide as configured (${configured ? 'with' : 'without'} the policy: ${refusal ?? 'admitted'})`);
      for (let i = 0; i < 2000; i++) await validate(i);
      const started = process.hrtime.bigint();
      for (let i = 0; i < objects; i++) await validate(i);
      return Number(process.hrtime.bigint() - started) / 1e3 / objects;
    };
    const withoutPolicy = await time(false);
    const withPolicy = await time(true);
    return { withPolicy: round2(withPolicy), withoutPolicy: round2(withoutPolicy), perObject: round2(withPolicy - withoutPolicy), objects };
  } finally {
    storage.close();
  }
}

export function formatAdmission(f: AdmissionFigures): string[] {
  const label: Record<Variant, string> = { none: 'nothing configured', unmatched: 'configured, not matching', webhook: 'one validating webhook', policy: 'policy, 3 CEL validations' };
  const cpuOf = (v: Variant, name: string): string => (f.cpuMsPerCreate[v]?.[name] ?? 0).toFixed(2);
  const lines = [
    `admission: ConfigMap creates (latency one at a time, ${f.latencyCreates} each, taking turns; rate at concurrency ${f.concurrency}, ${f.creates} each in ${ROUNDS} alternating rounds; nothing configured measured first)`,
    '  variant                     p50 ms  p99 ms  creates/s  CPU/create ms: gateway  admission  webhook',
  ];
  for (const v of ['none', 'unmatched', 'webhook', 'policy'] as const) {
    const l = f.latencyMs[v];
    lines.push(`  ${label[v].padEnd(26)}  ${fmt(l.p50).padStart(6)}  ${fmt(l.p99).padStart(6)}  ${String(f.createsPerSecond[v]).padStart(9)}  ${cpuOf(v, 'gateway').padStart(21)}  ${cpuOf(v, 'admission').padStart(9)}  ${cpuOf(v, 'loopback webhook').padStart(7)}`);
  }
  const inProcess = f.policyInProcessMicros;
  lines.push(`  policy of 3 CEL validations in process: ${inProcess.perObject} us per object (${inProcess.withPolicy} us with it, ${inProcess.withoutPolicy} us with nothing configured)`);
  lines.push(`  added per create: webhook p50 ${fmt(f.addedLatencyMs.webhook.p50)} ms p99 ${fmt(f.addedLatencyMs.webhook.p99)} ms; policy p50 ${fmt(f.addedLatencyMs.policy.p50)} ms p99 ${fmt(f.addedLatencyMs.policy.p99)} ms (${f.webhookReviews} reviews answered; new TLS connections: ${f.webhookConnections.oneAtATime} one at a time, ${f.webhookConnections.atConcurrency} at concurrency ${f.concurrency})`);
  return lines;
}
