import type { Environment } from '@svc/testenv';
import { ensureNamespace, rssBytes, runConcurrent, type Client } from './harness';

/**
 * The garbage collector at scale: 10,000 ConfigMaps, each a dependent of one
 * of 100 owner ConfigMaps, created through the gateway; the growth of the
 * controller-manager's resident memory once they are all followed (its
 * shared informer's copies and the collector's graph), per object; then
 * all owners deleted at once (Background) and the time until the last
 * dependent is gone.
 */

export interface GarbageCollectionFigures {
  owners: number;
  dependents: number;
  createSeconds: number;
  /** Controller-manager RSS growth per object followed (informer store and graph), bytes. */
  controllerManagerBytesPerObject: number;
  controllerManagerRssMiB: { before: number; after: number };
  /** From the owners' deletion until the last dependent is gone. */
  collectSeconds: number;
}

const OWNERS = Number(process.env['BENCH_GC_OWNERS'] ?? '100');
const DEPENDENTS = Number(process.env['BENCH_GC_DEPENDENTS'] ?? '10000');
const NS = 'bench-gc';

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function count(client: Client, selector: string): Promise<number> {
  const res = await client.request('GET', `/api/v1/namespaces/${NS}/configmaps?labelSelector=${encodeURIComponent(selector)}`);
  if (res.status !== 200) throw new Error(`listing the dependents answered ${res.status}`);
  return (JSON.parse(res.body) as { items: unknown[] }).items.length;
}

export async function benchGarbageCollection(env: Environment, client: Client): Promise<GarbageCollectionFigures> {
  const manager = env.processes.find((p) => p.name === 'controller-manager');
  if (!manager) throw new Error('no controller-manager');
  await ensureNamespace(client, NS);
  const before = rssBytes(manager.pid);
  const owners: Array<{ name: string; uid: string }> = [];
  for (let i = 0; i < OWNERS; i++) {
    const res = await client.request('POST', `/api/v1/namespaces/${NS}/configmaps`, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `owner-${i}`, labels: { gc: 'owner' } } });
    if (res.status !== 201) throw new Error(`creating an owner answered ${res.status}`);
    owners.push({ name: `owner-${i}`, uid: (JSON.parse(res.body) as { metadata: { uid: string } }).metadata.uid });
  }
  const started = Date.now();
  await runConcurrent(DEPENDENTS, 64, async (i) => {
    const owner = owners[i % owners.length] as { name: string; uid: string };
    const body = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: `dep-${i}`, labels: { gc: 'dependent' }, ownerReferences: [{ apiVersion: 'v1', kind: 'ConfigMap', name: owner.name, uid: owner.uid }] }, data: { k: 'v' } };
    const res = await client.request('POST', `/api/v1/namespaces/${NS}/configmaps`, body);
    if (res.status !== 201) throw new Error(`creating a dependent answered ${res.status}`);
  });
  const createSeconds = (Date.now() - started) / 1000;
  // Let the informer and the graph take them in.
  await sleep(5000);
  const after = rssBytes(manager.pid);
  const deleting = Date.now();
  await runConcurrent(owners.length, 16, async (i) => {
    const res = await client.request('DELETE', `/api/v1/namespaces/${NS}/configmaps/${(owners[i] as { name: string }).name}`);
    if (res.status !== 200) throw new Error(`deleting an owner answered ${res.status}`);
  });
  const deadline = Date.now() + 30 * 60_000;
  while ((await count(client, 'gc=dependent')) > 0) {
    if (Date.now() > deadline) throw new Error('the dependents were not collected within 30 minutes');
    await sleep(500);
  }
  const collectSeconds = (Date.now() - deleting) / 1000;
  return {
    owners: OWNERS,
    dependents: DEPENDENTS,
    createSeconds: Math.round(createSeconds * 10) / 10,
    controllerManagerBytesPerObject: Math.round((after - before) / (OWNERS + DEPENDENTS)),
    controllerManagerRssMiB: { before: Math.round(before / 1048576), after: Math.round(after / 1048576) },
    collectSeconds: Math.round(collectSeconds * 10) / 10,
  };
}

export function formatGarbageCollection(f: GarbageCollectionFigures): string[] {
  return [
    `garbage collection: ${f.dependents} dependents of ${f.owners} owners (created in ${f.createSeconds} s): all gone ${f.collectSeconds} s after the owners' deletion; controller-manager RSS ${f.controllerManagerRssMiB.before} -> ${f.controllerManagerRssMiB.after} MiB, ${f.controllerManagerBytesPerObject} B per object followed (informer store and graph)`,
  ];
}
