import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as yaml from 'js-yaml';

/**
 * The kustomize overlays under deploy/kubernetes/overlays, each rendered with
 * `kubectl kustomize` (no cluster needed): the objects each must hold (kinds,
 * replicas, probes, memory limits matched by the heap limit, security
 * contexts), that everything a workload names (Secrets, ConfigMaps, Services,
 * PersistentVolumeClaims, service accounts) exists in the render or is made
 * by the pki Job, headless Services for the internal gRPC services, and the
 * host name of the overlay's svc-settings everywhere a host is needed. An
 * overlay without its host name must fail to render.
 */

const ROOT = path.resolve(__dirname, '..', '..', '..');
const K8S_DIR = path.join(ROOT, 'deploy', 'kubernetes');
const OVERLAYS = ['dev', 'ingress-nginx', 'gateway-api', 'ha'] as const;
type Overlay = (typeof OVERLAYS)[number];
/** The services balancing their callers over every replica (gRPC, headless Services, grpc.health.v1 on 9101). */
const GRPC_SERVICES = ['storage', 'authn', 'authz', 'admission', 'watch-fanout'];
const DEPLOYMENTS = [...GRPC_SERVICES, 'gateway', 'controller-manager'];
const HEALTH_PORT = 9101;
/** What the pki Job stores (deploy/scripts/pki.js: `<prefix>-ca`, `-admin` and one per consumer). */
const PKI_SECRETS = ['ca', 'admin', 'gateway', 'storage', 'authn', 'authz', 'admission', 'watch-fanout', 'etcd', 'nats', 'controller-manager', 'prometheus', 'encryption'];

interface Probe {
  grpc?: { port: number; service?: string };
  httpGet?: { path?: string; port: number | string };
  exec?: { command: string[] };
  tcpSocket?: { port: number | string };
}
interface Container {
  name: string;
  image?: string;
  command?: string[];
  args?: string[];
  env?: Array<{ name: string; value?: string; valueFrom?: { configMapKeyRef?: { name: string }; secretKeyRef?: { name: string } } }>;
  envFrom?: Array<{ configMapRef?: { name: string }; secretRef?: { name: string } }>;
  ports?: Array<{ name?: string; containerPort: number }>;
  startupProbe?: Probe;
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: { readOnlyRootFilesystem?: boolean; allowPrivilegeEscalation?: boolean; capabilities?: { drop?: string[] } };
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  automountServiceAccountToken?: boolean;
  serviceAccountName?: string;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number };
  volumes?: Array<{ name: string; secret?: { secretName: string }; configMap?: { name: string }; persistentVolumeClaim?: { claimName: string } }>;
}
interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: Record<string, unknown>;
  data?: Record<string, string>;
}

function kustomize(dir: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile('kubectl', ['kustomize', dir], { timeout: 60000, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const raw = err ? (err as { code?: unknown }).code : 0;
      resolve({ code: typeof raw === 'number' ? raw : err ? 1 : 0, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

async function render(overlay: Overlay): Promise<K8sObject[]> {
  const res = await kustomize(path.join(K8S_DIR, 'overlays', overlay));
  if (res.code !== 0) throw new Error(`kubectl kustomize deploy/kubernetes/overlays/${overlay} exited ${res.code}: ${res.stderr}`);
  return yaml.loadAll(res.stdout).filter((d) => d !== null && d !== undefined) as K8sObject[];
}

/** The overlay's svc-settings literals, read from its kustomization.yaml (the ConfigMap itself is local-config, not rendered). */
function settings(overlay: Overlay): Record<string, string> {
  const k = yaml.load(fs.readFileSync(path.join(K8S_DIR, 'overlays', overlay, 'kustomization.yaml'), 'utf8')) as { configMapGenerator?: Array<{ name: string; literals?: string[] }> };
  const gen = k.configMapGenerator?.find((g) => g.name === 'svc-settings');
  if (!gen) throw new Error(`overlays/${overlay} has no svc-settings configMapGenerator`);
  return Object.fromEntries((gen.literals ?? []).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

function podSpecOf(obj: K8sObject): PodSpec | undefined {
  if (obj.kind === 'CronJob') return ((obj.spec?.['jobTemplate'] as { spec?: { template?: { spec?: PodSpec } } }).spec?.template?.spec);
  return (obj.spec?.['template'] as { spec?: PodSpec } | undefined)?.spec;
}

const argv = (c: Container): string[] => [...(c.command ?? []), ...(c.args ?? [])];
const flag = (c: Container, name: string): string | undefined => argv(c).find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
const envValue = (c: Container, name: string): string | undefined => c.env?.find((e) => e.name === name)?.value;
/** As the kubelet expands `$(NAME)` in commands. */
const expand = (c: Container, arg: string): string => arg.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, n: string) => envValue(c, n) ?? whole);

/** Mebibytes of a quantity like 512Mi or 2Gi. */
function mebibytes(quantity: string | undefined): number {
  const m = /^(\d+)(Mi|Gi)$/.exec(quantity ?? '');
  if (!m) throw new Error(`not a Mi/Gi quantity: ${quantity}`);
  return Number(m[1]) * (m[2] === 'Gi' ? 1024 : 1);
}

describe('deploy/kubernetes overlays', () => {
  const rendered = new Map<Overlay, K8sObject[]>();
  beforeAll(async () => {
    for (const overlay of OVERLAYS) rendered.set(overlay, await render(overlay));
  });
  const objects = (overlay: Overlay): K8sObject[] => rendered.get(overlay) ?? [];
  const find = (overlay: Overlay, kind: string, name: string): K8sObject | undefined => objects(overlay).find((o) => o.kind === kind && o.metadata.name === name);
  const get = (overlay: Overlay, kind: string, name: string): K8sObject => {
    const o = find(overlay, kind, name);
    if (!o) throw new Error(`overlays/${overlay} renders no ${kind}/${name}`);
    return o;
  };
  const workloads = (overlay: Overlay): K8sObject[] => objects(overlay).filter((o) => podSpecOf(o) !== undefined);

  test('every overlay holds the base and what it adds; all in namespace svc, no settings ConfigMap applied', () => {
    const base = ['Namespace/svc', 'StatefulSet/etcd', 'StatefulSet/nats', 'Job/svc-pki', 'ServiceAccount/svc-pki', 'Role/svc-pki', 'RoleBinding/svc-pki', 'NetworkPolicy/default-deny-ingress', ...DEPLOYMENTS.map((d) => `Deployment/${d}`), ...[...GRPC_SERVICES, 'gateway', 'etcd', 'nats'].map((s) => `Service/${s}`)];
    const adds: Record<Overlay, string[]> = {
      dev: [],
      'ingress-nginx': ['Ingress/gateway', 'CronJob/etcd-backup', 'PersistentVolumeClaim/etcd-backup'],
      'gateway-api': ['Gateway/svc', 'TLSRoute/gateway', 'CronJob/etcd-backup', 'PersistentVolumeClaim/etcd-backup'],
      ha: ['Ingress/gateway', 'CronJob/etcd-backup', 'PersistentVolumeClaim/etcd-backup', 'HorizontalPodAutoscaler/gateway', 'HorizontalPodAutoscaler/watch-fanout', 'NetworkPolicy/etcd-peers', ...[...DEPLOYMENTS, 'etcd'].map((d) => `PodDisruptionBudget/${d}`)],
    };
    const optional = ['Ingress', 'Gateway', 'TLSRoute', 'CronJob', 'HorizontalPodAutoscaler', 'PodDisruptionBudget'];
    for (const overlay of OVERLAYS) {
      const names = objects(overlay).map((o) => `${o.kind}/${o.metadata.name}`);
      for (const want of [...base, ...adds[overlay]]) expect(`${overlay}: ${want} ${names.includes(want)}`).toBe(`${overlay}: ${want} true`);
      // Nothing of another variant slips in.
      for (const name of names) if (optional.includes(name.split('/')[0] as string)) expect(`${overlay}: ${name} ${adds[overlay].includes(name)}`).toBe(`${overlay}: ${name} true`);
      for (const o of objects(overlay)) {
        if (o.kind !== 'Namespace') expect(`${overlay} ${o.kind}/${o.metadata.name}: ${o.metadata.namespace}`).toBe(`${overlay} ${o.kind}/${o.metadata.name}: svc`);
        expect(`${overlay}: ${o.kind}/${o.metadata.name}`).not.toBe(`${overlay}: ConfigMap/svc-settings`);
      }
    }
  });

  test('replicas: one of everything in dev; in ha three etcd members and two or more of every service, autoscaled gateway and watch-fanout', () => {
    for (const o of workloads('dev')) if (o.kind !== 'Job' && o.kind !== 'CronJob') expect(`dev ${o.kind}/${o.metadata.name}: ${o.spec?.['replicas']}`).toBe(`dev ${o.kind}/${o.metadata.name}: 1`);
    const etcd = get('ha', 'StatefulSet', 'etcd');
    expect(etcd.spec?.['replicas']).toBe(3);
    expect(etcd.spec?.['podManagementPolicy']).toBe('Parallel');
    const etcdContainer = podSpecOf(etcd)?.containers[0] as Container;
    const cluster = expand(etcdContainer, flag(etcdContainer, 'initial-cluster') ?? '');
    expect(cluster.split(',')).toEqual([0, 1, 2].map((i) => `etcd-${i}=http://etcd-${i}.etcd:2380`));
    expect(get('dev', 'StatefulSet', 'etcd').spec?.['replicas']).toBe(1);
    expect(expand(podSpecOf(get('dev', 'StatefulSet', 'etcd'))?.containers[0] as Container, '$(SVC_ETCD_INITIAL_CLUSTER)')).toBe('etcd-0=http://etcd-0.etcd:2380');
    for (const name of DEPLOYMENTS) {
      const hpa = find('ha', 'HorizontalPodAutoscaler', name);
      const replicas = get('ha', 'Deployment', name).spec?.['replicas'];
      if (hpa) {
        // The autoscaler owns the count: none in the manifest, at least two from the autoscaler.
        expect(`${name}: ${replicas}`).toBe(`${name}: undefined`);
        const spec = hpa.spec as { scaleTargetRef: { kind: string; name: string }; minReplicas: number; maxReplicas: number; metrics: Array<{ resource?: { name: string } }> };
        expect(spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name });
        expect(spec.minReplicas).toBeGreaterThanOrEqual(2);
        expect(spec.maxReplicas).toBeGreaterThan(spec.minReplicas);
        expect(spec.metrics.map((m) => m.resource?.name)).toContain('cpu');
      } else expect(`${name}: ${Number(replicas) >= 2}`).toBe(`${name}: true`);
    }
    expect(objects('ha').filter((o) => o.kind === 'HorizontalPodAutoscaler').map((o) => o.metadata.name).sort()).toEqual(['gateway', 'watch-fanout']);
    // Every budget selects the pods of one workload, and lets at most one go at a time.
    for (const pdb of objects('ha').filter((o) => o.kind === 'PodDisruptionBudget')) {
      const selector = (pdb.spec?.['selector'] as { matchLabels: Record<string, string> }).matchLabels;
      const selected = workloads('ha').filter((w) => {
        const labels = (w.spec?.['template'] as { metadata?: { labels?: Record<string, string> } } | undefined)?.metadata?.labels ?? {};
        return w.kind !== 'Job' && Object.entries(selector).every(([k, v]) => labels[k] === v);
      });
      expect(`${pdb.metadata.name}: ${selected.map((w) => w.metadata.name).join(',')}`).toBe(`${pdb.metadata.name}: ${pdb.metadata.name}`);
      expect(pdb.spec?.['maxUnavailable']).toBe(1);
    }
  });

  test('probes: the kubelet gRPC probes on the health port for the gRPC services, and a startup probe for every long-running container', () => {
    for (const overlay of OVERLAYS) {
      for (const w of workloads(overlay)) {
        if (w.kind === 'Job' || w.kind === 'CronJob') continue;
        for (const c of podSpecOf(w)?.containers ?? []) {
          const where = `${overlay} ${w.metadata.name}/${c.name}`;
          for (const p of ['startupProbe', 'readinessProbe', 'livenessProbe'] as const) expect(`${where} ${p}: ${c[p] !== undefined}`).toBe(`${where} ${p}: true`);
          if (!GRPC_SERVICES.includes(w.metadata.name)) continue;
          expect(`${where}: ${flag(c, 'health-bind-address')}`).toBe(`${where}: 0.0.0.0:${HEALTH_PORT}`);
          expect(c.ports?.map((p) => p.containerPort)).toContain(HEALTH_PORT);
          // Readiness asks the overall service (""), liveness and startup only whether the process serves.
          expect(c.readinessProbe?.grpc).toEqual({ port: HEALTH_PORT });
          expect(c.livenessProbe?.grpc).toEqual({ port: HEALTH_PORT, service: 'liveness' });
          expect(c.startupProbe?.grpc).toEqual({ port: HEALTH_PORT, service: 'liveness' });
        }
      }
    }
  });

  test('memory: every container has a limit; every Node.js process a heap of about 75 % of it', () => {
    for (const overlay of OVERLAYS) {
      for (const w of workloads(overlay)) {
        for (const c of [...(podSpecOf(w)?.initContainers ?? []), ...(podSpecOf(w)?.containers ?? [])]) {
          const where = `${overlay} ${w.kind}/${w.metadata.name}/${c.name}`;
          const limit = mebibytes(c.resources?.limits?.['memory']);
          expect(mebibytes(c.resources?.requests?.['memory'])).toBeLessThanOrEqual(limit);
          if (argv(c)[0] !== 'node') continue;
          const heap = Number(/--max-old-space-size=(\d+)/.exec(envValue(c, 'NODE_OPTIONS') ?? '')?.[1]);
          expect(`${where}: ${heap / limit >= 0.6 && heap / limit <= 0.8}`).toBe(`${where}: true`);
        }
      }
    }
  });

  test('security: non-root everywhere, etcd and NATS included; read-only root file systems without capabilities; no service-account token but for the pki Job', () => {
    for (const overlay of OVERLAYS) {
      for (const w of workloads(overlay)) {
        const spec = podSpecOf(w) as PodSpec;
        const where = `${overlay} ${w.kind}/${w.metadata.name}`;
        expect(`${where}: runAsNonRoot ${spec.securityContext?.runAsNonRoot}`).toBe(`${where}: runAsNonRoot true`);
        for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
          expect(`${where}/${c.name}: ${c.securityContext?.readOnlyRootFilesystem} ${c.securityContext?.allowPrivilegeEscalation} ${c.securityContext?.capabilities?.drop?.join(',')}`).toBe(`${where}/${c.name}: true false ALL`);
        }
        // Only the pki Job calls the Kubernetes API (it creates the Secrets); its account is in the render.
        if (w.kind === 'Job' && w.metadata.name === 'svc-pki') {
          expect(spec.automountServiceAccountToken).not.toBe(false);
          expect(find(overlay, 'ServiceAccount', spec.serviceAccountName ?? '')).toBeDefined();
        } else expect(`${where}: ${spec.automountServiceAccountToken}`).toBe(`${where}: false`);
      }
    }
  });

  test('everything a workload names exists: Secrets from the pki Job, ConfigMaps, claims and Services in the render; internal Services headless', () => {
    for (const overlay of OVERLAYS) {
      const pki = get(overlay, 'Job', 'svc-pki');
      const prefix = flag(podSpecOf(pki)?.containers[0] as Container, 'secret-prefix');
      const secrets = new Set([...PKI_SECRETS.map((s) => `${prefix}-${s}`), ...objects(overlay).filter((o) => o.kind === 'Secret').map((o) => o.metadata.name)]);
      const has = (kind: string, name: string) => find(overlay, kind, name) !== undefined;
      for (const w of workloads(overlay)) {
        const spec = podSpecOf(w) as PodSpec;
        const where = `${overlay} ${w.kind}/${w.metadata.name}`;
        const claimTemplates = ((w.spec?.['volumeClaimTemplates'] ?? []) as Array<{ metadata: { name: string } }>).map((t) => t.metadata.name);
        for (const v of spec.volumes ?? []) {
          if (v.secret) expect(`${where}: Secret ${v.secret.secretName} ${secrets.has(v.secret.secretName)}`).toBe(`${where}: Secret ${v.secret.secretName} true`);
          if (v.configMap) expect(`${where}: ConfigMap ${v.configMap.name} ${has('ConfigMap', v.configMap.name)}`).toBe(`${where}: ConfigMap ${v.configMap.name} true`);
          if (v.persistentVolumeClaim) expect(`${where}: claim ${v.persistentVolumeClaim.claimName} ${has('PersistentVolumeClaim', v.persistentVolumeClaim.claimName)}`).toBe(`${where}: claim ${v.persistentVolumeClaim.claimName} true`);
        }
        for (const c of [...(spec.initContainers ?? []), ...spec.containers]) {
          // Every volume mounted is declared (or a claim template of the StatefulSet).
          for (const m of (c as { volumeMounts?: Array<{ name: string }> }).volumeMounts ?? []) {
            const declared = (spec.volumes ?? []).some((v) => v.name === m.name) || claimTemplates.includes(m.name);
            expect(`${where}/${c.name}: volume ${m.name} ${declared}`).toBe(`${where}/${c.name}: volume ${m.name} true`);
          }
          for (const e of c.env ?? []) {
            const ref = e.valueFrom?.configMapKeyRef?.name;
            if (ref) expect(`${where}: ConfigMap ${ref} ${has('ConfigMap', ref)}`).toBe(`${where}: ConfigMap ${ref} true`);
          }
          // Every address names a Service of the render with that port: host:port, dns:///host:port, https://host:port, tls://host:port.
          for (const arg of argv(c)) {
            const m = /^--(?:[a-z-]+-address|etcd-servers|nats-url|endpoints)=(.+)$/.exec(arg);
            if (!m || arg.includes('-bind-address=')) continue;
            for (const target of (m[1] as string).split(',')) {
              const hp = /^(?:dns:\/\/\/|https?:\/\/|tls:\/\/)?([a-z0-9-]+):(\d+)$/.exec(target);
              if (!hp) throw new Error(`${where}: ${arg} is not an address of a Service`);
              const svc = find(overlay, 'Service', hp[1] as string);
              const ports = ((svc?.spec?.['ports'] ?? []) as Array<{ port: number }>).map((p) => p.port);
              expect(`${where}: ${target} ${ports.includes(Number(hp[2]))}`).toBe(`${where}: ${target} true`);
              if (target.startsWith('dns:///')) expect(`${where}: ${target} headless ${svc?.spec?.['clusterIP']}`).toBe(`${where}: ${target} headless None`);
            }
          }
        }
      }
      // Every internal gRPC service is headless and its callers resolve it with dns:/// (round-robin over every pod).
      for (const name of GRPC_SERVICES) expect(`${overlay} Service/${name}: ${get(overlay, 'Service', name).spec?.['clusterIP']}`).toBe(`${overlay} Service/${name}: None`);
      const gateway = podSpecOf(get(overlay, 'Deployment', 'gateway'))?.containers[0] as Container;
      for (const name of GRPC_SERVICES) expect(flag(gateway, `${name}-address`)).toBe(`dns:///${name}:${7101 + GRPC_SERVICES.indexOf(name)}`);
    }
  });

  test('the host name of svc-settings is everywhere a host is needed, and no placeholder is left', () => {
    for (const overlay of OVERLAYS) {
      const { host, port } = settings(overlay);
      expect(host).toMatch(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/);
      expect(host).not.toMatch(/\.invalid$/);
      const text = yaml.dump(objects(overlay));
      expect(`${overlay}: ${/not-set|\.invalid\b/.test(text)}`).toBe(`${overlay}: false`);
      const pki = podSpecOf(get(overlay, 'Job', 'svc-pki'))?.containers[0] as Container;
      expect(expand(pki, flag(pki, 'hosts') ?? '').split(',')).toContain(host);
      expect(expand(pki, flag(pki, 'server') ?? '')).toBe(`https://${host}:${port}`);
      const ingress = find(overlay, 'Ingress', 'gateway');
      if (ingress) expect((ingress.spec?.['rules'] as Array<{ host: string }>).map((r) => r.host)).toEqual([host]);
      const gw = find(overlay, 'Gateway', 'svc');
      if (gw) {
        const listeners = gw.spec?.['listeners'] as Array<{ hostname: string; protocol: string; tls: { mode: string } }>;
        expect(listeners.map((l) => `${l.hostname} ${l.protocol} ${l.tls.mode}`)).toEqual([`${host} TLS Passthrough`]);
        expect(gw.spec?.['gatewayClassName']).toBe(settings(overlay)['gatewayClassName']);
        const route = get(overlay, 'TLSRoute', 'gateway');
        expect(route.spec?.['hostnames']).toEqual([host]);
        const backends = (route.spec?.['rules'] as Array<{ backendRefs: Array<{ name: string; port: number }> }>).flatMap((r) => r.backendRefs);
        expect(backends).toEqual([{ name: 'gateway', port: 6443 }]);
      }
    }
    expect(settings('dev')).toMatchObject({ host: 'localhost', port: '6443' });
  });

  test('the etcd backup CronJob snapshots with etcdctl onto its claim; the restore Job template fits the claims and image it restores', () => {
    const cron = get('ha', 'CronJob', 'etcd-backup');
    const spec = podSpecOf(cron) as PodSpec;
    const snapshot = (spec.initContainers ?? [])[0] as Container;
    expect(argv(snapshot)).toEqual(expect.arrayContaining(['/usr/local/bin/etcdctl', 'snapshot', 'save', '--endpoints=https://etcd:2379']));
    const etcd = podSpecOf(get('ha', 'StatefulSet', 'etcd'))?.containers[0] as Container;
    expect(snapshot.image).toBe(etcd.image);
    expect(spec.volumes?.find((v) => v.persistentVolumeClaim)?.persistentVolumeClaim?.claimName).toBe('etcd-backup');
    expect(cron.spec?.['concurrencyPolicy']).toBe('Forbid');
    // etcd admits the backup pods on its client port.
    const policy = get('ha', 'NetworkPolicy', 'etcd-backup').spec as { podSelector: { matchLabels: Record<string, string> }; ingress: Array<{ from: Array<{ podSelector: { matchLabels: Record<string, string> } }>; ports: Array<{ port: number }> }> };
    expect(policy.podSelector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'etcd' });
    const podLabels = ((cron.spec?.['jobTemplate'] as { spec: { template: { metadata: { labels: Record<string, string> } } } }).spec.template.metadata.labels);
    expect(podLabels).toMatchObject(policy.ingress[0]?.from[0]?.podSelector.matchLabels ?? { missing: true });
    expect(policy.ingress[0]?.ports).toEqual([{ port: 2379 }]);

    const template = fs.readFileSync(path.join(K8S_DIR, 'restore', 'etcd-restore-job.yaml'), 'utf8');
    const filled = template.replace(/@MEMBER@/g, 'etcd-1').replace(/@SNAPSHOT@/g, 'etcd-20260101T001700Z.db').replace(/@INITIAL_CLUSTER@/g, expand(etcd, '$(SVC_ETCD_INITIAL_CLUSTER)')).replace(/@IMAGE@/g, 'svc-apiserver:0.1.0');
    expect(filled).not.toMatch(/@[A-Z_]+@/);
    const job = yaml.load(filled) as K8sObject;
    const jobSpec = podSpecOf(job) as PodSpec;
    const claims = (jobSpec.volumes ?? []).map((v) => v.persistentVolumeClaim?.claimName);
    // The StatefulSet's claim of member etcd-1 (<template>-<pod>) and the backup claim.
    const template0 = ((get('ha', 'StatefulSet', 'etcd').spec?.['volumeClaimTemplates'] as Array<{ metadata: { name: string } }>)[0]?.metadata.name);
    expect(claims.sort()).toEqual([`${template0}-etcd-1`, 'etcd-backup'].sort());
    const restore = (jobSpec.initContainers ?? []).find((c) => argv(c).includes('restore')) as Container;
    expect(restore.image).toBe(etcd.image);
    expect(argv(restore)).toEqual(expect.arrayContaining(['--name=etcd-1', '--initial-advertise-peer-urls=http://etcd-1.etcd:2380', `--initial-cluster=${expand(etcd, '$(SVC_ETCD_INITIAL_CLUSTER)')}`, '--mark-compacted']));
    // The restored member directory lands where etcd reads it.
    expect(flag(etcd, 'data-dir')).toBe('/var/lib/etcd');
    expect(argv(jobSpec.containers[0] as Container).join(' ')).toContain('mv /var/lib/etcd/restore/member /var/lib/etcd/member');
  });

  test('deploy/kubernetes-monitoring renders the ingress-nginx overlay with the PodMonitors', async () => {
    const res = await kustomize(path.join(ROOT, 'deploy', 'kubernetes-monitoring'));
    expect(res.stderr).toBe('');
    const docs = yaml.loadAll(res.stdout) as K8sObject[];
    const names = docs.map((o) => `${o.kind}/${o.metadata.name}`);
    expect(names).toEqual(expect.arrayContaining(['Ingress/gateway', 'Deployment/gateway', 'Job/svc-pki']));
    expect(docs.filter((o) => o.kind === 'PodMonitor').length).toBeGreaterThan(0);
    expect(names.length).toBe(objects('ingress-nginx').length + docs.filter((o) => o.kind === 'PodMonitor' || (o.kind === 'NetworkPolicy' && !find('ingress-nginx', 'NetworkPolicy', o.metadata.name))).length);
  });

  test('an overlay without its host name fails to render, naming what is missing', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-overlay-'));
    try {
      const write = (body: string) => fs.writeFileSync(path.join(dir, 'kustomization.yaml'), body);
      // Kustomize takes only relative paths to other kustomizations.
      const rel = (...p: string[]) => path.relative(dir, path.join(K8S_DIR, ...p));
      const head = `resources:\n  - ${rel('base')}\ncomponents:\n  - ${rel('components', 'ingress-nginx')}\n  - ${rel('components', 'host-name')}\n`;
      write(head);
      let res = await kustomize(dir);
      expect(res.code).not.toBe(0);
      expect(res.stderr).toMatch(/nothing selected by ConfigMap.*svc-settings.*data\.host/);
      write(`${head}configMapGenerator:\n  - name: svc-settings\n    literals: [port=443]\n    options: {disableNameSuffixHash: true}\n`);
      res = await kustomize(dir);
      expect(res.code).not.toBe(0);
      expect(res.stderr).toMatch(/data\.host.* is missing for replacement source ConfigMap.*svc-settings/);
      // With both keys it renders, and the host is where it belongs.
      write(`${head}configMapGenerator:\n  - name: svc-settings\n    literals: [host=api.test.example, port=443]\n    options: {disableNameSuffixHash: true}\n`);
      res = await kustomize(dir);
      expect(res.stderr).toBe('');
      expect(res.code).toBe(0);
      expect(res.stdout).toContain('host: api.test.example');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
