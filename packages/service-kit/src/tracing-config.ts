import * as fs from 'node:fs';
import { FieldReader, parseConfigDocument } from './config-reader';

/**
 * What tracing a process runs with, read from the standard `OTEL_*`
 * environment variables and, in the gateway, from the original server's
 * `--tracing-config-file` (`TracingConfiguration`). Tracing is off unless an
 * OTLP endpoint is configured: with none, no SDK is registered and the API's
 * no-op tracer costs nothing. A value that cannot be honoured refuses the
 * start, naming the variable (or the file, line and field) and the values
 * that would be accepted.
 */

export type OtlpProtocol = 'http/protobuf' | 'http/json';

export type SamplerChoice =
  | { kind: 'always_on' | 'always_off' | 'parentbased_always_on' | 'parentbased_always_off' }
  | { kind: 'traceidratio' | 'parentbased_traceidratio'; ratio: number };

export interface BatchSettings {
  /** Spans waiting for export at most; past it a finished span is dropped (and counted). */
  maxQueueSize: number;
  /** Spans in one export at most. */
  maxExportBatchSize: number;
  /** How long a span may wait for a batch to fill. */
  scheduledDelayMs: number;
  /** How long one export may take before it counts as failed. */
  exportTimeoutMs: number;
}

export interface TracingSettings {
  serviceName: string;
  /** The OTLP/HTTP traces URL (`…/v1/traces`). */
  url: string;
  protocol: OtlpProtocol;
  sampler: SamplerChoice;
  batch: BatchSettings;
  /** `OTEL_EXPORTER_OTLP_(TRACES_)HEADERS`, sent with every export. */
  headers: Record<string, string>;
}

export class TracingConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TracingConfigError';
  }
}

export const TRACING_CONFIG_VERSIONS = ['apiserver.config.svc.io/v1', 'apiserver.config.svc.io/v1beta1', 'apiserver.config.svc.io/v1alpha1'];

/** What `--tracing-config-file` holds, as the original server reads it. */
export interface TracingConfiguration {
  /** The collector's address, `host:port` (OTLP over HTTP; a `http://` or `https://` URL is taken as the traces endpoint's base). */
  endpoint?: string;
  /** Sampled requests per million that arrive without a sampled parent; 0 (the default) samples only what the caller sampled. */
  samplingRatePerMillion?: number;
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const;
const PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json'];
const TRUE = new Set(['true', '1']);

function quoted(values: readonly string[]): string {
  return values.map((v) => JSON.stringify(v)).join(', ');
}

function unsupported(variable: string, value: string, supported: readonly string[], note = ''): TracingConfigError {
  return new TracingConfigError(`${variable}: Unsupported value: ${JSON.stringify(value)}: supported values: ${quoted(supported)}${note}`);
}

function envValue(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name]?.trim();
  return v ? v : undefined;
}

function positiveInt(env: NodeJS.ProcessEnv, name: string, fallback: number): number {
  const raw = envValue(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) <= 0) throw new TracingConfigError(`${name}: Invalid value: ${JSON.stringify(raw)}: must be a positive integer`);
  return Number(raw);
}

/** `http://host:4318` → `http://host:4318/v1/traces` (the signal path appended to the base endpoint, as the specification says). */
function tracesUrlOf(base: string): string {
  return `${base.replace(/\/+$/, '')}/v1/traces`;
}

function checkedUrl(name: string, value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new TracingConfigError(`${name}: Invalid value: ${JSON.stringify(value)}: must be an http or https URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new TracingConfigError(`${name}: Invalid value: ${JSON.stringify(value)}: must be an http or https URL`);
  return value;
}

/** `key1=value1,key2=value2` (values URL-encoded), as the specification writes headers. */
function parseHeaders(name: string, raw: string | undefined): Record<string, string> {
  const headers: Record<string, string> = {};
  if (!raw) return headers;
  for (const pair of raw.split(',')) {
    if (!pair.trim()) continue;
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new TracingConfigError(`${name}: Invalid value: ${JSON.stringify(pair.trim())}: must be key=value`);
    try {
      headers[pair.slice(0, eq).trim()] = decodeURIComponent(pair.slice(eq + 1).trim());
    } catch {
      throw new TracingConfigError(`${name}: Invalid value: ${JSON.stringify(pair.trim())}: the value is not URL-encoded`);
    }
  }
  return headers;
}

function samplerFromEnv(env: NodeJS.ProcessEnv): SamplerChoice {
  const name = envValue(env, 'OTEL_TRACES_SAMPLER') ?? 'parentbased_always_on';
  if (!(SAMPLERS as readonly string[]).includes(name)) throw unsupported('OTEL_TRACES_SAMPLER', name, SAMPLERS);
  const kind = name as (typeof SAMPLERS)[number];
  if (kind !== 'traceidratio' && kind !== 'parentbased_traceidratio') return { kind };
  const arg = envValue(env, 'OTEL_TRACES_SAMPLER_ARG');
  if (arg === undefined) return { kind, ratio: 1 };
  const ratio = Number(arg);
  if (!/^\s*[0-9.eE+-]+\s*$/.test(arg) || !Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new TracingConfigError(`OTEL_TRACES_SAMPLER_ARG: Invalid value: ${JSON.stringify(arg)}: must be a number from 0 to 1`);
  }
  return { kind, ratio };
}

/** The sampler the original server uses: the caller's decision when there is one, else `ratePerMillion` in a million. */
export function samplerForRate(ratePerMillion: number): SamplerChoice {
  return ratePerMillion > 0 ? { kind: 'parentbased_traceidratio', ratio: ratePerMillion / 1_000_000 } : { kind: 'parentbased_always_off' };
}

/**
 * The process's tracing settings, or undefined when tracing is off: the SDK
 * is disabled, the exporter is `none`, or no endpoint is configured by the
 * environment or `file`. Throws TracingConfigError for a value that cannot
 * be honoured.
 */
export function tracingSettings(service: string, env: NodeJS.ProcessEnv, file?: TracingConfiguration): TracingSettings | undefined {
  const disabled = envValue(env, 'OTEL_SDK_DISABLED');
  if (disabled !== undefined && !['true', 'false', '0', '1'].includes(disabled.toLowerCase())) {
    throw unsupported('OTEL_SDK_DISABLED', disabled, ['true', 'false']);
  }
  if (disabled !== undefined && TRUE.has(disabled.toLowerCase())) return undefined;
  const exporter = envValue(env, 'OTEL_TRACES_EXPORTER') ?? 'otlp';
  if (exporter === 'none') return undefined;
  if (exporter !== 'otlp') throw unsupported('OTEL_TRACES_EXPORTER', exporter, ['otlp', 'none']);
  const protocolVariable = envValue(env, 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL') ? 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' : 'OTEL_EXPORTER_OTLP_PROTOCOL';
  const protocolValue = envValue(env, protocolVariable) ?? 'http/protobuf';
  if (!(PROTOCOLS as readonly string[]).includes(protocolValue)) {
    throw unsupported(protocolVariable, protocolValue, PROTOCOLS, protocolValue === 'grpc' ? " (OTLP over gRPC is not built in: point the endpoint at the collector's OTLP/HTTP port, 4318)" : '');
  }
  const protocol = protocolValue as OtlpProtocol;
  const sampler = samplerFromEnv(env);
  const batch: BatchSettings = {
    maxQueueSize: positiveInt(env, 'OTEL_BSP_MAX_QUEUE_SIZE', 2048),
    maxExportBatchSize: positiveInt(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512),
    scheduledDelayMs: positiveInt(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000),
    exportTimeoutMs: positiveInt(env, 'OTEL_BSP_EXPORT_TIMEOUT', 30000),
  };
  batch.maxExportBatchSize = Math.min(batch.maxExportBatchSize, batch.maxQueueSize);
  const headers = {
    ...parseHeaders('OTEL_EXPORTER_OTLP_HEADERS', envValue(env, 'OTEL_EXPORTER_OTLP_HEADERS')),
    ...parseHeaders('OTEL_EXPORTER_OTLP_TRACES_HEADERS', envValue(env, 'OTEL_EXPORTER_OTLP_TRACES_HEADERS')),
  };
  const serviceName = envValue(env, 'OTEL_SERVICE_NAME') ?? service;
  if (file) {
    // The file is the gateway's own configuration, as the original server's: its endpoint and rate stand.
    return { serviceName, url: fileTracesUrl(file.endpoint), protocol, sampler: samplerForRate(file.samplingRatePerMillion ?? 0), batch, headers };
  }
  const tracesEndpoint = envValue(env, 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT');
  const endpoint = envValue(env, 'OTEL_EXPORTER_OTLP_ENDPOINT');
  let url: string;
  if (tracesEndpoint) url = checkedUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', tracesEndpoint);
  else if (endpoint) url = tracesUrlOf(checkedUrl('OTEL_EXPORTER_OTLP_ENDPOINT', endpoint));
  else return undefined;
  return { serviceName, url, protocol, sampler, batch, headers };
}

/** The default collector address of the file, on the OTLP/HTTP port. */
export const DEFAULT_FILE_ENDPOINT = 'localhost:4318';

function fileTracesUrl(endpoint: string | undefined): string {
  const e = endpoint ?? DEFAULT_FILE_ENDPOINT;
  if (/^https?:\/\//.test(e)) return tracesUrlOf(e);
  return tracesUrlOf(`http://${e.replace(/^dns:\/\/\/?/, '')}`);
}

/** The 1-based line of the document's top-level `field` in `text`, when it can be found. */
function lineOf(text: string, field: string): number | undefined {
  const root = field.split(/[.[]/)[0] ?? field;
  const re = new RegExp(`^\\s*(?:"${root}"|'${root}'|${root})\\s*:|[{,]\\s*"${root}"\\s*:`);
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) if (re.test(lines[i] as string)) return i + 1;
  return undefined;
}

function validEndpoint(r: FieldReader, endpoint: string): void {
  if (/^https?:\/\//.test(endpoint)) {
    try {
      new URL(endpoint);
    } catch {
      r.problem('endpoint', `Invalid value: ${JSON.stringify(endpoint)}: not a valid URL`);
    }
    return;
  }
  const scheme = /^([a-zA-Z][a-zA-Z0-9+.-]*):\/\//.exec(endpoint)?.[1];
  if (scheme !== undefined && scheme !== 'dns') {
    r.problem('endpoint', `Invalid value: ${JSON.stringify(endpoint)}: unsupported scheme: ${scheme}. Options are none, dns, http or https`);
    return;
  }
  const hostPort = endpoint.replace(/^dns:\/\/\/?/, '');
  let parsed: URL | undefined;
  try {
    parsed = new URL(`http://${hostPort}`);
  } catch {
    parsed = undefined;
  }
  if (!parsed || parsed.pathname !== '/' || parsed.search || parsed.username || !parsed.hostname) {
    r.problem('endpoint', `Invalid value: ${JSON.stringify(endpoint)}: must be host:port`);
  }
}

/** Reads and checks a `TracingConfiguration` document; every problem names the file, the field and its line. */
export function parseTracingConfiguration(text: string, file: string): TracingConfiguration {
  const doc = parseConfigDocument(text, file);
  const r = new FieldReader();
  const root = r.object(doc ?? {}, '<root>', ['apiVersion', 'kind', 'endpoint', 'samplingRatePerMillion']);
  const config: TracingConfiguration = {};
  if (root) {
    r.typeMeta(root, 'TracingConfiguration', TRACING_CONFIG_VERSIONS);
    const endpoint = r.string(root['endpoint'], 'endpoint');
    if (endpoint !== undefined) {
      validEndpoint(r, endpoint);
      config.endpoint = endpoint;
    }
    const rate = root['samplingRatePerMillion'];
    if (rate !== undefined && rate !== null) {
      if (typeof rate !== 'number' || !Number.isInteger(rate)) r.problem('samplingRatePerMillion', `Invalid value: ${JSON.stringify(rate)}: must be an integer`);
      else if (rate < 0) r.problem('samplingRatePerMillion', `Invalid value: ${rate}: sampling rate must be positive`);
      else if (rate > 1_000_000) r.problem('samplingRatePerMillion', `Invalid value: ${rate}: sampling rate per million must be less than or equal to one million`);
      else config.samplingRatePerMillion = rate;
    }
  } else {
    r.problem('<root>', 'Invalid value: must be an object');
  }
  if (r.problems.length > 0) {
    const located = r.problems.map((p) => {
      const line = lineOf(text, p.slice(0, p.indexOf(':')));
      return line === undefined ? p : `line ${line}: ${p}`;
    });
    throw new TracingConfigError(`${file}: ${located.join('; ')}`);
  }
  return config;
}

/** Reads `--tracing-config-file`. */
export function readTracingConfigFile(file: string): TracingConfiguration {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new TracingConfigError(`${file}: ${(err as Error).message}`);
  }
  return parseTracingConfiguration(text, file);
}
