import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/**
 * The gateway process refuses to start with a tracing configuration it
 * cannot honour, naming the file, line and field, or the variable.
 */
describe('gateway tracing configuration at start', () => {
  let dir: string;
  beforeAll(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'gateway-tracing-'))));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const start = (args: string[], env: NodeJS.ProcessEnv = {}) =>
    spawnSync(process.execPath, [path.join(__dirname, 'main.js'), '--tls-cert-file=/nonexistent.crt', '--tls-private-key-file=/nonexistent.key', '--internal-ca-file=/nonexistent.ca', '--internal-cert-file=/nonexistent.crt', '--internal-key-file=/nonexistent.key', '--listen=127.0.0.1:0', ...args], {
      encoding: 'utf8',
      timeout: 30000,
      env: { ...process.env, ...env },
    });
  const file = (name: string, text: string): string => {
    const f = path.join(dir, name);
    fs.writeFileSync(f, text);
    return f;
  };

  test.each([
    ['an unknown field', 'unknown.yaml', 'apiVersion: apiserver.config.svc.io/v1\nkind: TracingConfiguration\nendpoint: c:4318\nsampling: 1\n', 'unknown.yaml: line 4: sampling: unknown field'],
    [
      'a rate over a million',
      'rate.yaml',
      'apiVersion: apiserver.config.svc.io/v1\nkind: TracingConfiguration\nsamplingRatePerMillion: 2000000\n',
      'rate.yaml: line 3: samplingRatePerMillion: Invalid value: 2000000: sampling rate per million must be less than or equal to one million',
    ],
    ['a document that does not parse', 'broken.yaml', 'apiVersion: [\n', 'broken.yaml: '],
  ])('%s', (_what, name, text, message) => {
    const run = start([`--tracing-config-file=${file(name, text)}`]);
    expect(run.status).toBe(1);
    expect(run.stdout + run.stderr).toContain(message);
    expect(run.stdout + run.stderr).toContain('start failed');
  });

  test('a missing file', () => {
    const run = start([`--tracing-config-file=${path.join(dir, 'missing.yaml')}`]);
    expect(run.status).toBe(1);
    expect(run.stdout + run.stderr).toContain('missing.yaml: ENOENT');
  });

  test('OTLP over gRPC', () => {
    const run = start([], { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(run.status).toBe(1);
    expect(run.stdout + run.stderr).toContain('OTEL_EXPORTER_OTLP_PROTOCOL: Unsupported value: \\"grpc\\"');
  });
});
