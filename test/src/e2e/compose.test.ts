import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as yaml from 'js-yaml';
import { STORAGE_FLAGS } from '@svc/storage';
import { WATCH_FANOUT_FLAGS } from '@svc/watch-fanout';
import type { FlagSpecs } from '@svc/service-kit';
import type { RunResult } from './helpers';

/**
 * The container deployment: docker-compose.yml (checked through Debian's
 * `docker-compose config`), the Kubernetes manifests under deploy/kubernetes
 * and the scripts the image runs (deploy/scripts). Every flag handed to a
 * service must be one its flags.ts declares, every address must name a
 * service listening on that port, and the two descriptions of the system
 * must agree on flags and ports.
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

function splitHostPort(address: string): { host: string; port: number } {
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

  test('`docker-compose config -q` accepts the file', async () => {
    const res = await runIn(ROOT, 'docker-compose', ['config', '-q']);
    expectSuccess(res, 'docker-compose config -q');
    expect(res.stdout).toBe('');
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

  test('every long-running service has a health check; pki runs once', async () => {
    const { services } = await load();
    for (const [name, svc] of Object.entries(services)) {
      // pki runs once; a profile's add-ons are not part of the system (their images have no tool to probe with).
      if (name === 'pki' || svc.profiles) continue;
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
      // The gRPC check probes the port the service listens on.
      expect(`${name}: ${healthcheckText(svc)}`).toContain(`grpc 127.0.0.1:${listenPort(svc)}`);
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
  });

  test('start order: depends_on waits for health, and for pki to finish', async () => {
    const { services } = await load();
    for (const [name, svc] of Object.entries(services)) {
      for (const [dep, condition] of Object.entries(dependsOn(svc))) {
        expect(Object.keys(services)).toContain(dep);
        if (dep === 'pki') expect(`${name} -> pki: ${condition}`).toBe(`${name} -> pki: service_completed_successfully`);
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
      // Only the pki step sees the CA keys.
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
  ports?: Array<{ name?: string; containerPort: number }>;
  volumeMounts?: Array<{ name: string; mountPath: string }>;
  readinessProbe?: unknown;
}

interface PodSpec {
  containers: Container[];
  volumes?: Array<{ name: string; secret?: { secretName: string } }>;
}

const K8S_DIR = path.join(ROOT, 'deploy', 'kubernetes');

function loadManifests(): Array<{ file: string; doc: K8sObject }> {
  const out: Array<{ file: string; doc: K8sObject }> = [];
  for (const file of fs.readdirSync(K8S_DIR).filter((f) => /\.ya?ml$/.test(f)).sort()) {
    const docs = yaml.loadAll(fs.readFileSync(path.join(K8S_DIR, file), 'utf8'));
    for (const doc of docs) if (doc !== null && doc !== undefined) out.push({ file, doc: doc as K8sObject });
  }
  return out;
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
    const files = fs.readdirSync(K8S_DIR).filter((f) => /\.ya?ml$/.test(f));
    expect(files.length).toBeGreaterThan(0);
    for (const file of files) {
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
    // The Ingress host must be a name of the serving certificate.
    const hosts = (flagValue(argv(podSpec(pkiJob).containers[0] as Container), 'hosts') ?? '').split(',');
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
      expect(c.ports?.map((p) => p.containerPort)).toEqual(metricsPort ? [port, metricsPort] : [port]);
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

  test('the Dockerfile runs as non-root on node:20-bookworm-slim at /app, with openssl and deploy/scripts', () => {
    const text = fs.readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n/g, ' ');
    const args = new Map([...text.matchAll(/^ARG\s+(\w+)=(\S+)/gm)].map((m) => [m[1] as string, m[2] as string]));
    const stages = text.split(/^FROM\s+/m).slice(1);
    const last = stages[stages.length - 1] as string;
    const base = (last.split(/\s/)[0] as string).replace(/^\$\{(\w+)\}$/, (_, name: string) => args.get(name) ?? '');
    expect(base).toBe('node:20-bookworm-slim');
    expect(last).toMatch(/^WORKDIR\s+\/app\s*$/m);
    const users = [...last.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1] as string);
    expect(users.length).toBeGreaterThan(0);
    expect(users[users.length - 1]).not.toMatch(/^(root|0)(:|$)/);
    expect(last).toMatch(/apt-get install[^\n]*\bopenssl\b/);
    expect(text).toMatch(/cp -r deploy\/scripts /);
    expect(text).toMatch(/^RUN npm install --no-audit --no-fund/m);
    expect(text).toMatch(/^RUN npm run build/m);
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

  test('healthcheck.js grpc succeeds against an HTTP/2 server and fails where nothing listens', async () => {
    const server = http2.createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    const port = (server.address() as AddressInfo).port;
    try {
      expectSuccess(await node(['deploy/scripts/healthcheck.js', 'grpc', `127.0.0.1:${port}`]), 'healthcheck.js grpc');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
    expect((await node(['deploy/scripts/healthcheck.js', 'grpc', `127.0.0.1:${port}`])).code).toBe(1);
    expect((await node(['deploy/scripts/healthcheck.js', 'https', `https://127.0.0.1:${port}/readyz`])).code).toBe(1);
    expect((await node(['deploy/scripts/healthcheck.js', 'bogus'])).code).toBe(1);
  });
});
