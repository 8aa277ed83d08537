import * as fs from 'node:fs';
import * as http2 from 'node:http2';
import * as path from 'node:path';
import * as zlib from 'node:zlib';
import { startEnvironment, type Environment } from '@svc/testenv';
import { run, until } from './helpers';

const fixtures = path.join(__dirname, '..', '..', 'fixtures');

interface H2Answer {
  status: number;
  headers: http2.IncomingHttpHeaders;
  /** The body as sent (still gzipped when it was). */
  raw: Buffer;
}

/** A watch's stream: its response head and the events read so far. */
interface H2Watch {
  stream: http2.ClientHttp2Stream;
  headers: Promise<http2.IncomingHttpHeaders>;
  events: Array<{ type: string; object: { metadata: { name: string } } }>;
}

/**
 * The gateway's port over HTTP/2 (ALPN `h2`) beside HTTP/1.1, and response
 * compression, against the whole system: curl, node's HTTP/2 client, kubectl
 * (which negotiates h2 itself) and @kubernetes/client-node (HTTP/1.1).
 */
describe('HTTP/2 and response compression end to end', () => {
  let env: Environment;
  let session: http2.ClientHttp2Session;

  beforeAll(async () => {
    // The gateway's request log (one `HTTP` line per request, at info level) names the protocol each came over.
    env = await startEnvironment();
    session = connect();
  });

  afterAll(async () => {
    session?.destroy();
    await env?.stop(true);
  });

  function connect(): http2.ClientHttp2Session {
    const s = http2.connect(env.url, { ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) });
    s.on('error', () => undefined);
    return s;
  }

  const curl = (args: string[]) => run('curl', ['-sS', '--cacert', env.pki.caCert, '--cert', env.pki.adminCert, '--key', env.pki.adminKey, ...args]);
  const kubectl = (args: string[]) => run('kubectl', ['--kubeconfig', env.kubeconfigPath, ...args]);

  function h2(method: string, urlPath: string, body?: unknown, headers: http2.OutgoingHttpHeaders = {}): Promise<H2Answer> {
    return new Promise((resolve, reject) => {
      const stream = session.request({ ':method': method, ':path': urlPath, ...(body !== undefined ? { 'content-type': 'application/json' } : {}), ...headers });
      let head: http2.IncomingHttpHeaders = {};
      stream.on('response', (h) => (head = h));
      const chunks: Buffer[] = [];
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('end', () => resolve({ status: Number(head[':status']), headers: head, raw: Buffer.concat(chunks) }));
      stream.on('error', reject);
      stream.end(body !== undefined ? JSON.stringify(body) : undefined);
    });
  }

  const json = (answer: H2Answer): Record<string, unknown> => JSON.parse((answer.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(answer.raw) : answer.raw).toString('utf8')) as Record<string, unknown>;

  function watch(urlPath: string, headers: http2.OutgoingHttpHeaders = {}): H2Watch {
    const stream = session.request({ ':path': urlPath, ...headers });
    stream.on('error', () => undefined);
    const events: H2Watch['events'] = [];
    let partial = '';
    stream.setEncoding('utf8');
    stream.on('data', (text: string) => {
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      for (const line of lines) if (line) events.push(JSON.parse(line) as H2Watch['events'][number]);
    });
    stream.end();
    return { stream, headers: new Promise((resolve) => stream.once('response', resolve)), events };
  }

  const configMap = (name: string, extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, labels: { e2e: 'http2' } }, data: { key: 'value' }, ...extra });

  /** The gateway's request log lines for a path. */
  function requestLog(urlPath: string): Array<{ method: string; protocol: string; status: number }> {
    return fs
      .readFileSync(path.join(env.dir, 'logs', 'gateway.log'), 'utf8')
      .split('\n')
      .filter((line) => line.includes('"msg":"HTTP"'))
      .map((line) => JSON.parse(line) as { path: string; method: string; protocol: string; code: number })
      .filter((entry) => entry.path === urlPath)
      .map((entry) => ({ method: entry.method, protocol: entry.protocol, status: entry.code }));
  }

  test('curl --http2 is answered over HTTP/2, --http1.1 over HTTP/1.1, on the same port', async () => {
    const overH2 = await curl(['--http2', '-i', `${env.url}/api`]);
    expect(overH2.code).toBe(0);
    expect(overH2.stdout.split('\r\n')[0]).toBe('HTTP/2 200 ');
    expect(overH2.stdout).toContain('"kind":"APIVersions"');
    const overH1 = await curl(['--http1.1', '-i', `${env.url}/api`]);
    expect(overH1.stdout.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    const version = await curl(['--http2', '-o', '/dev/null', '-w', '%{http_version} %{http_code}', `${env.url}/readyz`]);
    expect(version.stdout).toBe('2 200');
  });

  test("node's HTTP/2 client: creates, a list, and a watch that receives an event, on one connection", async () => {
    expect((await h2('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'h2' } })).status).toBe(201);
    const watching = watch('/api/v1/namespaces/h2/configmaps?watch=true&labelSelector=e2e%3Dhttp2', { 'accept-encoding': 'gzip' });
    const head = await watching.headers;
    expect(head[':status']).toBe(200);
    expect(head['content-type']).toBe('application/json');
    // HTTP/2 has no Transfer-Encoding; a watch is never compressed.
    expect(head['transfer-encoding']).toBeUndefined();
    expect(head['content-encoding']).toBeUndefined();

    const created = await h2('POST', '/api/v1/namespaces/h2/configmaps', configMap('first'));
    expect(created.status).toBe(201);
    await until(() => (watching.events.some((e) => e.type === 'ADDED' && e.object.metadata.name === 'first') ? true : undefined));

    const list = await h2('GET', '/api/v1/namespaces/h2/configmaps?labelSelector=e2e%3Dhttp2');
    expect(list.status).toBe(200);
    expect((json(list)['items'] as Array<{ metadata: { name: string } }>).map((i) => i.metadata.name)).toEqual(['first']);

    // The client goes: the watch ends on the server (logged, after the list), and the connection serves on.
    watching.stream.close(http2.constants.NGHTTP2_CANCEL);
    await until(() => (requestLog('/api/v1/namespaces/h2/configmaps').filter((e) => e.method === 'GET' && e.protocol === 'HTTP/2.0').length === 2 ? true : undefined));
    expect((await h2('GET', '/api/v1/namespaces/h2/configmaps/first')).status).toBe(200);
  });

  test('lists over 128 KiB are gzipped for clients that accept it, over both protocols; small ones and watches are not', async () => {
    expect((await h2('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'h2-big' } })).status).toBe(201);
    // Sixty creates at once, multiplexed on the one connection.
    const creates = await Promise.all(Array.from({ length: 60 }, (_, i) => h2('POST', '/api/v1/namespaces/h2-big/configmaps', configMap(`big-${i}`, { data: { blob: `value-${i}-`.repeat(500) } }))));
    expect(creates.map((c) => c.status)).toEqual(Array(60).fill(201));

    const listPath = '/api/v1/namespaces/h2-big/configmaps';
    const gzipped = await h2('GET', listPath, undefined, { 'accept-encoding': 'gzip' });
    expect(gzipped.status).toBe(200);
    expect(gzipped.headers['content-encoding']).toBe('gzip');
    expect(gzipped.headers['vary']).toBe('Accept-Encoding');
    const plain = await h2('GET', listPath);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.raw.length).toBeGreaterThan(128 * 1024);
    expect(gzipped.raw.length).toBeLessThan(plain.raw.length / 10);
    // The same objects either way (the list's resourceVersion is the store's, which other writes move).
    const items = (list: Record<string, unknown>) => list['items'];
    expect(items(json(gzipped))).toEqual(items(json(plain)));
    expect((json(plain)['items'] as unknown[]).length).toBe(60);
    expect((await h2('GET', listPath, undefined, { 'accept-encoding': 'gzip;q=0' })).headers['content-encoding']).toBeUndefined();
    // Under the threshold: as written.
    expect((await h2('GET', '/api/v1/namespaces/h2/configmaps', undefined, { 'accept-encoding': 'gzip' })).headers['content-encoding']).toBeUndefined();

    // HTTP/1.1 with curl --compressed: gzip on the wire, decoded by curl.
    const out = path.join(env.dir, 'big-list.json');
    const overH1 = await curl(['--http1.1', '--compressed', '-D', '-', '-o', out, `${env.url}${listPath}`]);
    expect(overH1.stdout).toMatch(/^Content-Encoding: gzip\r$/m);
    expect(overH1.stdout).toMatch(/^Vary: Accept-Encoding\r$/m);
    expect(items(JSON.parse(fs.readFileSync(out, 'utf8')) as Record<string, unknown>)).toEqual(items(json(plain)));

    // A watch of the same objects (their starting state, sixty large ADDED events) is not compressed.
    const watching = watch(`${listPath}?watch=true`, { 'accept-encoding': 'gzip' });
    expect((await watching.headers)['content-encoding']).toBeUndefined();
    await until(() => (watching.events.filter((e) => e.type === 'ADDED').length === 60 ? true : undefined));
    watching.stream.close(http2.constants.NGHTTP2_CANCEL);
  });

  test('kubectl negotiates HTTP/2 on the same port (the gateway logs its requests as HTTP/2.0)', async () => {
    const raw = await kubectl(['get', '--raw', '/api/v1/namespaces/h2/configmaps/first']);
    expect(raw.code).toBe(0);
    expect((JSON.parse(raw.stdout) as { metadata: { name: string } }).metadata.name).toBe('first');
    await until(() => (requestLog('/api/v1/namespaces/h2/configmaps/first').some((e) => e.protocol === 'HTTP/2.0' && e.method === 'GET' && e.status === 200) ? true : undefined));
    expect(requestLog('/api/v1/namespaces/h2/configmaps/first').every((e) => e.protocol === 'HTTP/2.0')).toBe(true);
    // A large list comes gzipped to kubectl, which decodes it.
    const listed = await kubectl(['get', 'configmaps', '-n', 'h2-big', '-o', 'name']);
    expect(listed.code).toBe(0);
    expect(listed.stdout.trim().split('\n')).toHaveLength(60);
    const verbose = await kubectl(['get', 'configmap', 'first', '-n', 'h2', '-v=8']);
    expect(verbose.stderr).toMatch(/GET https:\/\/127\.0\.0\.1:\d+\/api\/v1\/namespaces\/h2\/configmaps\/first/);
    expect(verbose.stderr).toContain('Response Status: 200 OK');
  });

  test('@kubernetes/client-node keeps working over HTTP/1.1', async () => {
    const res = await run(process.execPath, [path.join(fixtures, 'client-node.mjs'), env.kubeconfigPath], { timeoutMs: 40000 });
    expect(res.stderr).toBe('');
    const out = JSON.parse(res.stdout) as Record<string, unknown>;
    expect(out['listed']).toEqual(['from-node']);
    expect(out['afterDelete']).toBe(404);
    expect(out['watched']).toEqual(['ADDED:from-node', 'MODIFIED:from-node', 'DELETED:from-node']);
    const seen = requestLog('/api/v1/namespaces/default/configmaps/from-node');
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.every((e) => e.protocol === 'HTTP/1.1')).toBe(true);
  });

  test('one connection has at most 100 streams open: more watches wait for room, and are served as others end', async () => {
    const own = connect();
    const settings = await new Promise<http2.Settings>((resolve) => own.once('remoteSettings', resolve));
    expect(settings.maxConcurrentStreams).toBe(100);
    const streams = Array.from({ length: 120 }, () => {
      const stream = own.request({ ':path': '/api/v1/namespaces/h2/configmaps?watch=true' });
      stream.on('error', () => undefined);
      stream.resume();
      let answered = false;
      stream.once('response', () => (answered = true));
      stream.end();
      return { stream, answered: () => answered };
    });
    await until(() => (streams.filter((s) => s.answered()).length === 100 ? true : undefined));
    for (const s of streams.filter((w) => w.answered()).slice(0, 20)) s.stream.close(http2.constants.NGHTTP2_CANCEL);
    await until(() => (streams.every((s) => s.answered()) ? true : undefined));
    own.destroy();
    // The gateway is unharmed.
    expect((await curl(['--http2', '-o', '/dev/null', '-w', '%{http_code}', `${env.url}/readyz`])).stdout).toBe('200');
  });
});
