import * as zlib from 'node:zlib';
import type { Etcd3 } from 'etcd3';
import type { Environment } from '@svc/testenv';
import { cpuSince, ensureNamespace, fmt, msSince, peakRss, perOp, runConcurrent, stats, type Client, type Percentiles, type RawResponse } from './harness';

/**
 * Unpaged lists of 10,000 ConfigMaps of 1 KiB and of 50,000 of 200 B. The
 * objects are written straight into etcd (the list is what is measured),
 * then listed through the gateway, next to the same range read straight
 * from etcd (the etcd3 client, the same TLS) in the same minute, with the
 * peak resident memory of gateway and storage.
 *
 * The 10,000-item list is read in turns, `BENCH_LIST_RUNS` times each (after
 * one warm-up of each, not counted): consistent (no resourceVersion),
 * `resourceVersion=0` (any state the server has), consistent again with
 * `Accept-Encoding: gzip` (the bytes received and the content-encoding
 * answered), and the etcd range read; the CPU each process spent per list
 * is counted for each kind of read. The 50,000-item list is read
 * consistently, 3 times.
 */

const RUNS = Number(process.env['BENCH_LIST_RUNS'] ?? '5');

export interface BigList {
  objects: number;
  objectBytes: number;
  responseMiB: number;
  /** Consistent reads (no resourceVersion). */
  gatewayMs: Percentiles;
  /** `resourceVersion=0`; measured for the 10,000-item list. */
  gatewayRv0Ms?: Percentiles;
  etcdDirectMs: Percentiles;
  /** etcd direct p50 over gateway p50: how many times faster than etcd the list is (target 5). */
  timesEtcd: { consistent: number; rv0?: number };
  runs: number;
  peakRssMiB: Record<string, number>;
  /** CPU per list, ms, by process; for the 10,000-item list. */
  cpuMsPerList?: { consistent: Record<string, number>; rv0: Record<string, number>; etcdDirect: Record<string, number> };
}

export interface GzipFigures {
  objects: number;
  /** Body bytes received without and with `Accept-Encoding: gzip` (as sent, before any decompression). */
  plainBytes: number;
  gzipBytes: number;
  /** The content-encoding answered to `Accept-Encoding: gzip` ('' when none). */
  contentEncoding: string;
  plainMs: Percentiles;
  gzipMs: Percentiles;
}

export interface ListFigures {
  bigLists: BigList[];
  listGzip: GzipFigures;
}

type ListMode = 'consistent' | 'rv0' | 'gzip' | 'etcd';

async function writeStraightIntoEtcd(etcd: Etcd3, ns: string, count: number, bytes: number): Promise<void> {
  const value = 'v'.repeat(bytes);
  await runConcurrent(count, 64, async (i) => {
    const name = `cm-${i}`;
    const obj = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns, uid: `u-${i}`, creationTimestamp: new Date().toISOString() }, data: { value } };
    await etcd.put(`/registry/configmaps/${ns}/${name}`).value(JSON.stringify(obj));
  });
}

/** The items of a list answer, decompressed where it says so; throws unless it is a 200 with `count` items. */
function checkList(res: RawResponse, count: number, what: string): void {
  if (res.status !== 200) throw new Error(`${what} answered ${res.status}: ${res.bytes.toString().slice(0, 200)}`);
  const body = res.headers['content-encoding'] === 'gzip' ? zlib.gunzipSync(res.bytes) : res.bytes;
  const items = (JSON.parse(body.toString()) as { items: unknown[] }).items.length;
  if (items !== count) throw new Error(`${what} answered ${items} items, not ${count}`);
}

const round1 = (n: number): number => Math.round(n * 10) / 10;

export async function benchLists(env: Environment, client: Client, etcd: Etcd3): Promise<ListFigures> {
  const bigLists: BigList[] = [];
  let listGzip: GzipFigures | undefined;
  for (const [count, bytes, runs, modes] of [
    [10_000, 1024, RUNS, ['consistent', 'rv0', 'gzip', 'etcd']],
    [50_000, 200, 3, ['consistent', 'etcd']],
  ] as const) {
    const ns = `bench-big-${count}`;
    await ensureNamespace(client, ns);
    await writeStraightIntoEtcd(etcd, ns, count, bytes);
    const path = `/api/v1/namespaces/${ns}/configmaps`;
    const samples: Record<ListMode, number[]> = { consistent: [], rv0: [], gzip: [], etcd: [] };
    const cpu: Record<ListMode, Record<string, number>> = { consistent: {}, rv0: {}, gzip: {}, etcd: {} };
    const received: Record<ListMode, RawResponse | undefined> = { consistent: undefined, rv0: undefined, gzip: undefined, etcd: undefined };
    const read = async (mode: ListMode, counted: boolean): Promise<void> => {
      const used = cpuSince(env);
      const t = process.hrtime.bigint();
      if (mode === 'etcd') {
        const all = await etcd.getAll().prefix(`/registry/configmaps/${ns}/`).strings();
        if (Object.keys(all).length !== count) throw new Error('the direct read missed objects');
      } else {
        const res = await client.requestRaw('GET', mode === 'rv0' ? `${path}?resourceVersion=0` : path, undefined, mode === 'gzip' ? { 'accept-encoding': 'gzip' } : {});
        if (!counted) checkList(res, count, `the ${mode} list of ${count}`);
        received[mode] = res;
      }
      const ms = msSince(t);
      if (!counted) return;
      samples[mode].push(ms);
      for (const [name, v] of Object.entries(used())) cpu[mode][name] = (cpu[mode][name] ?? 0) + v;
    };
    const peaks = await peakRss(env, ['gateway', 'storage'], async () => {
      for (const mode of modes) await read(mode, false);
      // In turns, so that each kind of read sees the same state of the machine.
      for (let i = 0; i < runs; i++) for (const mode of modes) await read(mode, true);
    });
    const p50 = (mode: ListMode): number => stats(samples[mode]).p50;
    const figure: BigList = {
      objects: count,
      objectBytes: bytes,
      responseMiB: round1((received.consistent?.bytes.length ?? 0) / 1048576),
      gatewayMs: stats(samples.consistent),
      etcdDirectMs: stats(samples.etcd),
      timesEtcd: { consistent: Math.round((p50('etcd') / p50('consistent')) * 100) / 100 },
      runs,
      peakRssMiB: peaks,
    };
    if (samples.rv0.length > 0) {
      figure.gatewayRv0Ms = stats(samples.rv0);
      figure.timesEtcd.rv0 = Math.round((p50('etcd') / p50('rv0')) * 100) / 100;
      figure.cpuMsPerList = { consistent: perOp(cpu.consistent, runs), rv0: perOp(cpu.rv0, runs), etcdDirect: perOp(cpu.etcd, runs) };
    }
    bigLists.push(figure);
    const gz = received.gzip;
    if (gz) {
      listGzip = {
        objects: count,
        plainBytes: received.consistent?.bytes.length ?? 0,
        gzipBytes: gz.bytes.length,
        contentEncoding: String(gz.headers['content-encoding'] ?? ''),
        plainMs: stats(samples.consistent),
        gzipMs: stats(samples.gzip),
      };
    }
  }
  if (!listGzip) throw new Error('no gzip figure');
  return { bigLists, listGzip };
}

export function formatLists(figures: ListFigures): string[] {
  const lines: string[] = [];
  for (const l of figures.bigLists) {
    const rss = `peak RSS gateway ${l.peakRssMiB['gateway']} MiB, storage ${l.peakRssMiB['storage']} MiB`;
    if (!l.gatewayRv0Ms) {
      lines.push(`unpaged list ${l.objects} x ${l.objectBytes} B (${l.responseMiB} MiB): gateway p50 ${fmt(l.gatewayMs.p50)} ms, etcd direct ${fmt(l.etcdDirectMs.p50)} ms; ${rss}`);
      continue;
    }
    lines.push(
      `unpaged list ${l.objects} x ${l.objectBytes} B (${l.responseMiB} MiB), p50 of ${l.runs}: consistent ${fmt(l.gatewayMs.p50)} ms, resourceVersion=0 ${fmt(l.gatewayRv0Ms.p50)} ms, etcd direct ${fmt(l.etcdDirectMs.p50)} ms ` +
        `(etcd time / ours: ${l.timesEtcd.consistent}x, ${l.timesEtcd.rv0 ?? '-'}x; target 5x); ${rss}`,
    );
    const cpu = l.cpuMsPerList;
    if (!cpu) continue;
    lines.push(`  CPU per list, ms        consistent  rv=0     etcd direct`);
    for (const [name, ms] of Object.entries(cpu.consistent).sort((a, b) => b[1] - a[1])) {
      if (ms < 0.5 && (cpu.rv0[name] ?? 0) < 0.5) continue;
      lines.push(`  ${name.padEnd(22)}  ${fmt(ms).padStart(8)}  ${fmt(cpu.rv0[name] ?? 0).padStart(7)}  ${fmt(cpu.etcdDirect[name] ?? 0).padStart(8)}`);
    }
  }
  const g = figures.listGzip;
  lines.push(
    `list ${g.objects} with Accept-Encoding: gzip: ${g.gzipBytes} bytes received, content-encoding ${g.contentEncoding || 'none'}; without: ${g.plainBytes} bytes ` +
      `(${Math.round((g.gzipBytes / Math.max(1, g.plainBytes)) * 1000) / 10}%); p50 ${fmt(g.gzipMs.p50)} ms vs ${fmt(g.plainMs.p50)} ms`,
  );
  return lines;
}
