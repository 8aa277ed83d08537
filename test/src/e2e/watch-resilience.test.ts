import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as path from 'node:path';
import { Etcd3 } from 'etcd3';
import { kubeconfig, startEnvironment, type Environment, type ManagedProcess } from '@svc/testenv';
import { ELECTION_NAME } from '@svc/watch-fanout';
import { until } from './helpers';

/**
 * Watches stay exact through failures. Informers of @kubernetes/client-node
 * and watch loops of python3-kubernetes follow every ConfigMap of one
 * namespace through both gateways while writers create, update, delete and
 * re-create ConfigMaps among a fixed set of names, and meanwhile the gateway
 * the first clients are connected to is killed and comes back, NATS is
 * killed and comes back, and the publishing watch-fanout replica is killed
 * (the other takes over). Once the writers stop, a consistent list through
 * either gateway and every client's view must equal what etcd holds (the
 * same names, each with the same resourceVersion and data); no client may
 * have been handed an event at or below a resourceVersion it already had,
 * for one object or overall, without a re-list in between (a duplicate, or
 * changes out of order); and after each of its lists, the events a client
 * was handed up to its last one must be exactly etcd's changes of the
 * namespace in that range (nothing missed silently). Each client's lists,
 * watch requests, events and errors are reported.
 *
 * Sizes (environment variables): WATCH_RESILIENCE_NAMES (default 1000),
 * WATCH_RESILIENCE_WRITERS (4), WATCH_RESILIENCE_OPS (writes between one
 * fault and the next, default 400; the writers first make NAMES writes),
 * WATCH_RESILIENCE_CONVERGE_MS (how long clients may take to reach etcd's
 * state after the writers stop, default 60000). WATCH_RESILIENCE_KEEP=1 keeps
 * the environment's directory (logs/) when the test passes too; it is
 * always kept when it fails.
 */

const fixtures = path.join(__dirname, '..', '..', 'fixtures');

function envInt(name: string, fallback: number): number {
  const value = Number(process.env[name]);
  return Number.isInteger(value) && value > 0 ? value : fallback;
}

const NAMES = envInt('WATCH_RESILIENCE_NAMES', 1000);
const WRITERS = envInt('WATCH_RESILIENCE_WRITERS', 4);
const OPS_BETWEEN_FAULTS = envInt('WATCH_RESILIENCE_OPS', 400);
const CONVERGE_MS = envInt('WATCH_RESILIENCE_CONVERGE_MS', 60000);
const NAMESPACE = 'watch-resilience';

/** One ConfigMap as a client or etcd has it. */
interface Entry {
  rv: string;
  data: Record<string, string>;
}
type View = Record<string, Entry>;

/** A line a client fixture prints (see the fixtures' headers). */
type ClientLine =
  | { k: 'list'; rv: string; items: Array<[string, string]> }
  | { k: 'watch'; rv: string }
  | { k: 'ev'; t: string; n: string; rv: string }
  | { k: 'error'; src?: string; code?: number | string; message?: string }
  | { k: 'view'; items: View };

function parseRv(rv: string): bigint | undefined {
  return /^\d+$/.test(rv) ? BigInt(rv) : undefined;
}

/**
 * A client process and what it did: lists, watch requests, events, errors;
 * and every event at or below a resourceVersion the client already had
 * since its last list (for the object, or overall).
 */
class WatchClient {
  lists = 0;
  watches = 0;
  events = 0;
  errors = 0;
  readonly errorSamples: string[] = [];
  readonly violations: string[] = [];
  stderr = '';
  /** Everything up to here is applied: the last list's revision, then each event's. */
  private floor = 0n;
  /** Per object, the resourceVersion last applied since the last list. */
  private readonly last = new Map<string, bigint>();
  /** Each list's revision and the revisions of the events after it (bookmarks aside). */
  readonly segments: Array<{ from: bigint; revisions: bigint[] }> = [];
  private buffer = '';
  private viewWaiters: Array<(view: View) => void> = [];
  private readonly child: ChildProcess;

  constructor(
    readonly label: string,
    readonly gateway: number,
    command: string,
    args: string[],
  ) {
    this.child = spawn(command, args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.child.stdout?.on('data', (c: Buffer) => {
      this.buffer += c.toString('utf8');
      let nl: number;
      while ((nl = this.buffer.indexOf('\n')) >= 0) {
        const line = this.buffer.slice(0, nl);
        this.buffer = this.buffer.slice(nl + 1);
        if (line.trim()) this.onLine(JSON.parse(line) as ClientLine);
      }
    });
    this.child.stderr?.on('data', (c: Buffer) => (this.stderr = (this.stderr + c.toString('utf8')).slice(-4000)));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  private violation(text: string): void {
    if (this.violations.length < 50) this.violations.push(text);
  }

  private onLine(line: ClientLine): void {
    switch (line.k) {
      case 'list': {
        this.lists++;
        this.floor = parseRv(line.rv) ?? 0n;
        this.segments.push({ from: this.floor, revisions: [] });
        this.last.clear();
        for (const [name, rv] of line.items) this.last.set(name, parseRv(rv) ?? 0n);
        return;
      }
      case 'watch':
        this.watches++;
        return;
      case 'ev': {
        this.events++;
        const rv = parseRv(line.rv);
        if (rv === undefined) {
          this.violation(`${line.t} ${line.n}: resourceVersion ${JSON.stringify(line.rv)} is not a revision`);
          return;
        }
        if (line.t === 'BOOKMARK') {
          if (rv < this.floor) this.violation(`BOOKMARK at ${rv} after ${this.floor}`);
          this.floor = rv;
          return;
        }
        const before = this.last.get(line.n);
        if (before !== undefined && rv <= before) this.violation(`${line.t} ${line.n} at ${rv} after the same object at ${before} (no list in between)`);
        else if (rv <= this.floor) this.violation(`${line.t} ${line.n} at ${rv} after everything up to ${this.floor} (no list in between)`);
        this.floor = rv > this.floor ? rv : this.floor;
        this.last.set(line.n, rv);
        this.segments.at(-1)?.revisions.push(rv);
        return;
      }
      case 'error':
        this.errors++;
        if (this.errorSamples.length < 4) this.errorSamples.push(`${line.src ?? ''}${line.code !== undefined ? ` ${line.code}` : ''} ${line.message ?? ''}`.trim().slice(0, 100));
        return;
      case 'view': {
        const waiters = this.viewWaiters;
        this.viewWaiters = [];
        for (const w of waiters) w(line.items);
        return;
      }
    }
  }

  /** The client's current view of the namespace. */
  async view(): Promise<View> {
    if (!this.running) throw new Error(`${this.label} exited (${this.child.exitCode ?? this.child.signalCode}): ${this.stderr}`);
    const answer = new Promise<View>((resolve) => this.viewWaiters.push(resolve));
    this.child.stdin?.write('dump\n');
    return Promise.race([
      answer,
      new Promise<View>((_, reject) => setTimeout(() => reject(new Error(`${this.label} did not print its view: ${this.stderr}`)), 30000).unref()),
    ]);
  }

  stop(): void {
    this.child.stdin?.end();
    if (this.running) this.child.kill('SIGKILL');
  }

  summary(): string {
    return `${this.label} (gateway ${this.gateway}): ${this.lists} lists (${this.lists - 1} re-lists), ${this.watches} watch requests, ${this.events} events, ${this.errors} errors${this.errorSamples.length ? ` [${this.errorSamples.join(' | ')}]` : ''}`;
  }
}

/** The differences between a client's view and the truth, in words (at most `max`). */
function differences(view: View, truth: View, max = 20): string[] {
  const out: string[] = [];
  const canonical = (data: Record<string, string>): string => JSON.stringify(Object.keys(data).sort().map((k) => [k, data[k]]));
  for (const [name, want] of Object.entries(truth)) {
    const got = view[name];
    if (!got) out.push(`missing ${name} (rv ${want.rv})`);
    else if (got.rv !== want.rv) out.push(`${name}: rv ${got.rv}, etcd has ${want.rv}`);
    else if (canonical(got.data) !== canonical(want.data)) out.push(`${name}: data ${canonical(got.data)}, etcd has ${canonical(want.data)}`);
  }
  for (const [name, got] of Object.entries(view)) if (!truth[name]) out.push(`extra ${name} (rv ${got.rv})`);
  return out.length > max ? [...out.slice(0, max), `... ${out.length - max} more`] : out;
}

/**
 * Changes a client missed, or was handed though etcd has no such change:
 * after each list at revision L, the events up to the last one R must be
 * exactly etcd's changes of the namespace in (L, R].
 */
function gaps(client: WatchClient, changes: bigint[], max = 20): string[] {
  const out: string[] = [];
  const all = new Set(changes);
  for (const { from, revisions } of client.segments) {
    const last = revisions.at(-1);
    if (last === undefined) continue;
    const got = new Set(revisions);
    for (const r of changes) if (r > from && r <= last && !got.has(r)) out.push(`missed the change at ${r} (listed at ${from})`);
    for (const r of revisions) if (!all.has(r)) out.push(`an event at ${r}, where etcd has no change of the namespace`);
  }
  return out.length > max ? [...out.slice(0, max), `... ${out.length - max} more`] : out;
}

describe('watch resilience: gateway restart, NATS restart, watch-fanout failover under writes', () => {
  let env: Environment;
  let etcd: Etcd3;
  let agents: https.Agent[] = [];
  const clients: WatchClient[] = [];
  let passed = false;
  let namespaceRv = '0';

  /** One request through gateway `gateway` as the admin; status 0 when there is no answer. */
  function request(gateway: number, method: string, urlPath: string, body?: string, contentType = 'application/json'): Promise<{ status: number; text: string }> {
    return new Promise((resolve) => {
      const req = https.request(
        `${env.urls[gateway]}${urlPath}`,
        { method, agent: agents[gateway], headers: { 'content-type': contentType, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) }, timeout: 20000 },
        (res) => {
          let text = '';
          res.on('data', (c: Buffer) => (text += c.toString('utf8')));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
          res.on('error', () => resolve({ status: 0, text: '' }));
        },
      );
      req.on('error', () => resolve({ status: 0, text: '' }));
      req.on('timeout', () => req.destroy());
      req.end(body);
    });
  }

  async function ready(gateway: number): Promise<void> {
    await until(async () => ((await request(gateway, 'GET', '/readyz')).status === 200 ? true : undefined), 60000);
  }

  /** Every ConfigMap of the namespace as etcd holds it, each at its mod revision. */
  async function truthFromEtcd(): Promise<View> {
    const prefix = `/registry/configmaps/${NAMESPACE}/`;
    const res = await etcd.getAll().prefix(prefix).exec();
    const view: View = {};
    for (const kv of res.kvs) {
      const obj = JSON.parse(kv.value.toString('utf8')) as { data?: Record<string, string> };
      view[kv.key.toString('utf8').slice(prefix.length)] = { rv: String(kv.mod_revision), data: obj.data ?? {} };
    }
    return view;
  }

  /** The revisions of every change of the namespace's ConfigMaps after `after`, up to `until`. */
  async function changesFromEtcd(after: string, until: bigint): Promise<bigint[]> {
    const revisions: bigint[] = [];
    const watcher = await etcd.watch().prefix(`/registry/configmaps/${NAMESPACE}/`).startRevision(String(BigInt(after) + 1n)).create();
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`etcd's history did not reach revision ${until}`)), 60000);
        watcher.on('error', reject);
        watcher.on('data', (res) => {
          for (const e of res.events) revisions.push(BigInt(e.kv.mod_revision));
          if (revisions.length > 0 && (revisions.at(-1) as bigint) >= until) {
            clearTimeout(timer);
            resolve();
          }
        });
      });
    } finally {
      await watcher.cancel();
    }
    return revisions;
  }

  async function listThroughApi(gateway: number): Promise<View> {
    const res = await until(async () => {
      const r = await request(gateway, 'GET', `/api/v1/namespaces/${NAMESPACE}/configmaps`);
      return r.status === 200 ? r : undefined;
    }, 30000);
    const list = JSON.parse(res.text) as { items: Array<{ metadata: { name: string; resourceVersion: string }; data?: Record<string, string> }> };
    return Object.fromEntries(list.items.map((i) => [i.metadata.name, { rv: i.metadata.resourceVersion, data: i.data ?? {} }]));
  }

  /** Resolves once every client was handed an event after this call (their watches deliver again). */
  async function everyClientMovesOn(): Promise<void> {
    const marks = clients.map((c) => c.events + c.lists);
    await until(() => (clients.every((c, i) => c.events + c.lists > (marks[i] as number)) ? true : undefined), 90000).catch(() => {
      throw new Error(`a client stopped receiving events:\n${clients.map((c) => c.summary()).join('\n')}`);
    });
  }

  beforeAll(async () => {
    env = await startEnvironment({ gateways: 2, watchFanoutReplicas: 2 });
    const ca = fs.readFileSync(env.pki.caCert);
    const cert = fs.readFileSync(env.pki.adminCert);
    const key = fs.readFileSync(env.pki.adminKey);
    agents = env.urls.map(() => new https.Agent({ keepAlive: true, maxSockets: WRITERS + 2, ca, cert, key }));
    const own = env.internalPki.identities['watch-fanout'];
    etcd = new Etcd3({ hosts: env.etcd.endpoint, credentials: { rootCertificate: fs.readFileSync(env.internalPki.caCert), certChain: fs.readFileSync(own.cert), privateKey: fs.readFileSync(own.key) } });
    const ns = await request(0, 'POST', '/api/v1/namespaces', JSON.stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NAMESPACE } }));
    expect(ns.status).toBe(201);
    namespaceRv = (JSON.parse(ns.text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;
  });

  afterAll(async () => {
    for (const c of clients) c.stop();
    for (const a of agents) a.destroy();
    etcd?.close();
    const keep = !passed || process.env['WATCH_RESILIENCE_KEEP'] === '1';
    if (keep && env) process.stdout.write(`watch-resilience: the environment is kept in ${env.dir} (logs/)\n`);
    await env?.stop(!keep);
  });

  test('every informer and python watch loop ends with exactly what etcd holds, with no event applied twice or out of order', async () => {
    const started = Date.now();
    // Clients on both gateways: the first two are on the gateway that is restarted.
    env.urls.forEach((url, i) => fs.writeFileSync(path.join(env.dir, `gateway-${i}.kubeconfig`), kubeconfig(url, env.pki.caCert, env.pki.adminCert, env.pki.adminKey), { mode: 0o600 }));
    for (const [i] of env.urls.entries()) {
      const config = path.join(env.dir, `gateway-${i}.kubeconfig`);
      clients.push(new WatchClient(`client-node informer ${i}`, i, process.execPath, [path.join(fixtures, 'watch-resilience-informer.mjs'), config, NAMESPACE]));
      clients.push(new WatchClient(`python watch ${i}`, i, '/usr/bin/python3', [path.join(fixtures, 'watch-resilience-python.py'), config, NAMESPACE]));
    }
    await until(() => (clients.every((c) => c.lists > 0 && c.watches > 0) ? true : undefined), 60000).catch(() => {
      throw new Error(`the clients did not start:\n${clients.map((c) => `${c.summary()}\n${c.stderr}`).join('\n')}`);
    });

    // Writers: each owns every WRITERS-th name and knows (mostly) whether it exists.
    const names = Array.from({ length: NAMES }, (_, i) => `cm-${String(i).padStart(4, '0')}`);
    const statuses = new Map<string, number>();
    let ops = 0;
    let writing = true;
    const writer = async (w: number): Promise<void> => {
      const mine = names.filter((_, i) => i % WRITERS === w);
      const state = new Map<string, 'present' | 'absent' | 'unknown'>(mine.map((n) => [n, 'absent']));
      let gateway = w % env.urls.length;
      let seq = 0;
      while (writing) {
        const name = mine[Math.floor(Math.random() * mine.length)] as string;
        const known = state.get(name);
        const op = known === 'absent' ? 'create' : known === 'present' ? (Math.random() < 0.3 ? 'delete' : 'update') : (['create', 'update', 'delete'] as const)[Math.floor(Math.random() * 3)];
        seq++;
        let res: { status: number; text: string };
        if (op === 'create') {
          res = await request(gateway, 'POST', `/api/v1/namespaces/${NAMESPACE}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { writer: String(w), seq: String(seq), born: String(seq) } }));
          state.set(name, res.status === 201 || res.status === 409 ? 'present' : 'unknown');
        } else if (op === 'update') {
          // A merge patch: a new value, and a key that comes and goes.
          const data = { seq: String(seq), extra: seq % 2 === 0 ? 'x'.repeat(seq % 64) : null };
          res = await request(gateway, 'PATCH', `/api/v1/namespaces/${NAMESPACE}/configmaps/${name}`, JSON.stringify({ data }), 'application/merge-patch+json');
          state.set(name, res.status === 200 ? 'present' : res.status === 404 ? 'absent' : 'unknown');
        } else {
          res = await request(gateway, 'DELETE', `/api/v1/namespaces/${NAMESPACE}/configmaps/${name}`);
          state.set(name, res.status === 200 || res.status === 202 || res.status === 404 ? 'absent' : 'unknown');
        }
        ops++;
        const outcome = `${op} ${res.status}`;
        statuses.set(outcome, (statuses.get(outcome) ?? 0) + 1);
        if (res.status === 0 || res.status === 429 || res.status >= 500) {
          // No answer (the gateway is restarting) or a transient refusal: try the other gateway after a pause.
          gateway = (gateway + 1) % env.urls.length;
          await new Promise((r) => setTimeout(r, 100));
        }
      }
    };
    const writers = Array.from({ length: WRITERS }, (_, w) => writer(w));
    const afterOps = async (n: number): Promise<void> => {
      const target = ops + n;
      await until(() => (ops >= target ? true : undefined), 300000);
    };

    const steps: Record<string, { recovered: number; clientsHadEvents: number; writes: number }> = {};
    const step = async (what: string, fault: () => Promise<void>): Promise<void> => {
      const at = Date.now();
      const opsBefore = ops;
      await fault();
      const recovered = Date.now() - at;
      await everyClientMovesOn();
      steps[what] = { recovered, clientsHadEvents: Date.now() - at, writes: ops - opsBefore };
    };
    await afterOps(NAMES);

    // 1. The gateway the first clients are connected to dies and comes back on the same port.
    await step('gateway restart', async () => {
      const gateway = env.processes.find((p) => p.name === 'gateway') as ManagedProcess;
      const restarts = gateway.restarts;
      gateway.kill('SIGKILL');
      await until(() => (gateway.restarts > restarts ? true : undefined), 30000);
      await gateway.running();
      await ready(0);
    });
    await afterOps(OPS_BETWEEN_FAULTS);

    // 2. NATS dies and comes back: what the bus lost is caught up from watch-fanout's history.
    await step('NATS restart', async () => {
      const nats = env.nats.process;
      const restarts = nats.restarts;
      nats.kill('SIGKILL');
      await until(() => (nats.restarts > restarts ? true : undefined), 30000);
      await nats.running();
      for (const [i] of env.urls.entries()) await ready(i);
    });
    await afterOps(OPS_BETWEEN_FAULTS);

    // 3. The publishing watch-fanout replica dies: the other is elected and publishes from where the bus ends.
    const election = etcd.election(ELECTION_NAME);
    let leaders = '';
    await step('watch-fanout failover', async () => {
      const leader = await until(async () => (await election.leader()) ?? undefined, 30000);
      const proc = env.processes.find((p) => p.name === leader);
      if (!proc) throw new Error(`the elected publisher ${leader} is no process of the environment`);
      const restarts = proc.restarts;
      proc.kill('SIGKILL');
      const successor = await until(async () => {
        const now = await election.leader();
        return now && now !== leader ? now : undefined;
      }, 60000);
      leaders = `${leader} -> ${successor}`;
      await until(() => (proc.restarts > restarts ? true : undefined), 30000);
    });
    await afterOps(OPS_BETWEEN_FAULTS);
    writing = false;
    await Promise.all(writers);
    const writeMs = Date.now() - started;
    // The last write: every client's history must reach it.
    const last = await request(1, 'POST', `/api/v1/namespaces/${NAMESPACE}/configmaps`, JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'the-end' }, data: { writes: String(ops) } }));
    expect(last.status).toBe(201);
    const lastRv = BigInt((JSON.parse(last.text) as { metadata: { resourceVersion: string } }).metadata.resourceVersion);

    // The truth, from etcd itself; a consistent list through either gateway must agree with it.
    const truth = await truthFromEtcd();
    const listed: Record<string, string[]> = {};
    for (const [i] of env.urls.entries()) listed[`list through gateway ${i}`] = differences(await listThroughApi(i), truth);

    // Quiescence: the clients catch up with the last writes.
    const convergeStarted = Date.now();
    let views: Record<string, string[]> = {};
    for (;;) {
      views = {};
      for (const c of clients) views[c.label] = differences(await c.view(), truth);
      if (Object.values(views).every((d) => d.length === 0) || Date.now() - convergeStarted > CONVERGE_MS) break;
      await new Promise((r) => setTimeout(r, 1000));
    }
    const convergeMs = Date.now() - convergeStarted;
    const changes = await changesFromEtcd(namespaceRv, lastRv);
    const order = Object.fromEntries(clients.map((c) => [c.label, c.violations]));
    const missed = Object.fromEntries(clients.map((c) => [c.label, gaps(c, changes)]));

    const count = (r: Record<string, string[]>): number => Object.values(r).reduce((n, d) => n + d.length, 0);
    const report = [
      `watch-resilience: ${NAMES} names, ${WRITERS} writers, ${ops} writes, ${changes.length} changes in etcd, ${Object.keys(truth).length} ConfigMaps at the end; publisher ${leaders}`,
      `  write outcomes: ${JSON.stringify(Object.fromEntries([...statuses.entries()].sort()))}`,
      `  per fault, ms until recovered and until every client had events again, and writes meanwhile: ${JSON.stringify(steps)}`,
      `  writing ${writeMs} ms; clients converged ${convergeMs} ms after the writes`,
      ...clients.map((c) => `  ${c.summary()}`),
      `  differences from etcd: lists ${count(listed)}, client views ${count(views)}; events out of order ${count(order)}; changes missed ${count(missed)}`,
    ];
    process.stdout.write(report.join('\n') + '\n');

    const none = (r: Record<string, string[]>): Record<string, string[]> => Object.fromEntries(Object.keys(r).map((k) => [k, []]));
    expect(listed).toEqual(none(listed));
    expect(views).toEqual(none(views));
    expect(order).toEqual(none(order));
    // Nothing missed in between either: each client's events after each list are etcd's changes.
    expect(missed).toEqual(none(missed));
    passed = true;
  }, 600000);
});
