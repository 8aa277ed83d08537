import * as fs from 'node:fs';
import type { IncomingMessage } from 'node:http';
import * as https from 'node:https';
import * as os from 'node:os';
import * as path from 'node:path';
import { compileValidationRules, normalizeExtensions } from '@svc/kinds';
import { startEnvironment, type Environment } from '@svc/testenv';

/**
 * Creates of a custom resource whose schema has three CEL rules, next to
 * ConfigMap creates and creates of the same custom resource without rules,
 * in the same run and at the same concurrency; and the rules' own cost, in
 * process, per object. `make bench` runs it after its other figures;
 * `node bench/dist/validation-rules.js` runs it alone.
 */

type Request = (method: string, path: string, body?: unknown) => Promise<{ status: number; body: string }>;

const CREATES = Number(process.env['BENCH_CREATES'] ?? '1000');
const CONCURRENCY = [16, 64];
const RULES = [
  { rule: 'self.replicas <= self.maxReplicas', message: 'replicas must not exceed maxReplicas', fieldPath: '.replicas' },
  { rule: "self.owner.matches('^[a-z][a-z0-9-]*$')", message: 'owner must be a lower-case name' },
  { rule: "self.tags.all(t, t.startsWith('team-'))", messageExpression: "'tags must start with team-: ' + self.tags.join(',')" },
];

function spec(withRules: boolean): Record<string, unknown> {
  return {
    type: 'object',
    required: ['replicas', 'maxReplicas', 'owner', 'tags'],
    ...(withRules ? { 'x-kubernetes-validations': RULES } : {}),
    properties: {
      replicas: { type: 'integer' },
      maxReplicas: { type: 'integer' },
      owner: { type: 'string', maxLength: 63 },
      tags: { type: 'array', maxItems: 16, items: { type: 'string', maxLength: 32 } },
    },
  };
}

function definition(plural: string, kind: string, withRules: boolean): Record<string, unknown> {
  return {
    apiVersion: 'apiextensions.svc.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: { name: `${plural}.bench.example.org` },
    spec: {
      group: 'bench.example.org',
      scope: 'Namespaced',
      names: { plural, kind },
      versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: spec(withRules) } } } }],
    },
  };
}

const objectSpec = { replicas: 2, maxReplicas: 5, owner: 'payments-api', tags: ['team-a', 'team-b', 'team-c'] };

async function until(probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe())) {
    if (Date.now() > deadline) throw new Error('a definition was not served in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function rate(total: number, concurrency: number, op: (i: number) => Promise<void>): Promise<number> {
  let next = 0;
  const started = process.hrtime.bigint();
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (next < total) await op(next++);
  }));
  return total / (Number(process.hrtime.bigint() - started) / 1e9);
}

/** The three rules evaluated in process on one object, without HTTP or storage: microseconds per object. */
export function ruleEvaluationMicros(objects = 20000): number {
  const schema = normalizeExtensions({ type: 'object', properties: { spec: spec(true) } }) as Record<string, unknown>;
  const { validator, causes } = compileValidationRules(schema, 'openAPIV3Schema');
  if (!validator || causes.length > 0) throw new Error(`the bench rules do not compile: ${JSON.stringify(causes)}`);
  const started = process.hrtime.bigint();
  for (let i = 0; i < objects; i++) {
    // A fresh object each time, as every request brings one.
    if (validator.validate({ apiVersion: 'bench.example.org/v1', kind: 'Ruled', metadata: { name: `o${i}` }, spec: { ...objectSpec } }).length > 0) throw new Error('a valid object was refused');
  }
  return Number(process.hrtime.bigint() - started) / 1e3 / objects;
}

export interface ValidationRulesFigures {
  creates: number;
  throughput: Array<{ concurrency: number; configMap: number; withRules: number; withoutRules: number }>;
  ruleEvaluationMicrosPerObject: number;
}

export async function benchValidationRules(request: Request, creates = CREATES): Promise<ValidationRulesFigures> {
  for (const [plural, kind, withRules] of [['ruleds', 'Ruled', true], ['plains', 'Plain', false]] as const) {
    const res = await request('POST', '/apis/apiextensions.svc.io/v1/customresourcedefinitions', definition(plural, kind, withRules));
    if (res.status !== 201) throw new Error(`creating the ${plural} definition answered ${res.status}: ${res.body}`);
    await until(async () => (await request('GET', `/apis/bench.example.org/v1/namespaces/default/${plural}`)).status === 200, 30_000);
  }
  const targets = {
    configMap: (name: string) => request('POST', '/api/v1/namespaces/default/configmaps', { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { owner: 'payments-api', tags: 'team-a,team-b,team-c' } }),
    withRules: (name: string) => request('POST', '/apis/bench.example.org/v1/namespaces/default/ruleds', { apiVersion: 'bench.example.org/v1', kind: 'Ruled', metadata: { name }, spec: objectSpec }),
    withoutRules: (name: string) => request('POST', '/apis/bench.example.org/v1/namespaces/default/plains', { apiVersion: 'bench.example.org/v1', kind: 'Plain', metadata: { name }, spec: objectSpec }),
  };
  const bad = await request('POST', '/apis/bench.example.org/v1/namespaces/default/ruleds', { apiVersion: 'bench.example.org/v1', kind: 'Ruled', metadata: { name: 'bad' }, spec: { ...objectSpec, replicas: 9 } });
  if (bad.status !== 422) throw new Error(`an object breaking a rule answered ${bad.status}`);
  for (const [name, create] of Object.entries(targets)) for (let i = 0; i < 50; i++) await create(`warm-${name.toLowerCase()}-${i}`);
  const throughput: ValidationRulesFigures['throughput'] = [];
  for (const c of CONCURRENCY) {
    const figures: Record<string, number> = {};
    // Interleaved, so that each kind sees the same machine.
    for (const [name, create] of Object.entries(targets)) {
      figures[name] = Math.round(
        await rate(creates, c, async (i) => {
          const res = await create(`vr-${name.toLowerCase()}-c${c}-${i}`);
          if (res.status !== 201) throw new Error(`create answered ${res.status}: ${res.body}`);
        }),
      );
    }
    throughput.push({ concurrency: c, configMap: figures['configMap'] ?? 0, withRules: figures['withRules'] ?? 0, withoutRules: figures['withoutRules'] ?? 0 });
  }
  return { creates, throughput, ruleEvaluationMicrosPerObject: Math.round(ruleEvaluationMicros() * 100) / 100 };
}

export function formatValidationRules(f: ValidationRulesFigures): string[] {
  const lines = ['custom resource with 3 CEL rules vs ConfigMap (creates/s, same run)', '  concurrency  configmap  CR + 3 rules  CR, no rules'];
  for (const t of f.throughput) lines.push(`  ${String(t.concurrency).padEnd(11)}  ${String(t.configMap).padEnd(9)}  ${String(t.withRules).padEnd(12)}  ${t.withoutRules}`);
  lines.push(`3 rules evaluated in process: ${f.ruleEvaluationMicrosPerObject} us per object`);
  return lines;
}

function adminRequest(env: Environment): { request: Request; close: () => void } {
  const agent = new https.Agent({ keepAlive: true, maxSockets: 128, ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) });
  const request: Request = async (method, p, body) => {
    const res = await new Promise<IncomingMessage>((resolve, reject) => {
      https.request(`${env.url}${p}`, { method, agent, headers: { 'content-type': 'application/json' } }, resolve).on('error', reject).end(body === undefined ? undefined : JSON.stringify(body));
    });
    let text = '';
    for await (const chunk of res) text += String(chunk);
    return { status: res.statusCode ?? 0, body: text };
  };
  return { request, close: () => agent.destroy() };
}

async function main(): Promise<void> {
  const env = await startEnvironment({ dir: fs.mkdtempSync(path.join(os.tmpdir(), 'svc-bench-rules-')), authorizationMode: 'RBAC' });
  const { request, close } = adminRequest(env);
  try {
    const figures = await benchValidationRules(request);
    process.stdout.write(`${formatValidationRules(figures).join('\n')}\n`);
    const out = path.join(__dirname, '..', 'results', 'validation-rules.json');
    fs.mkdirSync(path.dirname(out), { recursive: true });
    fs.writeFileSync(out, `${JSON.stringify({ machine: { cpus: os.cpus().length, node: process.version }, ...figures }, null, 2)}\n`);
  } finally {
    close();
    await env.stop(true);
  }
}

if (require.main === module) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exit(1);
  });
}
