import { execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as yaml from 'js-yaml';
import { STORAGE_FLAGS } from '@svc/storage';
import { WATCH_FANOUT_FLAGS } from '@svc/watch-fanout';
import { HealthService, startHealthServer } from '@svc/service-kit';
import type { FlagSpecs } from '@svc/service-kit';
import type { RunResult } from './helpers';

/**
 * The container deployment: docker-compose.yml (checked through Debian's
 * `docker-compose config`, and Compose v2's `docker compose config` where that
 * is installed), the Kubernetes manifests under deploy/kubernetes (rendered
 * with `kubectl kustomize`; deploy-overlays.test.ts checks every overlay) and
 * the scripts the image runs (deploy/scripts). Every flag handed to a service
 * must be one its flags.ts declares, every address must name a service
 * listening on that port, and the two descriptions of the system must agree
 * on flags and ports.
 */

const ROOT = path.resolve(__dirname, '..', '..', '..');
const SERVICES = ['storage', 'authn', 'authz', 'admission', 'watch-fanout', 'gateway', 'controller-manager'] as const;
type ServiceName = (typeof SERVICES)[number];
/** Address flags and the service each one must point at. */
const ADDRESS_FLAGS: Record<string, ServiceName> = {
  'storage-address': 'storage',
  'authn-address': 'authn',
  'authz-address': 'authz',
  'admission-address': 'admission',
  'watch-fanout-address': 'watch-fanout',
};

function runIn(cwd: string, command: string, args: string[], timeoutMs = 60000): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const raw = err ? (err as { code?: unknown }).code : 0;
      const code = typeof raw === 'number' ? raw : err ? 1 : 0;
      const extra = err && typeof raw !== 'number' ? `${err.message}\n` : '';
      resolve({ code, stdout: String(stdout), stderr: extra + String(stderr) });
    });
  });
}

function expectSuccess(res: RunResult, what: string): void {
  if (res.code !== 0) throw new Error(`${what} exited ${res.code}\nstdout:\n${res.stdout}\nstderr:\n${res.stderr}`);
}

// ---------------------------------------------------------------------------
// Flags declared by each service: the FlagSpecs its flags module exports
// (what `--help` prints and the parser accepts).

interface DeclaredFlags {
  names: Set<string>;
  required: Set<string>;
}

const flagCache = new Map<string, DeclaredFlags>();
function declaredFlags(service: string): DeclaredFlags {
  let flags = flagCache.get(service);
  if (!flags) {
    const mod = require(path.join(ROOT, 'services', service, 'dist', 'flags.js')) as Record<string, FlagSpecs>;
    const specs = Object.entries(mod).find(([name]) => name.endsWith('_FLAGS'))?.[1];
    if (!specs) throw new Error(`services/${service}/src/flags.ts exports no *_FLAGS`);
    flags = { names: new Set(Object.keys(specs)), required: new Set(Object.entries(specs).filter(([, s]) => s.required === true && s.default === undefined).map(([n]) => n)) };
    flagCache.set(service, flags);
  }
  return flags;
}

// ---------------------------------------------------------------------------
// Commands.

/** The service a command runs (`node services/<name>/dist/main.js ...`), if any. */
function serviceOf(command: readonly string[]): ServiceName | undefined {
  for (const part of command) {
    const m = /^(?:\/app\/)?services\/([a-z-]+)\/dist\/main\.js$/.exec(part);
    if (m) {
      if (!(SERVICES as readonly string[]).includes(m[1] as string)) throw new Error(`unknown service ${m[1]}`);
      return m[1] as ServiceName;
    }
  }
  return undefined;
}

/** `--name=value` arguments of a command, in order (a bare `--name` has value `true`). */
function flagsOf(command: readonly string[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const part of command) {
    if (!part.startsWith('--')) continue;
    const eq = part.indexOf('=');
    out.push(eq >= 0 ? [part.slice(2, eq), part.slice(eq + 1)] : [part.slice(2), 'true']);
  }
  return out;
}

function flagValue(command: readonly string[], name: string): string | undefined {
  const found = flagsOf(command).filter(([n]) => n === name);
  return found.length > 0 ? (found[found.length - 1] as [string, string])[1] : undefined;
}

/** `host:port`, or `dns:///host:port` (every address the name resolves to, balanced round-robin). */
function splitHostPort(address: string): { host: string; port: number } {
  address = address.replace(/^dns:\/\/\//, '');
  const sep = address.lastIndexOf(':');
  if (sep <= 0) throw new Error(`not host:port: ${address}`);
  return { host: address.slice(0, sep), port: Number(address.slice(sep + 1)) };
}

function asList(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  if (typeof value === 'string') return value.split(/\s+/).filter(Boolean);
  if (Array.isArray(value)) return value.map(String);
  throw new Error(`not a command: ${JSON.stringify(value)}`);
}

// ---------------------------------------------------------------------------
// docker-compose.yml

interface ComposeService {
  image?: string;
  build?: unknown;
  entrypoint?: unknown;
  command?: unknown;
  depends_on?: Record<string, { condition?: string }> | string[];
  healthcheck?: { test?: unknown; disable?: boolean };
  ports?: unknown[];
  volumes?: unknown[];
  restart?: string;
  /** Optional add-ons (the `tracing` profile's collector and Jaeger) run only when their profile is asked for. */
  profiles?: string[];
}

interface Compose {
  services: Record<string, ComposeService>;
  volumes?: Record<string, unknown>;
}

/** The Compose implementations the file must work with: v1 (`docker-compose`) and v2 (`docker compose`). */
const COMPOSE_CLIS: Array<{ name: string; command: string; prefix: string[] }> = [
  { name: 'Compose v1 (docker-compose)', command: 'docker-compose', prefix: [] },
  { name: 'Compose v2 (docker compose)', command: 'docker', prefix: ['compose'] },
];

/** Steps that run once and exit (`restart: "no"`): the pki step and the kubeconfig copy. */
function isOneShot(svc: ComposeService): boolean {
  return svc.restart === 'no';
}

function command(svc: ComposeService): string[] {
  return [...asList(svc.entrypoint), ...asList(svc.command)];
}

function dependsOn(svc: ComposeService): Record<string, string> {
  const deps = svc.depends_on ?? {};
  if (Array.isArray(deps)) return Object.fromEntries(deps.map((d) => [d, 'service_started']));
  return Object.fromEntries(Object.entries(deps).map(([k, v]) => [k, v?.condition ?? 'service_started']));
}

/** Volume mounts as {source, target, readOnly} whichever syntax `docker-compose config` printed. */
function mounts(svc: ComposeService): Array<{ source: string; target: string; readOnly: boolean }> {
  return (svc.volumes ?? []).map((v) => {
    if (typeof v === 'string') {
      const [source = '', target = '', mode = ''] = v.split(':');
      return { source, target, readOnly: mode.split(',').includes('ro') };
    }
    const o = v as { source?: string; target?: string; read_only?: boolean };
    return { source: o.source ?? '', target: o.target ?? '', readOnly: o.read_only === true };
  });
}

function publishedPorts(svc: ComposeService): Array<{ published: number; target: number }> {
  return (svc.ports ?? []).map((p) => {
    if (typeof p === 'string' || typeof p === 'number') {
      const parts = String(p).split(':');
      return { published: Number(parts[parts.length - 2]), target: Number(parts[parts.length - 1]) };
    }
    const o = p as { published?: string | number; target?: string | number };
    return { published: Number(o.published), target: Number(o.target) };
  });
}

function healthcheckText(svc: ComposeService): string {
  return asList(svc.healthcheck?.test).join(' ');
}

describe('docker-compose.yml', () => {
  let config: Compose | undefined;
  const load = async (): Promise<Compose> => {
    if (!config) {
      const res = await runIn(ROOT, 'docker-compose', ['config']);
      expectSuccess(res, 'docker-compose config (install Debian\'s docker-compose: scripts/setup --test)');
      config = yaml.load(res.stdout) as Compose;
    }
    return config;
  };
  /** Compose services that run one of our services, with the one they run. */
  const appServices = async (): Promise<Array<[string, ServiceName, ComposeService]>> => {
    const out: Array<[string, ServiceName, ComposeService]> = [];
    for (const [name, svc] of Object.entries((await load()).services)) {
      const service = serviceOf(command(svc));
      if (service) out.push([name, service, svc]);
    }
    return out;
  };
  const listenPort = (svc: ComposeService): number => splitHostPort(flagValue(command(svc), 'listen') ?? '').port;

  test('`config -q` accepts the file under Compose v1 and v2, and both read the same services and commands', async () => {
    const reference = await load();
    const checked: string[] = [];
    for (const cli of COMPOSE_CLIS) {
      if ((await runIn(ROOT, cli.command, [...cli.prefix, 'version'])).code !== 0) {
        // The v2 plugin is not a Debian package on bookworm; CI machines with Docker's own packages run this part.
        console.warn(`${cli.name} is not installed here: its \`config\` check is skipped`);
        continue;
      }
      const quiet = await runIn(ROOT, cli.command, [...cli.prefix, 'config', '-q']);
      expectSuccess(quiet, `${cli.command} ${[...cli.prefix, 'config', '-q'].join(' ')}`);
      expect(quiet.stdout).toBe('');
      const full = await runIn(ROOT, cli.command, [...cli.prefix, 'config']);
      expectSuccess(full, `${cli.command} ${[...cli.prefix, 'config'].join(' ')}`);
      const parsed = yaml.load(full.stdout) as Compose;
      // Profiles' services are left out by v2 unless their profile is asked for.
      const always = (c: Compose) => Object.keys(c.services).filter((n) => !c.services[n]?.profiles).sort();
      expect(always(parsed)).toEqual(always(reference));
      for (const name of always(reference)) {
        // v1 prints `$$` escaped again, v2 the value a container gets (`$`).
        const norm = (svc: ComposeService | undefined) => (svc ? command(svc) : []).map((part) => part.replace(/\$\$/g, '$'));
        expect(`${cli.name} ${name}: ${norm(parsed.services[name]).join(' ')}`).toBe(`${cli.name} ${name}: ${norm(reference.services[name]).join(' ')}`);
      }
      checked.push(cli.name);
    }
    // Debian's docker-compose at least (scripts/setup --test installs it).
    expect(checked.length).toBeGreaterThan(0);
  });

  test('the admin kubeconfig reaches the host through a bind mount, the same way under v1 and v2', async () => {
    const { services } = await load();
    const step = services['kubeconfig'];
    if (!step) throw new Error('no kubeconfig service in docker-compose.yml');
    expect(isOneShot(step)).toBe(true);
    expect(dependsOn(step)['pki']).toBe('service_completed_successfully');
    // Bind mounts: ./.svc of the project (git- and docker-ignored) and the compose file (whose owner gets the copy).
    const byTarget = new Map(mounts(step).map((m) => [m.target, m]));
    expect(byTarget.get('/host')).toEqual({ source: path.join(ROOT, '.svc'), target: '/host', readOnly: false });
    expect(byTarget.get('/pki')).toEqual({ source: 'pki', target: '/pki', readOnly: true });
    const script = command(step).join(' ');
    expect(script).toMatch(/install [^\n]*-m 0600 \/pki\/admin\.kubeconfig \/host\/compose\/admin\.kubeconfig/);
    const owner = byTarget.get('/project/docker-compose.yml');
    expect(owner).toEqual({ source: path.join(ROOT, 'docker-compose.yml'), target: '/project/docker-compose.yml', readOnly: true });
    expect(script).toContain('stat -c %u:%g /project/docker-compose.yml');
    for (const ignore of ['.gitignore', '.dockerignore']) {
      expect(`${ignore}: ${fs.readFileSync(path.join(ROOT, ignore), 'utf8').split('\n').some((l) => /^\.svc\/?$/.test(l.trim()))}`).toBe(`${ignore}: true`);
    }
    // The kubeconfig names the port the gateway publishes, and is in place once the gateway is up.
    expect(flagValue(command(services['pki'] as ComposeService), 'server')).toBe('https://localhost:6443');
    expect(dependsOn(services['gateway'] as ComposeService)['kubeconfig']).toBe('service_completed_successfully');
    // The documented command is this path, nowhere `docker cp` of `ps -q pki` (empty under v2 once pki exited).
    for (const doc of ['docker-compose.yml', 'README.md', 'deploy/README.md']) {
      const text = fs.readFileSync(path.join(ROOT, doc), 'utf8');
      expect(`${doc}: ${text.includes('.svc/compose/admin.kubeconfig')}`).toBe(`${doc}: true`);
      expect(`${doc}: ${/ps -q pki/.test(text)}`).toBe(`${doc}: false`);
    }
  });

  test('the declared flags are the ones the services export', () => {
    expect([...declaredFlags('storage').names].sort()).toEqual(Object.keys(STORAGE_FLAGS).sort());
    expect([...declaredFlags('watch-fanout').names].sort()).toEqual(Object.keys(WATCH_FANOUT_FLAGS).sort());
    expect([...declaredFlags('gateway').required].sort()).toEqual(['internal-ca-file', 'internal-cert-file', 'internal-key-file', 'tls-cert-file', 'tls-private-key-file']);
  });

  test('topology: etcd, NATS with JetStream, pki, every service once and two watch-fanout replicas', async () => {
    const { services } = await load();
    expect(Object.keys(services)).toEqual(
      expect.arrayContaining(['etcd', 'nats', 'pki', 'storage', 'authn', 'authz', 'admission', 'gateway', 'watch-fanout-1', 'watch-fanout-2']),
    );
    const byService = new Map<ServiceName, string[]>();
    for (const [name, service] of await appServices()) byService.set(service, [...(byService.get(service) ?? []), name]);
    expect(Object.fromEntries([...byService].map(([k, v]) => [k, v.sort()]))).toEqual({
      storage: ['storage'],
      authn: ['authn'],
      authz: ['authz'],
      admission: ['admission'],
      gateway: ['gateway'],
      'watch-fanout': ['watch-fanout-1', 'watch-fanout-2'],
      'controller-manager': ['controller-manager'],
    });
    expect(services['etcd']?.image).toMatch(/^quay\.io\/coreos\/etcd:v3\.5\.\d+$/);
    expect(services['nats']?.image).toMatch(/^nats:2\.10(\.\d+)?(-[a-z0-9]+)?$/);
    expect(command(services['nats'] as ComposeService)).toEqual(expect.arrayContaining([expect.stringMatching(/^(-js|--jetstream)$/)]));
    // One image, built from the Dockerfile, for pki and every service.
    const images = new Set([services['pki'], ...(await appServices()).map(([, , svc]) => svc)].map((svc) => svc?.image));
    expect(images.size).toBe(1);
    expect(services['pki']?.build ?? services['gateway']?.build).toBeDefined();
    // The watch-fanout replicas take part in one election under different identities.
    const ids = ['watch-fanout-1', 'watch-fanout-2'].map((n) => flagValue(command(services[n] as ComposeService), 'id'));
    expect(new Set(ids).size).toBe(2);
    expect(ids).not.toContain(undefined);
  });

  test('every long-running service has a health check; pki and the kubeconfig copy run once', async () => {
    const { services } = await load();
    for (const [name, svc] of Object.entries(services)) {
      // One-shot steps run once; a profile's add-ons are not part of the system (their images have no tool to probe with).
      if (isOneShot(svc) || svc.profiles) continue;
      const check = healthcheckText(svc);
      if (!check || svc.healthcheck?.disable || /^NONE\b/.test(check)) throw new Error(`service ${name} has no health check`);
    }
    expect(healthcheckText(services['etcd'] as ComposeService)).toMatch(/etcdctl .*endpoint health/);
    expect(healthcheckText(services['nats'] as ComposeService)).toMatch(/:8222\/healthz/);
    expect(healthcheckText(services['gateway'] as ComposeService)).toMatch(/https:\/\/[^ ]+:6443\/readyz/);
    // The controller-manager serves plain HTTP health endpoints, not gRPC.
    expect(healthcheckText(services['controller-manager'] as ComposeService)).toContain(`http http://127.0.0.1:${listenPort(services['controller-manager'] as ComposeService)}/readyz`);
    for (const [name, , svc] of await appServices()) {
      if (name === 'gateway' || name === 'controller-manager') continue;
      // The gRPC services answer grpc.health.v1 on their plain-text health port, which the check asks.
      const health = flagValue(command(svc), 'health-bind-address');
      expect(`${name}: ${health}`).toBe(`${name}: 0.0.0.0:9101`);
      expect(`${name}: ${healthcheckText(svc)}`).toBe(`${name}: CMD node /app/deploy/scripts/healthcheck.js grpc 127.0.0.1:${splitHostPort(health ?? '').port}`);
    }
    // Scripts the checks and commands run are in the repository (the image copies deploy/scripts to /app).
    for (const [name, svc] of Object.entries(services)) {
      for (const part of [...asList(svc.healthcheck?.test), ...command(svc)]) {
        const m = /^(?:\/app\/)?(deploy\/scripts\/[\w.-]+)$/.exec(part);
        if (m) expect(`${name}: ${m[1]} ${fs.existsSync(path.join(ROOT, m[1] as string))}`).toBe(`${name}: ${m[1]} true`);
      }
    }
    const pki = services['pki'] as ComposeService;
    expect(['no', 'on-failure', undefined]).toContain(pki.restart);
    expect(command(pki)).toEqual(expect.arrayContaining(['deploy/scripts/pki.js']));
    // `up --wait` (v2) counts a one-shot step's exit as done only when a long-running service waits for it.
    for (const [name, svc] of Object.entries(services)) {
      if (!isOneShot(svc)) continue;
      const adopters = Object.entries(services).filter(([, other]) => !isOneShot(other) && !other.profiles && dependsOn(other)[name] === 'service_completed_successfully');
      expect(`${name}: ${adopters.length > 0}`).toBe(`${name}: true`);
    }
  });

  test('start order: depends_on waits for health, and for pki to finish', async () => {
    const { services } = await load();
    for (const [name, svc] of Object.entries(services)) {
      for (const [dep, condition] of Object.entries(dependsOn(svc))) {
        expect(Object.keys(services)).toContain(dep);
        if (isOneShot(services[dep] as ComposeService)) expect(`${name} -> ${dep}: ${condition}`).toBe(`${name} -> ${dep}: service_completed_successfully`);
        else {
          expect(`${name} -> ${dep}: ${condition}`).toBe(`${name} -> ${dep}: service_healthy`);
          expect(healthcheckText(services[dep] as ComposeService)).not.toBe('');
        }
      }
    }
    const gatewayDeps = dependsOn(services['gateway'] as ComposeService);
    for (const dep of ['pki', 'nats', 'storage', 'authn', 'authz', 'admission', 'watch-fanout-1', 'watch-fanout-2']) expect(Object.keys(gatewayDeps)).toContain(dep);
    expect(Object.keys(dependsOn(services['storage'] as ComposeService))).toContain('etcd');
    for (const n of ['watch-fanout-1', 'watch-fanout-2']) expect(Object.keys(dependsOn(services[n] as ComposeService)).sort()).toEqual(expect.arrayContaining(['etcd', 'nats']));
  });

  test('every flag passed to a service is declared by its flags.ts, and required flags are given', async () => {
    const apps = await appServices();
    expect(apps.length).toBeGreaterThanOrEqual(7);
    for (const [name, service, svc] of apps) {
      const declared = declaredFlags(service);
      const given = flagsOf(command(svc)).map(([flag]) => flag);
      for (const flag of given) if (!declared.names.has(flag)) throw new Error(`${name}: --${flag} is not a flag of ${service} (services/${service}/src/flags.ts)`);
      for (const flag of declared.required) expect(`${name}: ${given.includes(flag)}`).toBe(`${name}: true`);
      expect(`${name}: ${splitHostPort(flagValue(command(svc), 'listen') ?? '').host}`).toBe(`${name}: 0.0.0.0`);
    }
  });

  test('addresses name the compose service listening there; the gateway reaches both watch-fanout replicas', async () => {
    const { services } = await load();
    const apps = await appServices();
    const runs = new Map(apps.map(([name, service]) => [name, service]));
    for (const [name, , svc] of apps) {
      for (const [flag, value] of flagsOf(command(svc))) {
        const target = ADDRESS_FLAGS[flag];
        if (target) {
          for (const address of value.split(',')) {
            const { host, port } = splitHostPort(address);
            expect(`${name} --${flag}: ${host} runs ${runs.get(host)}`).toBe(`${name} --${flag}: ${host} runs ${target}`);
            expect(`${name} --${flag}: port ${port}`).toBe(`${name} --${flag}: port ${listenPort(services[host] as ComposeService)}`);
          }
        }
        if (flag === 'etcd-servers') for (const url of value.split(',')) expect(new URL(url).host).toBe('etcd:2379');
        if (flag === 'nats-url') expect(new URL(value).host).toBe('nats:4222');
      }
    }
    const fanout = flagValue(command(services['gateway'] as ComposeService), 'watch-fanout-address') ?? '';
    expect(fanout.split(',').map((a) => splitHostPort(a).host).sort()).toEqual(['watch-fanout-1', 'watch-fanout-2']);
  });

  test('each consumer mounts only its own pki volume; the CA keys stay with the pki step', async () => {
    const { services, volumes } = await load();
    expect(Object.keys(volumes ?? {})).toContain('pki');
    const pki = services['pki'] as ComposeService;
    expect(mounts(pki)).toContainEqual({ source: 'pki', target: '/pki', readOnly: false });
    expect(flagValue(command(pki), 'dir')).toBe('/pki');
    expect(flagValue(command(pki), 'export-dir')).toBe('/export');
    expect((flagValue(command(pki), 'hosts') ?? '').split(',')).toEqual(expect.arrayContaining(['localhost', '127.0.0.1', 'gateway']));
    expect(flagValue(command(pki), 'server')).toBe('https://localhost:6443');
    for (const [name, svc] of Object.entries(services)) {
      if (name === 'pki') continue;
      // Only the pki step sees the CA keys (the kubeconfig copy reads the volume, read-only, for admin.kubeconfig).
      if (name === 'kubeconfig') {
        expect(mounts(svc).filter((m) => m.source === 'pki')).toEqual([{ source: 'pki', target: '/pki', readOnly: true }]);
        expect(command(svc).join(' ').match(/\/pki\/[\w.-]+/g)).toEqual(['/pki/admin.kubeconfig']);
        continue;
      }
      expect(`${name}: ${mounts(svc).some((m) => m.source === 'pki')}`).toBe(`${name}: false`);
      const reads = [...command(svc), ...asList(svc.healthcheck?.test)].some((part) => /(^|=)\/pki\//.test(part));
      if (!reads) continue;
      const consumer = name.replace(/-\d+$/, '');
      expect(mounts(svc).filter((m) => m.target === '/pki').map((m) => `${name}: ${m.source} ro=${m.readOnly}`)).toEqual([`${name}: pki-${consumer} ro=true`]);
      expect(mounts(pki)).toContainEqual({ source: `pki-${consumer}`, target: `/export/${consumer}`, readOnly: false });
      expect(dependsOn(svc)['pki']).toBe('service_completed_successfully');
    }
    const gateway = command(services['gateway'] as ComposeService);
    expect(flagValue(gateway, 'tls-cert-file')).toBe('/pki/serving.crt');
    expect(flagValue(gateway, 'client-ca-file')).toBe('/pki/client-ca.crt');
  });

  test('every internal edge is mutual TLS: gRPC, etcd and NATS', async () => {
    const { services } = await load();
    for (const [name, service, svc] of await appServices()) {
      if (service === 'controller-manager') continue;
      const cmd = command(svc);
      expect(`${name}: ${flagValue(cmd, 'internal-ca-file')} ${flagValue(cmd, 'internal-cert-file')} ${flagValue(cmd, 'internal-key-file')}`).toBe(`${name}: /pki/internal-ca.crt /pki/tls.crt /pki/tls.key`);
      if (flagValue(cmd, 'etcd-servers')) {
        expect(`${name}: ${flagValue(cmd, 'etcd-servers')} ${flagValue(cmd, 'etcd-certfile')}`).toBe(`${name}: https://etcd:2379 /pki/tls.crt`);
      }
      if (flagValue(cmd, 'nats-url')) {
        expect(`${name}: ${flagValue(cmd, 'nats-url')} ${flagValue(cmd, 'nats-cert-file')}`).toBe(`${name}: tls://nats:4222 /pki/tls.crt`);
      }
    }
    const etcd = command(services['etcd'] as ComposeService);
    expect(etcd).toEqual(expect.arrayContaining(['--client-cert-auth', '--trusted-ca-file=/pki/internal-ca.crt', '--listen-client-urls=https://0.0.0.0:2379']));
    expect(command(services['nats'] as ComposeService)).toContain('--config=/pki/nats.conf');
  });

  test('only the gateway is reachable from outside', async () => {
    const res = await runIn(ROOT, 'docker-compose', ['config']);
    const raw = yaml.load(res.stdout) as Compose & { networks?: Record<string, { internal?: boolean } | null> };
    const networksOf = (svc: ComposeService): string[] => {
      const n = (svc as { networks?: string[] | Record<string, unknown> }).networks;
      return Array.isArray(n) ? n : Object.keys(n ?? {});
    };
    expect(raw.networks?.['internal']?.internal).toBe(true);
    for (const [name, svc] of Object.entries(raw.services)) {
      if (name === 'gateway') {
        expect(networksOf(svc).sort()).toEqual(['edge', 'internal']);
        expect(publishedPorts(svc)).toEqual([{ published: 6443, target: listenPort(svc) }]);
      } else if (name === 'prometheus') {
        // The observability profile's UI, published on the host's loopback only.
        expect(svc.profiles).toEqual(['observability']);
        expect((svc.ports ?? []).map(String)).toEqual(['127.0.0.1:9090:9090/tcp']);
      } else if (name === 'jaeger') {
        // The tracing profile's UI, published on the host's loopback only.
        expect(svc.profiles).toEqual(['tracing']);
        expect((svc.ports ?? []).map(String)).toEqual(['127.0.0.1:16686:16686/tcp']);
      } else {
        expect(`${name}: ${networksOf(svc).join(',')}`).toBe(`${name}: internal`);
        expect(`${name}: ${publishedPorts(svc).length}`).toBe(`${name}: 0`);
      }
    }
  });
});

// ---------------------------------------------------------------------------
// deploy/kubernetes

interface K8sObject {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; annotations?: Record<string, string>; labels?: Record<string, string> };
  spec?: Record<string, unknown>;
}

interface Container {
  name: string;
  command?: string[];
  args?: string[];
  env?: Array<{ name: string; value?: string }>;
  ports?: Array<{ name?: string; containerPort: number }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  readinessProbe?: unknown;
}

interface PodSpec {
  containers: Container[];
  volumes?: Array<{ name: string; secret?: { secretName: string } }>;
}

const K8S_DIR = path.join(ROOT, 'deploy', 'kubernetes');
/** The overlay checked against docker-compose.yml: the base as it runs behind ingress-nginx. */
const OVERLAY = 'overlays/ingress-nginx';

/** Every YAML file under deploy/kubernetes but the kustomization files, relative to it. */
function manifestFiles(dir = K8S_DIR): string[] {
  const out: string[] = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...manifestFiles(full));
    else if (/\.ya?ml$/.test(entry.name) && entry.name !== 'kustomization.yaml') out.push(path.relative(K8S_DIR, full));
  }
  return out.sort();
}

/** The objects `kubectl kustomize` renders from an overlay, each with the file it says it is from. */
function loadManifests(overlay = OVERLAY): Array<{ file: string; doc: K8sObject }> {
  let rendered: string;
  try {
    rendered = execFileSync('kubectl', ['kustomize', path.join(K8S_DIR, overlay)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60000 });
  } catch (err) {
    throw new Error(`kubectl kustomize deploy/kubernetes/${overlay} failed: ${(err as { stderr?: string }).stderr ?? String(err)}`);
  }
  return yaml.loadAll(rendered).filter((d) => d !== null && d !== undefined).map((doc) => ({ file: `${overlay} ${(doc as K8sObject).kind}/${(doc as K8sObject).metadata?.name}`, doc: doc as K8sObject }));
}

/** An argument as the kubelet expands it: `$(NAME)` from the container's env. */
function expandEnv(c: Container, arg: string): string {
  return arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => c.env?.find((e) => e.name === name)?.value ?? whole);
}

function podSpec(obj: K8sObject): PodSpec {
  const template = obj.spec?.['template'] as { spec?: PodSpec } | undefined;
  if (!template?.spec) throw new Error(`${obj.kind}/${obj.metadata?.name} has no pod template`);
  return template.spec;
}

describe('deploy/kubernetes', () => {
  let manifests: Array<{ file: string; doc: K8sObject }> = [];
  const find = (kind: string, name: string): K8sObject => {
    const found = manifests.find(({ doc }) => doc.kind === kind && doc.metadata?.name === name);
    if (!found) throw new Error(`no ${kind} ${name} under deploy/kubernetes`);
    return found.doc;
  };
  const workloads = (): Array<[ServiceName, K8sObject, Container]> => {
    const out: Array<[ServiceName, K8sObject, Container]> = [];
    for (const { doc } of manifests) {
      if (!['Deployment', 'StatefulSet', 'Job', 'DaemonSet'].includes(doc.kind ?? '')) continue;
      for (const c of podSpec(doc).containers) {
        const service = serviceOf([...(c.command ?? []), ...(c.args ?? [])]);
        if (service) out.push([service, doc, c]);
      }
    }
    return out;
  };
  const argv = (c: Container): string[] => [...(c.command ?? []), ...(c.args ?? [])];

  beforeAll(() => {
    manifests = loadManifests();
  });

  test('every YAML document parses and has apiVersion, kind and metadata.name', () => {
    const files = manifestFiles();
    expect(files.length).toBeGreaterThan(10);
    for (const { file, doc } of manifests) expect(`${file}: ${doc.metadata?.name}`).toMatch(/: [a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
    for (const file of files) {
      // The restore Job is a template: its placeholders are filled in with sed (deploy/README.md).
      if (file.startsWith('restore/')) continue;
      const docs = yaml.loadAll(fs.readFileSync(path.join(K8S_DIR, file), 'utf8')).filter((d) => d !== null && d !== undefined);
      expect(`${file}: ${docs.length > 0}`).toBe(`${file}: true`);
      for (const doc of docs as K8sObject[]) {
        const where = `${file}: ${doc.kind}/${doc.metadata?.name}`;
        expect(`${where} apiVersion=${typeof doc.apiVersion}`).toBe(`${where} apiVersion=string`);
        expect(`${where} kind=${typeof doc.kind}`).toBe(`${where} kind=string`);
        expect(`${where} name=${typeof doc.metadata?.name}`).toBe(`${where} name=string`);
        expect(doc.apiVersion).not.toBe('');
        expect(doc.metadata?.name).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
      }
    }
  });

  test('a Deployment per service and a Service for each one called, watch-fanout on its own behind a headless Service', () => {
    const byService = new Map<ServiceName, K8sObject[]>();
    for (const [service, workload] of workloads()) byService.set(service, [...(byService.get(service) ?? []), workload]);
    for (const service of SERVICES) {
      const ws = byService.get(service) ?? [];
      expect(`${service}: ${ws.map((w) => `${w.kind}/${w.metadata?.name}`).join(',')}`).toBe(`${service}: Deployment/${service}`);
      if (service === 'controller-manager') continue;
      const svc = find('Service', service);
      const selector = (svc.spec?.['selector'] ?? {}) as Record<string, string>;
      const labels = ((ws[0]?.spec?.['template'] as { metadata?: { labels?: Record<string, string> } }).metadata?.labels ?? {}) as Record<string, string>;
      expect(Object.keys(selector).length).toBeGreaterThan(0);
      expect(labels).toMatchObject(selector);
    }
    expect(find('Deployment', 'watch-fanout').spec?.['replicas']).toBe(2);
    expect(find('Service', 'watch-fanout').spec?.['clusterIP']).toBe('None');
    const gateway = workloads().find(([s]) => s === 'gateway')?.[2] as Container;
    const fanout = flagValue(argv(gateway), 'watch-fanout-address') ?? '';
    // One name for every replica: the headless Service's DNS name, which the client resolves and balances over.
    expect(fanout).toBe('dns:///watch-fanout:7105');
    expect(fanout.split(',').map((a) => splitHostPort(a).host)).toEqual(['watch-fanout']);
  });

  test('etcd and NATS (JetStream) are StatefulSets; pki is a Job writing the Secret the pods mount; the Ingress passes TLS through', () => {
    const etcd = podSpec(find('StatefulSet', 'etcd')).containers[0] as Container;
    expect(etcd.command?.[0] ?? '').toMatch(/etcd$/);
    expect(argv(etcd)).toEqual(expect.arrayContaining(['--client-cert-auth', '--trusted-ca-file=/pki/internal-ca.crt']));
    const nats = podSpec(find('StatefulSet', 'nats')).containers[0] as Container;
    expect(argv(nats)).toEqual(expect.arrayContaining([expect.stringMatching(/^(-js|--jetstream)$/)]));
    expect(find('Service', 'etcd')).toBeDefined();
    expect(find('Service', 'nats')).toBeDefined();

    const jobs = manifests.filter(({ doc }) => doc.kind === 'Job').map(({ doc }) => doc);
    const pkiJob = jobs.find((j) => podSpec(j).containers.some((c) => argv(c).includes('deploy/scripts/pki.js')));
    if (!pkiJob) throw new Error('no Job runs deploy/scripts/pki.js');
    const secret = flagValue(argv(podSpec(pkiJob).containers[0] as Container), 'secret-prefix');
    expect(secret).toBeTruthy();
    for (const [service, workload, c] of workloads()) {
      if (!flagsOf(argv(c)).some(([, v]) => v.startsWith('/pki/'))) continue;
      const mount = c.volumeMounts?.find((m) => m.mountPath === '/pki');
      if (!mount) throw new Error(`${service} reads /pki but mounts nothing there`);
      const volume = podSpec(workload).volumes?.find((v) => v.name === mount.name);
      expect(`${service}: ${volume?.secret?.secretName}`).toBe(`${service}: ${secret}-${service}`);
    }

    const ingress = find('Ingress', 'gateway');
    expect(ingress.metadata?.annotations?.['nginx.ingress.kubernetes.io/ssl-passthrough']).toBe('true');
    const rules = (ingress.spec?.['rules'] ?? []) as Array<{ host?: string; http?: { paths?: Array<{ backend?: { service?: { name?: string } } }> } }>;
    expect(rules.flatMap((r) => r.http?.paths ?? []).map((p) => p.backend?.service?.name)).toEqual(['gateway']);
    // The Ingress host must be a name of the serving certificate (the Job's env gives it, as the kubelet expands it).
    const pkiContainer = podSpec(pkiJob).containers[0] as Container;
    const hosts = expandEnv(pkiContainer, flagValue(argv(pkiContainer), 'hosts') ?? '').split(',');
    for (const r of rules) expect(hosts).toContain(r.host);
  });

  test('NetworkPolicies allow exactly the internal edges, and anyone only to the gateway', () => {
    interface Policy {
      spec?: { podSelector?: { matchLabels?: Record<string, string> }; ingress?: Array<{ from?: Array<{ podSelector?: { matchLabels?: Record<string, string> } }>; ports?: Array<{ port: number }> }> };
    }
    const policies = manifests.filter(({ doc }) => doc.kind === 'NetworkPolicy').map(({ doc }) => doc as Policy & K8sObject);
    const denyAll = policies.find((p) => Object.keys(p.spec?.podSelector?.matchLabels ?? {}).length === 0 && (p.spec?.ingress ?? []).length === 0);
    expect(denyAll).toBeDefined();
    const edges = new Set<string>();
    for (const p of policies) {
      const target = p.spec?.podSelector?.matchLabels?.['app.kubernetes.io/name'];
      if (!target) continue;
      for (const rule of p.spec?.ingress ?? []) {
        const ports = (rule.ports ?? []).map((x) => x.port);
        const froms = rule.from === undefined ? ['*'] : rule.from.map((f) => f.podSelector?.matchLabels?.['app.kubernetes.io/name'] ?? '?');
        for (const from of froms) for (const port of ports) edges.add(`${from} -> ${target}:${port}`);
      }
    }
    expect([...edges].sort()).toEqual(
      [
        '* -> gateway:6443',
        'gateway -> storage:7101',
        'admission -> storage:7101',
        'watch-fanout -> storage:7101',
        'authn -> storage:7101',
        'authz -> storage:7101',
        'authz -> watch-fanout:7105',
        'admission -> watch-fanout:7105',
        'admission -> authz:7103',
        'gateway -> authn:7102',
        'gateway -> authz:7103',
        'gateway -> admission:7104',
        'gateway -> watch-fanout:7105',
        'storage -> etcd:2379',
        'watch-fanout -> etcd:2379',
        'gateway -> nats:4222',
        'watch-fanout -> nats:4222',
        // components/etcd-backup: the snapshot CronJob.
        'etcd-backup -> etcd:2379',
      ].sort(),
    );
  });

  test('the same flags and ports as docker-compose.yml, all declared by flags.ts', async () => {
    const res = await runIn(ROOT, 'docker-compose', ['config']);
    expectSuccess(res, 'docker-compose config');
    const compose = yaml.load(res.stdout) as Compose;
    const composeByService = new Map<ServiceName, string[]>();
    for (const svc of Object.values(compose.services)) {
      const cmd = command(svc);
      const service = serviceOf(cmd);
      if (service) composeByService.set(service, cmd);
    }
    const k8sServices = new Map(workloads().map(([service, , c]) => [service, c]));
    for (const [service, , c] of workloads()) {
      const args = argv(c);
      const declared = declaredFlags(service);
      for (const [flag] of flagsOf(args)) if (!declared.names.has(flag)) throw new Error(`deploy/kubernetes ${service}: --${flag} is not a flag of ${service}`);
      const composeCmd = composeByService.get(service) ?? [];
      expect(`${service}: ${[...new Set(flagsOf(args).map(([f]) => f))].sort().join(' ')}`).toBe(
        `${service}: ${[...new Set(flagsOf(composeCmd).map(([f]) => f))].sort().join(' ')}`,
      );
      const port = splitHostPort(flagValue(args, 'listen') ?? '').port;
      expect(`${service}: ${port}`).toBe(`${service}: ${splitHostPort(flagValue(composeCmd, 'listen') ?? '').port}`);
      // The listen port, and the metrics port where the service serves one (the same as in compose, annotated for scrapers).
      const metrics = flagValue(args, 'metrics-bind-address');
      const metricsPort = metrics ? splitHostPort(metrics).port : undefined;
      expect(`${service} metrics: ${metricsPort}`).toBe(`${service} metrics: ${flagValue(composeCmd, 'metrics-bind-address') ? splitHostPort(flagValue(composeCmd, 'metrics-bind-address') ?? '').port : undefined}`);
      // The gRPC services' grpc.health.v1 port (the kubelet's gRPC probes) too.
      const health = flagValue(args, 'health-bind-address');
      expect(`${service} health: ${health}`).toBe(`${service} health: ${flagValue(composeCmd, 'health-bind-address')}`);
      const healthPort = health ? splitHostPort(health).port : undefined;
      expect(c.ports?.map((p) => p.containerPort)).toEqual([port, metricsPort, healthPort].filter((p) => p !== undefined));
      // Nothing calls the controller-manager: it has no Service.
      if (service === 'controller-manager') continue;
      const svcPorts = ((find('Service', service).spec?.['ports'] ?? []) as Array<{ port: number }>).map((p) => p.port);
      expect(`${service}: ${svcPorts.join(',')}`).toBe(`${service}: ${port}`);
      for (const [flag, value] of flagsOf(args)) {
        const target = ADDRESS_FLAGS[flag];
        if (!target) continue;
        const { host, port: p } = splitHostPort(value);
        expect(`${service} --${flag}: ${host}`).toBe(`${service} --${flag}: ${target}`);
        expect(`${service} --${flag}: ${p}`).toBe(`${service} --${flag}: ${splitHostPort(flagValue(argv(k8sServices.get(target) as Container), 'listen') ?? '').port}`);
      }
      expect(`${service} readiness probe: ${c.readinessProbe !== undefined}`).toBe(`${service} readiness probe: true`);
    }
  });
});

// ---------------------------------------------------------------------------
// deploy/scripts

describe('deploy/scripts', () => {
  const node = (args: string[]) => runIn(ROOT, process.execPath, args, 30000);

  test('the Dockerfile: node:22-bookworm-slim, npm ci, the version build arguments and OCI labels, non-root at /app, with deploy/scripts', () => {
    const text = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
    const args = new Map([...text.matchAll(/^ARG\s+(\w+)=(\S+)/gm)].map((m) => [m[1] as string, m[2] as string]));
    const stages = text.split(/^FROM\s+/m).slice(1);
    const last = stages[stages.length - 1] as string;
    const base = (last.split(/\s/)[0] as string).replace(/^\$\{(\w+)\}$/, (_, name: string) => args.get(name) ?? '');
    // Node.js 22, an LTS release within package.json's engines.
    expect(base).toBe('node:22-bookworm-slim');
    const engines = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { engines?: { node?: string } }).engines?.node ?? '';
    expect(Number(/^>=\s*(\d+)/.exec(engines)?.[1])).toBeLessThanOrEqual(22);
    expect(last).toMatch(/^WORKDIR\s+\/app\s*$/m);
    const users = [...last.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1] as string);
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1]).not.toMatch(/^(root|0)(:|$)/);
    // The pki step issues certificates in process: no openssl in the image, only the CA bundle.
    expect(last).toMatch(/apt-get install[^\n]*\bca-certificates\b/);
    expect(last).not.toMatch(/apt-get install[^\n]*\bopenssl\b/);
    expect(text).toMatch(/cp -r deploy\/scripts /);
    // The lock's exact versions (it holds every platform's @bufbuild/buf), never a fresh resolution.
    expect(text).toMatch(/^RUN npm ci --no-audit --no-fund/m);
    expect(text).not.toMatch(/npm install/);
    expect(text).toMatch(/^RUN npm run build/m);
    // The version reaches scripts/build-info.js (run by `npm run build`) as environment variables of the build stage,
    // and the labels of the final one; docker-compose.yml passes the same arguments from its environment.
    const build = stages.find((s) => /^RUN npm run build/m.test(s)) as string;
    const beforeBuild = build.slice(0, build.search(/^RUN npm run build/m));
    const composeArgs = (yaml.load(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')) as { 'x-svc'?: { build?: { args?: Record<string, string> } } })['x-svc']?.build?.args ?? {};
    for (const arg of ['SVC_GIT_VERSION', 'SVC_GIT_COMMIT', 'SVC_BUILD_DATE']) {
      expect(`${arg}: ${new RegExp(`^ARG ${arg}\\b`, 'm').test(beforeBuild)}`).toBe(`${arg}: true`);
      expect(`${arg}: ${new RegExp(`^ARG ${arg}\\b`, 'm').test(last)}`).toBe(`${arg}: true`);
      expect(composeArgs[arg]).toBe(`\${${arg}:-}`);
    }
    const labels = new Map([...last.matchAll(/(org\.opencontainers\.image\.[a-z.]+)="([^"]*)"/g)].map((m) => [m[1] as string, m[2] as string]));
    expect(labels.get('org.opencontainers.image.version')).toMatch(/^\$\{SVC_GIT_VERSION\b/);
    expect(labels.get('org.opencontainers.image.revision')).toMatch(/^\$\{SVC_GIT_COMMIT\b/);
    expect(labels.get('org.opencontainers.image.created')).toMatch(/^\$\{SVC_BUILD_DATE\b/);
    for (const key of ['title', 'description', 'licenses']) expect(labels.get(`org.opencontainers.image.${key}`)).toBeTruthy();
    // Every directory a named volume is mounted on for writing exists in the image, owned by the user: a new
    // volume starts with the directory's owner (otherwise root's, and the pki step could not write its files).
    const created = /RUN mkdir -p ([^&]+)&& chown -R 1000:1000/.exec(last)?.[1]?.split(/\s+/).filter(Boolean) ?? [];
    const composeRaw = yaml.load(fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')) as Compose;
    for (const [name, svc] of Object.entries(composeRaw.services)) {
      if (svc.image !== 'svc-apiserver:local' || (svc as { user?: string }).user === '0:0') continue;
      for (const m of mounts(svc)) if (!m.readOnly && !m.source.startsWith('.') && !m.source.startsWith('/')) expect(`${name}: ${m.target} ${created.includes(m.target)}`).toBe(`${name}: ${m.target} true`);
    }
    const ignored = fs.readFileSync(path.join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l && !l.startsWith('#'));
    for (const needed of ['deploy', 'deploy/scripts', 'proto', 'packages', 'services', 'package-lock.json']) expect(ignored).not.toContain(needed);
  });

  test('pki.js issues the CA, the gateway serving certificate and the admin certificate and kubeconfig, and keeps them on a re-run', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-pki-'));
    try {
      const exportDir = path.join(dir, 'export');
      const args = ['deploy/scripts/pki.js', `--dir=${dir}`, `--export-dir=${exportDir}`, '--hosts=localhost,127.0.0.1,gateway', '--server=https://localhost:6443'];
      expectSuccess(await node(args), 'pki.js');
      for (const f of ['ca.crt', 'ca.key', 'serving.crt', 'serving.key', 'admin.crt', 'admin.key', 'admin.kubeconfig']) expect(fs.existsSync(path.join(dir, f))).toBe(true);
      const san = await runIn(dir, 'openssl', ['x509', '-in', 'serving.crt', '-noout', '-ext', 'subjectAltName']);
      expectSuccess(san, 'openssl x509 serving.crt');
      expect(san.stdout).toMatch(/DNS:localhost/);
      expect(san.stdout).toMatch(/IP Address:127\.0\.0\.1/);
      expect(san.stdout).toMatch(/DNS:gateway/);
      const subject = await runIn(dir, 'openssl', ['x509', '-in', 'admin.crt', '-noout', '-subject']);
      expect(subject.stdout).toMatch(/O\s*=\s*system:masters/);
      expect(subject.stdout).toMatch(/CN\s*=\s*svc-admin/);
      expectSuccess(await runIn(dir, 'openssl', ['verify', '-CAfile', 'ca.crt', 'serving.crt', 'admin.crt']), 'openssl verify');
      const kubeconfig = yaml.load(fs.readFileSync(path.join(dir, 'admin.kubeconfig'), 'utf8')) as { clusters: Array<{ cluster: { server: string } }> };
      expect(kubeconfig.clusters[0]?.cluster.server).toBe('https://localhost:6443');
      // Each consumer gets its own identity and never a CA key.
      for (const consumer of ['gateway', 'storage', 'authn', 'authz', 'admission', 'watch-fanout', 'etcd', 'nats']) {
        const own = path.join(exportDir, consumer);
        expect(fs.readdirSync(own).filter((f) => /ca\.key$/.test(f))).toEqual([]);
        const cn = await runIn(own, 'openssl', ['x509', '-in', 'tls.crt', '-noout', '-subject']);
        expect(cn.stdout).toMatch(new RegExp(`CN\\s*=\\s*${consumer}\\b`));
        expectSuccess(await runIn(own, 'openssl', ['verify', '-CAfile', 'internal-ca.crt', 'tls.crt']), `openssl verify ${consumer}`);
      }
      expect(fs.readdirSync(path.join(exportDir, 'gateway')).sort()).toEqual(['client-ca.crt', 'internal-ca.crt', 'serving.crt', 'serving.key', 'tls.crt', 'tls.key']);
      expect(fs.readFileSync(path.join(exportDir, 'nats', 'nats.conf'), 'utf8')).toMatch(/verify_and_map/);
      expect(fs.readdirSync(path.join(exportDir, 'controller-manager')).sort()).toEqual(['controller-manager.kubeconfig', 'rbac-bootstrap.kubeconfig']);
      // The controller-manager's own identity holds no group; only the default roles' writer is in system:masters.
      const subjectOf = async (cert: string): Promise<string> => (await runIn(dir, 'openssl', ['x509', '-noout', '-subject', '-in', cert])).stdout;
      expect(await subjectOf('controller-manager.crt')).not.toContain('system:masters');
      expect(await subjectOf('rbac-bootstrap.crt')).toContain('system:masters');
      expect(fs.readdirSync(path.join(exportDir, 'authn')).sort()).toEqual(['client-ca.crt', 'internal-ca.crt', 'service-account.key', 'tls.crt', 'tls.key']);
      // The client-facing CA does not verify internal certificates.
      expect((await runIn(exportDir, 'openssl', ['verify', '-CAfile', path.join(dir, 'ca.crt'), path.join('storage', 'tls.crt')])).code).not.toBe(0);
      const ca = fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8');
      expectSuccess(await node(args), 'pki.js (again)');
      expect(fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8')).toBe(ca);
      expect((await node(['deploy/scripts/pki.js', '--no-such-flag=1'])).code).not.toBe(0);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('healthcheck.js grpc asks grpc.health.v1 on a plain-text health port: SERVING passes, NOT_SERVING and nothing listening fail', async () => {
    let ready = true;
    const health = new HealthService({ services: ['svc.test.v1.Test'], ready: () => ready });
    const server = await startHealthServer('127.0.0.1:0', health);
    const check = (...extra: string[]) => node(['deploy/scripts/healthcheck.js', 'grpc', `127.0.0.1:${server.port}`, ...extra]);
    try {
      expectSuccess(await check(), 'healthcheck.js grpc (ready)');
      ready = false;
      const notServing = await check();
      expect(notServing.code).toBe(1);
      expect(notServing.stderr).toContain('NOT_SERVING');
      // Liveness answers while the process runs, whatever its backends do.
      expectSuccess(await check('--service=liveness'), 'healthcheck.js grpc --service=liveness');
    } finally {
      await server.close();
    }
    expect((await check()).code).toBe(1);
    expect((await node(['deploy/scripts/healthcheck.js', 'https', `https://127.0.0.1:${server.port}/readyz`])).code).toBe(1);
    expect((await node(['deploy/scripts/healthcheck.js', 'bogus'])).code).not.toBe(0);
  });
});
