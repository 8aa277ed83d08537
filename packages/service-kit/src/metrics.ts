import * as prom from 'prom-client';

/**
 * Prometheus metrics with the original server's stability classes: every
 * metric declares ALPHA, BETA or STABLE, printed at the front of its HELP;
 * a deprecated metric's HELP says since when; a metric deprecated before the
 * current minor release is hidden (declared, counted nowhere) unless
 * `--show-hidden-metrics-for-version` names the previous minor release.
 */

export type StabilityLevel = 'ALPHA' | 'BETA' | 'STABLE';

/** The release these binaries report (the gateway's `/version` says v1.32.0-svc). */
export const BINARY_VERSION = '1.32.0';

interface Version {
  major: number;
  minor: number;
  patch: number;
}

function parseVersion(text: string, what: string): Version {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?/.exec(text);
  if (!m) throw new Error(`${what}: ${JSON.stringify(text)} is not a version (major.minor[.patch])`);
  return { major: Number(m[1]), minor: Number(m[2]), patch: Number(m[3] ?? 0) };
}

function compareVersions(a: Version, b: Version): number {
  return a.major - b.major || a.minor - b.minor || a.patch - b.patch;
}

/**
 * Checks a `--show-hidden-metrics-for-version` value: empty, or exactly the
 * minor release before `current` (as the original only accepts).
 */
export function validateShowHiddenFor(value: string, current: string = BINARY_VERSION): void {
  if (!value) return;
  const cur = parseVersion(current, 'binary version');
  const allowed = cur.minor > 0 ? `${cur.major}.${cur.minor - 1}` : '';
  if (value !== allowed) {
    throw new Error(`--show-hidden-metrics-for-version must be omitted or have the value '${allowed}'. Only the previous minor version is allowed`);
  }
}

export interface MetricOptions<L extends string> {
  name: string;
  help: string;
  labelNames?: readonly L[];
  /** Defaults to ALPHA, as the original does. */
  stabilityLevel?: StabilityLevel;
  /** `major.minor.patch` this metric was deprecated in. */
  deprecatedVersion?: string;
}

export interface HistogramOptions<L extends string> extends MetricOptions<L> {
  buckets: readonly number[];
}

export interface GaugeOptions<L extends string> extends MetricOptions<L> {
  /** Called before each scrape, to set values read elsewhere. */
  collect?: (gauge: prom.Gauge<L>) => void | Promise<void>;
}

type AnyMetric = prom.Metric<string> | FastMetric;

/** One labelled series of a counter. */
export interface CounterChild {
  inc(value?: number): void;
}

/** One labelled series of a histogram. */
export interface HistogramChild {
  observe(value: number): void;
}

/** A metric as the registry reads it at scrape time (prom-client's shape). */
interface RenderedMetric {
  name: string;
  help: string;
  type: string;
  aggregator: string;
  values: Array<{ labels: Record<string, string | number>; value: number; metricName?: string }>;
}

interface FastMetric {
  readonly name: string;
  get(): Promise<RenderedMetric>;
}

/** A child's key: its label values joined by a character no value holds in practice. */
function seriesKey(values: readonly string[]): string {
  return values.length === 1 ? (values[0] as string) : values.join('\u0000');
}

function labelObject(names: readonly string[], values: readonly string[]): Record<string, string> {
  const labels: Record<string, string> = {};
  for (let i = 0; i < names.length; i++) labels[names[i] as string] = values[i] ?? '';
  return labels;
}

/**
 * A counter whose series are bound once and then cost an addition: the
 * request path counts with these (prom-client's own counters hash and
 * validate their labels on every increment). Rendered by prom-client's
 * registry like any of its metrics.
 */
export class FastCounter<L extends string = string> implements FastMetric, CounterChild {
  private readonly series = new Map<string, { labels: Record<string, string>; value: number }>();

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
  ) {}

  /** The series of these label values (in the declared order), created at 0 on first use. */
  labels(...values: string[]): CounterChild {
    const key = seriesKey(values);
    let s = this.series.get(key);
    if (!s) {
      if (values.length !== this.labelNames.length) throw new Error(`metric ${this.name}: ${this.labelNames.length} label values expected, got ${values.length}`);
      s = { labels: labelObject(this.labelNames, values), value: 0 };
      this.series.set(key, s);
    }
    const series = s;
    return {
      inc(value = 1) {
        series.value += value;
      },
    };
  }

  /** The series without labels. */
  inc(value = 1): void {
    this.labels().inc(value);
  }

  async get(): Promise<RenderedMetric> {
    return {
      name: this.name,
      help: this.help,
      type: 'counter',
      aggregator: 'sum',
      values: [...this.series.values()].map((s) => ({ labels: s.labels, value: s.value })),
    };
  }
}

interface HistogramSeries {
  labels: Record<string, string>;
  counts: number[];
  sum: number;
  count: number;
}

/** A histogram whose series are bound once; an observation finds its bucket and adds (see FastCounter). */
export class FastHistogram<L extends string = string> implements FastMetric, HistogramChild {
  private readonly series = new Map<string, HistogramSeries>();
  private readonly bounds: readonly number[];

  constructor(
    readonly name: string,
    readonly help: string,
    private readonly labelNames: readonly L[],
    buckets: readonly number[],
  ) {
    this.bounds = [...buckets].sort((a, b) => a - b);
  }

  labels(...values: string[]): HistogramChild {
    const key = seriesKey(values);
    let s = this.series.get(key);
    if (!s) {
      if (values.length !== this.labelNames.length) throw new Error(`metric ${this.name}: ${this.labelNames.length} label values expected, got ${values.length}`);
      s = { labels: labelObject(this.labelNames, values), counts: new Array<number>(this.bounds.length).fill(0), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    const series = s;
    const bounds = this.bounds;
    return {
      observe(value: number) {
        series.sum += value;
        series.count++;
        for (let i = 0; i < bounds.length; i++) {
          if (value <= (bounds[i] as number)) {
            series.counts[i] = (series.counts[i] as number) + 1;
            return;
          }
        }
      },
    };
  }

  observe(value: number): void {
    this.labels().observe(value);
  }

  async get(): Promise<RenderedMetric> {
    const values: RenderedMetric['values'] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.bounds.length; i++) {
        cumulative += s.counts[i] as number;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: this.bounds[i] as number }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: '+Inf' }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }
}

export const PROMETHEUS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';
export const OPENMETRICS_CONTENT_TYPE = 'application/openmetrics-text; version=1.0.0; charset=utf-8';

export interface MetricsRegistryOptions {
  /** The running release; defaults to BINARY_VERSION. */
  version?: string;
}

/** One process's metrics (each service is its own process). */
export class MetricsRegistry {
  readonly registry = new prom.Registry();
  private readonly version: Version;
  private readonly hidden: AnyMetric[] = [];
  private showHidden = false;
  private defaultsCollected = false;

  constructor(options: MetricsRegistryOptions = {}) {
    this.version = parseVersion(options.version ?? BINARY_VERSION, 'binary version');
  }

  /** Registers every hidden metric (declared before or after), as `--show-hidden-metrics-for-version` asks. */
  enableShowHidden(): void {
    this.showHidden = true;
    for (const metric of this.hidden.splice(0)) this.registry.registerMetric(metric as prom.Metric<string>);
  }

  counter<L extends string>(options: MetricOptions<L>): FastCounter<L> {
    return this.place(new FastCounter<L>(options.name, this.describe(options), options.labelNames ?? []), options);
  }

  gauge<L extends string>(options: GaugeOptions<L>): prom.Gauge<L> {
    const help = this.describe(options);
    const collect = options.collect;
    const gauge = new prom.Gauge<L>({
      name: options.name,
      help,
      labelNames: options.labelNames ?? [],
      registers: [],
      ...(collect ? { collect(this: prom.Gauge<L>) { return collect(this); } } : {}),
    });
    return this.place(gauge, options);
  }

  histogram<L extends string>(options: HistogramOptions<L>): FastHistogram<L> {
    return this.place(new FastHistogram<L>(options.name, this.describe(options), options.labelNames ?? [], options.buckets), options);
  }

  /** Process and Node runtime metrics (`process_cpu_seconds_total`, `process_resident_memory_bytes`, `nodejs_*`...), once. */
  collectDefaultMetrics(): void {
    if (this.defaultsCollected) return;
    this.defaultsCollected = true;
    prom.collectDefaultMetrics({ register: this.registry });
  }

  /** Whether a metric of this name is exposed (declared and not hidden). */
  exposes(name: string): boolean {
    return this.registry.getSingleMetric(name) !== undefined;
  }

  /**
   * The exposition for an `Accept` header: OpenMetrics when it asks for
   * `application/openmetrics-text`, the Prometheus text format otherwise.
   */
  async render(accept: string | undefined): Promise<{ contentType: string; body: string }> {
    if (accept && accept.includes('application/openmetrics-text')) {
      return { contentType: OPENMETRICS_CONTENT_TYPE, body: await renderOpenMetrics(this.registry) };
    }
    return { contentType: PROMETHEUS_CONTENT_TYPE, body: await this.registry.metrics() };
  }

  private describe(options: MetricOptions<string>): string {
    let help = options.help;
    if (options.deprecatedVersion) {
      const deprecated = parseVersion(options.deprecatedVersion, `metric ${options.name} deprecatedVersion`);
      if (compareVersions(deprecated, this.version) <= 0) help = `(Deprecated since ${options.deprecatedVersion}) ${help}`;
    }
    return `[${options.stabilityLevel ?? 'ALPHA'}] ${help}`;
  }

  private isHidden(options: MetricOptions<string>): boolean {
    if (!options.deprecatedVersion || this.showHidden) return false;
    const deprecated = parseVersion(options.deprecatedVersion, `metric ${options.name} deprecatedVersion`);
    return compareVersions(deprecated, { major: this.version.major, minor: this.version.minor, patch: 0 }) < 0;
  }

  private place<M extends AnyMetric>(metric: M, options: MetricOptions<string>): M {
    if (this.isHidden(options)) this.hidden.push(metric);
    else this.registry.registerMetric(metric as prom.Metric<string>);
    return metric;
  }
}

function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

function escapeLabel(text: string): string {
  return escapeHelp(text).replace(/"/g, '\\"');
}

function formatValue(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (value === Number.POSITIVE_INFINITY) return '+Inf';
  if (value === Number.NEGATIVE_INFINITY) return '-Inf';
  return String(value);
}

/**
 * OpenMetrics 1.0 text: counters are named without `_total` in their
 * metadata and with it on samples, and the exposition ends with `# EOF`.
 * (Rendered here rather than through a second prom-client registry, whose
 * OpenMetrics mode renames the shared metric objects it prints.)
 */
async function renderOpenMetrics(registry: prom.Registry): Promise<string> {
  const out: string[] = [];
  const metrics = await Promise.all(registry.getMetricsAsArray().map((m) => (m as unknown as FastMetric).get()));
  for (const metric of metrics) {
    const isCounter = String(metric.type) === 'counter';
    const family = isCounter ? metric.name.replace(/_total$/, '') : metric.name;
    out.push(`# HELP ${family} ${escapeHelp(metric.help)}`, `# TYPE ${family} ${metric.type}`);
    for (const sample of metric.values) {
      const name = sample.metricName ?? (isCounter ? `${family}_total` : metric.name);
      const labels = Object.entries(sample.labels)
        .filter(([, v]) => v !== undefined)
        .map(([k, v]) => `${k}="${escapeLabel(String(v))}"`);
      out.push(`${name}${labels.length ? `{${labels.join(',')}}` : ''} ${formatValue(sample.value)}`);
    }
  }
  out.push('# EOF');
  return out.join('\n') + '\n';
}

/** Keeps a label's values bounded: anything outside `known` is reported as `fallback`. */
export function boundedLabel(value: string, known: ReadonlySet<string>, fallback = 'other'): string {
  return known.has(value) ? value : fallback;
}

/** This process's metrics; every service declares its own on it. */
export const processMetrics = new MetricsRegistry();
