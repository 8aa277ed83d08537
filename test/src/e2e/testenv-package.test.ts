import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The harness as another project uses it: every workspace package it needs
 * packed with `npm pack`, installed from those tarballs into a scratch
 * project (the registry's packages from npm's cache), and a controller-style
 * script there starts the system, writes and reads a ConfigMap with
 * @kubernetes/client-node through the KubeConfig the harness returns, and
 * stops it.
 */

const root = path.resolve(__dirname, '..', '..', '..');
/** @svc/testenv and what it depends on, transitively. */
const PACKAGES = [
  'packages/proto',
  'packages/apimachinery',
  'packages/cel',
  'packages/merge',
  'packages/kinds',
  'packages/openapi',
  'packages/protobuf-codec',
  'packages/service-kit',
  'services/storage',
  'services/authn',
  'services/authz',
  'services/watch-fanout',
  'services/admission',
  'services/gateway',
  'services/controller-manager',
  'packages/testenv',
];

function runIn(cwd: string, command: string, args: string[], timeoutMs: number): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env: { ...process.env, npm_config_update_notifier: 'false' } }, (err, stdout, stderr) => {
      const code = err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) });
    });
  });
}

const CONTROLLER = `
import * as fs from 'node:fs';
import testenv from '@svc/testenv';
import * as k8s from '@kubernetes/client-node';

const crd = {
  apiVersion: 'apiextensions.svc.io/v1',
  kind: 'CustomResourceDefinition',
  metadata: { name: 'gadgets.example.com' },
  spec: {
    group: 'example.com',
    scope: 'Namespaced',
    names: { plural: 'gadgets', singular: 'gadget', kind: 'Gadget' },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', properties: { spec: { type: 'object', properties: { size: { type: 'integer' } } } } } } }],
  },
};

const out = {};
const env = await testenv.startEnvironment({ crds: [crd] });
try {
  out.harness = env.processes.map((p) => p.name).sort();
  const kc = await env.kubeConfig();
  out.isKubeConfig = kc instanceof k8s.KubeConfig;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  await core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'from-controller' }, data: { replicas: '3' } } });
  out.read = (await core.readNamespacedConfigMap({ name: 'from-controller', namespace: 'default' })).data;
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const gadget = await custom.createNamespacedCustomObject({ group: 'example.com', version: 'v1', namespace: 'default', plural: 'gadgets', body: { apiVersion: 'example.com/v1', kind: 'Gadget', metadata: { name: 'g1' }, spec: { size: 2 } } });
  out.gadget = gadget.spec;
  const alice = (await env.userKubeConfig('alice', ['dev'])).makeApiClient(k8s.CoreV1Api);
  try {
    await alice.readNamespacedConfigMap({ name: 'from-controller', namespace: 'default' });
    out.alice = 'allowed';
  } catch (err) {
    out.alice = err.code;
  }
} finally {
  // Deletes the definition it installed (and waits until it is gone) before stopping.
  await env.stop();
  out.stopped = true;
  fs.rmSync(env.dir, { recursive: true, force: true });
}
process.stdout.write(JSON.stringify(out));
`;

describe('@svc/testenv as an installed package', () => {
  let scratch: string;

  beforeAll(() => {
    scratch = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-testenv-package-'));
  });

  afterAll(() => {
    if (scratch) fs.rmSync(scratch, { recursive: true, force: true });
  });

  test('packed with npm pack, installed from the tarballs into a scratch project, it starts the system for a client-node controller', async () => {
    const tarballs = path.join(scratch, 'tarballs');
    fs.mkdirSync(tarballs);
    const pack = await runIn(root, 'npm', ['pack', '--json', `--pack-destination=${tarballs}`, ...PACKAGES.map((p) => `--workspace=${p}`)], 120_000);
    expect(pack.stderr).not.toMatch(/npm error/);
    expect(pack.code).toBe(0);
    const packed = JSON.parse(pack.stdout) as Array<{ name: string; filename: string; files: Array<{ path: string }> }>;
    expect(packed.map((p) => p.name).sort()).toEqual(PACKAGES.map((p) => JSON.parse(fs.readFileSync(path.join(root, p, 'package.json'), 'utf8')).name).sort());
    const testenv = packed.find((p) => p.name === '@svc/testenv');
    // Built code and declarations, no tests.
    expect(testenv?.files.map((f) => f.path)).toEqual(expect.arrayContaining(['package.json', 'dist/index.js', 'dist/index.d.ts', 'dist/environment.js']));
    expect(packed.flatMap((p) => p.files.map((f) => f.path)).filter((f) => /\.test\.|^src\//.test(f))).toEqual([]);

    const project = path.join(scratch, 'project');
    fs.mkdirSync(project);
    const clientNode = JSON.parse(fs.readFileSync(require.resolve('@kubernetes/client-node/package.json'), 'utf8')) as { version: string };
    const dependencies: Record<string, string> = { '@kubernetes/client-node': clientNode.version };
    for (const p of packed) dependencies[p.name] = `file:${path.join(tarballs, p.filename)}`;
    fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'scratch-controller', version: '1.0.0', private: true, dependencies }, null, 2));
    // The registry's packages come from npm's cache where it holds them (the repository's own install filled it), their metadata from the registry.
    const install = await runIn(project, 'npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--ignore-scripts'], 240_000);
    expect(install.stderr).not.toMatch(/npm error/);
    expect(install.code).toBe(0);
    // The services run from the installed packages, not from this checkout.
    expect(fs.existsSync(path.join(project, 'node_modules', '@svc', 'gateway', 'dist', 'main.js'))).toBe(true);
    expect(fs.lstatSync(path.join(project, 'node_modules', '@svc', 'gateway')).isSymbolicLink()).toBe(false);

    fs.writeFileSync(path.join(project, 'controller.mjs'), CONTROLLER);
    const res = await runIn(project, process.execPath, ['controller.mjs'], 120_000);
    expect(res.stderr).not.toMatch(/Error/);
    expect(res.code).toBe(0);
    const out = JSON.parse(res.stdout) as Record<string, unknown>;
    expect(out['isKubeConfig']).toBe(true);
    expect(out['harness']).toEqual(expect.arrayContaining(['gateway', 'storage', 'authn', 'authz', 'admission', 'controller-manager']));
    expect(out['read']).toEqual({ replicas: '3' });
    expect(out['gadget']).toEqual({ size: 2 });
    // A user's own certificate: authenticated as alice, who holds no grant.
    expect(out['alice']).toBe(403);
    expect(out['stopped']).toBe(true);
  }, 480_000);
});
