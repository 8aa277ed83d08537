import { fork } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { connect, type NatsConnection } from 'nats';
import type { Environment } from '@svc/testenv';
import { cpuSince, ensureNamespace, fmt, percentile, rssBytes, runConcurrent, sleep, stats, type Client, type Percentiles } from './harness';
import { addedMatcher, openWatchStream, type ReadCounters, type WatchStream } from './watch-stream';

/**
 * Many watchers of one namespace while it is written: `BENCH_WATCHERS`
 * (1,000) watches of the ConfigMaps of one namespace, each on its own
 * HTTP/1.1 connection over TLS (as kubelets and informers watch), all
 * opened and answered before anything is measured; then `BENCH_WATCH_CREATES`
 * (300) creates of 1 KiB ConfigMaps in that namespace, paced at
 * `BENCH_WATCH_RATE` (100) per second, each sent without waiting for the
 * one before, on keep-alive connections opened beforehand. Before that the
 * create path is warmed (100 creates) and 20 events go through every watch,
 * not counted.
 *
 * Latency is create-to-event, per watcher and event, on this process's
 * clock: from just before the create's request is handed to the HTTP client
 * to the moment the watcher's connection hands this process the data that
 * completes the ADDED event's line. So it includes the time the event
 * waits in this process's event loop: its delay is reported with it, and so
 * is the CPU of this process and of every process of the system over the
 * same interval (from the first create until every event is in, or
 * `BENCH_WATCH_DRAIN_MS` after the last create). Also per watcher and event:
 * the time from the create's answer to the event, which leaves out the
 * create's own path. A watcher reads each line only as far as the object's
 * name (watch-stream.ts); what a JSON.parse of each line would cost instead
 * is measured after, on a line received.
 *
 * Then two floors in the same run, with the same watchers (the same client
 * code, as many TLS connections, the same pace and clock):
 * - bare Node HTTPS (fanout-floor.ts, a child process): the gateway's event
 *   lines, each written to every connection and nothing else done; what any
 *   Node HTTPS front pays for this fan-out, and what the load generator
 *   pays to receive it;
 * - raw NATS: 1 KiB messages to as many subscribing TLS connections
 *   (`BENCH_WATCH_RAW=0` leaves both floors out).
 */

const WATCHERS = Number(process.env['BENCH_WATCHERS'] ?? '1000');
const CREATES = Number(process.env['BENCH_WATCH_CREATES'] ?? '300');
const RATE = Number(process.env['BENCH_WATCH_RATE'] ?? '100');
const DRAIN_MS = Number(process.env['BENCH_WATCH_DRAIN_MS'] ?? '30000');
const FLOORS = process.env['BENCH_WATCH_RAW'] !== '0';
const OBJECT_BYTES = 1024;
const OPEN_CONCURRENCY = 50;
/** Creates before the watches open, and events through them before the measured ones. */
const WARM_CREATES = 100;
const WARM_EVENTS = 20;
/** Keep-alive connections the creates go out on, opened before they start. */
const CREATE_CONNECTIONS = 32;
const NAMESPACE = 'bench-fanout';
const NAME_PREFIX = 'fanout-';

export interface LatencySummary extends Percentiles {
  p90: number;
  max: number;
}

export interface FanoutPhase {
  /** Sends (creates, lines or publishes) made, and the rate they went out at. */
  sent: number;
  sentPerSecond: number;
  latencyMs: LatencySummary;
  delivered: number;
  expected: number;
  duplicates: number;
  /** Receivers that got fewer than every event. */
  receiversShort: number;
  /** Receivers whose stream ended (or that were refused) before they had every event. */
  endedEarly: number;
  /** From the last send until the last event was in. */
  drainMs: number;
  /** The interval the CPU figures cover: first send until all was in (or the drain deadline). */
  wallMs: number;
  cpuMs: Record<string, number>;
  generatorEventLoopDelayMs: { p99: number; max: number };
  /** Watch streams: the socket reads (TLS records handed to JS) and bytes received per delivered event. */
  perEvent?: ReadCounters;
}

export interface WatchersFigures {
  watchers: number;
  objectBytes: number;
  opened: number;
  /** Watches answered other than 200 (or not at all). */
  refused: number;
  openSeconds: number;
  gatewayRssMiB: { before: number; withWatchers: number };
  createFailures: number;
  createMs: Percentiles;
  gateway: FanoutPhase;
  /** Per watcher and event, from the create's answer to the event's receipt (negative: the event came first): the fan-out without the create. */
  eventAfterCreateAnsweredMs: LatencySummary;
  /** Load-generator CPU per event line: the byte search used here, and a JSON.parse of the line instead. */
  lineParseUs: { scan: number; jsonParse: number; lineBytes: number };
  nodeHttpsFloor?: FanoutPhase;
  rawNats?: FanoutPhase;
  /** A floor that could not be measured, and why. */
  floorErrors?: string[];
}

/** Which receiver got which event, and how long after it was sent. */
class Deliveries {
  readonly sentAt: Float64Array;
  readonly latencyMs: Float64Array;
  /** The event of each latency sample. */
  readonly eventOf: Uint32Array;
  readonly perReceiver: Uint32Array;
  /** Receivers refused or whose stream ended early. */
  readonly gone: Uint8Array;
  private readonly seen: Uint8Array;
  delivered = 0;
  duplicates = 0;
  lastAt = 0;
  constructor(
    readonly receivers: number,
    readonly events: number,
  ) {
    this.sentAt = new Float64Array(events);
    this.latencyMs = new Float64Array(receivers * events);
    this.eventOf = new Uint32Array(receivers * events);
    this.perReceiver = new Uint32Array(receivers);
    this.gone = new Uint8Array(receivers);
    this.seen = new Uint8Array(receivers * events);
  }
  record(receiver: number, event: number, now: number): boolean {
    if (event < 0 || event >= this.events) return false;
    const k = receiver * this.events + event;
    if (this.seen[k] === 1) {
      this.duplicates++;
      return true;
    }
    this.seen[k] = 1;
    this.perReceiver[receiver] = (this.perReceiver[receiver] ?? 0) + 1;
    this.eventOf[this.delivered] = event;
    this.latencyMs[this.delivered++] = now - (this.sentAt[event] ?? now);
    this.lastAt = now;
    return true;
  }
  /** Every receiver not gone has every event. */
  settled(): boolean {
    if (this.delivered === this.receivers * this.events) return true;
    for (let r = 0; r < this.receivers; r++) if (this.perReceiver[r] !== this.events && this.gone[r] !== 1) return false;
    return true;
  }
  count(of: (receiver: number) => boolean): number {
    let n = 0;
    for (let r = 0; r < this.receivers; r++) if (of(r)) n++;
    return n;
  }
  /** The latencies' percentiles, each first less `offsetMs` of its event (e.g. how long the send took to be answered). */
  summary(offsetMs?: Float64Array): LatencySummary {
    const sorted = this.latencyMs.slice(0, this.delivered);
    if (offsetMs) for (let k = 0; k < sorted.length; k++) sorted[k] = (sorted[k] as number) - (offsetMs[this.eventOf[k] as number] as number);
    sorted.sort();
    const r = (n: number): number => Math.round(n * 100) / 100;
    return { p50: r(percentile(sorted, 50)), p90: r(percentile(sorted, 90)), p99: r(percentile(sorted, 99)), max: r(sorted[sorted.length - 1] ?? NaN) };
  }
}

/**
 * Sends `deliveries.events` events paced at RATE per second (`send` is
 * called just after the event's sentAt is stamped), then waits until the
 * receivers have them all or the drain deadline passes; with the CPU of
 * every process (and `extra` ones) and this one's event-loop delay over
 * that interval.
 */
async function fanoutPhase(env: Environment, deliveries: Deliveries, send: (i: number) => void, extra: Array<{ name: string; pid: number }> = [], counters?: ReadCounters): Promise<FanoutPhase> {
  const readsBefore = counters ? { ...counters } : undefined;
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const used = cpuSince(env, extra);
  const start = performance.now();
  const interval = 1000 / RATE;
  for (let i = 0; i < deliveries.events; i++) {
    const wait = start + i * interval - performance.now();
    if (wait > 1) await sleep(wait);
    deliveries.sentAt[i] = performance.now();
    send(i);
  }
  const lastSent = performance.now();
  while (!deliveries.settled() && performance.now() - lastSent < DRAIN_MS) await sleep(20);
  const end = performance.now();
  const cpu = used();
  loop.disable();
  return {
    sent: deliveries.events,
    sentPerSecond: Math.round((deliveries.events / (lastSent - start)) * 1000),
    latencyMs: deliveries.summary(),
    delivered: deliveries.delivered,
    expected: deliveries.receivers * deliveries.events,
    duplicates: deliveries.duplicates,
    receiversShort: deliveries.count((r) => (deliveries.perReceiver[r] ?? 0) < deliveries.events),
    endedEarly: deliveries.count((r) => deliveries.gone[r] === 1 && (deliveries.perReceiver[r] ?? 0) < deliveries.events),
    drainMs: Math.round(Math.max(0, deliveries.lastAt - lastSent)),
    wallMs: Math.round(end - start),
    cpuMs: Object.fromEntries(Object.entries(cpu).map(([k, v]) => [k, Math.round(v)])),
    generatorEventLoopDelayMs: { p99: Math.round(loop.percentile(99) / 1e4) / 100, max: Math.round(loop.max / 1e4) / 100 },
    ...(counters && readsBefore && deliveries.delivered > 0
      ? {
          perEvent: {
            reads: Math.round(((counters.reads - readsBefore.reads) / deliveries.delivered) * 100) / 100,
            bytes: Math.round((counters.bytes - readsBefore.bytes) / deliveries.delivered),
          },
        }
      : {}),
  };
}

const matchAdded = addedMatcher(NAME_PREFIX);

interface Watchers {
  refused: number;
  counters: ReadCounters;
  /** One line of an ADDED event of ours, as received (a copy). */
  sample(): Buffer | undefined;
  /** The start of a line that was not one of our ADDED events, if any came. */
  other(): string | undefined;
  close(): void;
}

/** Opens `deliveries.receivers` watches of `watchPath` on `port`, each its own TLS connection, and waits for every answer. */
async function openWatchers(env: Environment, port: number, watchPath: string, deliveries: Deliveries): Promise<Watchers> {
  const tlsFiles = { ca: fs.readFileSync(env.pki.caCert), cert: fs.readFileSync(env.pki.adminCert), key: fs.readFileSync(env.pki.adminKey) };
  const streams: WatchStream[] = [];
  let sampleLine: Buffer | undefined;
  let otherLine: string | undefined;
  let refused = 0;
  const counters: ReadCounters = { reads: 0, bytes: 0 };
  await runConcurrent(deliveries.receivers, OPEN_CONCURRENCY, async (w) => {
    const stream = openWatchStream({
      port,
      path: watchPath,
      tls: tlsFiles,
      onLine: (buf, start, end, receivedAt) => {
        const i = matchAdded(buf, start, end);
        if (i >= 0 && deliveries.record(w, i, receivedAt)) {
          if (sampleLine === undefined) sampleLine = Buffer.from(buf.subarray(start, end));
        } else if (otherLine === undefined && end > start) otherLine = buf.toString('utf8', start, Math.min(end, start + 300));
      },
      onEnd: () => {
        deliveries.gone[w] = 1;
      },
      counters,
    });
    streams.push(stream);
    if ((await stream.answered) !== 200) {
      refused++;
      deliveries.gone[w] = 1;
      stream.close();
    }
  });
  return {
    refused,
    counters,
    sample: () => sampleLine,
    other: () => otherLine,
    close: () => {
      for (const s of streams) s.close();
    },
  };
}

/** Microseconds per call of `fn`, after a warm-up. */
function usPer(iterations: number, fn: () => void): number {
  for (let i = 0; i < 1000; i++) fn();
  const t = performance.now();
  for (let i = 0; i < iterations; i++) fn();
  return Math.round(((performance.now() - t) * 1000 * 100) / iterations) / 100;
}

function lineParseCost(line: Buffer): WatchersFigures['lineParseUs'] {
  let sink = 0;
  const scan = usPer(50_000, () => {
    sink += matchAdded(line, 0, line.length);
  });
  const jsonParse = usPer(20_000, () => {
    const ev = JSON.parse(line.toString('utf8')) as { type: string; object: { metadata: { name: string } } };
    sink += ev.object.metadata.name.length;
  });
  if (sink === 0) throw new Error('the line parsed to nothing');
  return { scan, jsonParse, lineBytes: line.length };
}

const configMap = (name: string): unknown => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { value: 'v'.repeat(OBJECT_BYTES) } });

export async function benchWatchers(env: Environment, client: Client): Promise<WatchersFigures> {
  const gateway = env.processes.find((p) => p.name === 'gateway');
  if (!gateway) throw new Error('no gateway');
  const collection = `/api/v1/namespaces/${NAMESPACE}/configmaps`;
  await ensureNamespace(client, NAMESPACE);
  // A warm create path first (a fresh environment's first creates take hundreds of ms).
  await runConcurrent(WARM_CREATES, 4, async (i) => {
    const res = await client.request('POST', collection, configMap(`warm-${i}`));
    if (res.status !== 201) throw new Error(`a warm-up create answered ${res.status}: ${res.body.slice(0, 200)}`);
  });
  const rv = (JSON.parse((await client.request('GET', collection)).body) as { metadata: { resourceVersion: string } }).metadata.resourceVersion;

  const deliveries = new Deliveries(WATCHERS, CREATES);
  const rssBefore = rssBytes(gateway.pid);
  const opening = process.hrtime.bigint();
  const watchers = await openWatchers(env, Number(new URL(env.url).port), `${collection}?watch=1&resourceVersion=${rv}&timeoutSeconds=1800`, deliveries);
  let figures: WatchersFigures;
  let sampleLine: Buffer;
  try {
    const openSeconds = Math.round(Number(process.hrtime.bigint() - opening) / 1e7) / 100;
    // A few events through every watch (not counted: their names are not fanout-<n>).
    for (let i = 0; i < WARM_EVENTS; i++) {
      await client.request('POST', collection, configMap(`warm-watch-${i}`));
      await sleep(1000 / RATE);
    }
    // Keep-alive connections for the creates, so that none waits for a TLS handshake; then quiet.
    await runConcurrent(CREATE_CONNECTIONS * 4, CREATE_CONNECTIONS, async () => {
      await client.request('GET', `/api/v1/namespaces/${NAMESPACE}`).catch(() => undefined);
    });
    await sleep(2000);
    const rssWith = rssBytes(gateway.pid);

    const createTook = new Float64Array(CREATES).fill(NaN);
    let createFailures = 0;
    const creates: Array<Promise<void>> = [];
    const phase = await fanoutPhase(env, deliveries, (i) => {
      creates.push(
        client.request('POST', collection, configMap(`${NAME_PREFIX}${i}`)).then(
          (res) => {
            if (res.status === 201) createTook[i] = performance.now() - (deliveries.sentAt[i] as number);
            else createFailures++;
          },
          () => {
            createFailures++;
          },
        ),
      );
    }, [], watchers.counters);
    await Promise.all(creates);
    const sample = watchers.sample();
    if (!sample) throw new Error(`no watcher saw an ADDED event${watchers.other() ? `; a line received: ${watchers.other()}` : ''}`);
    sampleLine = sample;
    const created = stats(Array.from(createTook).filter((ms) => !Number.isNaN(ms)));
    const r2 = (n: number): number => Math.round(n * 100) / 100;
    figures = {
      watchers: WATCHERS,
      objectBytes: OBJECT_BYTES,
      opened: WATCHERS - watchers.refused,
      refused: watchers.refused,
      openSeconds,
      gatewayRssMiB: { before: Math.round(rssBefore / 1048576), withWatchers: Math.round(rssWith / 1048576) },
      createFailures,
      createMs: { p50: r2(created.p50), p99: r2(created.p99) },
      gateway: phase,
      eventAfterCreateAnsweredMs: deliveries.summary(createTook),
      lineParseUs: lineParseCost(sampleLine),
    };
  } finally {
    watchers.close();
  }
  if (FLOORS) {
    // A floor that fails (a loaded machine can miss NATS's 2 s TLS handshake deadline) is reported, not fatal.
    const errors: string[] = [];
    try {
      figures.nodeHttpsFloor = await nodeHttpsFloor(env, sampleLine.toString('utf8'));
    } catch (err) {
      errors.push(`bare Node HTTPS floor: ${(err as Error).message}`);
    }
    try {
      figures.rawNats = await rawNatsFanout(env);
    } catch (err) {
      errors.push(`raw NATS fan-out: ${(err as Error).message}`);
    }
    if (errors.length > 0) figures.floorErrors = errors;
  }
  return figures;
}

/** The same fan-out from a bare Node HTTPS server (fanout-floor.ts): the gateway's line for each event, written to every watcher. */
async function nodeHttpsFloor(env: Environment, sampleLine: string): Promise<FanoutPhase> {
  const child = fork(path.join(__dirname, 'fanout-floor.js'), [env.pki.servingCert, env.pki.servingKey, env.pki.caCert], { stdio: 'ignore' });
  try {
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (m) => resolve((m as { port: number }).port));
      child.once('exit', (code) => reject(new Error(`the HTTPS fan-out floor server exited (${code})`)));
    });
    const deliveries = new Deliveries(WATCHERS, CREATES);
    const watchers = await openWatchers(env, port, '/watch', deliveries);
    try {
      if (watchers.refused > 0) throw new Error(`the floor server refused ${watchers.refused} watches`);
      const lines = Array.from({ length: CREATES }, (_, i) => sampleLine.replace(/"name":"[^"]*"/, `"name":"${NAME_PREFIX}${i}"`));
      await sleep(1000);
      return await fanoutPhase(env, deliveries, (i) => child.send({ line: lines[i] }), [{ name: 'node https floor', pid: child.pid ?? 0 }], watchers.counters);
    } finally {
      watchers.close();
    }
  } finally {
    child.kill();
  }
}

/** The same fan-out straight through NATS: one publisher, WATCHERS subscribing TLS connections, payloads of OBJECT_BYTES. */
async function rawNatsFanout(env: Environment): Promise<FanoutPhase> {
  // The publisher's identity: the only one allowed to publish and subscribe outside the change stream (_INBOX.>).
  const identity = env.internalPki.identities['watch-fanout'];
  const tls = { caFile: env.internalPki.caCert, certFile: identity.cert, keyFile: identity.key };
  const subject = '_INBOX.bench-fanout';
  const deliveries = new Deliveries(WATCHERS, CREATES);
  const conns: NatsConnection[] = [];
  const digits = (data: Uint8Array): number => {
    let n = 0;
    let at = 0;
    for (; at < data.length && (data[at] as number) >= 0x30 && (data[at] as number) <= 0x39; at++) n = n * 10 + ((data[at] as number) - 0x30);
    return at > 0 ? n : -1;
  };
  try {
    // Fewer handshakes at once than for the watches: NATS gives a TLS handshake 2 s; a connection that fails is tried again.
    await runConcurrent(WATCHERS, 10, async (w) => {
      let nc: NatsConnection | undefined;
      for (let attempt = 1; !nc; attempt++) {
        try {
          nc = await connect({ servers: env.nats.url, tls, maxReconnectAttempts: 0 });
        } catch (err) {
          if (attempt === 5) throw err;
          await sleep(200 * attempt);
        }
      }
      conns.push(nc);
      nc.subscribe(subject, { callback: (_err, m) => deliveries.record(w, digits(m.data), performance.now()) });
      await nc.flush();
    });
    const publisher = await connect({ servers: env.nats.url, tls });
    conns.push(publisher);
    await sleep(1000);
    const payload = Buffer.alloc(OBJECT_BYTES, 0x20);
    return await fanoutPhase(env, deliveries, (i) => {
      const body = Buffer.from(payload);
      body.write(String(i), 0, 'latin1');
      publisher.publish(subject, body);
    });
  } finally {
    await Promise.all(conns.map((c) => c.close().catch(() => undefined)));
  }
}

function phaseLines(p: FanoutPhase, mainProcess: string): string[] {
  const seconds = p.wallMs / 1000;
  const cpu = Object.entries(p.cpuMs)
    .filter(([, ms]) => ms >= 10)
    .sort((a, b) => b[1] - a[1])
    .map(([name, ms]) => `${name} ${ms} (${Math.round(ms / seconds / 10)}%)`)
    .join(', ');
  const us = (name: string): number => (p.delivered > 0 ? Math.round((((p.cpuMs[name] ?? 0) * 1000) / p.delivered) * 10) / 10 : NaN);
  return [
    `  delivered ${p.delivered}/${p.expected}, ${p.duplicates} twice, ${p.endedEarly} ended early, ${p.receiversShort} receivers short; last event ${p.drainMs} ms after the last send`,
    `  CPU over the ${fmt(seconds)} s from the first send until all was in, ms (% of one core): ${cpu}`,
    `  CPU per delivered event: ${mainProcess} ${us(mainProcess)} us, load generator ${us('load generator')} us; load generator event-loop delay p99 ${fmt(p.generatorEventLoopDelayMs.p99)} ms, max ${fmt(p.generatorEventLoopDelayMs.max)} ms`,
    ...(p.perEvent ? [`  per delivered event at the watcher: ${fmt(p.perEvent.reads)} socket reads, ${p.perEvent.bytes} bytes`] : []),
  ];
}

const latency = (l: LatencySummary): string => `p50 ${fmt(l.p50)} ms  p90 ${fmt(l.p90)} ms  p99 ${fmt(l.p99)} ms  max ${fmt(l.max)} ms`;

export function formatWatchers(w: WatchersFigures): string[] {
  const p = w.gateway;
  const lines = [
    `${w.watchers} watchers of one namespace (a TLS connection each), ${p.sent} creates of ${w.objectBytes} B at ${RATE}/s (sent at ${p.sentPerSecond}/s):`,
    `  create -> ADDED at each watcher  ${latency(p.latencyMs)}  (target p99 <= 100 ms)`,
    `  create's answer -> ADDED         ${latency(w.eventAfterCreateAnsweredMs)}  (without the create's own path; negative: the event came first)`,
    ...phaseLines(p, 'gateway'),
    `  ${w.refused} refused; ${w.createFailures} creates failed, create p50 ${fmt(w.createMs.p50)} ms p99 ${fmt(w.createMs.p99)} ms; watches opened in ${fmt(w.openSeconds)} s; gateway RSS ${w.gatewayRssMiB.before} -> ${w.gatewayRssMiB.withWatchers} MiB with them open`,
    `  load generator per ${w.lineParseUs.lineBytes}-byte line: byte search for the name ${fmt(w.lineParseUs.scan)} us (used), JSON.parse ${fmt(w.lineParseUs.jsonParse)} us (would be ${Math.round((w.lineParseUs.jsonParse * p.expected) / 1000)} ms over all events)`,
  ];
  if (w.nodeHttpsFloor) {
    const f = w.nodeHttpsFloor;
    lines.push(`bare Node HTTPS fan-out floor, the same lines at ${RATE}/s to ${w.watchers} TLS connections (sent at ${f.sentPerSecond}/s):`);
    lines.push(`  send -> line at each watcher     ${latency(f.latencyMs)}`);
    lines.push(...phaseLines(f, 'node https floor'));
  }
  if (w.rawNats) {
    const n = w.rawNats;
    lines.push(`raw NATS fan-out, ${n.sent} messages of ${w.objectBytes} B at ${RATE}/s to ${w.watchers} TLS connections (sent at ${n.sentPerSecond}/s):`);
    lines.push(`  publish -> receive at each       ${latency(n.latencyMs)}`);
    lines.push(...phaseLines(n, 'nats'));
  }
  for (const e of w.floorErrors ?? []) lines.push(`not measured: ${e}`);
  return lines;
}
