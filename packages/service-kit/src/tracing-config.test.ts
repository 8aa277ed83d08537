import { parseTracingConfiguration, samplerForRate, tracingSettings, TracingConfigError } from './tracing-config';

const FILE = '/etc/svc/tracing.yaml';

function refusal(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(TracingConfigError);
    return (err as Error).message;
  }
  throw new Error('accepted');
}

describe('tracing settings from the environment', () => {
  test('off without an endpoint, when disabled, and with the exporter none', () => {
    expect(tracingSettings('storage', {})).toBeUndefined();
    expect(tracingSettings('storage', { OTEL_TRACES_SAMPLER: 'always_on' })).toBeUndefined();
    expect(tracingSettings('storage', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_SDK_DISABLED: 'true' })).toBeUndefined();
    expect(tracingSettings('storage', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318', OTEL_TRACES_EXPORTER: 'none' })).toBeUndefined();
  });

  test('the base endpoint gets the traces path; the traces endpoint is taken as it is and wins', () => {
    const s = tracingSettings('storage', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' });
    expect(s).toMatchObject({ serviceName: 'storage', url: 'http://collector:4318/v1/traces', protocol: 'http/protobuf', sampler: { kind: 'parentbased_always_on' } });
    expect(tracingSettings('storage', { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:1', OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'https://b:2/custom' })?.url).toBe('https://b:2/custom');
  });

  test('service name, protocol, headers and batch settings', () => {
    const s = tracingSettings('authz', {
      OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318',
      OTEL_SERVICE_NAME: 'authz-east',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_HEADERS: 'a=1,b=x%20y',
      OTEL_BSP_MAX_QUEUE_SIZE: '10',
      OTEL_BSP_MAX_EXPORT_BATCH_SIZE: '50',
    });
    expect(s).toMatchObject({ serviceName: 'authz-east', protocol: 'http/json', headers: { a: '1', b: 'x y' } });
    // A batch never exceeds the queue.
    expect(s?.batch).toMatchObject({ maxQueueSize: 10, maxExportBatchSize: 10, scheduledDelayMs: 5000, exportTimeoutMs: 30000 });
  });

  test('sampler choice', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingSettings('s', { ...env, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' })?.sampler).toEqual({ kind: 'traceidratio', ratio: 0.25 });
    expect(tracingSettings('s', { ...env, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio' })?.sampler).toEqual({ kind: 'parentbased_traceidratio', ratio: 1 });
    expect(tracingSettings('s', { ...env, OTEL_TRACES_SAMPLER: 'always_off' })?.sampler).toEqual({ kind: 'always_off' });
    expect(samplerForRate(0)).toEqual({ kind: 'parentbased_always_off' });
    expect(samplerForRate(250_000)).toEqual({ kind: 'parentbased_traceidratio', ratio: 0.25 });
  });

  test('each value that cannot be honoured refuses, naming the variable', () => {
    const env = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(refusal(() => tracingSettings('s', { ...env, OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }))).toMatch(/^OTEL_EXPORTER_OTLP_PROTOCOL: Unsupported value: "grpc": supported values: "http\/protobuf", "http\/json" \(OTLP over gRPC/);
    expect(refusal(() => tracingSettings('s', { ...env, OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'thrift' }))).toMatch(/^OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: Unsupported value: "thrift"/);
    expect(refusal(() => tracingSettings('s', { ...env, OTEL_TRACES_SAMPLER: 'jaeger_remote' }))).toMatch(/^OTEL_TRACES_SAMPLER: Unsupported value: "jaeger_remote"/);
    expect(refusal(() => tracingSettings('s', { ...env, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '1.5' }))).toMatch(/^OTEL_TRACES_SAMPLER_ARG: Invalid value: "1.5": must be a number from 0 to 1/);
    expect(refusal(() => tracingSettings('s', { ...env, OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: 'half' }))).toMatch(/^OTEL_TRACES_SAMPLER_ARG: Invalid value: "half"/);
    expect(refusal(() => tracingSettings('s', { ...env, OTEL_TRACES_EXPORTER: 'zipkin' }))).toMatch(/^OTEL_TRACES_EXPORTER: Unsupported value: "zipkin": supported values: "otlp", "none"/);
    expect(refusal(() => tracingSettings('s', { ...env, OTEL_SDK_DISABLED: 'maybe' }))).toMatch(/^OTEL_SDK_DISABLED: Unsupported value: "maybe"/);
    expect(refusal(() => tracingSettings('s', { OTEL_EXPORTER_OTLP_ENDPOINT: 'collector:4318' }))).toMatch(/^OTEL_EXPORTER_OTLP_ENDPOINT: Invalid value: "collector:4318": must be an http or https URL/);
    expect(refusal(() => tracingSettings('s', { OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'not a url' }))).toMatch(/^OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: Invalid value/);
    expect(refusal(() => tracingSettings('s', { ...env, OTEL_BSP_MAX_QUEUE_SIZE: '0' }))).toMatch(/^OTEL_BSP_MAX_QUEUE_SIZE: Invalid value: "0": must be a positive integer/);
    expect(refusal(() => tracingSettings('s', { ...env, OTEL_EXPORTER_OTLP_HEADERS: 'novalue' }))).toMatch(/^OTEL_EXPORTER_OTLP_HEADERS: Invalid value: "novalue": must be key=value/);
  });
});

describe('--tracing-config-file', () => {
  const read = (text: string) => parseTracingConfiguration(text, FILE);

  test('a valid file sets the endpoint and the parent-based ratio of the original server', () => {
    const file = read('apiVersion: apiserver.config.svc.io/v1\nkind: TracingConfiguration\nendpoint: collector:4318\nsamplingRatePerMillion: 100\n');
    expect(file).toEqual({ endpoint: 'collector:4318', samplingRatePerMillion: 100 });
    // The file turns tracing on by itself, and its endpoint is reached over OTLP/HTTP.
    expect(tracingSettings('gateway', {}, file)).toMatchObject({ url: 'http://collector:4318/v1/traces', sampler: { kind: 'parentbased_traceidratio', ratio: 0.0001 } });
    expect(tracingSettings('gateway', {}, read('apiVersion: apiserver.config.svc.io/v1beta1\nkind: TracingConfiguration\n'))).toMatchObject({
      url: 'http://localhost:4318/v1/traces',
      sampler: { kind: 'parentbased_always_off' },
    });
    expect(tracingSettings('gateway', {}, { endpoint: 'https://c.example:4318' })?.url).toBe('https://c.example:4318/v1/traces');
    // The SDK switch still wins.
    expect(tracingSettings('gateway', { OTEL_SDK_DISABLED: 'true' }, file)).toBeUndefined();
  });

  test('each bad input refuses, naming the file, the line and the field', () => {
    const head = 'apiVersion: apiserver.config.svc.io/v1\nkind: TracingConfiguration\n';
    expect(refusal(() => read(`${head}endpoint: c:4318\nsamplingRate: 5\n`))).toBe(`${FILE}: line 4: samplingRate: unknown field`);
    expect(refusal(() => read(`${head}samplingRatePerMillion: 1000001\n`))).toBe(
      `${FILE}: line 3: samplingRatePerMillion: Invalid value: 1000001: sampling rate per million must be less than or equal to one million`,
    );
    expect(refusal(() => read(`${head}samplingRatePerMillion: -1\n`))).toBe(`${FILE}: line 3: samplingRatePerMillion: Invalid value: -1: sampling rate must be positive`);
    expect(refusal(() => read(`${head}samplingRatePerMillion: "ten"\n`))).toMatch(/line 3: samplingRatePerMillion: Invalid value: "ten": must be an integer/);
    expect(refusal(() => read(`${head}endpoint: unix:///run/otel.sock\n`))).toMatch(/line 3: endpoint: Invalid value: "unix:\/\/\/run\/otel.sock": unsupported scheme: unix/);
    expect(refusal(() => read(`${head}endpoint: 42\n`))).toMatch(/line 3: endpoint: Invalid value: must be a string/);
    expect(refusal(() => read(`${head}endpoint: c:4318/path\n`))).toMatch(/line 3: endpoint: Invalid value: "c:4318\/path": must be host:port/);
    expect(refusal(() => read('apiVersion: apiserver.config.svc.io/v2\nkind: TracingConfiguration\n'))).toMatch(/line 1: apiVersion: Unsupported value: "apiserver.config.svc.io\/v2"/);
    expect(refusal(() => read('apiVersion: apiserver.config.svc.io/v1\nkind: Tracing\n'))).toMatch(/line 2: kind: Unsupported value: "Tracing"/);
    expect(refusal(() => read('{"apiVersion": "apiserver.config.svc.io/v1", "kind": "TracingConfiguration", "extra": 1}'))).toBe(`${FILE}: line 1: extra: unknown field`);
  });

  test('a document that does not parse refuses with the file and the parser\'s position', () => {
    expect(() => read('apiVersion: [\n')).toThrow(/^\/etc\/svc\/tracing.yaml: .*\(2:1\)/);
    expect(refusal(() => read('- a\n- b\n'))).toMatch(/^\/etc\/svc\/tracing.yaml: <root>: Invalid value: must be an object/);
  });
});
