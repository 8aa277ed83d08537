import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { ApiError, type ApiObject } from '@svc/apimachinery';
import { startEtcd, type EtcdInstance } from '@svc/testenv';
import { start as startStorage, StorageClient, type StorageHandle } from '@svc/storage';
import { createNamespaces, quietLogger, testPki, type TestPki } from './helpers';

/** The storage service against a real etcd, through its gRPC client. */
describe('storage service on etcd', () => {
  let dir: string;
  let etcd: EtcdInstance;
  let storage: StorageHandle;
  let client: StorageClient;
  let pki: TestPki;
  const cm = (name: string, labels: Record<string, string> = {}): ApiObject => ({
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name, namespace: 'ns1', uid: `uid-${name}`, labels },
    data: { k: name },
  });
  const key = (name: string) => ({ group: '', resource: 'configmaps', namespace: 'ns1', name });

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'svc-storage-'));
    pki = await testPki(dir);
    etcd = await startEtcd({ dataDir: path.join(dir, 'etcd'), logDir: dir, tls: pki.files('etcd') });
    storage = await startStorage({ listen: '127.0.0.1:0', internalTls: pki.files('storage'), etcdEndpoints: [etcd.endpoint], etcdTls: pki.files('storage'), logger: quietLogger() });
    client = new StorageClient(storage.address, pki.tls('gateway'));
    await createNamespaces(client, ['ns1', 'paging', 'exact']);
  });

  afterAll(async () => {
    client?.close();
    await storage?.close();
    await etcd?.process.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('create stores the object and its resourceVersion is the etcd revision', async () => {
    const created = await client.create(key('a'), cm('a'));
    expect(created.object.metadata?.resourceVersion).toBe(String(created.revision));
    const read = await client.get(key('a'));
    expect(read.object.data).toEqual({ k: 'a' });
    expect(read.revision).toBe(created.revision);
    const raw = await storage.store.client.get('/registry/configmaps/ns1/a').string();
    expect(JSON.parse(raw ?? '{}').metadata.resourceVersion).toBeUndefined();
  });

  test('create of an existing key fails with AlreadyExists and changes nothing', async () => {
    await client.create(key('dup'), cm('dup'));
    const before = await client.get(key('dup'));
    const err = await client.create(key('dup'), { ...cm('dup'), data: { k: 'other' } }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe(409);
    expect((err as ApiError).reason).toBe('AlreadyExists');
    expect((err as ApiError).message).toBe('configmaps "dup" already exists');
    const after = await client.get(key('dup'));
    expect(after).toEqual(before);
  });

  test('update with a stale revision is a Conflict; with the current one it succeeds', async () => {
    const v1 = await client.create(key('cas'), cm('cas'));
    const v2 = await client.update(key('cas'), { ...cm('cas'), data: { k: 'two' } }, { revision: v1.revision });
    expect(v2.revision).toBeGreaterThan(v1.revision);
    const err = (await client.update(key('cas'), { ...cm('cas'), data: { k: 'three' } }, { revision: v1.revision }).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(409);
    expect(err.reason).toBe('Conflict');
    expect((await client.get(key('cas'))).object.data).toEqual({ k: 'two' });
    // A deleted object is NotFound, not a conflict, for the same compare-and-swap.
    await client.delete(key('cas'));
    const gone = (await client.update(key('cas'), cm('cas'), { revision: v2.revision }).catch((e: unknown) => e)) as ApiError;
    expect(gone.code).toBe(404);
  });

  test('get, update and delete of a missing object are NotFound', async () => {
    for (const op of [
      () => client.get(key('missing')),
      () => client.update(key('missing'), cm('missing')),
      () => client.update(key('missing'), cm('missing'), { revision: 2 }),
      () => client.delete(key('missing')),
    ]) {
      const err = (await op().catch((e: unknown) => e)) as ApiError;
      expect(err.code).toBe(404);
      expect(err.message).toBe('configmaps "missing" not found');
    }
  });

  test('delete with a wrong uid precondition is a Conflict and keeps the object', async () => {
    await client.create(key('del'), cm('del'));
    const err = (await client.delete(key('del'), { uid: 'other' }).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(409);
    await client.get(key('del'));
    const deleted = await client.delete(key('del'), { uid: 'uid-del' });
    expect(deleted.object.metadata?.name).toBe('del');
    await expect(client.get(key('del'))).rejects.toMatchObject({ code: 404 });
  });

  test('dry-run writes check everything and store nothing', async () => {
    await client.create(key('dry'), cm('dry'), { dryRun: true });
    await expect(client.get(key('dry'))).rejects.toMatchObject({ code: 404 });
  });

  test('paging keeps one snapshot and reports the remaining count', async () => {
    const ns = { group: '', resource: 'configmaps', namespace: 'paging' };
    for (let i = 0; i < 5; i++) {
      await client.create({ ...ns, name: `p${i}` }, { ...cm(`p${i}`, { idx: String(i % 2) }), metadata: { name: `p${i}`, namespace: 'paging', labels: { idx: String(i % 2) } } });
    }
    const first = await client.list(ns, { limit: 2 });
    expect(first.items.map((o) => o.metadata?.name)).toEqual(['p0', 'p1']);
    expect(first.remainingItemCount).toBe(3);
    expect(first.continueToken).not.toBe('');
    // A write between pages must not show up in later pages.
    await client.create({ ...ns, name: 'p2a' }, { ...cm('p2a'), metadata: { name: 'p2a', namespace: 'paging' } });
    const second = await client.list(ns, { limit: 2, continueToken: first.continueToken });
    expect(second.revision).toBe(first.revision);
    expect(second.items.map((o) => o.metadata?.name)).toEqual(['p2', 'p3']);
    const third = await client.list(ns, { limit: 2, continueToken: second.continueToken });
    expect(third.items.map((o) => o.metadata?.name)).toEqual(['p4']);
    expect(third.continueToken).toBe('');
    const selected = await client.list(ns, { labelSelector: 'idx=1' });
    expect(selected.items.map((o) => o.metadata?.name)).toEqual(['p1', 'p3']);
    const byName = await client.list(ns, { fieldSelector: 'metadata.name=p4' });
    expect(byName.items.map((o) => o.metadata?.name)).toEqual(['p4']);
  });

  test('a list at an exact old revision sees the state of that revision', async () => {
    const ns = { group: '', resource: 'configmaps', namespace: 'exact' };
    const a = await client.create({ ...ns, name: 'a' }, { ...cm('a'), metadata: { name: 'a', namespace: 'exact' } });
    await client.create({ ...ns, name: 'b' }, { ...cm('b'), metadata: { name: 'b', namespace: 'exact' } });
    const atA = await client.list(ns, { at: { revision: a.revision } });
    expect(atA.items.map((o) => o.metadata?.name)).toEqual(['a']);
    expect(atA.revision).toBe(a.revision);
  });

  test('a read at a revision far in the future is a 504 naming the too large resource version', async () => {
    const err = (await client.get(key('a'), { minRevision: 1_000_000 }).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(504);
    expect(err.message).toContain('Too large resource version');
  });

  test('a malformed continue token is a 400', async () => {
    const err = (await client.list({ group: '', resource: 'configmaps', namespace: 'x' }, { continueToken: 'garbage!' }).catch((e: unknown) => e)) as ApiError;
    expect(err.code).toBe(400);
  });

  test('a client outlives a storage restart: 503 while it is down, served again on the same address', async () => {
    await client.create(key('restart'), cm('restart'));
    const address = storage.address;
    await storage.close();
    const down = (await client.get(key('restart')).catch((e: unknown) => e)) as ApiError;
    expect(down.code).toBe(503);
    expect(down.retryAfterSeconds).toBeGreaterThan(0);
    storage = await startStorage({ listen: address, internalTls: pki.files('storage'), etcdEndpoints: [etcd.endpoint], etcdTls: pki.files('storage'), logger: quietLogger() });
    let read: Awaited<ReturnType<StorageClient['get']>> | undefined;
    for (let i = 0; i < 100 && !read; i++) {
      read = await client.get(key('restart')).catch(() => undefined);
      if (!read) await new Promise((r) => setTimeout(r, 100));
    }
    expect(read?.object.data).toEqual({ k: 'restart' });
  });

  test('an answer carries storage\'s JSON until its object is read', async () => {
    const created = await client.create(key('raw'), cm('raw'));
    const raw = created.json;
    expect(raw).toBeDefined();
    const parsed = JSON.parse(raw?.toString() ?? '') as ApiObject;
    expect(parsed.metadata?.resourceVersion).toBe(String(created.revision));
    expect(created.object).toEqual(parsed);
    // Once read, the object may be changed by its reader: the bytes are no longer offered.
    expect(created.json).toBeUndefined();
  });
  test('stored bytes and answers are those of the object parsed and serialised, whether or not its JSON is', async () => {
    const raw = async (name: string): Promise<string> => (await storage.store.client.get(`/registry/configmaps/ns1/${name}`).string()) ?? '';
    // The request's resourceVersion is not stored, and the answer's takes its place.
    const sent: ApiObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { resourceVersion: '7', name: 'rv-first', namespace: 'ns1' }, data: { k: '"metadata":{"resourceVersion":"1"}' } };
    const created = await storage.store.create(key('rv-first'), Buffer.from(JSON.stringify(sent)));
    expect(await raw('rv-first')).toBe('{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rv-first","namespace":"ns1"},"data":{"k":"\\"metadata\\":{\\"resourceVersion\\":\\"1\\"}"}}');
    expect(created.json.toString()).toBe(JSON.stringify({ ...sent, metadata: { ...sent.metadata, resourceVersion: String(created.revision) } }));
    expect(created.object).toEqual({ ...sent, metadata: { ...sent.metadata, resourceVersion: String(created.revision) } });
    const updated = await storage.store.update(key('rv-first'), Buffer.from(JSON.stringify({ ...sent, metadata: { name: 'rv-first', namespace: 'ns1', resourceVersion: String(created.revision) } })), { revision: created.revision });
    expect(updated.json.toString()).toBe(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"rv-first","namespace":"ns1","resourceVersion":"${updated.revision}"},"data":{"k":"\\"metadata\\":{\\"resourceVersion\\":\\"1\\"}"}}`);
    expect((await storage.store.get(key('rv-first'))).json).toEqual(updated.json);

    // JSON written otherwise (spaces, a number's other form, a duplicate key) is parsed: what is stored and answered is the parse serialised.
    const other = await storage.store.create(key('spaced'), Buffer.from('{ "kind": "ConfigMap", "metadata": { "name": "spaced", "namespace": "ns1" }, "n": 1.50, "n": 2.0 }'));
    expect(await raw('spaced')).toBe('{"kind":"ConfigMap","metadata":{"name":"spaced","namespace":"ns1"},"n":2}');
    expect(other.json.toString()).toBe(`{"kind":"ConfigMap","metadata":{"name":"spaced","namespace":"ns1","resourceVersion":"${other.revision}"},"n":2}`);
    await storage.store.client.put('/registry/configmaps/ns1/spaced').value('{ "kind": "ConfigMap", "metadata": null }');
    const read = await storage.store.get(key('spaced'));
    expect(read.json.toString()).toBe(`{"kind":"ConfigMap","metadata":{"resourceVersion":"${read.revision}"}}`);
    const listed = await storage.store.list({ group: '', resource: 'configmaps', namespace: 'ns1' });
    expect(listed.items.map((b) => b.toString())).toContain(read.json.toString());

    // What is not JSON is refused before anything is written, as before.
    const refused = (await storage.store.create(key('broken'), Buffer.from('{"metadata":')).catch((e: unknown) => e)) as ApiError;
    expect([refused.code, refused.message]).toEqual([400, expect.stringMatching(/^storage request with an undecodable object: /) as unknown]);
    await storage.store.client.put('/registry/configmaps/ns1/broken').value('{"metadata":');
    const undecodable = (await storage.store.get(key('broken')).catch((e: unknown) => e)) as ApiError;
    expect([undecodable.code, undecodable.message]).toEqual([500, expect.stringContaining('stored object at /registry/configmaps/ns1/broken cannot be decoded') as unknown]);
    await storage.store.client.delete().key('/registry/configmaps/ns1/broken');
  });

  test('content is created only in a namespace that exists and is not terminating, checked in the same transaction', async () => {
    const inNs = (ns: string, name: string) => ({ group: '', resource: 'configmaps', namespace: ns, name });
    const obj = (ns: string, name: string): ApiObject => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: ns }, data: {} });
    const missing = (await client.create(inNs('nowhere', 'a'), obj('nowhere', 'a')).catch((e: unknown) => e)) as ApiError;
    expect([missing.code, missing.message]).toEqual([404, 'namespaces "nowhere" not found']);

    await createNamespaces(client, ['life']);
    await client.create(inNs('life', 'before'), obj('life', 'before')); // storage now remembers "life" as Active
    // The namespace turns Terminating behind storage's back (as a delete through the API does).
    const nsKey = '/registry/namespaces/life';
    const ns = JSON.parse((await storage.store.client.get(nsKey).string()) ?? '{}') as ApiObject;
    await storage.store.client.put(nsKey).value(JSON.stringify({ ...ns, metadata: { ...ns.metadata, deletionTimestamp: '2026-01-01T00:00:00Z' }, status: { phase: 'Terminating' } }));
    const refused = (await client.create(inNs('life', 'after'), obj('life', 'after')).catch((e: unknown) => e)) as ApiError;
    expect([refused.code, refused.reason, refused.message]).toEqual([403, 'Forbidden', 'configmaps "after" is forbidden: unable to create new content in namespace life because it is being terminated']);
    await expect(client.get(inNs('life', 'after'))).rejects.toMatchObject({ code: 404 });

    // Deleted and created again under the same name: content is accepted again.
    await storage.store.client.delete().key(nsKey);
    await createNamespaces(client, ['life']);
    await expect(client.create(inNs('life', 'again'), obj('life', 'again'))).resolves.toMatchObject({ object: { metadata: { name: 'again' } } });
  });
});
