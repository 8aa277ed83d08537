import { execFile, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ResourceRegistry, checkAgainstSchema, isJsonObject, type ApiObject, type JsonObject, type JsonValue } from '@svc/apimachinery';
import { registerBuiltins } from '@svc/kinds';
import { apiGroup, apiGroupList, apiResourceList, apiVersions } from './discovery';
import { OpenApiDocuments } from './documents';

/**
 * Proves the documents with the real kubectl (v1.32): a throwaway HTTP server
 * on loopback serves discovery and OpenAPI built from the built-in registry,
 * plus just enough of `configmaps` for create and apply. kubectl finds kinds
 * for explain through `x-kubernetes-group-version-kind`, decides from
 * `/openapi/v3` that the server validates fields itself (`fieldValidation`
 * on PATCH), and computes apply's strategic merge patch from the v3 schema.
 */

const KUBECTL = process.env['KUBECTL'] ?? 'kubectl';
const hasKubectl = spawnSync(KUBECTL, ['version', '--client'], { encoding: 'utf8' }).status === 0;
const describeWithKubectl = hasKubectl ? describe : describe.skip;

interface ObjectTarget {
  group: string;
  version: string;
  plural: string;
  namespace: string;
  name: string | undefined;
}

interface SeenRequest {
  method: string;
  url: string;
  contentType: string;
}

function status(code: number, reason: string, message: string): JsonObject {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

/** RFC 7386 merge; enough for the strategic merge patches kubectl sends for objects made of maps (ConfigMap, Lease). */
function mergePatch(target: JsonValue | undefined, patch: JsonValue): JsonValue {
  if (!isJsonObject(patch)) return patch;
  const out: JsonObject = isJsonObject(target) ? { ...target } : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete out[key];
    else if (value !== undefined) out[key] = mergePatch(out[key], value);
  }
  return out;
}

class FakeApiServer {
  readonly registry = new ResourceRegistry();
  readonly documents: OpenApiDocuments;
  readonly seen: SeenRequest[] = [];
  private readonly objects = new Map<string, JsonObject>();
  private readonly server: Server;
  private revision = 1;

  constructor() {
    registerBuiltins(this.registry);
    this.documents = new OpenApiDocuments(this.registry);
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => this.handle(req, res, Buffer.concat(chunks).toString('utf8')));
    });
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    this.documents.close();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private send(res: ServerResponse, code: number, body: unknown): void {
    res.writeHead(code, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify(body));
  }

  private handle(req: IncomingMessage, res: ServerResponse, body: string): void {
    const url = new URL(req.url ?? '/', 'http://localhost');
    this.seen.push({ method: req.method ?? '', url: req.url ?? '', contentType: req.headers['content-type'] ?? '' });
    const parts = url.pathname.split('/').filter(Boolean);
    const path = url.pathname;
    if (req.method === 'GET') {
      if (path === '/api') return this.send(res, 200, apiVersions(req.headers.host ?? ''));
      if (path === '/apis') return this.send(res, 200, apiGroupList(this.registry));
      if (path === '/api/v1') return this.send(res, 200, apiResourceList(this.registry, '', 'v1'));
      if (parts[0] === 'apis' && parts.length === 2 && this.registry.hasGroup(parts[1] ?? '')) return this.send(res, 200, apiGroup(this.registry, parts[1] ?? ''));
      if (parts[0] === 'apis' && parts.length === 3 && this.registry.hasGroupVersion(parts[1] ?? '', parts[2] ?? '')) {
        return this.send(res, 200, apiResourceList(this.registry, parts[1] ?? '', parts[2] ?? ''));
      }
      if (path === '/openapi/v2') {
        // Only JSON is served; clients asking for the protobuf form are told so.
        const accept = req.headers.accept ?? '';
        if (accept.includes('protobuf') && !accept.includes('json')) return this.send(res, 406, status(406, 'NotAcceptable', 'only application/json is served'));
        return this.send(res, 200, this.documents.v2());
      }
      if (path === '/openapi/v3') return this.send(res, 200, this.documents.v3Discovery());
      if (parts[0] === 'openapi' && parts[1] === 'v3') {
        const [group, version] = parts[2] === 'api' ? ['', parts[3] ?? ''] : [parts[3] ?? '', parts[4] ?? ''];
        const doc = this.documents.v3(group, version);
        if (doc) return this.send(res, 200, doc.document);
      }
    }
    const resource = /^\/(?:api\/v1|apis\/([^/]+)\/([^/]+))\/namespaces\/([^/]+)\/([^/]+)(?:\/([^/]+))?$/.exec(path);
    if (resource) {
      const [, group = '', version = 'v1', namespace = '', plural = '', name] = resource;
      const def = this.registry.lookup(group, version, plural);
      if (def) return this.object(req, res, url, { group, version, plural, namespace, name }, body);
    }
    return this.send(res, 404, status(404, 'NotFound', `the server could not find the requested resource (${req.method ?? ''} ${path})`));
  }

  /** Just enough of get, create and patch of namespaced objects for kubectl create and apply. */
  private object(req: IncomingMessage, res: ServerResponse, url: URL, target: ObjectTarget, body: string): void {
    const { group, version, plural, namespace, name } = target;
    const key = `${group}/${plural}/${namespace}/${name ?? ''}`;
    const notFound = () => this.send(res, 404, { ...status(404, 'NotFound', `${plural} "${name ?? ''}" not found`), details: { name: name ?? '', group, kind: plural } });
    if (req.method === 'GET' && name) {
      const obj = this.objects.get(key);
      return obj ? this.send(res, 200, obj) : notFound();
    }
    if (req.method === 'POST' && !name) {
      const input = JSON.parse(body) as ApiObject;
      const def = this.registry.lookup(group, version, plural);
      const check = checkAgainstSchema(input, def?.schema);
      if (url.searchParams.get('fieldValidation') === 'Strict' && check.unknownFields.length > 0) {
        return this.send(res, 400, status(400, 'BadRequest', `strict decoding error: ${check.unknownFields.map((f) => `unknown field "${f}"`).join(', ')}`));
      }
      const created = check.pruned as JsonObject;
      const meta = isJsonObject(created['metadata']) ? created['metadata'] : {};
      const stored: JsonObject = { ...created, metadata: { ...meta, namespace, uid: `uid-${this.revision}`, resourceVersion: String(++this.revision), creationTimestamp: new Date().toISOString() } };
      this.objects.set(`${group}/${plural}/${namespace}/${String(meta['name'])}`, stored);
      return this.send(res, 201, stored);
    }
    if (req.method === 'PATCH' && name) {
      const current = this.objects.get(key);
      if (!current) return notFound();
      const patched = mergePatch(current, JSON.parse(body) as JsonValue) as JsonObject;
      const meta = isJsonObject(patched['metadata']) ? patched['metadata'] : {};
      patched['metadata'] = { ...meta, resourceVersion: String(++this.revision) };
      this.objects.set(key, patched);
      return this.send(res, 200, patched);
    }
    return this.send(res, 405, status(405, 'MethodNotAllowed', 'not supported by this test server'));
  }

  stored(group: string, plural: string, namespace: string, name: string): JsonObject | undefined {
    return this.objects.get(`${group}/${plural}/${namespace}/${name}`);
  }
}

interface KubectlResult {
  code: number;
  stdout: string;
  stderr: string;
}

describeWithKubectl('kubectl against the published documents', () => {
  const api = new FakeApiServer();
  let server = '';
  let dir = '';

  function kubectl(...args: string[]): Promise<KubectlResult> {
    return new Promise((resolve) => {
      execFile(
        KUBECTL,
        ['--server', server, '--cache-dir', join(dir, 'cache'), '--request-timeout', '20s', ...args],
        { env: { ...process.env, HOME: dir, KUBECONFIG: join(dir, 'kubeconfig') }, timeout: 60_000 },
        (err, stdout, stderr) => resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr }),
      );
    });
  }

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svc-openapi-kubectl-'));
    writeFileSync(join(dir, 'kubeconfig'), 'apiVersion: v1\nkind: Config\npreferences: {}\n');
    server = await api.start();
  });

  afterAll(async () => {
    await api.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists the built-in kinds with short names from discovery', async () => {
    const result = await kubectl('api-resources');
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/configmaps\s+cm\s+v1\s+true\s+ConfigMap/);
    expect(result.stdout).toMatch(/leases\s+coordination\.svc\.io\/v1\s+true\s+Lease/);
    expect(result.stdout).toMatch(/namespaces\s+ns\s+v1\s+false\s+Namespace/);
  });

  it('explains configmap from the OpenAPI v3 document', async () => {
    const result = await kubectl('explain', 'configmap');
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/KIND:\s+ConfigMap/);
    expect(result.stdout).toMatch(/VERSION:\s+v1/);
    for (const field of ['apiVersion', 'binaryData', 'data', 'immutable', 'kind', 'metadata']) expect(result.stdout).toMatch(new RegExp(`^  ${field}\\s+<`, 'm'));
    expect(result.stdout).toContain('ConfigMap holds configuration data');
    expect(api.seen.some((r) => r.url.startsWith('/openapi/v3?'))).toBe(true);
    expect(api.seen.some((r) => r.url.startsWith('/openapi/v3/api/v1?hash='))).toBe(true);
  });

  it('explains pods.spec.containers down to container fields', async () => {
    const result = await kubectl('explain', 'pods.spec.containers');
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/FIELD: containers <\[\]Object>/);
    for (const field of ['image', 'name', 'ports', 'env', 'resources', 'livenessProbe', 'securityContext', 'volumeMounts']) {
      expect(result.stdout).toMatch(new RegExp(`^  ${field}\\s+<`, 'm'));
    }
    expect(result.stdout).toMatch(/name\s+<string> -required-/);
  });

  it('explains leases of coordination.svc.io', async () => {
    const top = await kubectl('explain', 'leases');
    expect(top.stderr).toBe('');
    expect(top.stdout).toMatch(/GROUP:\s+coordination\.svc\.io/);
    expect(top.stdout).toMatch(/KIND:\s+Lease/);
    const recursive = await kubectl('explain', 'leases', '--recursive');
    expect(recursive.stdout).toMatch(/holderIdentity\s+<string>/);
    expect(recursive.stdout).toMatch(/leaseDurationSeconds\s+<integer>/);
    const spec = await kubectl('explain', 'leases.spec.holderIdentity');
    expect(spec.stdout).toMatch(/FIELD: holderIdentity <string>/);
  });

  it('creates from a file with server-side strict field validation', async () => {
    const file = join(dir, 'cm.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: created\n  namespace: default\ndata:\n  a: "1"\nbinaryData:\n  b: aGVsbG8=\n');
    const result = await kubectl('create', '-f', file);
    expect(result.stderr).toBe('');
    expect(result.stdout.trim()).toBe('configmap/created created');
    const post = api.seen.find((r) => r.method === 'POST');
    expect(post?.url).toContain('fieldValidation=Strict');
    expect(api.stored('', 'configmaps', 'default', 'created')?.['data']).toEqual({ a: '1' });
  });

  it('leaves unknown fields to the server instead of rejecting them itself', async () => {
    const file = join(dir, 'bad.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad\n  namespace: default\nbogus: true\n');
    const result = await kubectl('create', '-f', file);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('strict decoding error: unknown field "bogus"');
  });

  it('applies, then re-applies with a strategic merge patch computed from OpenAPI v3', async () => {
    const file = join(dir, 'applied.yaml');
    writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: default\ndata:\n  keep: "1"\n  drop: "2"\n');
    const first = await kubectl('apply', '-f', file);
    expect(first.stderr).toBe('');
    expect(first.stdout.trim()).toBe('configmap/applied created');

    writeFileSync(file, 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\n  namespace: default\ndata:\n  keep: "1"\n  new: "3"\n');
    const second = await kubectl('apply', '-f', file);
    expect(second.stderr).toBe('');
    expect(second.stdout.trim()).toBe('configmap/applied configured');
    const patch = api.seen.filter((r) => r.method === 'PATCH').pop();
    expect(patch?.contentType).toBe('application/strategic-merge-patch+json');
    expect(patch?.url).toContain('fieldValidation=Strict');
    expect(api.stored('', 'configmaps', 'default', 'applied')?.['data']).toEqual({ keep: '1', new: '3' });
    expect(api.seen.some((r) => r.url.startsWith('/openapi/v2'))).toBe(false);
  });

  it('computes the strategic merge patch of a kind unknown to kubectl from the v3 schema', async () => {
    // kubectl has no compiled-in type for coordination.svc.io; without a usable
    // OpenAPI v3 schema it would fall back to a JSON merge patch.
    const file = join(dir, 'lease.yaml');
    const lease = (holder: string) =>
      `apiVersion: coordination.svc.io/v1\nkind: Lease\nmetadata:\n  name: leader\n  namespace: default\nspec:\n  holderIdentity: ${holder}\n  leaseDurationSeconds: 15\n`;
    writeFileSync(file, lease('a'));
    expect((await kubectl('apply', '-f', file)).stdout.trim()).toBe('lease.coordination.svc.io/leader created');
    writeFileSync(file, lease('b'));
    const second = await kubectl('apply', '-f', file);
    expect(second.stderr).toBe('');
    expect(second.stdout.trim()).toBe('lease.coordination.svc.io/leader configured');
    const patch = api.seen.filter((r) => r.method === 'PATCH').pop();
    expect(patch?.url).toMatch(/^\/apis\/coordination\.svc\.io\/v1\/namespaces\/default\/leases\/leader\?/);
    expect(patch?.contentType).toBe('application/strategic-merge-patch+json');
    expect(api.stored('coordination.svc.io', 'leases', 'default', 'leader')?.['spec']).toEqual({ holderIdentity: 'b', leaseDurationSeconds: 15 });
  });
});
